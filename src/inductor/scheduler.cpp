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
  struct Building {
    const PointwiseNode* root = nullptr;
    const RowNode* row = nullptr;
    const Node* root_node() const { return root ? root->node : row->node; }
  };
  std::vector<Building> built;
  std::ostringstream fusion;
  auto impure_between = [&](const Node* a, const Node* b) { return impure_before[position[a]] != impure_before[position[b]]; };
  // Whether `user` reads output `index` of `n` only, and only through argument `arg`
  // (-1: any argument).
  auto reads_only = [](const Node* user, const Node* n, size_t index, int arg) {
    for (size_t i = 0; i < user->args().size(); ++i) {
      const Arg& a = user->args()[i];
      if (a.kind == Arg::Kind::Value && a.value.node == n &&
          (a.value.index != index || (arg >= 0 && static_cast<int>(i) != arg)))
        return false;
      if (a.kind == Arg::Kind::ValueList)
        for (const auto& v : a.values)
          if (v && v->node == n) return false;
    }
    return true;
  };

  // Users come after their producers, so walking backwards sees every user's kernel first.
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    const Node* n = it->get();
    auto pw = lowered.pointwise.find(n);
    auto rw = lowered.rows.find(n);
    if (pw == lowered.pointwise.end() && rw == lowered.rows.end()) continue;
    std::string why;
    int target = -1;
    bool prologue = false;
    auto u = users.find(n);
    if (u == users.end() || u->second.empty()) why = "it has no users";
    for (const Node* user : u == users.end() ? std::vector<Node*>{} : u->second) {
      if (!why.empty()) break;
      auto c = lowered.pointwise.find(user);
      auto cr = lowered.rows.find(user);
      if (user->kind() == NodeKind::Output) {
        why = "it is a graph output";
      } else if (impure_between(n, user)) {
        why = "an impure call lies between it and %" + user->name();
      } else if (rw != lowered.rows.end()) {
        // Epilogue: a row node joins the kernel of its pointwise users over its output.
        const RowNode& r = rw->second;
        if (c == lowered.pointwise.end()) {
          why = "%" + user->name() + " is not pointwise";
        } else if (!reads_only(user, n, 0, -1)) {
          why = "%" + user->name() + " reads its other outputs";
        } else if (c->second.sizes != r.out_sizes || c->second.dtype != r.dtype) {
          why = "%" + user->name() + " has other sizes or dtype";
        } else if (built[kernel_of.at(user)].row) {
          why = "%" + user->name() + "'s kernel already has a reduction";
        } else if (target >= 0 && kernel_of.at(user) != target) {
          why = "its users are in different kernels";
        } else {
          target = kernel_of.at(user);
        }
      } else if (cr != lowered.rows.end()) {
        // Prologue: a pointwise node read only as a row node's input, elementwise.
        const RowNode& r = cr->second;
        if (!reads_only(user, n, 0, 0) || r.in_sizes != pw->second.sizes || r.dtype != pw->second.dtype) {
          why = "%" + user->name() + " reads it other than elementwise as its input";
        } else if (target >= 0 && kernel_of.at(user) != target) {
          why = "its users are in different kernels";
        } else {
          target = kernel_of.at(user);
          prologue = true;
        }
      } else if (c == lowered.pointwise.end()) {
        why = "%" + user->name() + " is not pointwise";
      } else if (c->second.sizes != pw->second.sizes || c->second.dtype != pw->second.dtype) {
        why = "%" + user->name() + " has other sizes or dtype";
      } else if (target >= 0 && kernel_of.at(user) != target) {
        why = "its users are in different kernels";
      } else {
        target = kernel_of.at(user);
      }
    }
    if (why.empty() && rw != lowered.rows.end()) {
      kernel_of[n] = target;
      built[target].row = &rw->second;
      fusion << "fused %" << n->name() << " (" << row_kind_name(rw->second.kind) << " row) with its epilogue (root %"
             << built[target].root_node()->name() << ")\n";
    } else if (why.empty()) {
      kernel_of[n] = target;
      fusion << "fused %" << n->name() << " into its users' kernel (root %" << built[target].root_node()->name()
             << (prologue ? ", as a prologue" : "") << ")\n";
    } else {
      kernel_of[n] = static_cast<int>(built.size());
      Building b;
      if (pw != lowered.pointwise.end()) b.root = &pw->second;
      else b.row = &rw->second;
      built.push_back(b);
      fusion << "materialized %" << n->name() << ": " << why << "\n";
    }
  }

  // Kernels in the order of their roots; nodes in graph order.
  std::vector<int> order(built.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return position[built[a].root_node()] < position[built[b].root_node()]; });
  std::vector<int> renumber(built.size());
  std::vector<Kernel> kernels(built.size());
  for (size_t k = 0; k < order.size(); ++k) {
    renumber[order[k]] = static_cast<int>(k);
    kernels[k].root = built[order[k]].root;
    kernels[k].row = built[order[k]].row;
  }
  for (const auto& n : g.nodes()) {
    auto k = kernel_of.find(n.get());
    if (k != kernel_of.end() && lowered.pointwise.count(n.get()))
      kernels[renumber[k->second]].nodes.push_back(&lowered.pointwise.at(n.get()));
  }
  std::ostringstream sched;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::set<std::string> ops;
    for (const PointwiseNode* p : kernels[k].nodes) ops.insert(base_name(p->node->target()));
    if (kernels[k].row) ops.insert(base_name(kernels[k].row->node->target()));
    std::string name = "cpp_fused";
    int shown = 0;
    for (const std::string& o : ops)
      if (shown++ < 6) name += "_" + o;
    kernels[k].name = name + "_" + std::to_string(k);
    const Kernel& kk = kernels[k];
    sched << "kernel " << kk.name << ": ";
    if (kk.row)
      sched << row_kind_name(kk.row->kind) << " row kernel over " << scalar_type_name(kk.row->dtype)
            << IntArrayRef(kk.row->in_sizes);
    else
      sched << scalar_type_name(kk.root->dtype) << IntArrayRef(kk.root->sizes);
    sched << ", writes %" << kk.root_node()->name() << ", computes";
    for (const PointwiseNode* p : kk.nodes) sched << " %" << p->node->name();
    if (kk.row) sched << " (row %" << kk.row->node->name() << ")";
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
