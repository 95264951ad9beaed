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
