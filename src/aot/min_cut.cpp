// aot/min_cut.cpp — the min-cut rematerialization partitioner (PyTorch's
// min_cut_rematerialization_partition). Every value of the forward part is an edge of
// capacity its byte size between a "value in" and a "value out" vertex; a node's inputs
// lead into it and it into its outputs with infinite capacity; forward inputs hang from
// the source, and every forward value the backward reads (or returns) leads to the sink.
// Nodes that must not run again — GEMMs, convolutions, large reductions, random ops,
// writes and readers of written inputs, anything not on the list of cheap ops, values a
// backward GEMM (or another op that is not pointwise) reads — hang from the source too,
// so the cut passes below them. The minimum cut is the cheapest set of
// values to save: forward nodes on the sink side are recomputed in the backward from
// saved values. See Note [aot], "Partitioners".
#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string>

#include "aot/partition_impl.h"
#include "ops/registry.h"

namespace ember::aot {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

/// Max-flow by Dinic's algorithm over an adjacency list.
class FlowNetwork {
 public:
  explicit FlowNetwork(size_t n) : adj_(n) {}
  size_t add_vertex() {
    adj_.emplace_back();
    return adj_.size() - 1;
  }
  void add_edge(size_t u, size_t v, int64_t cap) {
    adj_[u].push_back(edges_.size());
    edges_.push_back({v, cap});
    adj_[v].push_back(edges_.size());
    edges_.push_back({u, 0});
  }
  int64_t max_flow(size_t s, size_t t) {
    int64_t flow = 0;
    while (bfs(s, t)) {
      it_.assign(adj_.size(), 0);
      while (int64_t f = dfs(s, t, kInf)) flow += f;
    }
    return flow;
  }
  /// After max_flow: whether `v` is reachable from the source in the residual graph.
  std::vector<bool> source_side(size_t s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<size_t> stack{s};
    seen[s] = true;
    while (!stack.empty()) {
      const size_t u = stack.back();
      stack.pop_back();
      for (size_t e : adj_[u])
        if (edges_[e].cap > 0 && !seen[edges_[e].to]) {
          seen[edges_[e].to] = true;
          stack.push_back(edges_[e].to);
        }
    }
    return seen;
  }

 private:
  struct Edge {
    size_t to;
    int64_t cap;
  };
  bool bfs(size_t s, size_t t) {
    level_.assign(adj_.size(), -1);
    std::queue<size_t> q;
    q.push(s);
    level_[s] = 0;
    while (!q.empty()) {
      const size_t u = q.front();
      q.pop();
      for (size_t e : adj_[u])
        if (edges_[e].cap > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[u] + 1;
          q.push(edges_[e].to);
        }
    }
    return level_[t] >= 0;
  }
  int64_t dfs(size_t u, size_t t, int64_t pushed) {
    if (u == t) return pushed;
    for (size_t& i = it_[u]; i < adj_[u].size(); ++i) {
      Edge& e = edges_[adj_[u][i]];
      if (e.cap <= 0 || level_[e.to] != level_[u] + 1) continue;
      if (int64_t got = dfs(e.to, t, std::min(pushed, e.cap))) {
        e.cap -= got;
        edges_[adj_[u][i] ^ 1].cap += got;
        return got;
      }
    }
    return 0;
  }

  std::vector<std::vector<size_t>> adj_;
  std::vector<Edge> edges_;
  std::vector<int> level_;
  std::vector<size_t> it_;
};

/// Base name of an op: "aten::add.Tensor" → "add".
std::string base_name(const std::string& op) {
  std::string s = op.rfind("aten::", 0) == 0 ? op.substr(6) : op;
  return s.substr(0, s.find('.'));
}

/// Cheap ops the backward may run again (PyTorch's recomputable_ops): every pointwise op
/// of scalar_ops.def, the other pointwise ops, views, and small factories.
const std::set<std::string>& recomputable_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> s = {
        "where",      "clamp", "gelu",       "masked_fill",   "_to_copy",          "clone",      "pow",
        "full",       "zeros", "ones",       "scalar_tensor", "full_like",         "zeros_like", "ones_like",
        "empty_like", "lerp",  "leaky_relu", "hardtanh",      "threshold_backward"};
#define EMBER_UNARY(name, kind, expr) s.insert(#name);
#define EMBER_BINARY(name, kind, expr) s.insert(#name);
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
    return s;
  }();
  return ops;
}

/// Reductions recomputed only when they shrink their input by less than 4x (PyTorch's rule).
const std::set<std::string>& reduction_ops() {
  static const std::set<std::string> ops = {"sum", "mean", "amax", "amin", "prod", "var"};
  return ops;
}

/// Whether a forward node must not run again in the backward.
bool banned(const Node& n) {
  if (n.kind() != NodeKind::Call) return false;
  const ops::OpDef& op = *n.op();
  if (op.nondeterministic_seeded || n.is_impure()) return true;
  for (const auto& a : op.schema.arguments)
    if (a.is_write) return true;
  if (op.kind == ops::OpKind::View) return false;
  const std::string base = base_name(n.target());
  if (reduction_ops().count(base)) {
    int64_t in = 0;
    for (const Arg& a : n.args())
      if (a.kind == Arg::Kind::Value) in += value_bytes(a.value.node->meta()[a.value.index]);
    return value_bytes(n.meta()[0]) * 4 < in;
  }
  return !recomputable_ops().count(base);
}

/// Forward inputs some node writes (batch norm's running statistics, an argument written
/// in place): a node reading one must not run again in the backward, where it would read
/// the value as the forward left it.
std::set<const Node*> written_inputs(const Graph& j) {
  std::set<const Node*> out;
  for (const auto& n : j.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    const auto& schema_args = n->op()->schema.arguments;
    for (size_t i = 0; i < n->args().size() && i < schema_args.size(); ++i) {
      const Arg& a = n->args()[i];
      if (!schema_args[i].is_write || a.kind != Arg::Kind::Value) continue;
      const Node* base = a.value.node;
      while (base->kind() == NodeKind::Call && base->op()->kind == ops::OpKind::View && !base->args().empty() &&
             base->args()[0].kind == Arg::Kind::Value)
        base = base->args()[0].value.node;
      out.insert(base);
    }
  }
  return out;
}

/// Forward nodes whose value a backward node that is not pointwise reads (a GEMM's operand,
/// directly or through views: fc2's weight gradient reads gelu(fc1(x))): the backward
/// would have to write such a value to memory to run that node, so recomputing it there is
/// never free — it costs a pass over memory and the op's arithmetic (GELU's erf) that
/// reading the saved value does not. They must not run again (PyTorch's
/// is_materialized_backwards bans their recomputation too).
std::set<const Node*> materialized_in_backward(const JointGraph& joint) {
  const Graph& j = *joint.graph;
  std::map<const Node*, std::vector<const Node*>> readers;
  for (const auto& n : j.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    for (const Arg& a : n->args()) {
      if (a.kind == Arg::Kind::Value) readers[a.value.node].push_back(n.get());
      for (const auto& v : a.values)
        if (v) readers[v->node].push_back(n.get());
    }
  }
  auto fusible = [](const Node& n) {
    return n.op()->kind != ops::OpKind::View &&
           (recomputable_ops().count(base_name(n.target())) || reduction_ops().count(base_name(n.target())));
  };
  std::set<const Node*> out;
  for (const auto& np : j.nodes()) {
    const Node* n = np.get();
    if (n->kind() != NodeKind::Call || !joint.forward_nodes.count(n) || n->op()->kind == ops::OpKind::View) continue;
    std::vector<const Node*> values{n};  // n and its views
    for (size_t i = 0; i < values.size() && !out.count(n); ++i) {
      for (const Node* r : readers[values[i]]) {
        if (r->op()->kind == ops::OpKind::View) {
          values.push_back(r);
        } else if (!joint.forward_nodes.count(r) && !fusible(*r)) {
          out.insert(n);
          break;
        }
      }
    }
  }
  return out;
}

bool reads_any(const Node& n, const std::set<const Node*>& nodes) {
  for (const Arg& a : n.args()) {
    if (a.kind == Arg::Kind::Value && nodes.count(a.value.node)) return true;
    for (const auto& v : a.values)
      if (v && nodes.count(v->node)) return true;
  }
  return false;
}

}  // namespace

Partition min_cut_partition(const JointGraph& joint) {
  const Graph& j = *joint.graph;
  using Key = std::pair<const Node*, uint32_t>;
  const std::set<const Node*> written = written_inputs(j);
  const std::set<const Node*> materialized = materialized_in_backward(joint);
  FlowNetwork net(2);
  const size_t source = 0, sink = 1;
  std::map<const Node*, size_t> node_vertex;
  std::map<Key, std::pair<size_t, size_t>> value_vertex;  // in, out
  for (const auto& np : j.nodes()) {
    const Node* n = np.get();
    if (!joint.forward_nodes.count(n)) continue;
    const size_t nv = net.add_vertex();
    node_vertex[n] = nv;
    const bool input = n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Attribute;
    if (input || banned(*n) || reads_any(*n, written) || materialized.count(n)) net.add_edge(source, nv, kInf);
    for (const Arg& a : n->args()) {
      auto from = [&](ValueRef v) { net.add_edge(value_vertex.at({v.node, v.index}).second, nv, kInf); };
      if (a.kind == Arg::Kind::Value) from(a.value);
      for (const auto& v : a.values)
        if (v) from(*v);
    }
    for (uint32_t k = 0; k < n->num_outputs(); ++k) {
      const size_t in = net.add_vertex(), out = net.add_vertex();
      value_vertex[{n, k}] = {in, out};
      net.add_edge(nv, in, kInf);
      // None outputs cannot be saved; nothing reads them.
      net.add_edge(in, out, n->meta()[k].undefined ? kInf : std::max<int64_t>(value_bytes(n->meta()[k]), 1));
    }
  }
  // The backward's needs: forward values its nodes read, and gradients that are forward values.
  auto needed = [&](ValueRef v) {
    if (auto it = value_vertex.find({v.node, v.index}); it != value_vertex.end())
      net.add_edge(it->second.second, sink, kInf);
  };
  for (const auto& np : j.nodes()) {
    if (np->kind() != NodeKind::Call || joint.forward_nodes.count(np.get())) continue;
    for (const Arg& a : np->args()) {
      if (a.kind == Arg::Kind::Value) needed(a.value);
      for (const auto& v : a.values)
        if (v) needed(*v);
    }
  }
  const std::vector<ValueRef> outs = j.outputs();
  for (size_t i = joint.num_forward_outputs; i < outs.size(); ++i) needed(outs[i]);

  net.max_flow(source, sink);
  const std::vector<bool> reach = net.source_side(source);
  std::vector<ValueRef> saved;
  std::set<const Node*> recomputed;
  for (const auto& np : j.nodes()) {
    Node* n = np.get();
    auto it = node_vertex.find(n);
    if (it == node_vertex.end()) continue;
    if (!reach[it->second]) recomputed.insert(n);
    for (uint32_t k = 0; k < n->num_outputs(); ++k) {
      const auto [in, out] = value_vertex.at({n, k});
      if (reach[in] && !reach[out]) saved.push_back(n->out(k));
    }
  }
  return build_partition(joint, recomputed, saved);
}

}  // namespace ember::aot
