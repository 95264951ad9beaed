// structurally_equal: node by node comparison, and `why` saying where graphs differ.
#include <gtest/gtest.h>

#include <cmath>

#include "support/graph_helpers.h"

namespace ember {
namespace {

using testing::add_op;
using testing::meta_of;

/// x -> add(x, x, alpha) -> neg, with a user line on the add.
std::unique_ptr<Graph> small(IValue alpha = Scalar(int64_t{1}), TensorMeta x_meta = meta_of({4})) {
  auto g = std::make_unique<Graph>("g");
  Node* x = g->add_placeholder("x", x_meta);
  Node* a = add_op(*g, "aten::add.Tensor", {x, x, alpha}, SourceLoc("m.cpp", 3));
  Node* n = add_op(*g, "aten::neg", {a});
  g->set_output({n->out()});
  return g;
}

std::string why_not_equal(const Graph& a, const Graph& b) {
  std::string why = "(unset)";
  EXPECT_FALSE(structurally_equal(a, b, &why));
  return why;
}

TEST(GraphEquality, EqualGraphsAreEqualAndLeaveWhyAlone) {
  std::string why = "(unset)";
  EXPECT_TRUE(structurally_equal(*small(), *small(), &why));
  EXPECT_EQ(why, "(unset)");
  EXPECT_TRUE(structurally_equal(*small(), *small()));
}

TEST(GraphEquality, LiteralsDifferByType) {
  EXPECT_EQ(why_not_equal(*small(Scalar(int64_t{1})), *small(Scalar(1.0))),
            "node 1 (%add): argument 2 (alpha): 1 (Scalar) vs 1.0 (Scalar)");
  // Scalar categories count, not only values.
  EXPECT_FALSE(structurally_equal(*small(Scalar(true)), *small(Scalar(int64_t{1}))));
}

TEST(GraphEquality, NanEqualsNanButZeroDiffersFromNegativeZero) {
  EXPECT_TRUE(structurally_equal(*small(Scalar(std::nan(""))), *small(Scalar(std::nan("")))));
  EXPECT_EQ(why_not_equal(*small(Scalar(0.0)), *small(Scalar(-0.0))),
            "node 1 (%add): argument 2 (alpha): 0.0 (Scalar) vs -0.0 (Scalar)");
}

TEST(GraphEquality, GeometryDifferencesSpellOutStrides) {
  EXPECT_EQ(why_not_equal(*small(1, meta_of({4})), *small(1, meta_of({4}, kFloat, {2}))),
            "node 0 (%x): geometry (f32[4] strides=[1] offset=0 device=cpu) vs (f32[4] strides=[2] offset=0 "
            "device=cpu)");
}

TEST(GraphEquality, LocationsAndGradModeCount) {
  auto a = small();
  auto b = small();
  b->find("neg")->set_grad_enabled(false);
  EXPECT_EQ(why_not_equal(*a, *b), "node 2 (%neg): grad mode enabled vs no_grad");
  auto c = parse_graph(
      "graph g {\n  %x : f32[4] = placeholder[x]\n  %add : f32[4] = aten::add.Tensor(%x, %x, 1)  # m.cpp:4\n"
      "  %neg : f32[4] = aten::neg(%add)\n  return (%neg)\n}\n");
  EXPECT_EQ(why_not_equal(*a, *c), "node 1 (%add): location m.cpp:3 vs m.cpp:4");
}

TEST(GraphEquality, ReferencesCompareByNodeNameAndIndex) {
  auto a = parse_graph(
      "graph g {\n  %x : f32[4] = placeholder[x]\n  %m : (f32[], i64[]) = aten::max.dim(%x, 0, False)\n"
      "  return (%m.0)\n}\n");
  auto b = parse_graph(
      "graph g {\n  %x : f32[4] = placeholder[x]\n  %m : (f32[], i64[]) = aten::max.dim(%x, 0, False)\n"
      "  return (%m.1)\n}\n");
  EXPECT_EQ(why_not_equal(*a, *b), "node 2 (%output): argument 0: %m.0 vs %m.1");
}

TEST(GraphEquality, NamesTargetsOpsAndCounts) {
  auto a = small();
  auto renamed = parse_graph(
      "graph g {\n  %y : f32[4] = placeholder[x]\n  %add : f32[4] = aten::add.Tensor(%y, %y, 1)  # m.cpp:3\n"
      "  %neg : f32[4] = aten::neg(%add)\n  return (%neg)\n}\n");
  EXPECT_EQ(why_not_equal(*a, *renamed), "node 0 (%x): name %x vs %y");
  auto retargeted = parse_graph(
      "graph g {\n  %x : f32[4] = placeholder[input]\n  %add : f32[4] = aten::add.Tensor(%x, %x, 1)  # m.cpp:3\n"
      "  %neg : f32[4] = aten::neg(%add)\n  return (%neg)\n}\n");
  EXPECT_EQ(why_not_equal(*a, *retargeted), "node 0 (%x): target 'x' vs 'input'");
  auto other_op = parse_graph(
      "graph g {\n  %x : f32[4] = placeholder[x]\n  %add : f32[4] = aten::add.Tensor(%x, %x, 1)  # m.cpp:3\n"
      "  %neg : f32[4] = aten::abs(%add)\n  return (%neg)\n}\n");
  EXPECT_EQ(why_not_equal(*a, *other_op), "node 2 (%neg): target 'aten::neg' vs 'aten::abs'");
}

TEST(GraphEquality, NodeCountsDiffer) {
  Graph a("g"), b("g");
  a.add_placeholder("x", meta_of({4}));
  add_op(b, "aten::neg", {b.add_placeholder("x", meta_of({4}))});
  EXPECT_EQ(why_not_equal(a, b), "node count 1 vs 2: the second graph goes on with %neg");
}

}  // namespace
}  // namespace ember
