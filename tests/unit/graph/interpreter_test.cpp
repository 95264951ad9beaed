// run_graph against eager, and dead-code elimination's rules.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "support/graph_helpers.h"

namespace ember {
namespace {

using testing::add_op;
using testing::meta_of;

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.to(kDouble).to_vector<double>(), b.to(kDouble).to_vector<double>());
}

TEST(Interpreter, MatchesEagerOnViewsMultiOutputAndListArguments) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({4, 3}));
  Node* i = g.add_placeholder("i", meta_of({2}, kInt64));
  Node* c = g.add_constant("c", tensor<float>({1, 2, 3}));
  Node* t = add_op(g, "aten::t", {x});
  Node* mx = add_op(g, "aten::max.dim", {t, 1});
  Node* sp = add_op(g, "aten::split_with_sizes", {x, std::vector<int64_t>{1, 3}});
  Node* cat = add_op(g, "aten::cat", {std::vector<ValueRef>{mx->out(0), c->out()}, 0});
  Node* idx = add_op(g, "aten::index.Tensor", {x, std::vector<std::optional<ValueRef>>{i->out()}});
  Node* ge = add_op(g, "aten::gelu", {idx, "tanh"});
  Node* add = add_op(g, "aten::add.Tensor", {sp->out(1), sp->out(1), 2.5});
  g.set_output({cat->out(), mx->out(1), ge->out(), add->out()});

  manual_seed(0);
  Tensor xv = randn({4, 3});
  Tensor iv = tensor<int64_t>({3, 0});
  std::vector<Tensor> got = run_graph(g, {xv, iv});
  ASSERT_EQ(got.size(), 4u);
  auto [values, indices] = max(xv.t(), 1);
  expect_same(got[0], ember::cat({values, tensor<float>({1, 2, 3})}, 0));
  expect_same(got[1], indices);
  expect_same(got[2], gelu(index(xv, {iv}), "tanh"));
  Tensor part = xv.narrow(0, 1, 3);
  expect_same(got[3], ember::add(part, part, 2.5));
}

TEST(Interpreter, ParsedGraphWithConstantsSetRunsLikeTheOriginal) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({3}));
  Node* c = g.add_constant("c", tensor<float>({1, 2, 3}));
  Node* m = add_op(g, "aten::mul.Tensor", {x, c});
  g.set_output({m->out()});
  auto parsed = parse_graph(to_string(g));
  parsed->set_constant("c", g.constants().at("c"));
  Tensor xv = tensor<float>({4, 5, 6});
  expect_same(run_graph(*parsed, {xv})[0], run_graph(g, {xv})[0]);
}

TEST(Interpreter, NoGradNodesDoNotRecordGradients) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({3}));
  Node* a = add_op(g, "aten::mul.Tensor", {x, x});
  Node* b = add_op(g, "aten::mul.Tensor", {x, x});
  b->set_grad_enabled(false);
  g.set_output({a->out(), b->out()});
  Tensor xv = tensor<float>({1, 2, 3}).requires_grad_();
  std::vector<Tensor> out = run_graph(g, {xv});
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
}

TEST(Interpreter, ErrorsNameTheNodesUserLine) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({3}));
  Node* i = g.add_placeholder("i", meta_of({1}, kInt64));
  Node* s = add_op(g, "aten::index_select", {x, 0, i}, SourceLoc("model.cpp", 42));
  g.set_output({s->out()});
  const std::string msg = testing::error_of([&] { run_graph(g, {tensor<float>({1, 2, 3}), tensor<int64_t>({7})}); });
  EXPECT_NE(msg.find("at model.cpp:42"), std::string::npos) << msg;
}

TEST(Interpreter, WrongNumberOfInputsIsAnError) {
  Graph g("g");
  g.set_output({g.add_placeholder("x", meta_of({3}))->out()});
  EXPECT_EQ(testing::error_of([&] { run_graph(g, {}); }, ErrorKind::ValueError), "graph g takes 1 inputs, got 0");
}

TEST(DeadCodeElimination, RemovesUnusedPureNodesTransitively) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({3}));
  Node* e = add_op(g, "aten::exp", {x});
  add_op(g, "aten::neg", {e});  // dead, and it is exp's only user
  Node* r = add_op(g, "aten::relu", {x});
  g.set_output({r->out()});
  EXPECT_EQ(g.eliminate_dead_code(), 2u);
  EXPECT_EQ(to_string(g),
            "graph g {\n  %x : f32[3] = placeholder[x]\n  %relu : f32[3] = aten::relu(%x)\n  return (%relu)\n}\n");
  EXPECT_EQ(g.eliminate_dead_code(), 0u);
}

TEST(DeadCodeElimination, KeepsMutationsRandomOpsInputsAndConstants) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({3}));
  Node* unused_input = g.add_placeholder("unused", meta_of({3}));
  g.add_constant("c", tensor<float>({1, 2, 3}));
  Node* y = add_op(g, "aten::neg", {x});
  add_op(g, "aten::copy_", {x, y});   // writes x: kept although nothing uses its result
  add_op(g, "aten::rand_like", {x});  // draws random numbers: kept (it advances the generator)
  add_op(g, "aten::fill_.Scalar", {unused_input, 0});
  g.set_output({x->out()});
  EXPECT_EQ(g.eliminate_dead_code(), 0u);
  EXPECT_EQ(g.op_count(), 4u);
  EXPECT_EQ(g.inputs().size(), 2u);
}

TEST(DeadCodeElimination, LeavesAGraphThatRoundTrips) {
  Graph g("g");
  Node* x = g.add_placeholder("x", meta_of({3}));
  add_op(g, "aten::exp", {x});
  g.set_output({x->out()});
  g.eliminate_dead_code();
  EXPECT_EQ(g.op_count(), 0u);
  testing::expect_round_trip(g);
}

}  // namespace
}  // namespace ember
