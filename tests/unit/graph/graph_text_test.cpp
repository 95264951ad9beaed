// The graph text: the printer's exact output, and parse_graph reading it back into a
// structurally equal graph (Note [graph], the round-trip guarantee).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "graph/text.h"
#include "support/graph_helpers.h"
#include "support/symbolic_graph.h"

namespace ember {
namespace {

using testing::add_op;
using testing::expect_round_trip;
using testing::meta_of;
using testing::round_trips;

/// The graph of text.h's example: inputs, an attribute, a constant, a view, a multi-output
/// op, a Tensor[] argument, no_grad and user lines.
std::unique_ptr<Graph> example_graph() {
  auto g = std::make_unique<Graph>("fn");
  Node* x = g->add_placeholder("x", meta_of({4, 4}));
  Node* w = g->add_attribute("fc1.weight", meta_of({8, 4}));
  Node* c = g->add_constant("_tensor_constant0", tensor<int64_t>({1, 2, 3}));
  Node* t = add_op(*g, "aten::t", {x}, SourceLoc("model.cpp", 12));
  Node* mx = add_op(*g, "aten::max.dim", {t, 1}, SourceLoc("model.cpp", 13));
  Node* mm = add_op(*g, "aten::mm", {w, x}, SourceLoc("model.cpp", 14));
  Node* cat = add_op(*g, "aten::cat", {std::vector<ValueRef>{mx->out(0), c->out()}, 0}, SourceLoc("model.cpp", 15));
  cat->set_grad_enabled(false);
  g->set_output({t->out(), mx->out(1), mm->out(), cat->out()});
  return g;
}

TEST(GraphText, PrintsTheReadableFormat) {
  EXPECT_EQ(to_string(*example_graph()),
            "graph fn {\n"
            "  %x : f32[4, 4] = placeholder[x]\n"
            "  %fc1_weight : f32[8, 4] = get_attr[fc1.weight]\n"
            "  %_tensor_constant0 : i64[3] = constant[_tensor_constant0]\n"
            "  %t : f32[4, 4] strides=[1, 4] = aten::t(%x)  # model.cpp:12\n"
            "  %max : (f32[4], i64[4]) = aten::max.dim(%t, 1, False)  # model.cpp:13\n"
            "  %mm : f32[8, 4] = aten::mm(%fc1_weight, %x)  # model.cpp:14\n"
            "  %cat : f32[7] = aten::cat([%max.0, %_tensor_constant0], 0) {no_grad}  # model.cpp:15\n"
            "  return (%t, %max.1, %mm, %cat)\n"
            "}\n");
}

TEST(GraphText, ExampleGraphRoundTrips) {
  auto g = example_graph();
  EXPECT_TRUE(round_trips(*g));
  auto parsed = parse_graph(to_string(*g));
  EXPECT_EQ(parsed->name(), "fn");
  EXPECT_EQ(parsed->inputs().size(), 2u);
  EXPECT_EQ(parsed->op_count(), 4u);
  EXPECT_FALSE(parsed->find("cat")->grad_enabled());
  EXPECT_EQ(parsed->find("mm")->loc(), SourceLoc("model.cpp", 14));
  EXPECT_EQ(parsed->find("max")->op(), ops::registry().find("aten::max.dim"));
}

TEST(GraphText, ParsedConstantsHaveNoValueUntilSet) {
  auto parsed = parse_graph(to_string(*example_graph()));
  const Node* c = parsed->find("_tensor_constant0");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind(), NodeKind::Constant);
  EXPECT_EQ(c->target(), "_tensor_constant0");
  EXPECT_TRUE(parsed->constants().empty());
  parsed->set_constant("_tensor_constant0", tensor<int64_t>({4, 5, 6}));
  EXPECT_EQ(parsed->constants().at("_tensor_constant0").to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 6}));
}

TEST(GraphText, ViewsKeepStridesAndOffsets) {
  Graph g("views");
  Node* x = g.add_placeholder("x", meta_of({4, 6}));
  Node* s = add_op(g, "aten::slice.Tensor", {x, 1, 2, 5, 1});
  Node* sel = add_op(g, "aten::select.int", {s, 0, 3});
  Node* e = add_op(g, "aten::expand", {add_op(g, "aten::unsqueeze", {sel, 0}), std::vector<int64_t>{5, 3}});
  Node* p = add_op(g, "aten::permute", {x, std::vector<int64_t>{1, 0}});
  Node* a = add_op(g, "aten::as_strided", {x, std::vector<int64_t>{2, 2}, std::vector<int64_t>{1, 6}, 7});
  g.set_output({e->out(), p->out(), a->out()});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("%select : f32[3] offset=20 = aten::select.int(%slice, 0, 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("%expand : f32[5, 3] strides=[0, 1] offset=20 = aten::expand(%unsqueeze, [5, 3], False)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("aten::as_strided(%x, [2, 2], [1, 6], 7)"), std::string::npos) << text;
  expect_round_trip(g);
}

TEST(GraphText, MultiOutputAndListReturningOpsRoundTrip) {
  Graph g("outs");
  Node* x = g.add_placeholder("x", meta_of({6, 4}));
  Node* mx = add_op(g, "aten::max.dim", {x, 0, true});
  Node* sp = add_op(g, "aten::split_with_sizes", {x, std::vector<int64_t>{1, 2, 3}});
  Node* one = add_op(g, "aten::split_with_sizes", {x, std::vector<int64_t>{6}});
  Node* st = add_op(g, "aten::split.Tensor", {x, 4});
  g.set_output({mx->out(0), mx->out(1), sp->out(2), one->out(0), st->out(1)});
  EXPECT_EQ(sp->num_outputs(), 3u);
  EXPECT_EQ(st->num_outputs(), 2u);
  const std::string text = to_string(g);
  EXPECT_NE(text.find("%split_with_sizes : (f32[1, 4], f32[2, 4] offset=4, f32[3, 4] offset=12)"), std::string::npos)
      << text;
  // A list of one prints and is referred to like a single value.
  EXPECT_NE(text.find("return (%max.0, %max.1, %split_with_sizes.2, %split_with_sizes_1, %split.1)"),
            std::string::npos)
      << text;
  expect_round_trip(g);
}

TEST(GraphText, TensorListsAndOptionalTensorListsRoundTrip) {
  Graph g("lists");
  Node* x = g.add_placeholder("x", meta_of({3, 4, 5}));
  Node* i = g.add_placeholder("i", meta_of({2}, kInt64));
  Node* j = g.add_placeholder("j", meta_of({2}, kInt64));
  Node* cat = add_op(g, "aten::cat", {std::vector<ValueRef>{x->out(), x->out()}, -1});
  Node* idx = add_op(g, "aten::index.Tensor",
                     {x, std::vector<std::optional<ValueRef>>{i->out(), std::nullopt, j->out()}});
  Node* empty_cat = add_op(g, "aten::cat", {std::vector<ValueRef>{x->out()}, 0});
  g.set_output({cat->out(), idx->out(), empty_cat->out()});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("aten::cat([%x, %x], -1)"), std::string::npos) << text;
  EXPECT_NE(text.find("%index : f32[2, 4] = aten::index.Tensor(%x, [%i, None, %j])"), std::string::npos) << text;
  expect_round_trip(g);
}

TEST(GraphText, ScalarsOfEveryKindRoundTripWithTheirTypes) {
  Graph g("scalars");
  Node* x = g.add_placeholder("x", meta_of({4}));
  Node* b = g.add_placeholder("b", meta_of({4}, kBool));
  const double inf = std::numeric_limits<double>::infinity();
  Node* a = add_op(g, "aten::add.Tensor", {x, x, 2});                      // Scalar, int
  Node* m = add_op(g, "aten::mul.Scalar", {a, 2.5});                       // Scalar, float
  Node* n = add_op(g, "aten::native_layer_norm", {m, std::vector<int64_t>{4}, None{}, None{}, 1e-05});  // float
  Node* c = add_op(g, "aten::clamp", {n->out(0), -inf, inf});              // Scalar?, inf
  Node* f = add_op(g, "aten::masked_fill.Scalar", {c, b, std::nan("")});   // nan
  Node* bf = add_op(g, "aten::masked_fill.Scalar", {b, b, true});          // Scalar, bool
  Node* s = add_op(g, "aten::sum.dim_IntList", {f, std::vector<int64_t>{0}, true});  // bool
  Node* h = add_op(g, "aten::clamp_min", {x, 3});                           // int literal where Scalar
  Node* ln = add_op(g, "aten::native_layer_norm", {x, std::vector<int64_t>{4}, None{}, None{}, 1});  // int -> float
  g.set_output({s->out(), bf->out(), h->out(), ln->out(0)});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("aten::add.Tensor(%x, %x, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mul.Scalar(%add, 2.5)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::native_layer_norm(%mul, [4], None, None, 1e-05)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::clamp(%native_layer_norm.0, -inf, inf)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::masked_fill.Scalar(%clamp, %b, nan)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::masked_fill.Scalar(%b, %b, True)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::sum.dim_IntList(%masked_fill, [0], True, None)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::native_layer_norm(%x, [4], None, None, 1.0)"), std::string::npos) << text;
  expect_round_trip(g);

  // Each literal comes back with its schema type.
  auto parsed = parse_graph(text);
  EXPECT_TRUE(parsed->find("add")->args()[2].literal.is_scalar());
  EXPECT_TRUE(parsed->find("add")->args()[2].literal.to_scalar().is_integral());
  EXPECT_TRUE(parsed->find("mul")->args()[1].literal.to_scalar().is_floating_point());
  EXPECT_TRUE(parsed->find("masked_fill_1")->args()[2].literal.to_scalar().is_bool());
  EXPECT_TRUE(parsed->find("native_layer_norm")->args()[4].literal.is_double());
  EXPECT_DOUBLE_EQ(parsed->find("native_layer_norm")->args()[4].literal.to_double(), 1e-05);
  EXPECT_TRUE(std::isnan(parsed->find("masked_fill")->args()[2].literal.to_scalar().to_double()));
  EXPECT_TRUE(parsed->find("sum")->args()[2].literal.is_bool());
  EXPECT_TRUE(parsed->find("sum")->args()[1].literal.is_int_list());
}

TEST(GraphText, IntLiteralsWhereTheSchemaSaysFloatOrScalarTakeThatType) {
  auto g = parse_graph(
      "graph ints {\n"
      "  %x : f32[4] = placeholder[x]\n"
      "  %mul : f32[4] = aten::mul.Scalar(%x, 3)\n"
      "  %norm : (f32[4], f32[1], f32[1]) = aten::native_layer_norm(%x, [4], None, None, 0)\n"
      "  return (%mul, %norm.0)\n"
      "}\n");
  const IValue& three = g->find("mul")->args()[1].literal;
  ASSERT_TRUE(three.is_scalar());
  EXPECT_TRUE(three.to_scalar().is_integral());
  const IValue& eps = g->find("norm")->args()[4].literal;
  ASSERT_TRUE(eps.is_double());
  EXPECT_EQ(eps.to_double(), 0.0);
  // Printed back as schema-typed values: the float gains its ".0".
  EXPECT_NE(to_string(*g).find("aten::native_layer_norm(%x, [4], None, None, 0.0)"), std::string::npos);
}

TEST(GraphText, FloatListLiteralsRoundTripAsDoubles) {
  Graph g("floats");
  Node* x = g.add_placeholder("x", meta_of({1, 2, 3, 4}));
  Node* up = add_op(g, "aten::upsample_nearest2d.vec", {x, None{}, std::vector<double>{2.0, 1.5}});
  g.set_output({up->out()});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("aten::upsample_nearest2d.vec(%x, None, [2.0, 1.5])"), std::string::npos) << text;
  expect_round_trip(g);
  // Ints where the schema says float[] are read as doubles.
  auto parsed = parse_graph(
      "graph ints {\n"
      "  %x : f32[1, 2, 3, 4] = placeholder[x]\n"
      "  %up : f32[1, 2, 6, 8] = aten::upsample_nearest2d.vec(%x, None, [2, 2])\n"
      "  return (%up)\n"
      "}\n");
  const IValue& scales = parsed->find("up")->args()[2].literal;
  ASSERT_TRUE(scales.is_double_list());
  EXPECT_EQ(scales.to_double_list(), (std::vector<double>{2.0, 2.0}));
}

TEST(GraphText, StringsDtypesAndDevicesRoundTrip) {
  Graph g("strings");
  Node* x = g.add_placeholder("x", meta_of({4}));
  Node* ge = add_op(g, "aten::gelu", {x, "tanh"});
  Node* d = add_op(g, "aten::div.Tensor_mode", {x, ge, "floor"});
  Node* c = add_op(g, "aten::_to_copy", {d, kDouble});
  Node* m = add_op(g, "aten::_to_copy", {c, None{}, None{}, Device("meta")});
  // Any string survives (gelu's meta would reject this one, so the node is made directly).
  const std::string odd = "quote\" back\\slash\nnew\ttab  # not a comment";
  Node* q = g.add_call(*ge->op(), {Arg::of_value(x->out()), Arg::of_literal(odd)}, ge->meta());
  g.set_output({m->out(), q->out()});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("aten::gelu(%x, \"tanh\")"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::div.Tensor_mode(%x, %gelu, \"floor\")"), std::string::npos) << text;
  EXPECT_NE(text.find("%_to_copy : f64[4] = aten::_to_copy(%div, torch.float64, None, None, None, False, None)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%_to_copy_1 : f64[4] device=meta = aten::_to_copy(%_to_copy, None, None, device(\"meta\")"),
            std::string::npos)
      << text;
  expect_round_trip(g);
  EXPECT_EQ(parse_graph(text)->find("gelu_1")->args()[1].literal.to_string_ref(),
            odd);
}

TEST(GraphText, EveryDtypeAndDeviceInGeometryRoundTrips) {
  Graph g("dtypes");
  std::vector<ValueRef> outs;
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool, kComplexFloat,
                       kComplexDouble}) {
    outs.push_back(g.add_placeholder("x", meta_of({2, 3}, t))->out());
  }
  TensorMeta on_cuda = meta_of({2}, kFloat);
  on_cuda.device = Device(DeviceType::CUDA, 1);
  outs.push_back(g.add_placeholder("y", on_cuda)->out());
  TensorMeta on_meta = meta_of({}, kFloat);
  on_meta.device = kMeta;
  outs.push_back(g.add_placeholder("z", on_meta)->out());
  g.set_output(outs);
  const std::string text = to_string(g);
  for (const char* s : {"f32[2, 3]", "f64[2, 3]", "f16[2, 3]", "bf16[2, 3]", "i64[2, 3]", "i32[2, 3]", "i16[2, 3]",
                        "i8[2, 3]", "u8[2, 3]", "b8[2, 3]", "c64[2, 3]", "c128[2, 3]", "%y : f32[2] device=cuda:1", "%z : f32[] device=meta"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
  expect_round_trip(g);
}

TEST(GraphText, NonContiguousInputsAndEmptyOrZeroDimShapesRoundTrip) {
  Graph g("geometry");
  Node* a = g.add_placeholder("a", meta_of({3, 4}, kFloat, {1, 3}));
  Node* b = g.add_placeholder("b", meta_of({2, 2}, kFloat, {8, 2}, 5));
  Node* c = g.add_placeholder("c", meta_of({0, 3}));
  Node* d = g.add_placeholder("d", meta_of({}, kInt64));
  Node* e = g.add_placeholder("e", meta_of({4, 1}, kFloat, {1, 0}));
  g.set_output({a->out(), b->out(), c->out(), d->out(), e->out()});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("%a : f32[3, 4] strides=[1, 3] = placeholder[a]"), std::string::npos) << text;
  EXPECT_NE(text.find("%b : f32[2, 2] strides=[8, 2] offset=5 = placeholder[b]"), std::string::npos) << text;
  EXPECT_NE(text.find("%d : i64[] = placeholder[d]"), std::string::npos) << text;
  expect_round_trip(g);
}

TEST(GraphText, LocationsWhoseFileHoldsColonsSplitAtTheLastOne) {
  Graph g("locs");
  Node* x = g.add_placeholder("x", meta_of({2}));
  Node* n = add_op(g, "aten::neg", {x}, SourceLoc("C:/work/a:b.cpp", 7));
  g.set_output({n->out()});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("aten::neg(%x)  # C:/work/a:b.cpp:7"), std::string::npos) << text;
  expect_round_trip(g);
  EXPECT_EQ(parse_graph(text)->find("neg")->loc(), SourceLoc("C:/work/a:b.cpp", 7));
}

TEST(GraphText, TargetsAndGraphNamesWithOddCharactersRoundTrip) {
  Graph g("my graph (v2)");
  Node* x = g.add_placeholder("input]x", meta_of({2}));
  Node* w = g.add_attribute("layers.0.weight", meta_of({2}));
  Node* n = add_op(g, "aten::add.Tensor", {x, w, 1}, SourceLoc("dir]/f.cpp", 3));
  g.set_output({n->out()});
  EXPECT_EQ(x->name(), "input_x");
  expect_round_trip(g);
  auto parsed = parse_graph(to_string(g));
  EXPECT_EQ(parsed->name(), "my graph (v2)");
  EXPECT_EQ(parsed->find("input_x")->target(), "input]x");
}

TEST(GraphText, GraphsWithoutOutputsOrNodesRoundTrip) {
  Graph empty("empty");
  expect_round_trip(empty);
  Graph no_outputs("no_outputs");
  no_outputs.add_placeholder("x", meta_of({1}));
  no_outputs.set_output({});
  EXPECT_EQ(to_string(no_outputs), "graph no_outputs {\n  %x : f32[1] = placeholder[x]\n  return ()\n}\n");
  expect_round_trip(no_outputs);
}

TEST(GraphText, ParserToleratesBlankLinesCrLfAndTrailingSpaces) {
  auto g = parse_graph(
      "\r\ngraph g {\r\n\r\n  %x : f32[2] = placeholder[x]\r\n"
      "  %n : f32[2] = aten::neg(%x)  # m.cpp:4  \r\n  return (%n)\r\n}  \r\n\r\n");
  EXPECT_EQ(to_string(*g),
            "graph g {\n  %x : f32[2] = placeholder[x]\n  %n : f32[2] = aten::neg(%x)  # m.cpp:4\n  return (%n)\n}\n");
}

TEST(GraphText, ClonesRoundTrip) {
  auto g = example_graph();
  auto copy = g->clone();
  std::string why;
  EXPECT_TRUE(structurally_equal(*g, *copy, &why)) << why;
  expect_round_trip(*copy);
}

TEST(GraphText, SymbolicGeometryAndItsSymbolsRoundTrip) {
  auto g = parse_graph(testing::kSymbolicGraphText);
  EXPECT_EQ(to_string(*g), testing::kSymbolicGraphText);
  expect_round_trip(*g);
  // The header restores the shape environment: sources, example values, ranges, guards.
  const core::ShapeEnv* shape_env = graph_text::shape_env_of(*g);
  ASSERT_TRUE(shape_env);
  const core::ShapeEnv& env = *shape_env;
  ASSERT_EQ(env.num_symbols(), 3u);
  EXPECT_EQ(env.symbol(1).source, "x.size(1)");
  EXPECT_EQ(env.symbol(1).hint, 6);
  EXPECT_EQ(env.symbol(1).range, (core::sym::Range{2, 64}));
  EXPECT_EQ(env.format_guards().back(), "Mod(x.size(1), 2) == 0");
  EXPECT_TRUE(env.check(std::vector<int64_t>{10, 4, 10}));
  EXPECT_FALSE(env.check(std::vector<int64_t>{10, 4, 11})) << "y.size(0) == x.size(0)";
  EXPECT_FALSE(env.check(std::vector<int64_t>{10, 5, 10})) << "Mod(x.size(1), 2) == 0";
  // Each value's plain geometry holds the example values; `sym` the expressions.
  const TensorMeta& t = g->find("t")->meta()[0];
  EXPECT_EQ(t.sizes, (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(t.strides, (std::vector<int64_t>{1, 6}));
  ASSERT_TRUE(t.sym);
  EXPECT_EQ(t.sym->sizes[0].str(), "s1");
  const TensorMeta& select = g->find("select")->meta()[0];
  EXPECT_EQ(select.storage_offset, 42);
  const TensorMeta& half = g->find("half")->meta()[0];
  EXPECT_EQ(half.sizes, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(half.storage_offset, 3);
  // It runs at the example sizes.
  std::vector<Tensor> outs = run_graph(*g, {randn({8, 6}), randn({8, 6})});
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_EQ(outs[0].sizes().vec(), t.sizes);
  EXPECT_EQ(outs[3].sizes().vec(), half.sizes);
}

TEST(GraphText, GraphsThatDifferOnlyInSymbolicGeometryAreNotEqual) {
  // Without the guard that replaces s2 by s0, %y over s2 is another geometry with the
  // same example values.
  std::string unguarded = testing::kSymbolicGraphText;
  unguarded.erase(unguarded.find("  guard s2 == s0\n"), 17);
  auto a = parse_graph(unguarded);
  std::string other = unguarded;
  other.replace(other.find("%y : f32[s0, s1]"), 16, "%y : f32[s2, s1]");
  auto b = parse_graph(other);
  std::string why;
  EXPECT_FALSE(structurally_equal(*a, *b, &why));
  EXPECT_EQ(why, "node 1 (%y): geometry of output 0: f32[s0, s1] vs f32[s2, s1]");
  std::string ranges = testing::kSymbolicGraphText;
  ranges.replace(ranges.find("[2, 64]"), 7, "[2, 63]");
  EXPECT_FALSE(structurally_equal(*a, *parse_graph(ranges), &why));
  EXPECT_EQ(why, "size symbols: 'symbol s1 = 6 for x.size(1) [2, 64]' vs 'symbol s1 = 6 for x.size(1) [2, 63]'");
}

TEST(GraphText, AGraphWhoseSymbolsAreAllSpecializedPrintsAsAStaticGraph) {
  auto g = parse_graph(
      "graph pinned {\n  symbol s0 = 8 for x.size(0) [2, inf]\n  guard s0 == 8\n"
      "  %x : f32[s0, 2] = placeholder[x]\n  %n : f32[s0, 2] = aten::neg(%x)\n  return (%n)\n}\n");
  EXPECT_EQ(graph_text::shape_env_of(*g), nullptr);
  EXPECT_EQ(to_string(*g),
            "graph pinned {\n  %x : f32[8, 2] = placeholder[x]\n  %n : f32[8, 2] = aten::neg(%x)\n  return (%n)\n}\n");
  expect_round_trip(*g);
}

}  // namespace
}  // namespace ember
