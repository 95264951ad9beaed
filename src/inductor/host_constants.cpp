// inductor/host_constants.cpp — the pass that lets a CUDA graph compile when it builds
// values on the host from constants and copies them to the device (W5's causal mask:
// `triu(ones([T, T]), 1).to(cuda)` made inside the traced function): each such copy is
// computed once, at compile time, with the eager kernels, and becomes a graph constant on
// the device; the host values only it read are dropped. A graph still mixing devices
// afterwards (a function input copied, a CPU tensor beside a CUDA one in one op) runs in
// the interpreter. See Note [inductor] (docs/notes/inductor.md), "CUDA".
#include <functional>
#include <map>
#include <set>

#include "ember/error.h"
#include "graph/interpreter.h"
#include "graph/rewrite.h"
#include "inductor/pipeline.h"
#include "support/logging.h"

namespace ember::inductor {

namespace {

/// Whether every output of `n` is a static-size tensor on device type `type`.
bool all_on(const Node& n, DeviceType type) {
  if (n.meta().empty()) return false;
  for (const TensorMeta& m : n.meta())
    if (m.undefined || m.sym || m.device.type != type) return false;
  return true;
}

/// Whether every value `n` reads is in `host` (and it reads at least one when `some`).
bool reads_only(const Node& n, const std::set<const Node*>& host, bool some) {
  bool any = false, only = true;
  for (const Arg& a : n.args()) {
    if (a.kind == Arg::Kind::Value) {
      any = true;
      only = only && host.count(a.value.node);
    } else if (a.kind == Arg::Kind::ValueList) {
      for (const auto& v : a.values)
        if (v) {
          any = true;
          only = only && host.count(v->node);
        }
    }
  }
  return only && (any || !some);
}

}  // namespace

HostConstants find_host_constants(const Graph& g) {
  // In graph order: CPU constants, and pure calls of static sizes on the CPU reading only
  // host constants; a CUDA result of one call reading only them is a copy to fold.
  HostConstants r;
  for (const auto& n : g.nodes()) {
    if (n->kind() == NodeKind::Constant && all_on(*n, DeviceType::CPU)) r.host.insert(n.get());
    if (n->kind() != NodeKind::Call || n->is_impure()) continue;
    if (all_on(*n, DeviceType::CPU) && reads_only(*n, r.host, false)) r.host.insert(n.get());
    if (n->num_outputs() == 1 && all_on(*n, DeviceType::CUDA) && reads_only(*n, r.host, true)) r.copies.insert(n.get());
  }
  return r;
}

std::unique_ptr<Graph> fold_host_constants(const Graph& g, std::vector<std::string>& folded) {
  const auto [host, targets] = find_host_constants(g);
  if (targets.empty()) return nullptr;

  // The targets' values, with the eager kernels (each host value computed once).
  std::map<const Node*, std::vector<Tensor>> values;
  std::function<const Tensor&(const ValueRef&)> value_of = [&](const ValueRef& v) -> const Tensor& {
    auto it = values.find(v.node);
    if (it == values.end()) {
      if (v.node->kind() == NodeKind::Constant) {
        it = values.emplace(v.node, std::vector<Tensor>{g.constants().at(v.node->target())}).first;
      } else {
        EMBER_INTERNAL_ASSERT(host.count(v.node)) << "fold_host_constants: %" << v.node->name() << " is not a host constant";
        it = values.emplace(v.node, graph::run_call_node(*v.node, value_of)).first;
      }
    }
    return it->second.at(v.index);
  };
  for (const Node* n : targets) values[n] = graph::run_call_node(*n, value_of);

  auto rewritten = graph::rewrite(g, [&](const Node& n, const std::vector<Arg>&, graph::GraphBuilder& b)
                                         -> std::optional<std::vector<ValueRef>> {
    if (!targets.count(&n)) return std::nullopt;
    folded.push_back("%" + n.name() + " (" + n.target() + ")");
    EMBER_LOG(inductor, INFO) << "graph " << g.name() << ": %" << n.name() << " (" << n.target() << ") reads only values "
                              << "computed on the host from constants; computed once and kept on "
                              << n.meta()[0].device.str() << " as a graph constant";
    return std::vector<ValueRef>{b.constant(n.name(), values.at(&n)[0])};
  });
  // The host constants nothing reads any more (rewrite dropped the dead calls).
  std::set<const Node*> read;
  for (const auto& n : rewritten->nodes())
    for (const Arg& a : n->args()) {
      if (a.kind == Arg::Kind::Value) read.insert(a.value.node);
      for (const auto& v : a.values)
        if (v) read.insert(v->node);
    }
  std::vector<Node*> unread;
  for (const auto& n : rewritten->nodes())
    if (n->kind() == NodeKind::Constant && !read.count(n.get()) && all_on(*n, DeviceType::CPU)) unread.push_back(n.get());
  for (Node* n : unread) rewritten->erase(n);
  return rewritten;
}

}  // namespace ember::inductor
