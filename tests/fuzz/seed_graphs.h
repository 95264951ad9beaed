// tests/fuzz/seed_graphs.h — valid graphs the fuzz tests start from: every kind of node
// (placeholder, attribute, constant, calls with one and several outputs), strided and
// offset inputs, every literal type the text has (ints, floats with exponents, inf, nan,
// None, lists, optional lists, strings, dtypes, devices), locations with ':' in the file
// name, a no_grad node, and a graph with size symbols (Note [dynamic shapes]). The graph-text and repro fuzzers mutate their text.
#pragma once

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "support/graph_helpers.h"
#include "support/symbolic_graph.h"

namespace ember::fuzz {

inline std::vector<std::unique_ptr<Graph>> seed_graphs() {
  using testing::add_op;
  using testing::meta_of;
  std::vector<std::unique_ptr<Graph>> out;
  {
    auto owned = std::make_unique<Graph>("fn");
    Graph& g = *owned;
    Node* x = g.add_placeholder("x", meta_of({4, 4}));
    Node* w = g.add_attribute("fc1.weight", meta_of({8, 4}));
    Node* c = g.add_constant("_tensor_constant0", tensor<float>({1, 2, 3, 4}));
    Node* t = add_op(g, "aten::t", {x}, SourceLoc("model.cpp", 12));
    Node* mx = add_op(g, "aten::max.dim", {t, 1}, SourceLoc("C:/a:b.cpp", 13));
    Node* mm = add_op(g, "aten::mm", {w, x});
    Node* cat = add_op(g, "aten::cat", {std::vector<ValueRef>{mx->out(0), c->out()}, 0});
    cat->set_grad_enabled(false);
    Node* sp = add_op(g, "aten::split_with_sizes", {mm, std::vector<int64_t>{3, 5}});
    g.set_output({t->out(), mx->out(1), sp->out(1), cat->out()});
    out.push_back(std::move(owned));
  }
  {
    auto owned = std::make_unique<Graph>("scalars");
    Graph& g = *owned;
    Node* x = g.add_placeholder("x", meta_of({4, 3}, kFloat, {1, 4}, 2));
    Node* b = g.add_placeholder("b", meta_of({4, 3}, kBool));
    Node* i = g.add_placeholder("i", meta_of({2}, kInt64));
    Node* a = add_op(g, "aten::add.Tensor", {x, x, 2});
    Node* m = add_op(g, "aten::mul.Scalar", {a, -2.5e-07});
    Node* n = add_op(g, "aten::native_layer_norm", {m, std::vector<int64_t>{3}, None{}, None{}, 1e-05});
    Node* c = add_op(g, "aten::clamp", {n->out(0), -std::numeric_limits<double>::infinity(), None{}});
    Node* f = add_op(g, "aten::masked_fill.Scalar", {c, b, std::nan("")});
    Node* ix = add_op(g, "aten::index.Tensor", {f, std::vector<std::optional<ValueRef>>{i->out(), std::nullopt}});
    Node* ge = add_op(g, "aten::gelu", {ix, "tanh"});
    Node* cp = add_op(g, "aten::_to_copy", {ge, kHalf, None{}, Device("meta")});
    Node* s = add_op(g, "aten::sum.dim_IntList", {f, std::vector<int64_t>{0, 1}, true});
    g.set_output({cp->out(), s->out()});
    out.push_back(std::move(owned));
  }
  // A graph traced with dynamic shapes: size symbols, guards, expressions in sizes,
  // strides and offsets.
  out.push_back(parse_graph(testing::kSymbolicGraphText));
  return out;
}

}  // namespace ember::fuzz
