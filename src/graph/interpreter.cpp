// graph/interpreter.cpp — runs a graph node by node with the eager kernels: the "eager"
// backend, and the reference every other backend is checked against.
#include "graph/interpreter.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/sym_geometry.h"
#include "ember/autograd.h"
#include "ops/dispatch.h"
#include "support/call_context.h"

namespace ember {
namespace {

/// Output tensors of one executed node.
using Values = std::vector<Tensor>;

Values unpack(const ops::OpDef& op, Stack result) {
  Values out;
  if (!op.schema.returns.empty() && op.schema.returns[0].type.is_list) return result.at(0).to_tensor_list();
  for (IValue& v : result) out.push_back(v.is_tensor() ? std::move(v.to_tensor()) : Tensor());  // None: not computed
  return out;
}

bool holds_symbols(const IValue& v) { return v.is_sym_int_list() || v.is_sym_int(); }

/// A size argument resolved over the value slots (resolve_sizes), at this call's values.
IValue evaluate_sizes(const Node& n, const graph::ResolvedSizes::Arg& a, std::span<const int64_t> values) {
  for (int32_t id : a.slots) {
    if (id >= 0 && static_cast<size_t>(id) < values.size() && values[id] != graph::kUnbound) continue;
    std::ostringstream sizes;
    for (size_t i = 0; i < a.sizes.size(); ++i) sizes << (i ? ", " : "") << a.sizes[i];
    EMBER_INTERNAL_ASSERT(false) << "%" << n.name() << ": the sizes " << sizes.str() << " in its arguments name value "
                                 << "slot " << id << ", whose value this call does not know";
  }
  if (a.single) return IValue(core::sym::evaluate(a.sizes[0], values));
  std::vector<int64_t> out;
  out.reserve(a.sizes.size());
  for (const core::sym::Expr& e : a.sizes) out.push_back(core::sym::evaluate(e, values));
  return IValue(std::move(out));
}

/// The same for one argument, resolved now.
graph::ResolvedSizes::Arg resolve(const IValue& v) {
  graph::ResolvedSizes::Arg a;
  a.single = v.is_sym_int();
  auto add = [&](const SymInt& s) {
    a.sizes.push_back(s.is_symbolic() ? core::value_slots_expr(*s.sym()) : core::sym::Expr(s.hint()));
    for (int32_t id : core::sym::free_symbols(a.sizes.back()))
      if (std::find(a.slots.begin(), a.slots.end(), id) == a.slots.end()) a.slots.push_back(id);
  };
  if (a.single) {
    add(v.to_sym_int());
  } else {
    for (const SymInt& s : v.to_sym_int_list()) add(s);
  }
  return a;
}

}  // namespace

namespace graph {

bool has_symbolic_lists(const Graph& g) {
  for (const auto& n : g.nodes())
    for (const Arg& a : n->args())
      if (a.kind == Arg::Kind::Literal && holds_symbols(a.literal)) return true;
  return false;
}

std::vector<int64_t> symbol_values(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<int64_t> values;
  read_symbols(bind_symbols(g), inputs, values);
  return values;
}

ResolvedSizes resolve_sizes(const Node& n) {
  ResolvedSizes r;
  for (const Arg& a : n.args())
    r.args.push_back(a.kind == Arg::Kind::Literal && holds_symbols(a.literal) ? resolve(a.literal)
                                                                              : ResolvedSizes::Arg{});
  return r;
}

std::vector<Tensor> run_call_node(const Node& n, const std::function<const Tensor&(const ValueRef&)>& value_of,
                                  std::span<const int64_t> symbol_values, const ResolvedSizes* resolved) {
  Stack args;
  args.reserve(n.args().size());
  for (size_t j = 0; j < n.args().size(); ++j) {
    const Arg& a = n.args()[j];
    switch (a.kind) {
      case Arg::Kind::Literal:
        if (!holds_symbols(a.literal)) {
          args.push_back(a.literal);
        } else {
          args.push_back(evaluate_sizes(n, resolved ? resolved->args.at(j) : resolve(a.literal), symbol_values));
        }
        break;
      case Arg::Kind::Value: args.emplace_back(value_of(a.value)); break;
      case Arg::Kind::ValueList: {
        const auto& type = n.op()->schema.arguments[args.size()].type;
        if (type.element_optional) {
          std::vector<std::optional<Tensor>> list;
          for (const auto& v : a.values) list.push_back(v ? std::optional<Tensor>(value_of(*v)) : std::nullopt);
          args.emplace_back(std::move(list));
        } else {
          std::vector<Tensor> list;
          for (const auto& v : a.values) list.push_back(value_of(*v));
          args.emplace_back(std::move(list));
        }
        break;
      }
    }
  }
  // Errors name the user line that created the node, as eager would have.
  std::optional<support::UserLocScope> loc;
  if (n.loc().known()) loc.emplace(support::UserLoc{n.loc().file.c_str(), n.loc().line});
  std::optional<NoGradGuard> no_grad;
  if (!n.grad_enabled()) no_grad.emplace();
  return unpack(*n.op(), ops::call(*n.op(), std::move(args)));
}

}  // namespace graph

std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs) {
  std::map<const Node*, Values> env;
  auto value_of = [&](const ValueRef& v) -> const Tensor& {
    auto it = env.find(v.node);
    EMBER_INTERNAL_ASSERT(it != env.end() && v.index < it->second.size())
        << "graph " << g.name() << ": %" << v.node->name() << " used before it is computed";
    return it->second[v.index];
  };
  const std::vector<Node*> graph_inputs = g.inputs();
  EMBER_CHECK_VALUE(inputs.size() == graph_inputs.size())
      << "graph " << g.name() << " takes " << graph_inputs.size() << " inputs, got " << inputs.size();
  size_t next_input = 0;
  std::vector<Tensor> results;
  // Size lists over symbols take this call's values, read from the inputs, and a
  // data-dependent size from the output of the call that computes it, once it has run.
  graph::SymbolTable symbols;
  std::vector<int64_t> values;
  if (graph::has_symbolic_lists(g)) {
    symbols = graph::bind_symbols(g);
    graph::read_symbols(symbols, inputs, values);
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    switch (n.kind()) {
      case NodeKind::Placeholder:
      case NodeKind::Attribute:
        env[&n] = {inputs[next_input++]};
        break;
      case NodeKind::Constant:
        env[&n] = {g.constants().at(n.target())};
        break;
      case NodeKind::Call:
        env[&n] = graph::run_call_node(n, value_of, values);
        if (!symbols.from_outputs.empty()) graph::read_output_symbols(symbols, i, env[&n], values);
        break;
      case NodeKind::Output:
        for (const Arg& a : n.args()) results.push_back(value_of(a.value));
        break;
    }
  }
  return results;
}

}  // namespace ember
