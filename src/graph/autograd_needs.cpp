// graph/autograd_needs.cpp — whether running a graph through the dispatcher would record
// autograd history the caller can see (interpreter.h). It follows the Autograd layer's
// rule (autograd/layer.cpp) node by node, without running anything: a node records when
// grad mode is on at it, its op is differentiable and one of its tensor inputs requires
// grad; then its floating outputs require grad, a written argument gets a history, and an
// op without a derivative formula raises.
#include <map>

#include "ember/autograd.h"
#include "graph/interpreter.h"
#include "ops/registry.h"

namespace ember::graph {
namespace {

/// The graph input a value is a view chain of, or null.
const Node* input_under(ValueRef v) {
  const Node* n = v.node;
  while (n->kind() == NodeKind::Call && n->op()->kind == ops::OpKind::View && !n->args().empty() &&
         n->args()[0].kind == Arg::Kind::Value) {
    n = n->args()[0].value.node;
  }
  return n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Attribute ? n : nullptr;
}

std::string quoted(const Node* input) { return "'" + input->target() + "'"; }

}  // namespace

std::optional<std::string> why_autograd_records(const Graph& g, const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return std::nullopt;
  // The common case first, without building anything: no input requires grad.
  bool some = false;
  for (const Tensor& t : inputs) some = some || (t.defined() && t.requires_grad());
  if (!some) return std::nullopt;
  const std::vector<Node*> graph_inputs = g.inputs();
  // For each value: a graph input requiring grad that it depends on (null: none).
  std::map<const Node*, std::vector<const Node*>> from;
  bool any = false;
  for (size_t i = 0; i < graph_inputs.size() && i < inputs.size(); ++i) {
    const bool needs = inputs[i].defined() && inputs[i].requires_grad();
    from[graph_inputs[i]] = {needs ? graph_inputs[i] : nullptr};
    any = any || needs;
  }
  if (!any) return std::nullopt;
  auto source = [&](const ValueRef& v) -> const Node* {
    auto it = from.find(v.node);
    return it != from.end() && v.index < it->second.size() ? it->second[v.index] : nullptr;
  };
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (n.kind() == NodeKind::Output) {
      for (const Arg& a : n.args()) {
        if (const Node* in = source(a.value)) {
          return "its result %" + a.value.node->name() + " would require grad: graph input " + quoted(in) +
                 " requires grad and grad mode is on";
        }
      }
      continue;
    }
    if (n.kind() != NodeKind::Call) continue;  // inputs are set above; constants need no grad
    std::vector<const Node*>& out = from[&n];
    out.assign(n.meta().size(), nullptr);
    if (!n.grad_enabled() || n.op()->not_differentiable) continue;
    const Node* in = nullptr;
    for (const Arg& a : n.args()) {
      if (a.kind == Arg::Kind::Value && !in) in = source(a.value);
      if (a.kind == Arg::Kind::ValueList)
        for (const auto& v : a.values)
          if (v && !in) in = source(*v);
    }
    if (!in) continue;
    const ops::OpDef& op = *n.op();
    for (size_t i = 0; i < n.args().size() && i < op.schema.arguments.size(); ++i) {
      const Arg& a = n.args()[i];
      if (!op.schema.arguments[i].is_write || a.kind != Arg::Kind::Value) continue;
      if (const Node* written = input_under(a.value)) {
        return "%" + n.name() + " (" + n.target() + ") writes graph input " + quoted(written) +
               " from a value that requires grad (graph input " + quoted(in) + ")";
      }
    }
    bool floating = false;
    for (size_t k = 0; k < n.meta().size(); ++k) {
      const bool f = !n.meta()[k].undefined && is_floating_point(n.meta()[k].dtype);
      floating = floating || f;
      out[k] = f ? in : nullptr;
    }
    if (floating && !op.derivative) {
      return "%" + n.name() + " (" + n.target() +
             ") has no derivative formula and its input requires grad (graph input " + quoted(in) +
             "), which eager reports";
    }
  }
  return std::nullopt;
}

}  // namespace ember::graph
