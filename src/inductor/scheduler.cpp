// inductor/scheduler.cpp — groups pointwise nodes into kernels (vertical fusion of
// pointwise chains) and writes the `schedule` and `fusion` artifacts. The rule is in
// pipeline.h; see Note [inductor] (docs/notes/inductor.md).
#include <algorithm>
#include <set>
#include <sstream>

#include "inductor/pipeline.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

std::string base_name(const std::string& target) {
  std::string s = target.rfind("aten::", 0) == 0 ? target.substr(6) : target;
  s = s.substr(0, s.find('.'));
  return s.empty() || s[0] != '_' ? s : s.substr(1);
}

}  // namespace

std::vector<Kernel> schedule(const Graph& g, const LoweredGraph& lowered) {
  std::map<const Node*, size_t> position;
  std::vector<size_t> impure_before;  // impure calls before each node
  size_t impure = 0;
  for (const auto& n : g.nodes()) {
    position[n.get()] = impure_before.size();
    impure_before.push_back(impure);
    if (n->kind() == NodeKind::Call && n->is_impure()) ++impure;
  }
  const auto users = g.users();
  std::map<const Node*, int> kernel_of;
  std::vector<const PointwiseNode*> roots;
  std::ostringstream fusion;

  // Users come after their producers, so walking backwards sees every user's kernel first.
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    const Node* n = it->get();
    auto pw = lowered.pointwise.find(n);
    if (pw == lowered.pointwise.end()) continue;
    const PointwiseNode& p = pw->second;
    std::string why;
    int target = -1;
    auto u = users.find(n);
    if (u == users.end() || u->second.empty()) why = "it has no users";
    for (const Node* user : u == users.end() ? std::vector<Node*>{} : u->second) {
      if (!why.empty()) break;
      auto c = lowered.pointwise.find(user);
      if (user->kind() == NodeKind::Output) {
        why = "it is a graph output";
      } else if (c == lowered.pointwise.end()) {
        why = "%" + user->name() + " is not pointwise";
      } else if (c->second.sizes != p.sizes || c->second.dtype != p.dtype) {
        why = "%" + user->name() + " has other sizes or dtype";
      } else if (impure_before[position[user]] != impure_before[position[n]]) {
        why = "an impure call lies between it and %" + user->name();
      } else if (target >= 0 && kernel_of.at(user) != target) {
        why = "its users are in different kernels";
      } else {
        target = kernel_of.at(user);
      }
    }
    if (why.empty()) {
      kernel_of[n] = target;
      fusion << "fused %" << n->name() << " into its users' kernel (root %" << roots[target]->node->name() << ")\n";
    } else {
      kernel_of[n] = static_cast<int>(roots.size());
      roots.push_back(&p);
      fusion << "materialized %" << n->name() << ": " << why << "\n";
    }
  }

  // Kernels in the order of their roots; nodes in graph order.
  std::vector<int> order(roots.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return position[roots[a]->node] < position[roots[b]->node]; });
  std::vector<int> renumber(roots.size());
  std::vector<Kernel> kernels(roots.size());
  for (size_t k = 0; k < order.size(); ++k) {
    renumber[order[k]] = static_cast<int>(k);
    kernels[k].root = roots[order[k]];
  }
  for (const auto& n : g.nodes()) {
    auto k = kernel_of.find(n.get());
    if (k != kernel_of.end()) kernels[renumber[k->second]].nodes.push_back(&lowered.pointwise.at(n.get()));
  }
  std::ostringstream sched;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::set<std::string> ops;
    for (const PointwiseNode* p : kernels[k].nodes) ops.insert(base_name(p->node->target()));
    std::string name = "cpp_fused";
    int shown = 0;
    for (const std::string& o : ops)
      if (shown++ < 6) name += "_" + o;
    kernels[k].name = name + "_" + std::to_string(k);
    sched << "kernel " << kernels[k].name << ": " << scalar_type_name(kernels[k].root->dtype)
          << IntArrayRef(kernels[k].root->sizes) << ", writes %" << kernels[k].root->node->name() << ", computes";
    for (const PointwiseNode* p : kernels[k].nodes) sched << " %" << p->node->name();
    sched << "\n";
  }
  for (const auto& n : g.nodes()) {
    auto r = lowered.roles.find(n.get());
    if (r != lowered.roles.end() && r->second == NodeRole::Extern)
      sched << "extern %" << n->name() << " = " << n->target() << "\n";
  }
  EMBER_LOG_ARTIFACT(fusion) << "fusion decisions of graph " << g.name() << " (" << kernels.size() << " kernels)\n"
                             << fusion.str();
  EMBER_LOG_ARTIFACT(schedule) << "schedule of graph " << g.name() << ": " << kernels.size() << " kernels\n"
                               << sched.str();
  return kernels;
}

}  // namespace ember::inductor
