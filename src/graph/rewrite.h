// graph/rewrite.h — rebuilding a graph with some calls replaced by other calls: the
// mechanism under decompositions (aot/decompositions.cpp), functionalization and
// inductor's graph passes. A replacement is written with a GraphBuilder, which computes
// each new call's output geometry with the op's meta function, so a pass never states a
// size or stride by hand. See Note [graph] (docs/notes/graph.md), "Rewriting graphs".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "ember/graph.h"

namespace ember::graph {

/// An argument for GraphBuilder::call: a value of the graph being built, or a literal.
struct BuildArg {
  BuildArg(ValueRef v) : arg(Arg::of_value(v)) {}                        // NOLINT: implicit by design
  BuildArg(IValue v) : arg(Arg::of_literal(std::move(v))) {}            // NOLINT
  BuildArg(double v) : arg(Arg::of_literal(IValue(v))) {}               // NOLINT
  BuildArg(int64_t v) : arg(Arg::of_literal(IValue(v))) {}              // NOLINT
  BuildArg(int v) : arg(Arg::of_literal(IValue(int64_t{v}))) {}         // NOLINT
  BuildArg(bool v) : arg(Arg::of_literal(IValue(v))) {}                 // NOLINT
  BuildArg(std::vector<int64_t> v) : arg(Arg::of_literal(IValue(std::move(v)))) {}  // NOLINT
  BuildArg(Arg a) : arg(std::move(a)) {}                                // NOLINT
  Arg arg;
};

class GraphBuilder;

/// Decides, for one Call node of the old graph, whether it is replaced: returns the values
/// (of the new graph, built with `b`) standing for each of the node's outputs, or nullopt
/// to keep the node as it is. `args` are the node's arguments already mapped into the new
/// graph (Value and ValueList entries refer to new nodes).
using Replacement = std::function<std::optional<std::vector<ValueRef>>(const Node& node, const std::vector<Arg>& args,
                                                                       GraphBuilder& b)>;

/// The graph rebuilt node by node: inputs, constants and kept calls copied (same names,
/// lines, grad modes), replaced calls substituted, then dead code removed. `changed`
/// (when given) counts the replaced nodes. The result is checked with verify().
std::unique_ptr<Graph> rewrite(const Graph& g, const Replacement& replace, size_t* changed = nullptr);

/// Appends calls to a graph under construction. Each call gets the user line and grad mode
/// of the node it stands for, and output geometry from its op's meta function.
class GraphBuilder {
 public:
  GraphBuilder(Graph& g, SourceLoc loc, bool grad_enabled) : g_(g), loc_(std::move(loc)), grad_(grad_enabled) {}

  /// A call of `op` ("aten::mul.Tensor" or "mul.Tensor") with positional arguments; the
  /// schema's defaults fill the ones left out. Returns output `index` of the new node.
  ValueRef call(std::string_view op, std::vector<BuildArg> args, uint32_t index = 0);
  /// Every output of a call (for multi-output ops).
  Node* call_node(std::string_view op, std::vector<BuildArg> args);
  /// A Constant node holding `value` (computed once by the pass), named after `name_hint`.
  ValueRef constant(std::string_view name_hint, Tensor value);
  /// The geometry of a value of the graph being built.
  static const TensorMeta& meta(ValueRef v) { return v.node->meta().at(v.index); }
  /// Inside rewrite(): from here on, nodes of the old graph that read `old_value` (a value
  /// of the old graph) read `new_value` instead (functionalization: the value a copy_
  /// wrote). Nodes already copied keep what they read.
  void redirect(ValueRef old_value, ValueRef new_value);

 private:
  friend std::unique_ptr<Graph> rewrite(const Graph&, const Replacement&, size_t*);
  Graph& g_;
  SourceLoc loc_;
  bool grad_;
  std::map<const Node*, std::vector<ValueRef>>* mapped_ = nullptr;
};

/// Checks the invariants every pass must keep: each argument refers to an earlier node of
/// the same graph and an output it has; argument counts match schemas; Output is last.
/// Raises an internal error naming the node otherwise.
void verify(const Graph& g);

}  // namespace ember::graph
