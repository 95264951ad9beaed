// aot/partition.cpp — splits a joint graph into the forward graph (which also returns
// the values the backward reads) and the backward graph (saved values + tangents →
// gradients). Two choices of what is saved: every forward value a formula reads
// (SaveAll), or a min-cut over bytes that recomputes cheap pointwise chains in the
// backward (MinCut, min_cut.cpp). Contract in aot/joint.h; see Note [aot], "Partitioners".
#include <algorithm>
#include <map>

#include "aot/joint.h"
#include "aot/partition_impl.h"
#include "core/sym_geometry.h"
#include "ember/config.h"
#include "support/logging.h"

namespace ember::aot {
namespace {

using Key = std::pair<const Node*, uint32_t>;

std::string value_name(ValueRef v) {
  return v.node->num_outputs() > 1 ? v.node->name() + "_" + std::to_string(v.index) : v.node->name();
}

/// Adds the size symbols of `s` (as the environment knows it now) to `out`.
void add_symbols(const core::SymInt& s, std::set<int32_t>& out) {
  const core::SymInt now = core::current(s);
  if (!now.is_symbolic()) return;
  for (int32_t id : core::sym::free_symbols(now.expr())) out.insert(id);
}

/// The size symbols `g` computes with: its values' geometry, its size lists and SymInt
/// arguments.
std::set<int32_t> symbols_read(const Graph& g) {
  std::set<int32_t> out;
  for (const auto& n : g.nodes()) {
    for (const TensorMeta& m : n->meta()) {
      if (!m.sym) continue;
      for (const core::SymInt& s : m.sym->sizes) add_symbols(s, out);
      for (const core::SymInt& s : m.sym->strides) add_symbols(s, out);
      add_symbols(m.sym->storage_offset, out);
    }
    for (const Arg& a : n->args()) {
      if (a.kind != Arg::Kind::Literal) continue;
      for (const SymInt& s : core::literal_sym_ints(a.literal))
        if (s.sym()) add_symbols(*s.sym(), out);
    }
  }
  return out;
}

/// The symbols that are a size of `m` by themselves (read from a tensor of that geometry).
std::set<int32_t> bare_size_symbols(const TensorMeta& m) {
  std::set<int32_t> out;
  if (!m.sym) return out;
  for (const core::SymInt& s : m.sym->sizes) {
    const core::SymInt now = core::current(s);
    if (now.is_symbolic() && now.expr().kind() == core::sym::Kind::Symbol) out.insert(now.expr().symbol_id());
  }
  return out;
}

}  // namespace

int64_t value_bytes(const TensorMeta& m) {
  if (m.undefined) return 0;
  int64_t n = 1;
  for (int64_t s : m.sizes) n *= s;
  return n * static_cast<int64_t>(element_size(m.dtype));
}

std::unique_ptr<Graph> extract_graph(const Graph& j, const std::string& name, const std::vector<ValueRef>& inputs,
                                     const std::set<const Node*>& include, const std::vector<ValueRef>& outputs) {
  auto out = std::make_unique<Graph>(name);
  {
    std::vector<std::string> names;
    for (const auto& n : j.nodes()) names.push_back(n->name());
    out->reserve_names(std::move(names));
  }
  std::map<Key, ValueRef> mapped;
  for (const ValueRef& v : inputs) {
    const TensorMeta& m = v.node->meta()[v.index];
    Node* n = v.node->kind() == NodeKind::Attribute     ? out->add_attribute(v.node->target(), m)
              : v.node->kind() == NodeKind::Placeholder ? out->add_placeholder(v.node->target(), m)
                                                        : out->add_placeholder(value_name(v), m);
    mapped[{v.node, v.index}] = n->out(0);
  }
  auto map_value = [&](ValueRef v) {
    auto it = mapped.find({v.node, v.index});
    EMBER_INTERNAL_ASSERT(it != mapped.end())
        << "partition: %" << value_name(v) << " is read by graph " << name << " but is neither computed nor an input";
    return it->second;
  };
  for (const auto& np : j.nodes()) {
    const Node& n = *np;
    if (!include.count(&n)) continue;
    Node* copy = nullptr;
    if (n.kind() == NodeKind::Constant) {
      copy = out->add_named(NodeKind::Constant, n.name(), n.target(), nullptr, {}, n.meta(), n.loc(), true);
      if (auto it = j.constants().find(n.target()); it != j.constants().end())
        out->set_constant(n.target(), it->second);
    } else {
      EMBER_INTERNAL_ASSERT(n.kind() == NodeKind::Call) << "partition: cannot copy %" << n.name();
      std::vector<Arg> args = n.args();
      for (Arg& a : args) {
        if (a.kind == Arg::Kind::Value) a.value = map_value(a.value);
        for (auto& v : a.values)
          if (v) v = map_value(*v);
      }
      copy = out->add_named(NodeKind::Call, n.name(), n.target(), n.op(), std::move(args), n.meta(), n.loc(),
                            n.grad_enabled());
    }
    for (uint32_t k = 0; k < n.num_outputs(); ++k) mapped[{&n, k}] = copy->out(k);
  }
  std::vector<ValueRef> outs;
  for (const ValueRef& v : outputs) outs.push_back(map_value(v));
  out->set_output(std::move(outs));
  out->eliminate_dead_code();
  return out;
}

Partitioner configured_partitioner() {
  return config().aot.partitioner == "default" ? Partitioner::SaveAll : Partitioner::MinCut;
}

Partition build_partition(const JointGraph& joint, const std::set<const Node*>& recomputed,
                          const std::vector<ValueRef>& saved_values) {
  const Graph& j = *joint.graph;
  const std::vector<Node*> inputs = j.inputs();
  const std::vector<ValueRef> outputs = j.outputs();
  Partition p;
  std::vector<ValueRef> fw_inputs(inputs.begin(), inputs.begin() + joint.num_forward_inputs);
  std::vector<ValueRef> fw_outputs(outputs.begin(), outputs.begin() + joint.num_forward_outputs);
  std::vector<ValueRef> saved_inputs;
  for (const ValueRef& v : saved_values) {
    if (v.node->kind() == NodeKind::Placeholder || v.node->kind() == NodeKind::Attribute) {
      saved_inputs.push_back(v);
      p.saved_inputs.push_back(std::find(inputs.begin(), inputs.end(), v.node) - inputs.begin());
    } else {
      fw_outputs.push_back(v);
      ++p.saved_outputs;
    }
    p.saved_bytes += value_bytes(v.node->meta()[v.index]);
  }
  std::set<const Node*> fw_nodes, bw_nodes;
  for (const auto& n : j.nodes()) {
    if (n->kind() != NodeKind::Call && n->kind() != NodeKind::Constant) continue;
    if (joint.forward_nodes.count(n.get())) fw_nodes.insert(n.get());
    if (!joint.forward_nodes.count(n.get()) || recomputed.count(n.get())) bw_nodes.insert(n.get());
  }
  p.forward = extract_graph(j, j.name(), fw_inputs, fw_nodes, fw_outputs);
  std::vector<ValueRef> bw_outputs(outputs.begin() + joint.num_forward_outputs, outputs.end());
  auto extract_backward = [&] {
    std::vector<ValueRef> bw_inputs(fw_outputs.begin() + joint.num_forward_outputs, fw_outputs.end());
    bw_inputs.insert(bw_inputs.end(), saved_inputs.begin(), saved_inputs.end());
    for (size_t t = joint.num_forward_inputs; t < inputs.size(); ++t) bw_inputs.push_back(inputs[t]->out(0));
    p.backward = extract_graph(j, j.name() + "_backward", bw_inputs, bw_nodes, bw_outputs);
  };
  extract_backward();
  // Note [backward symbols]: a backward graph over size symbols reads each symbol's value
  // from a size of one of its inputs (the interpreter's symbol_values, the inductor's
  // bind_symbols). A symbol the backward computes with that no saved value or tangent has
  // as a size of its own (a saved value of size 2*s0, or none of size s0 at all) is read
  // from a forward input that has it: that input is saved too (it costs a reference, no
  // copy; its version is checked at backward as any saved input's is).
  std::set<int32_t> missing = symbols_read(*p.backward);
  for (const Node* in : p.backward->inputs())
    for (int32_t id : bare_size_symbols(in->meta()[0])) missing.erase(id);
  bool added = false;
  for (size_t i = 0; i < joint.num_forward_inputs && !missing.empty(); ++i) {
    std::set<int32_t> has = bare_size_symbols(inputs[i]->meta()[0]);
    if (std::none_of(has.begin(), has.end(), [&](int32_t id) { return missing.count(id) > 0; })) continue;
    if (std::find(p.saved_inputs.begin(), p.saved_inputs.end(), i) != p.saved_inputs.end()) continue;
    saved_inputs.push_back(inputs[i]->out(0));
    p.saved_inputs.push_back(i);
    for (int32_t id : has) missing.erase(id);
    added = true;
  }
  if (added) extract_backward();
  return p;
}

Partition partition_joint_graph(const JointGraph& joint, Partitioner how) {
  const Graph& j = *joint.graph;
  Partition p;
  if (how == Partitioner::MinCut) {
    p = min_cut_partition(joint);
  } else {
    // Every forward value a backward node reads is saved.
    std::set<Key> seen;
    std::vector<ValueRef> saved;
    for (const auto& n : j.nodes()) {
      if (n->kind() != NodeKind::Call || joint.forward_nodes.count(n.get())) continue;
      auto note = [&](ValueRef v) {
        if (joint.forward_nodes.count(v.node) && seen.insert({v.node, v.index}).second) saved.push_back(v);
      };
      for (const Arg& a : n->args()) {
        if (a.kind == Arg::Kind::Value) note(a.value);
        for (const auto& v : a.values)
          if (v) note(*v);
      }
    }
    // Gradient outputs that are forward values (a formula returning a saved value as is).
    const std::vector<ValueRef> outs = j.outputs();
    for (size_t i = joint.num_forward_outputs; i < outs.size(); ++i)
      if (joint.forward_nodes.count(outs[i].node) && seen.insert({outs[i].node, outs[i].index}).second)
        saved.push_back(outs[i]);
    p = build_partition(joint, {}, saved);
  }
  EMBER_LOG(aot, INFO) << "aot: partition of " << j.name() << " ("
                       << (how == Partitioner::MinCut ? "min-cut" : "save everything the formulas read") << "): saves "
                       << p.saved_outputs + p.saved_inputs.size() << " tensors (" << p.saved_inputs.size()
                       << " of them inputs), " << p.saved_bytes << " bytes; forward " << p.forward->op_count()
                       << " ops, backward " << p.backward->op_count() << " ops";
  EMBER_LOG_ARTIFACT(aot_graphs) << "aot forward graph " << j.name() << ":\n" << *p.forward;
  EMBER_LOG_ARTIFACT(aot_graphs) << "aot backward graph " << j.name() << ":\n" << *p.backward;
  return p;
}

}  // namespace ember::aot
