// aot/joint.cpp — the joint forward-backward graph of a training graph: the forward graph
// copied, then the registry's derivative formulas run over it in reverse on fakes that a
// capture::GraphRecorder records into the same graph, one tangent input per output that
// requires grad. Contract in aot/joint.h; see Note [aot] (docs/notes/aot.md), "Training".
#include "aot/joint.h"

#include <chrono>
#include <map>

#include "capture/graph_recorder.h"
#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/autograd.h"
#include "ops/registry.h"
#include "support/logging.h"

namespace ember::aot {
namespace {

using Key = std::pair<const Node*, uint32_t>;
Key key(ValueRef v) { return {v.node, v.index}; }

/// The tensor inputs ("slots") of a call in the order its formula returns gradients:
/// Tensor and Tensor? arguments (None keeps its slot), then each element of a list, in
/// schema order (autograd/layer.cpp's tensor_slots, over graph arguments).
std::vector<std::optional<ValueRef>> slots_of(const Node& n) {
  std::vector<std::optional<ValueRef>> slots;
  const ops::Schema& schema = n.op()->schema;
  for (size_t i = 0; i < n.args().size() && i < schema.arguments.size(); ++i) {
    if (schema.arguments[i].type.base != ops::BaseType::Tensor) continue;
    const Arg& a = n.args()[i];
    if (a.kind == Arg::Kind::Value) {
      slots.emplace_back(a.value);
    } else if (a.kind == Arg::Kind::ValueList) {
      for (const auto& v : a.values) slots.push_back(v);
    } else if (!schema.arguments[i].type.is_list) {
      slots.emplace_back(std::nullopt);  // a None Tensor? keeps its slot
    }
  }
  return slots;
}

/// `s` as the public SymInt: plain when the environment knows it as a constant.
SymInt plain_if_constant(const core::SymInt& s) { return s.is_symbolic() ? SymInt(s) : SymInt(s.hint()); }

/// The sizes of `m` as SymInts, as the environment knows them now (no guard).
std::vector<SymInt> sym_sizes_of(const TensorMeta& m) {
  std::vector<SymInt> out;
  out.reserve(m.sizes.size());
  for (size_t d = 0; d < m.sizes.size(); ++d)
    out.push_back(m.sym ? plain_if_constant(core::current(m.sym->sizes[d])) : SymInt(m.sizes[d]));
  return out;
}

/// The strides of `m` as SymInts, as the environment knows them now (no guard).
std::vector<SymInt> sym_strides_of(const TensorMeta& m) {
  std::vector<SymInt> out;
  out.reserve(m.strides.size());
  for (size_t d = 0; d < m.strides.size(); ++d)
    out.push_back(m.sym ? plain_if_constant(core::current(m.sym->strides[d])) : SymInt(m.strides[d]));
  return out;
}

/// What a formula sees of one node of the joint graph: its arguments and outputs as the
/// recorder's fakes, the gradients flowing into its outputs, which slots need a gradient.
class TracedContext final : public ops::DerivativeContext {
 public:
  TracedContext(const Node& n, capture::GraphRecorder& rec, std::vector<Tensor> grads, std::vector<bool> needs)
      : n_(n), grads_(std::move(grads)), needs_(std::move(needs)) {
    const ops::Schema& schema = n.op()->schema;
    for (size_t i = 0; i < n.args().size(); ++i) {
      const Arg& a = n.args()[i];
      if (a.kind == Arg::Kind::Literal) {
        args_.push_back(a.literal);
      } else if (a.kind == Arg::Kind::Value) {
        args_.emplace_back(rec.fake(a.value));
      } else if (i < schema.arguments.size() && schema.arguments[i].type.element_optional) {
        std::vector<std::optional<Tensor>> list;
        for (const auto& v : a.values) list.push_back(v ? std::optional<Tensor>(rec.fake(*v)) : std::nullopt);
        args_.emplace_back(std::move(list));
      } else {
        std::vector<Tensor> list;
        for (const auto& v : a.values) list.push_back(rec.fake(*v));
        args_.emplace_back(std::move(list));
      }
    }
    for (uint32_t k = 0; k < n.num_outputs(); ++k)
      outputs_.push_back(n.meta()[k].undefined ? Tensor() : rec.fake(const_cast<Node&>(n).out(k)));
  }

  const IValue& arg(size_t i) const override { return args_.at(i); }
  // Reading a symbolic value's geometry as integers specializes it, as a forward meta
  // function's read does (Note [dynamic shapes]); the *_sym_sizes forms do not.
  IntArrayRef arg_sizes(size_t i) const override { return specialized(arg_meta(i)).sizes; }
  std::vector<SymInt> arg_sym_sizes(size_t i) const override { return sym_sizes_of(arg_meta(i)); }
  ScalarType arg_dtype(size_t i) const override { return arg_meta(i).dtype; }
  IntArrayRef arg_strides(size_t i) const override { return specialized(arg_meta(i)).strides; }
  int64_t arg_storage_offset(size_t i) const override { return specialized(arg_meta(i)).storage_offset; }
  std::vector<SymInt> arg_sym_strides(size_t i) const override { return sym_strides_of(arg_meta(i)); }
  SymInt arg_sym_storage_offset(size_t i) const override {
    const TensorMeta& m = arg_meta(i);
    if (!m.sym) return SymInt(m.storage_offset);
    return plain_if_constant(core::current(m.sym->storage_offset));
  }
  const Tensor& output(size_t i) const override { return outputs_.at(i); }
  IntArrayRef output_sizes(size_t i) const override { return specialized(n_.meta().at(i)).sizes; }
  std::vector<SymInt> output_sym_sizes(size_t i) const override { return sym_sizes_of(n_.meta().at(i)); }
  ScalarType output_dtype(size_t i) const override { return n_.meta().at(i).dtype; }
  Device output_device(size_t i) const override { return n_.meta().at(i).device; }
  size_t num_outputs() const override { return n_.num_outputs(); }
  const Tensor& grad(size_t i) const override { return grads_.at(i); }
  bool needs_grad(size_t slot) const override { return needs_.at(slot); }

 private:
  const TensorMeta& arg_meta(size_t i) const {
    const Arg& a = n_.args().at(i);
    if (a.kind == Arg::Kind::Value) return a.value.node->meta().at(a.value.index);
    for (const auto& v : a.values)
      if (v) return v->node->meta().at(v->index);
    EMBER_INTERNAL_ASSERT(false) << "joint graph: argument " << i << " of %" << n_.name() << " has no tensor";
  }

  /// `m`, after every size symbol of its geometry was specialized to its example value
  /// (a guard of the entry being compiled, logged on `dynamic`), so that its plain fields
  /// hold for every call the guards admit.
  const TensorMeta& specialized(const TensorMeta& m) const {
    if (!m.sym) return m;
    const std::string done = capture::GraphRecorder::specialize_read(*m.sym, {});
    if (!done.empty()) {
      EMBER_LOG(dynamic, INFO) << "specialized " << done << ": the derivative formula of " << n_.target()
                               << " reads sizes as integers (backward of the op at " << n_.loc().str() << ")";
    }
    return m;
  }

  const Node& n_;
  std::vector<Tensor> grads_;
  std::vector<bool> needs_;
  std::vector<IValue> args_;
  std::vector<Tensor> outputs_;
};

/// Whether a value of this geometry can carry a gradient.
bool differentiable(const TensorMeta& m) { return !m.undefined && is_floating_point(m.dtype); }

}  // namespace

size_t JointGraph::num_tangents() const {
  int most = -1;
  for (int t : tangent_of_output) most = std::max(most, t);
  return static_cast<size_t>(most + 1);
}

size_t JointGraph::num_grads() const {
  int most = -1;
  for (int g : grad_of_input) most = std::max(most, g);
  return static_cast<size_t>(most + 1);
}

JointGraph make_joint_graph(const Graph& fw, const std::vector<bool>& requires_grad) {
  const auto start = std::chrono::steady_clock::now();
  JointGraph joint;
  joint.graph = std::make_unique<Graph>(fw.name());
  Graph& g = *joint.graph;
  {
    std::vector<std::string> names;
    for (const auto& n : fw.nodes()) names.push_back(n->name());
    g.reserve_names(std::move(names));
  }
  const std::vector<Node*> inputs = fw.inputs();
  EMBER_INTERNAL_ASSERT(requires_grad.size() == inputs.size())
      << "joint graph: " << requires_grad.size() << " requires_grad flags for " << inputs.size() << " inputs";
  joint.num_forward_inputs = inputs.size();

  // Which values require grad, by the Autograd layer's rule.
  std::set<Key> needs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (requires_grad[i] && differentiable(inputs[i]->meta()[0])) needs.insert({inputs[i], 0});
  auto needs_grad = [&](const std::optional<ValueRef>& v) { return v && needs.count(key(*v)); };
  for (const auto& np : fw.nodes()) {
    const Node& n = *np;
    if (n.kind() != NodeKind::Call || !n.grad_enabled() || n.op()->not_differentiable) continue;
    bool any = false;
    for (const auto& s : slots_of(n)) any = any || needs_grad(s);
    if (!any) continue;
    const ops::OpDef& op = *n.op();
    // A write that gives a tensor new history (copy_ from a value that requires grad, a
    // write into a value that requires grad) needs the Autograd layer's rebasing.
    const bool returns_write = !op.schema.returns.empty() && op.schema.returns[0].is_write;
    for (size_t i = 0; i < n.args().size() && i < op.schema.arguments.size(); ++i) {
      if (!op.schema.arguments[i].is_write || n.args()[i].kind != Arg::Kind::Value) continue;
      EMBER_CHECK(!returns_write && !needs.count(key(n.args()[i].value)))
          << "%" << n.name() << " (" << n.target() << ") writes %" << n.args()[i].value.node->name()
          << " in a graph whose inputs require grad; AOT autograd does not trace writes that change a "
             "tensor's autograd history yet";
    }
    bool floating = false;
    for (uint32_t k = 0; k < n.num_outputs(); ++k) {
      if (!differentiable(n.meta()[k])) continue;
      floating = true;
      needs.insert({&n, k});
    }
    EMBER_CHECK_KIND(ErrorKind::NotImplementedError, !floating || op.derivative)
        << "the derivative for '" << op.name << "' is not implemented; its inputs require grad";
  }

  // The forward part: every node copied, with its name, line and grad mode.
  std::map<const Node*, Node*> mapped;
  auto map_value = [&](ValueRef v) { return ValueRef{mapped.at(v.node), v.index}; };
  auto map_args = [&](const Node& n) {
    std::vector<Arg> args = n.args();
    for (Arg& a : args) {
      if (a.kind == Arg::Kind::Value) a.value = map_value(a.value);
      for (auto& v : a.values)
        if (v) v = map_value(*v);
    }
    return args;
  };
  for (Node* in : inputs) {
    mapped[in] = g.add_named(in->kind(), in->name(), in->target(), nullptr, {}, in->meta(), in->loc(), true);
    joint.forward_nodes.insert(mapped[in]);
  }
  // Tangents: one per distinct output value that requires grad and is not an input.
  const std::vector<ValueRef> outputs = fw.outputs();
  joint.num_forward_outputs = outputs.size();
  std::map<Key, int> tangent_index;
  std::vector<ValueRef> tangent_values;
  for (const ValueRef& v : outputs) {
    int t = -1;
    if (needs.count(key(v)) && v.node->kind() == NodeKind::Call) {
      auto [it, fresh] = tangent_index.emplace(key(v), static_cast<int>(tangent_values.size()));
      if (fresh) tangent_values.push_back(v);
      t = it->second;
    }
    joint.tangent_of_output.push_back(t);
  }
  std::vector<Node*> tangents;
  for (size_t t = 0; t < tangent_values.size(); ++t) {
    const TensorMeta& m = tangent_values[t].node->meta()[tangent_values[t].index];
    TensorMeta contiguous = m;
    contiguous.strides = core::contiguous_strides(m.sizes);
    contiguous.storage_offset = 0;
    // A tangent of a symbolic output is contiguous over the symbols.
    if (m.sym) contiguous = core::contiguous_sym_meta(m.sym->sizes, m.dtype, m.device);
    tangents.push_back(g.add_placeholder("tangents_" + std::to_string(t + 1), contiguous));
  }
  for (const auto& np : fw.nodes()) {
    const Node& n = *np;
    if (n.kind() == NodeKind::Placeholder || n.kind() == NodeKind::Attribute || n.kind() == NodeKind::Output) continue;
    if (n.kind() == NodeKind::Constant) {
      mapped[&n] = g.add_named(NodeKind::Constant, n.name(), n.target(), nullptr, {}, n.meta(), n.loc(), true);
      if (auto it = fw.constants().find(n.target()); it != fw.constants().end()) g.set_constant(n.target(), it->second);
    } else {
      mapped[&n] =
          g.add_named(NodeKind::Call, n.name(), n.target(), n.op(), map_args(n), n.meta(), n.loc(), n.grad_enabled());
    }
    joint.forward_nodes.insert(mapped[&n]);
  }

  // The backward part: formulas in reverse node order, gradients added up per value.
  std::map<Key, Tensor> grads;
  {
    capture::GraphRecorder rec(g);
    NoGradGuard no_grad;
    auto accumulate = [&](ValueRef v, Tensor grad) {
      auto [it, fresh] = grads.emplace(key(v), grad);
      if (!fresh) it->second = it->second + grad;
    };
    for (size_t t = 0; t < tangent_values.size(); ++t)
      accumulate(map_value(tangent_values[t]), rec.fake(tangents[t]->out(0)));
    const auto& nodes = fw.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node& n = **it;
      if (n.kind() != NodeKind::Call) continue;
      Node* jn = mapped.at(&n);
      std::vector<Tensor> out_grads(n.num_outputs());
      bool any_grad = false;
      for (uint32_t k = 0; k < n.num_outputs(); ++k) {
        if (auto g_it = grads.find({jn, k}); g_it != grads.end()) {
          out_grads[k] = g_it->second;
          any_grad = true;
        }
      }
      if (!any_grad) continue;
      const std::vector<std::optional<ValueRef>> slots = slots_of(*jn);
      std::vector<bool> slot_needs;
      bool any_needs = false;
      for (const auto& s : slots_of(n)) {
        slot_needs.push_back(needs_grad(s));
        any_needs = any_needs || slot_needs.back();
      }
      if (!any_needs || !n.grad_enabled()) continue;
      rec.set_origin(n.loc(), false, "the derivative formula of " + n.target());
      TracedContext ctx(*jn, rec, std::move(out_grads), slot_needs);
      std::vector<Tensor> formula = n.op()->derivative(ctx);
      EMBER_INTERNAL_ASSERT(formula.size() == slots.size())
          << n.target() << ": the derivative returned " << formula.size() << " gradients for " << slots.size()
          << " tensor inputs";
      for (size_t i = 0; i < formula.size(); ++i) {
        if (!slot_needs[i] || !formula[i].defined()) continue;
        Tensor grad = std::move(formula[i]);
        const TensorMeta& want = slots[i]->node->meta()[slots[i]->index];
        if (want.sym || core::is_symbolic(grad)) {
          // Over the symbols: reading the sizes as integers would specialize them.
          grad = ops::sum_to(grad, SymIntArrayRef(sym_sizes_of(want)));
        } else if (grad.sizes() != IntArrayRef(want.sizes)) {
          grad = ops::sum_to(grad, want.sizes);
        }
        if (grad.dtype() != want.dtype) grad = grad.to(want.dtype);
        accumulate(*slots[i], std::move(grad));
      }
    }
    // Outputs: the forward's, then the inputs' gradients.
    std::vector<ValueRef> outs;
    for (const ValueRef& v : outputs) outs.push_back(map_value(v));
    int next = 0;
    for (Node* in : inputs) {
      auto g_it = grads.find({mapped.at(in), 0});
      if (!needs.count({in, 0}) || g_it == grads.end()) {
        joint.grad_of_input.push_back(-1);
        continue;
      }
      joint.grad_of_input.push_back(next++);
      outs.push_back(rec.value(g_it->second));
    }
    g.set_output(std::move(outs));
  }
  g.eliminate_dead_code();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EMBER_LOG(aot, INFO) << "aot: joint graph " << g.name() << ": " << joint.num_tangents() << " tangents, "
                       << joint.num_grads() << " input gradients, " << g.op_count() << " ops (" << ms << " ms)";
  EMBER_LOG_ARTIFACT(aot_joint_graph) << "aot joint graph " << g.name() << ":\n" << g;
  return joint;
}

}  // namespace ember::aot
