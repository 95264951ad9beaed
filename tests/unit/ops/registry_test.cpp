// The op registry: schemas, lookup and facets.
#include <gtest/gtest.h>

#include "ops/registry.h"
#include "ops/schema.h"

namespace ember::ops {
namespace {

TEST(Schema, ParsesAndPrintsAtenSyntax) {
  const char* text = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
  Schema s = parse_schema(text);
  EXPECT_EQ(s.qualified_name(), "aten::add.Tensor");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(s.str(), text);
}

TEST(Schema, EmbersOwnOpsKeepTheirNamespace) {
  const char* text = "ember::_embedding_bag_checked_offsets(Tensor offsets, Tensor indices) -> Tensor";
  Schema s = parse_schema(text);
  EXPECT_EQ(s.ns, "ember");
  EXPECT_EQ(s.qualified_name(), "ember::_embedding_bag_checked_offsets");
  EXPECT_EQ(s.str(), text);
  EXPECT_EQ(parse_schema("aten::relu(Tensor self) -> Tensor").str(), "relu(Tensor self) -> Tensor");
  // A name without a namespace is ATen's; Ember's own are found by their full name only.
  EXPECT_EQ(registry().find("relu"), registry().find("aten::relu"));
  ASSERT_NE(registry().find("ember::_embedding_bag_checked_offsets"), nullptr);
  EXPECT_EQ(registry().find("_embedding_bag_checked_offsets"), nullptr);
}

TEST(Schema, RoundTripsEveryRegisteredSchema) {
  for (const OpDef* op : registry().all()) {
    Schema again = parse_schema(op->schema.str());
    EXPECT_EQ(again.str(), op->schema.str()) << op->name;
  }
}

TEST(Schema, ParsesAliasAnnotationsAndLists) {
  Schema s = parse_schema("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  EXPECT_EQ(s.arguments[0].alias_set, 'a');
  EXPECT_TRUE(s.returns[0].type.is_list);
  Schema w = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  EXPECT_TRUE(w.arguments[0].is_write);
  EXPECT_TRUE(w.is_mutable());
}

TEST(Schema, ParsesFixedSizeBoolListsAndOptionalIntLists) {
  const OpDef& op = registry().get("aten::convolution_backward");
  const Argument& mask = op.schema.arguments[10];
  EXPECT_EQ(mask.name, "output_mask");
  EXPECT_EQ(mask.type.base, BaseType::Bool);
  EXPECT_TRUE(mask.type.is_list);
  EXPECT_EQ(mask.type.list_size, 3);
  EXPECT_TRUE(op.schema.arguments[3].type.is_list && op.schema.arguments[3].type.optional);  // SymInt[]? bias_sizes
  EXPECT_EQ(op.schema.returns.size(), 3u);
  // A bool list is accepted there, an int list is not.
  Stack ok{Tensor(), Tensor(), Tensor(), IValue(), std::vector<int64_t>{1}, std::vector<int64_t>{0},
           std::vector<int64_t>{1}, false, std::vector<int64_t>{0}, int64_t{1}, std::vector<bool>{true, false, true}};
  EXPECT_NO_THROW(normalize_args(op.schema, ok));
  Stack bad = ok;
  bad[10] = std::vector<int64_t>{1, 0, 1};
  EXPECT_THROW(normalize_args(op.schema, bad), Error);
}

TEST(Schema, OptionalFloatListsHoldDoublesAndTakeIntLists) {
  const OpDef& op = registry().get("aten::upsample_nearest2d.vec");
  const ArgType& t = op.schema.arguments[2].type;  // float[]? scale_factors
  EXPECT_EQ(t.base, BaseType::Float);
  EXPECT_TRUE(t.is_list && t.optional);
  EXPECT_EQ(t.str(), "float[]?");
  Stack floats{Tensor(), IValue(), std::vector<double>{1.5, 2.0}};
  normalize_args(op.schema, floats);
  EXPECT_EQ(floats[2].to_double_list(), (std::vector<double>{1.5, 2.0}));
  // An int list given for a float list becomes doubles; bools do not pass.
  Stack ints{Tensor(), IValue(), std::vector<int64_t>{2, 3}};
  normalize_args(op.schema, ints);
  ASSERT_TRUE(ints[2].is_double_list());
  EXPECT_EQ(ints[2].to_double_list(), (std::vector<double>{2.0, 3.0}));
  Stack bools{Tensor(), IValue(), std::vector<bool>{true}};
  EXPECT_THROW(normalize_args(op.schema, bools), Error);
  Stack none{Tensor(), std::vector<int64_t>{4, 4}, IValue()};
  EXPECT_NO_THROW(normalize_args(op.schema, none));
}

TEST(Schema, FloatListDefaultsParse) {
  Schema s = parse_schema("f(Tensor self, float[2] scales=[0.5, 2.], float[] more=[]) -> Tensor");
  EXPECT_EQ(s.arguments[1].default_value->to_double_list(), (std::vector<double>{0.5, 2.0}));
  EXPECT_TRUE(s.arguments[2].default_value->to_double_list().empty());
}

TEST(Registry, UnknownOpNamesTheOverloadsThatExist) {
  try {
    registry().get("aten::add.Bogus");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten::add.Tensor"), std::string::npos) << e.what();
  }
}

TEST(Registry, EveryOpHasAKernelOrDecomposition) {
  for (const OpDef* op : registry().all()) {
    const bool runs = op->cpu || op->cpu_dynamic || op->decomposition || op->kind == OpKind::View ||
                      op->kind == OpKind::InPlace;
    EXPECT_TRUE(runs) << op->name;
    if (op->kind == OpKind::Functional) {
      EXPECT_TRUE(op->meta) << op->name << " lacks a meta function";
    }
  }
}

}  // namespace
}  // namespace ember::ops
