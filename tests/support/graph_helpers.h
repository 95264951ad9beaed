// tests/support/graph_helpers.h — building graphs by hand in tests, and the round-trip
// check every test that makes a graph can run on it:
//
//   Graph g("fn");
//   Node* x = g.add_placeholder("x", meta_of({4, 4}));
//   Node* t = add_op(g, "aten::t", {x});
//   g.set_output({t->out()});
//   expect_round_trip(g);
//
// add_op computes the outputs' geometry as capture would: the op's meta function on
// tensors of the arguments' recorded geometry (or, for ops without one, the op itself run
// on them). Those tensors are uninitialized CPU tensors for CPU values (tests keep them
// small) and meta tensors otherwise, so that device arguments and results come out right.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/graph.h"
#include "ops/dispatch.h"

namespace ember::testing {

/// Geometry of a value: contiguous unless strides are given.
inline TensorMeta meta_of(std::vector<int64_t> sizes, ScalarType dtype = kFloat, std::vector<int64_t> strides = {},
                          int64_t offset = 0) {
  TensorMeta m;
  m.sizes = std::move(sizes);
  m.dtype = dtype;
  m.storage_offset = offset;
  if (strides.empty() && !m.sizes.empty()) {
    strides.assign(m.sizes.size(), 1);
    for (size_t d = m.sizes.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * std::max<int64_t>(m.sizes[d], 1);
  }
  m.strides = std::move(strides);
  return m;
}

/// One argument of add_op: a value (a node's only output, or a ValueRef), a list of
/// values (Tensor[] / Tensor?[]), or a literal of any IValue type.
struct OpArg {
  Arg arg;
  OpArg(Node* n) : arg(Arg::of_value(n->out())) {}                      // NOLINT
  OpArg(ValueRef v) : arg(Arg::of_value(v)) {}                          // NOLINT
  OpArg(std::vector<ValueRef> vs) {                                      // NOLINT
    std::vector<std::optional<ValueRef>> o(vs.begin(), vs.end());
    arg = Arg::of_values(std::move(o));
  }
  OpArg(std::vector<std::optional<ValueRef>> vs) : arg(Arg::of_values(std::move(vs))) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_constructible_v<IValue, T>, int> = 0>
  OpArg(T literal) : arg(Arg::of_literal(IValue(literal))) {}  // NOLINT
};

/// An uninitialized tensor with `m`'s geometry (offset included), on the meta device
/// unless `m` is on the CPU.
inline Tensor example_tensor(const TensorMeta& m) {
  int64_t extent = m.storage_offset + 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) extent = m.storage_offset;
    if (m.sizes[d] == 0) break;
    extent += (m.sizes[d] - 1) * m.strides[d];
  }
  const Device device = m.device.is_cpu() ? kCPU : kMeta;
  return empty({extent}, TensorOptions(m.dtype).device(device)).as_strided(m.sizes, m.strides, m.storage_offset);
}

/// Appends a call of `op_name` with `args` (trailing defaults filled in, literals converted
/// to their schema types) whose output geometry comes from the op's meta function.
inline Node* add_op(Graph& g, std::string_view op_name, std::vector<OpArg> args, SourceLoc loc = {}) {
  const ops::OpDef& op = ops::registry().get(op_name);
  Stack stack;
  std::vector<Device> devices;
  for (const OpArg& a : args) {
    auto tensor_of = [&](const ValueRef& v) {
      const TensorMeta& m = v.node->meta().at(v.index);
      devices.push_back(m.device);
      return example_tensor(m);
    };
    switch (a.arg.kind) {
      case Arg::Kind::Literal: stack.push_back(a.arg.literal); break;
      case Arg::Kind::Value: stack.emplace_back(tensor_of(a.arg.value)); break;
      case Arg::Kind::ValueList: {
        const auto& type = op.schema.arguments.at(stack.size()).type;
        if (type.element_optional) {
          std::vector<std::optional<Tensor>> list;
          for (const auto& v : a.arg.values) list.push_back(v ? std::optional<Tensor>(tensor_of(*v)) : std::nullopt);
          stack.emplace_back(std::move(list));
        } else {
          std::vector<Tensor> list;
          for (const auto& v : a.arg.values) list.push_back(tensor_of(*v));
          stack.emplace_back(std::move(list));
        }
        break;
      }
    }
  }
  ops::normalize_args(op.schema, stack);
  std::vector<TensorMeta> metas;
  if (op.meta && op.kind != ops::OpKind::Composite && op.kind != ops::OpKind::InPlace) {
    metas = op.meta(stack);
  } else {
    Stack out = ops::call(op, stack);
    for (const IValue& v : out) {
      std::vector<Tensor> ts = v.is_tensor_list() ? v.to_tensor_list() : std::vector<Tensor>{v.to_tensor()};
      for (const Tensor& t : ts)
        metas.push_back({t.sizes().vec(), t.strides().vec(), t.dtype(), t.device(), t.storage_offset()});
    }
  }
  // Values on other devices were meta tensors only to compute geometry: record theirs.
  const Device device = devices.empty() ? kCPU : devices.front();
  for (TensorMeta& m : metas)
    if (m.device.is_meta() && !device.is_cpu()) m.device = device;
  std::vector<Arg> graph_args;
  for (size_t i = 0; i < stack.size(); ++i) {
    if (i < args.size() && args[i].arg.kind != Arg::Kind::Literal) {
      graph_args.push_back(args[i].arg);
    } else {
      graph_args.push_back(Arg::of_literal(stack[i]));
    }
  }
  return g.add_call(op, std::move(graph_args), std::move(metas), std::move(loc));
}

/// Whether `g` prints as text that parses back to a structurally equal graph which prints
/// the same text (Note [graph], the round-trip guarantee).
inline ::testing::AssertionResult round_trips(const Graph& g) {
  const std::string text = to_string(g);
  std::unique_ptr<Graph> parsed;
  try {
    parsed = parse_graph(text);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "the text does not parse back: " << e.what() << "\n" << text;
  }
  std::string why;
  if (!structurally_equal(g, *parsed, &why)) {
    return ::testing::AssertionFailure() << "the parsed graph differs: " << why << "\n" << text;
  }
  const std::string again = to_string(*parsed);
  if (again != text) {
    return ::testing::AssertionFailure() << "the parsed graph prints differently:\n" << text << "---\n" << again;
  }
  return ::testing::AssertionSuccess();
}

/// For tests that make graphs (capture, passes): every graph must round-trip.
inline void expect_round_trip(const Graph& g) { EXPECT_TRUE(round_trips(g)); }

}  // namespace ember::testing
