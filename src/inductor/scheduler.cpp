// inductor/scheduler.cpp — groups pointwise nodes into kernels (vertical fusion of
// pointwise chains, row prologues and epilogues, extra outputs, sibling fusion) and writes
// the `schedule` and `fusion` artifacts. The rule is in
// pipeline.h; see Note [inductor] (docs/notes/inductor.md).
#include <algorithm>
#include <map>
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

/// Whether two pointwise nodes run over one index space: equal sizes, and over size
/// symbols equal expressions (two symbols may share an example value).
bool same_sizes(const PointwiseNode& a, const PointwiseNode& b) {
  return a.sizes == b.sizes && a.sym_sizes == b.sym_sizes;
}
/// Whether pointwise node `p` runs over a row node's input (`in`) or output space.
bool over_row_space(const PointwiseNode& p, const RowNode& r, bool in) {
  return p.sizes == (in ? r.in_sizes : r.out_sizes) && p.sym_sizes == (in ? r.sym_in_sizes : r.sym_out_sizes);
}

}  // namespace

bool row_shaped_epilogue(const RowNode& r) {
  return r.is_reduction() && r.reduces_last_dim_only() && r.out_sizes.size() == r.in_sizes.size() &&
         r.out_sizes != r.in_sizes;
}

bool joins_rows(const RowNode& first, const RowNode& r) {
  return (r.kind == RowKind::Sum || r.kind == RowKind::Mean) && row_shaped_epilogue(first) &&
         first.in_sizes == r.in_sizes && first.sym_in_sizes == r.sym_in_sizes && first.reduced == r.reduced &&
         first.dtype == r.dtype;
}

std::vector<Kernel> schedule(const Graph& g, const LoweredGraph& lowered) {
  bisect_begin(BisectSubsystem::Fusions, g.name());
  std::map<const Node*, size_t> position;
  std::vector<size_t> impure_before;  // impure calls before each node
  size_t impure = 0;
  for (const auto& n : g.nodes()) {
    position[n.get()] = impure_before.size();
    impure_before.push_back(impure);
    if (n->kind() == NodeKind::Call && n->is_impure()) ++impure;
  }
  // A recomputed node reads only graph inputs and extern results: it is no node's reader
  // at run time (its readers compute its body themselves).
  auto users = g.users();
  for (auto& [node, readers] : users)
    std::erase_if(readers, [&](const Node* r) { return lowered.recomputed.count(r) > 0; });
  std::map<const Node*, int> kernel_of;
  struct Building {
    const PointwiseNode* root = nullptr;
    const RowNode* row = nullptr;
    /// Pointwise nodes it stores besides its root (read outside the kernel, or the
    /// outputs of a sibling kernel merged into it).
    std::vector<const PointwiseNode*> extra;
    /// Further reductions over `row`'s rows, read by its row-shaped epilogue.
    std::vector<const RowNode*> more_rows;
    size_t run = 0;       // the position it runs at
    bool merged = false;  // merged into a sibling
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
  // The members of kernel k that its row nodes' inputs are computed from (their
  // prologues): a further row read by one of them would be needed before its own pass.
  auto feeding_rows = [&](int k) {
    std::set<const Node*> out;
    std::vector<const Node*> todo;
    const Building& b = built[k];
    if (b.row && b.row->input.kind == PwOp::Kind::Load) todo.push_back(b.row->input.value.node);
    for (const RowNode* r : b.more_rows)
      if (r->input.kind == PwOp::Kind::Load) todo.push_back(r->input.value.node);
    while (!todo.empty()) {
      const Node* m = todo.back();
      todo.pop_back();
      auto km = kernel_of.find(m);
      if (km == kernel_of.end() || km->second != k || !lowered.pointwise.count(m) || !out.insert(m).second) continue;
      for (const Arg& a : m->args())
        if (a.kind == Arg::Kind::Value) todo.push_back(a.value.node);
    }
    return out;
  };
  // When a user reads a stored buffer: at its own position, or at its kernel's.
  auto read_at = [&](const Node* user) {
    auto k = kernel_of.find(user);
    return k != kernel_of.end() ? built[k->second].run : position[user];
  };

  // Users come after their producers, so walking backwards sees every user's kernel first.
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    const Node* n = it->get();
    auto pw = lowered.pointwise.find(n);
    auto rw = lowered.rows.find(n);
    if (pw == lowered.pointwise.end() && rw == lowered.rows.end()) continue;
    if (lowered.recomputed.count(n)) {
      fusion << "recomputed %" << n->name() << " by every reader: no kernel computes it (Note [recomputed scalars])\n";
      continue;
    }
    std::string why;
    int target = -1;
    bool prologue = false;
    // Users that read the stored buffer (a pointwise node may still fuse into its
    // pointwise users' kernel, storing its value there as an extra output).
    std::vector<const Node*> outside;
    std::string outside_why;
    auto read_outside = [&](const Node* user, std::string reason) {
      outside.push_back(user);
      if (outside_why.empty()) outside_why = std::move(reason);
    };
    auto u = users.find(n);
    if (u == users.end() || u->second.empty()) why = "it has no users";
    for (const Node* user : u == users.end() ? std::vector<Node*>{} : u->second) {
      if (!why.empty()) break;
      auto c = lowered.pointwise.find(user);
      auto cr = lowered.rows.find(user);
      if (user->kind() == NodeKind::Output) {
        if (rw != lowered.rows.end()) why = "it is a graph output";
        else read_outside(user, "it is a graph output");
      } else if (impure_between(n, user)) {
        why = "an impure call lies between it and %" + user->name();
      } else if (rw != lowered.rows.end()) {
        // Epilogue: a row node joins the kernel of its pointwise users over its output —
        // or, for a reduction over the last dim kept as size 1, of users over its input's
        // sizes (a row-shaped epilogue: softmax's backward `gy - y * sum(gy, -1, true)`);
        // a second sum or mean over the same rows joins a kernel that has one (layer
        // norm's backward: two means, each its own pass over the row, one kernel).
        const RowNode& r = rw->second;
        const bool row_shaped = c != lowered.pointwise.end() && over_row_space(c->second, r, true) && row_shaped_epilogue(r);
        const Building* k = c != lowered.pointwise.end() ? &built[kernel_of.at(user)] : nullptr;
        if (c == lowered.pointwise.end()) {
          why = "%" + user->name() + " is not pointwise";
        } else if (!reads_only(user, n, 0, -1)) {
          why = "%" + user->name() + " reads its other outputs";
        } else if ((!over_row_space(c->second, r, false) && !row_shaped) || c->second.dtype != r.dtype) {
          why = "%" + user->name() + " has other sizes or dtype";
        } else if (k->row && !(row_shaped && joins_rows(*k->row, r))) {
          why = "%" + user->name() + "'s kernel already has a reduction" +
                (row_shaped ? " (over other rows, or not a sum or mean)" : "");
        } else if (k->row && feeding_rows(kernel_of.at(user)).count(user)) {
          why = "%" + user->name() + " computes the input of its kernel's reduction";
        } else if (k->root->mask) {
          why = "%" + user->name() + "'s kernel stores a comparison's mask";
        } else if (!built[kernel_of.at(user)].extra.empty()) {
          why = "%" + user->name() + "'s kernel stores several outputs";
        } else if (target >= 0 && kernel_of.at(user) != target) {
          why = "its users are in different kernels";
        } else {
          target = kernel_of.at(user);
        }
      } else if (cr != lowered.rows.end()) {
        // Prologue: a pointwise node read only as a row node's input, elementwise.
        const RowNode& r = cr->second;
        if (!reads_only(user, n, 0, 0) || !over_row_space(pw->second, r, true) || r.dtype != pw->second.dtype) {
          why = "%" + user->name() + " reads it other than elementwise as its input";
        } else if (target >= 0 && kernel_of.at(user) != target) {
          why = "its users are in different kernels";
        } else {
          target = kernel_of.at(user);
          prologue = true;
        }
      } else if (c == lowered.pointwise.end()) {
        read_outside(user, "%" + user->name() + " is not pointwise");
      } else if (!same_sizes(c->second, pw->second) || c->second.dtype != pw->second.dtype) {
        read_outside(user, "%" + user->name() + " has other sizes or dtype");
      } else if (target >= 0 && kernel_of.at(user) != target) {
        why = "its users are in different kernels";
      } else {
        target = kernel_of.at(user);
      }
    }
    if (why.empty() && !outside.empty()) {
      // Stored by its users' kernel as an extra output, when that kernel is pointwise
      // and runs before every outside reader.
      if (target < 0) {
        why = outside_why;
      } else if (prologue || built[target].row) {
        why = outside_why + " (and its users' kernel has a reduction)";
      } else {
        for (const Node* user : outside)
          if (why.empty() && read_at(user) <= built[target].run)
            why = outside_why + " (and %" + user->name() + " reads it before its users' kernel runs)";
      }
    }
    // Each fusion is one decision of the compiler bisector (Note [minifier]); past its
    // limit the node is materialized, as when a rule forbids the fusion.
    if (why.empty()) {
      const std::string what = rw != lowered.rows.end()
                                   ? "fused %" + n->name() + " (" + row_kind_name(rw->second.kind) +
                                         " row) with its epilogue (root %" + built[target].root_node()->name() + ")"
                                   : "fused %" + n->name() + " into its users' kernel (root %" +
                                         built[target].root_node()->name() + (prologue ? ", as a prologue" : "") + ")";
      if (!bisect_allows(BisectSubsystem::Fusions, what)) why = bisect_disabled_reason(BisectSubsystem::Fusions);
    }
    if (why.empty() && rw != lowered.rows.end()) {
      kernel_of[n] = target;
      const bool more = built[target].row != nullptr;
      if (more) built[target].more_rows.push_back(&rw->second);
      else built[target].row = &rw->second;
      fusion << "fused %" << n->name() << " (" << row_kind_name(rw->second.kind) << " row) with its epilogue (root %"
             << built[target].root_node()->name() << ")"
             << (more ? ", a further reduction over the rows of %" + built[target].row->node->name() : "") << "\n";
    } else if (why.empty()) {
      kernel_of[n] = target;
      if (!outside.empty()) built[target].extra.push_back(&pw->second);
      fusion << "fused %" << n->name() << " into its users' kernel (root %" << built[target].root_node()->name()
             << (prologue ? ", as a prologue" : "") << ")"
             << (outside.empty() ? "" : ", stored there as an extra output: " + outside_why) << "\n";
    } else {
      kernel_of[n] = static_cast<int>(built.size());
      Building b;
      if (pw != lowered.pointwise.end()) b.root = &pw->second;
      else b.row = &rw->second;
      b.run = position[n];
      built.push_back(b);
      fusion << "materialized %" << n->name() << ": " << why << "\n";
    }
  }

  // Sibling (horizontal) fusion: pointwise kernels over the same sizes and dtype that read
  // a common buffer become one kernel storing all their outputs, run at the earlier one's
  // position when everything the later kernel reads is available there, else at the later
  // one's when nothing reads the earlier one's outputs before it (either way no path leads
  // from one to the other through another kernel or an extern call), and no impure call
  // lies between the two positions.
  {
    std::vector<int> by_run;
    for (size_t k = 0; k < built.size(); ++k)
      if (!built[k].row) by_run.push_back(static_cast<int>(k));
    std::sort(by_run.begin(), by_run.end(), [&](int a, int b) { return built[a].run < built[b].run; });
    std::map<int, std::vector<const Node*>> members;
    for (const auto& [node, k] : kernel_of) members[k].push_back(node);
    // The values a kernel loads from outside itself.
    auto reads = [&](int k) {
      std::set<const Node*> own(members[k].begin(), members[k].end());
      std::map<const Node*, const Node*> out;  // value -> a member reading it
      for (const Node* m : members[k])
        for (const PwOp& op : lowered.pointwise.at(m).body)
          if (op.kind == PwOp::Kind::Load && !own.count(op.value.node)) out.emplace(op.value.node, m);
      return out;
    };
    auto name_of = [&](int k) { return "%" + built[k].root_node()->name(); };
    auto base_of = [&](const Node* v) {
      for (auto r = lowered.roles.find(v); r != lowered.roles.end() && r->second == NodeRole::View &&
                                           !v->args().empty() && v->args()[0].kind == Arg::Kind::Value;
           r = lowered.roles.find(v))
        v = v->args()[0].value.node;
      return v;
    };
    for (size_t i = 0; i < by_run.size(); ++i) {
      const int a = by_run[i];
      if (built[a].merged) continue;
      for (size_t j = i + 1; j < by_run.size(); ++j) {
        const int b = by_run[j];
        if (built[b].merged || !same_sizes(*built[b].root, *built[a].root) ||
            built[b].root->dtype != built[a].root->dtype)
          continue;
        const auto ra = reads(a), rb = reads(b);
        // A common buffer: the same value, or views of one (x and x.t()).
        std::set<const Node*> bases_a;
        for (const auto& [v, m] : ra) bases_a.insert(base_of(v));
        const Node* common = nullptr;
        for (const auto& [v, m] : rb)
          if (bases_a.count(base_of(v))) common = base_of(v);
        if (!common) continue;
        // At a's position (b hoisted): everything b reads is computed before it.
        std::string why;
        for (const auto& [v, m] : rb)
          if (why.empty() && read_at(v) >= built[a].run)
            why = "it reads %" + v->name() + ", which is not computed before " + name_of(a) + "'s kernel runs";
        // Else at b's position (a delayed): b reads nothing of a, and nothing outside a
        // reads a's outputs before b's position.
        std::string why_delay;
        const std::set<const Node*> own_a(members[a].begin(), members[a].end());
        for (const auto& [v, m] : rb)
          if (why_delay.empty() && own_a.count(v)) why_delay = "it reads %" + v->name();
        std::vector<const PointwiseNode*> stored_a = built[a].extra;
        stored_a.push_back(built[a].root);
        for (const PointwiseNode* o : stored_a) {
          auto ou = users.find(o->node);
          for (const Node* user : ou == users.end() ? std::vector<Node*>{} : ou->second)
            if (why_delay.empty() && !own_a.count(user) && read_at(user) <= built[b].run)
              why_delay = "%" + user->name() + " reads %" + o->node->name() + " before " + name_of(b) + "'s kernel runs";
        }
        const bool delay = !why.empty() && why_delay.empty();
        if (delay) why.clear();
        else if (!why.empty()) why += "; and " + why_delay;
        if (why.empty() && impure_before[built[a].run] != impure_before[built[b].run])
          why = "an impure call lies between them";
        if (why.empty() &&
            !bisect_allows(BisectSubsystem::Fusions, "fused " + name_of(b) + "'s kernel into sibling " + name_of(a) +
                                                         "'s (both read %" + common->name() + ")"))
          why = bisect_disabled_reason(BisectSubsystem::Fusions);
        if (!why.empty()) {
          fusion << "kept " << name_of(b) << "'s kernel apart from sibling " << name_of(a) << "'s (both read %"
                 << common->name() << "): " << why << "\n";
          continue;
        }
        fusion << "fused " << name_of(b) << "'s kernel into sibling " << name_of(a) << "'s (both read %"
               << common->name() << ", over " << scalar_type_name(built[a].root->dtype)
               << IntArrayRef(built[a].root->sizes) << "; no path between them): one kernel, several outputs"
               << (delay ? ", run at " + name_of(b) + "'s position" : "") << "\n";
        if (delay) built[a].run = built[b].run;
        built[a].extra.push_back(built[b].root);
        for (const PointwiseNode* e : built[b].extra) built[a].extra.push_back(e);
        for (const Node* m : members[b]) {
          kernel_of[m] = a;
          members[a].push_back(m);
        }
        members[b].clear();
        built[b].merged = true;
      }
    }
  }

  // Kernels in the order they run; nodes in graph order.
  std::vector<int> order;
  for (size_t k = 0; k < built.size(); ++k)
    if (!built[k].merged) order.push_back(static_cast<int>(k));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return built[a].run < built[b].run; });
  std::vector<int> renumber(built.size(), -1);
  std::vector<Kernel> kernels(order.size());
  std::vector<const Node*> node_at(position.size());
  for (const auto& [node, p] : position) node_at[p] = node;
  for (size_t k = 0; k < order.size(); ++k) {
    const Building& b = built[order[k]];
    renumber[order[k]] = static_cast<int>(k);
    kernels[k].root = b.root;
    kernels[k].row = b.row;
    kernels[k].more_rows = b.more_rows;
    kernels[k].run_at = node_at[b.run];
  }
  for (const auto& n : g.nodes()) {
    auto k = kernel_of.find(n.get());
    if (k == kernel_of.end() || !lowered.pointwise.count(n.get())) continue;
    Kernel& kk = kernels[renumber[k->second]];
    const PointwiseNode* p = &lowered.pointwise.at(n.get());
    kk.nodes.push_back(p);
    const Building& b = built[k->second];
    if (!kk.row && (p == b.root || std::find(b.extra.begin(), b.extra.end(), p) != b.extra.end()))
      kk.outputs.push_back(p);
  }
  std::ostringstream sched;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::set<std::string> ops;
    for (const PointwiseNode* p : kernels[k].nodes) ops.insert(base_name(p->node->target()));
    if (kernels[k].row) ops.insert(base_name(kernels[k].row->node->target()));
    for (const RowNode* r : kernels[k].more_rows) ops.insert(base_name(r->node->target()));
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
    sched << ", writes";
    if (kk.outputs.empty()) sched << " %" << kk.root_node()->name();
    for (const PointwiseNode* p : kk.outputs) sched << " %" << p->node->name();
    sched << ", computes";
    for (const PointwiseNode* p : kk.nodes) sched << " %" << p->node->name();
    if (kk.row) sched << " (row %" << kk.row->node->name();
    for (const RowNode* r : kk.more_rows) sched << ", row %" << r->node->name();
    if (kk.row) sched << ")";
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
