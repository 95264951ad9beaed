// debug/minifier.cpp — delta debugging over a graph's nodes, then its input sizes, while
// the same failure persists (repro.h: minify, minify_repro). See Note [minifier]
// (docs/notes/minifier.md) for the steps and their order.
#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <set>

#include "debug/repro.h"
#include "ember/ember.h"
#include "graph/interpreter.h"
#include "graph/rewrite.h"
#include "ops/registry.h"

namespace ember::debug {
namespace {

using Values = std::map<const Node*, std::vector<Tensor>>;

/// A graph and the inputs it fails on.
struct Candidate {
  std::unique_ptr<Graph> graph;
  std::vector<Tensor> inputs;
};

/// What to keep of a graph: Call nodes whose outputs become inputs, a cut (keep the nodes
/// up to that position; the outputs are then the values no kept node reads), or outputs.
struct Plan {
  std::set<const Node*> to_input;
  std::optional<size_t> cut;
  std::optional<std::vector<ValueRef>> outputs;
};

size_t call_count(const Graph& g) { return g.op_count(); }

std::vector<const Node*> calls_of(const Graph& g) {
  std::vector<const Node*> out;
  for (const auto& n : g.nodes())
    if (n->kind() == NodeKind::Call) out.push_back(n.get());
  return out;
}

template <typename F>
void for_each_ref(const Node& n, F&& f) {
  for (const Arg& a : n.args()) {
    if (a.kind == Arg::Kind::Value) f(a.value);
    if (a.kind == Arg::Kind::ValueList)
      for (const auto& v : a.values)
        if (v) f(*v);
  }
}

/// Every Call node's values on `inputs` (copies: later in-place ops do not change them).
/// Empty when eager itself fails.
Values eager_values(const Graph& g, const std::vector<Tensor>& inputs) {
  Values env, saved;
  try {
    NoGradGuard no_grad;
    const std::vector<Node*> ins = g.inputs();
    auto value_of = [&](const ValueRef& v) -> const Tensor& { return env.at(v.node).at(v.index); };
    size_t next = 0;
    for (const auto& np : g.nodes()) {
      const Node& n = *np;
      switch (n.kind()) {
        case NodeKind::Placeholder:
        case NodeKind::Attribute:
          env[&n] = {with_geometry(inputs.at(next), ins.at(next)->meta().at(0))};
          ++next;
          break;
        case NodeKind::Constant:
          env[&n] = {g.constants().at(n.target())};
          break;
        case NodeKind::Call: {
          env[&n] = graph::run_call_node(n, value_of);
          std::vector<Tensor> copies;
          for (const Tensor& t : env[&n]) copies.push_back(t.defined() ? t.clone() : t);
          saved[&n] = std::move(copies);
          break;
        }
        case NodeKind::Output:
          break;
      }
    }
  } catch (const Error&) {
    return {};
  }
  return saved;
}

/// Whether a node's outputs can become inputs: every output a defined CPU tensor whose
/// value eager computed.
bool can_be_input(const Node& n, const Values& values) {
  auto it = values.find(&n);
  if (it == values.end() || it->second.size() != n.num_outputs()) return false;
  for (size_t k = 0; k < n.num_outputs(); ++k) {
    const TensorMeta& m = n.meta()[k];
    if (m.undefined || !m.device.is_cpu() || !it->second[k].defined()) return false;
  }
  return true;
}

std::optional<Candidate> build(const Graph& g, const std::vector<Tensor>& inputs, const Values& values, const Plan& p) {
  std::map<const Node*, size_t> pos;
  for (size_t i = 0; i < g.nodes().size(); ++i) pos[g.nodes()[i].get()] = i;
  auto kept_call = [&](const Node* n) {
    return n->kind() == NodeKind::Call && (!p.cut || pos.at(n) <= *p.cut) && !p.to_input.contains(n);
  };
  std::vector<ValueRef> outs;
  if (p.cut) {
    std::set<std::pair<const Node*, uint32_t>> read;
    for (const auto& n : g.nodes())
      if (kept_call(n.get())) for_each_ref(*n, [&](const ValueRef& v) { read.insert({v.node, v.index}); });
    for (const auto& n : g.nodes()) {
      if (!kept_call(n.get())) continue;
      for (uint32_t k = 0; k < n->num_outputs(); ++k)
        if (!n->meta()[k].undefined && !read.contains({n.get(), k})) outs.push_back(ValueRef{n.get(), k});
    }
  } else {
    outs = p.outputs ? *p.outputs : g.outputs();
  }
  std::erase_if(outs, [&](const ValueRef& v) { return !kept_call(v.node); });
  if (outs.empty()) return std::nullopt;

  // The nodes the outputs need.
  std::set<const Node*> needed;
  std::vector<const Node*> work;
  for (const ValueRef& v : outs) work.push_back(v.node);
  std::set<std::pair<const Node*, uint32_t>> input_values;  // outputs of to_input nodes read
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!needed.insert(n).second || !kept_call(n)) continue;
    for_each_ref(*n, [&](const ValueRef& v) {
      if (p.to_input.contains(v.node)) input_values.insert({v.node, v.index});
      work.push_back(v.node);
    });
  }

  Candidate c;
  c.graph = std::make_unique<Graph>(g.name());
  Graph& out = *c.graph;
  std::set<std::string> names;
  for (const auto& n : g.nodes()) names.insert(n->name());
  std::map<const Node*, std::vector<ValueRef>> mapped;
  size_t next_input = 0;
  for (const auto& np : g.nodes()) {
    const Node* n = np.get();
    if (n->kind() != NodeKind::Placeholder && n->kind() != NodeKind::Attribute) continue;
    const size_t index = next_input++;
    if (!needed.contains(n)) continue;
    Node* m = out.add_named(n->kind(), n->name(), n->target(), nullptr, {}, n->meta(), n->loc(), n->grad_enabled());
    mapped[n] = {m->out(0)};
    c.inputs.push_back(inputs.at(index));
  }
  for (const auto& np : g.nodes()) {
    const Node* n = np.get();
    if (!p.to_input.contains(n)) continue;
    for (uint32_t k = 0; k < n->num_outputs(); ++k) {
      if (!input_values.contains({n, k})) continue;
      auto it = values.find(n);
      if (it == values.end() || k >= it->second.size() || !it->second[k].defined()) return std::nullopt;
      std::string name = n->num_outputs() == 1 ? n->name() : n->name() + "_" + std::to_string(k);
      if (n->num_outputs() != 1)
        while (!names.insert(name).second) name += "_";
      Node* m = out.add_named(NodeKind::Placeholder, name, name, nullptr, {}, {n->meta()[k]}, n->loc(), true);
      mapped[n].resize(n->num_outputs());
      mapped[n][k] = m->out(0);
      c.inputs.push_back(it->second[k]);
    }
  }
  auto map_ref = [&](const ValueRef& v) { return mapped.at(v.node).at(v.index); };
  for (const auto& np : g.nodes()) {
    const Node* n = np.get();
    if (!needed.contains(n)) continue;
    if (n->kind() == NodeKind::Constant) {
      Node* m = out.add_named(NodeKind::Constant, n->name(), n->target(), nullptr, {}, n->meta(), n->loc(),
                              n->grad_enabled());
      if (auto it = g.constants().find(n->target()); it != g.constants().end())
        out.set_constant(n->target(), it->second);
      mapped[n] = {m->out(0)};
    } else if (n->kind() == NodeKind::Call && kept_call(n)) {
      std::vector<Arg> args = n->args();
      for (Arg& a : args) {
        if (a.kind == Arg::Kind::Value) a.value = map_ref(a.value);
        if (a.kind == Arg::Kind::ValueList)
          for (auto& v : a.values)
            if (v) v = map_ref(*v);
      }
      Node* m = out.add_named(NodeKind::Call, n->name(), n->target(), n->op(), std::move(args), n->meta(), n->loc(),
                              n->grad_enabled());
      std::vector<ValueRef>& refs = mapped[n];
      for (uint32_t k = 0; k < n->num_outputs(); ++k) refs.push_back(m->out(k));
    }
  }
  std::vector<ValueRef> new_outs;
  for (const ValueRef& v : outs) new_outs.push_back(map_ref(v));
  out.set_output(std::move(new_outs));
  return c;
}

/// Argument names whose int or int-list literals hold sizes (view, expand, reshape,
/// factories, narrow, slice): the literals resize() renames along with the inputs.
bool holds_sizes(const std::string& name) {
  return name == "size" || name == "shape" || name == "length" || name == "end" || name == "split_size";
}

/// `g` with every input dimension of size `from` made `to` (dense strides in the old
/// order), the literals of size arguments equal to `from` likewise, and the geometry of
/// every call recomputed by its meta function; the inputs are the old ones' leading slices.
/// nullopt when no input has such a dimension or a meta function rejects the new sizes.
std::optional<Candidate> resize(const Graph& g, const std::vector<Tensor>& inputs, int64_t from, int64_t to) {
  Candidate c;
  c.graph = std::make_unique<Graph>(g.name());
  Graph& out = *c.graph;
  // Calls get fresh names from their ops (the builder's); inputs and constants keep theirs.
  std::vector<std::string> names;
  for (const auto& n : g.nodes())
    if (n->kind() != NodeKind::Call) names.push_back(n->name());
  out.reserve_names(std::move(names));
  std::map<const Node*, std::vector<ValueRef>> mapped;
  auto map_ref = [&](const ValueRef& v) { return mapped.at(v.node).at(v.index); };
  bool changed = false;
  size_t next_input = 0;
  try {
    for (const auto& np : g.nodes()) {
      const Node* n = np.get();
      switch (n->kind()) {
        case NodeKind::Placeholder:
        case NodeKind::Attribute: {
          TensorMeta m = n->meta().at(0);
          Tensor value = inputs.at(next_input++);
          bool resized = false;
          for (size_t d = 0; d < m.sizes.size(); ++d) {
            if (m.sizes[d] != from) continue;
            m.sizes[d] = to;
            value = value.narrow(static_cast<int64_t>(d), 0, to);
            resized = true;
          }
          if (resized) {
            // Dense strides, the dimensions in the old order (outermost = largest stride).
            std::vector<size_t> order(m.sizes.size());
            std::iota(order.begin(), order.end(), 0);
            const std::vector<int64_t> old = n->meta().at(0).strides;
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return old[a] > old[b]; });
            int64_t stride = 1;
            for (auto it = order.rbegin(); it != order.rend(); ++it) {
              m.strides[*it] = stride;
              stride *= std::max<int64_t>(m.sizes[*it], 1);
            }
            m.storage_offset = 0;
            changed = true;
          }
          Node* node = out.add_named(n->kind(), n->name(), n->target(), nullptr, {}, {m}, n->loc(), n->grad_enabled());
          mapped[n] = {node->out(0)};
          c.inputs.push_back(value);
          break;
        }
        case NodeKind::Constant: {
          Node* node = out.add_named(NodeKind::Constant, n->name(), n->target(), nullptr, {}, n->meta(), n->loc(),
                                     n->grad_enabled());
          if (auto it = g.constants().find(n->target()); it != g.constants().end())
            out.set_constant(n->target(), it->second);
          mapped[n] = {node->out(0)};
          break;
        }
        case NodeKind::Call: {
          std::vector<graph::BuildArg> args;
          const auto& schema = n->op()->schema.arguments;
          for (size_t i = 0; i < n->args().size(); ++i) {
            Arg a = n->args()[i];
            if (a.kind == Arg::Kind::Value) a.value = map_ref(a.value);
            if (a.kind == Arg::Kind::ValueList)
              for (auto& v : a.values)
                if (v) v = map_ref(*v);
            if (a.kind == Arg::Kind::Literal && i < schema.size() && holds_sizes(schema[i].name)) {
              if (a.literal.is_int_list()) {
                std::vector<int64_t> sizes = a.literal.to_int_list();
                for (int64_t& s : sizes) s = s == from ? to : s;
                a.literal = IValue(std::move(sizes));
              } else if (a.literal.is_int() && a.literal.to_int() == from) {
                a.literal = IValue(to);
              }
            }
            args.emplace_back(std::move(a));
          }
          graph::GraphBuilder b(out, n->loc(), n->grad_enabled());
          Node* node = b.call_node(n->target(), std::move(args));
          std::vector<ValueRef>& refs = mapped[n];
          for (uint32_t k = 0; k < node->num_outputs(); ++k) refs.push_back(node->out(k));
          break;
        }
        case NodeKind::Output: {
          std::vector<ValueRef> outs;
          for (const ValueRef& v : g.outputs()) outs.push_back(map_ref(v));
          out.set_output(std::move(outs));
          break;
        }
      }
    }
  } catch (const Error&) {
    return std::nullopt;  // a meta function (or a list-returning op's count) rejects the sizes
  }
  if (!changed) return std::nullopt;
  return c;
}

class Minifier {
 public:
  Minifier(const Graph& g, const std::vector<Tensor>& inputs, const Checker& check, const Failure& target,
           const MinifyOptions& options)
      : check_(check), target_(target), options_(options), start_compiles_(check.compiles) {
    best_.graph = g.clone();
    best_.inputs = inputs;
    original_calls_ = call_count(g);
  }

  MinifyResult run() {
    const std::optional<Failure> first = check_(*best_.graph, best_.inputs);
    if (!first || !first->same_as(target_)) {
      EMBER_FAIL_KIND(ErrorKind::ValueError)
          << "minifier: graph " << best_.graph->name() << " does not fail as expected: expected " << target_.str()
          << ", got " << (first ? first->str() : std::string("no failure"));
    }
    say("graph " + best_.graph->name() + " fails: " + first->str() + "; minifying " + std::to_string(original_calls_) +
        " ops");
    values_ = eager_values(*best_.graph, best_.inputs);
    for (int round = 0; round < 4 && !stopped(); ++round) {
      const size_t before = call_count(*best_.graph) + best_.inputs.size() + best_.graph->outputs().size();
      truncate_suffix();
      drop_outputs();
      nodes_to_inputs();
      consolidate_inputs();
      const size_t after = call_count(*best_.graph) + best_.inputs.size() + best_.graph->outputs().size();
      if (after == before) break;
    }
    if (options_.shrink_inputs) shrink_inputs();
    MinifyResult r;
    r.original_calls = original_calls_;
    r.compiles = compiles();
    r.interrupted = options_.interrupt && options_.interrupt->load();
    say(std::string(r.interrupted ? "interrupted; best so far: " : "done: ") +
        std::to_string(call_count(*best_.graph)) + " of " + std::to_string(original_calls_) + " ops left, " +
        std::to_string(r.compiles) + " compiles tried");
    r.graph = std::move(best_.graph);
    r.inputs = std::move(best_.inputs);
    return r;
  }

 private:
  size_t compiles() const { return check_.compiles - start_compiles_; }

  bool stopped() const {
    return (options_.interrupt && options_.interrupt->load()) ||
           (options_.max_compiles && compiles() >= options_.max_compiles);
  }

  void say(const std::string& line) const {
    if (options_.progress) {
      options_.progress(line);
    } else {
      std::cerr << "[minifier] " << line << std::endl;
    }
  }

  /// Checks `c`; keeps it as the best when it fails the same way.
  bool attempt(std::optional<Candidate> c, const std::string& what) {
    if (!c || stopped() || call_count(*c->graph) == 0) return false;
    const std::optional<Failure> f = check_(*c->graph, c->inputs);
    const bool same = f && f->same_as(target_);
    say(what + ": " +
        (same ? "still fails"
         : f  ? "fails differently (" + f->str() + ")"
              : "passes") +
        " [" + std::to_string(call_count(same ? *c->graph : *best_.graph)) + " ops left, " +
        std::to_string(compiles()) + " compiles]");
    if (!same) return false;
    best_ = std::move(*c);
    values_ = eager_values(*best_.graph, best_.inputs);
    if (options_.on_improved) options_.on_improved(*best_.graph, best_.inputs);
    return true;
  }

  /// The smallest prefix that still fails, by bisection over the cut point.
  void truncate_suffix() {
    size_t lo = 0, hi = call_count(*best_.graph);
    if (hi < 2) return;
    hi -= 1;
    while (lo < hi && !stopped()) {
      const size_t mid = (lo + hi) / 2;
      const std::vector<const Node*> calls = calls_of(*best_.graph);
      const Node* at = calls[mid];
      size_t pos = 0;
      while (best_.graph->nodes()[pos].get() != at) ++pos;
      Plan p;
      p.cut = pos;
      if (attempt(build(*best_.graph, best_.inputs, values_, p), "cut after %" + at->name())) {
        hi = std::min(mid, call_count(*best_.graph) - 1);
      } else {
        lo = mid + 1;
      }
    }
  }

  void drop_outputs() {
    size_t n = best_.graph->outputs().size();
    for (size_t gran = (n + 1) / 2; gran >= 1 && n > 1 && !stopped(); gran /= 2) {
      for (size_t start = 0; start < best_.graph->outputs().size() && !stopped();) {
        std::vector<ValueRef> outs = best_.graph->outputs();
        if (outs.size() <= 1) return;
        const size_t end = std::min(start + gran, outs.size());
        if (end - start == outs.size()) break;
        std::vector<ValueRef> kept(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(start));
        kept.insert(kept.end(), outs.begin() + static_cast<ptrdiff_t>(end), outs.end());
        Plan p;
        p.outputs = kept;
        if (!attempt(build(*best_.graph, best_.inputs, values_, p),
                     "drop outputs " + std::to_string(start) + ".." + std::to_string(end - 1)))
          start = end;
      }
      n = best_.graph->outputs().size();
      if (gran == 1) break;
    }
  }

  void nodes_to_inputs() {
    for (size_t gran = (call_count(*best_.graph) + 1) / 2; gran >= 1 && !stopped(); gran /= 2) {
      for (size_t start = 0; !stopped();) {
        std::vector<const Node*> calls = calls_of(*best_.graph);
        if (start >= calls.size() || calls.size() <= 1) break;
        const size_t end = std::min(start + gran, calls.size());
        Plan p;
        std::string names;
        for (size_t i = start; i < end; ++i) {
          if (!can_be_input(*calls[i], values_)) continue;
          p.to_input.insert(calls[i]);
          names += (names.empty() ? "%" : ", %") + calls[i]->name();
        }
        if (p.to_input.empty() || p.to_input.size() == calls.size() ||
            !attempt(build(*best_.graph, best_.inputs, values_, p), "make inputs of " + names))
          start = end;
      }
      if (gran == 1) break;
    }
  }

  /// Calls that read only inputs and constants become inputs, all at once.
  void consolidate_inputs() {
    std::vector<const Node*> calls = calls_of(*best_.graph);
    Plan p;
    for (const Node* n : calls) {
      bool only_inputs = true;
      for_each_ref(*n, [&](const ValueRef& v) { only_inputs = only_inputs && v.node->kind() != NodeKind::Call; });
      if (only_inputs && can_be_input(*n, values_)) p.to_input.insert(n);
    }
    if (p.to_input.size() < 2 || p.to_input.size() == calls.size()) return;  // one node: nodes_to_inputs tried it
    attempt(build(*best_.graph, best_.inputs, values_, p),
            "consolidate " + std::to_string(p.to_input.size()) + " inputs' producers into inputs");
  }

  /// Each size > 1 of the inputs' dimensions: 1, else halved while the failure persists.
  void shrink_inputs() {
    std::set<int64_t, std::greater<>> sizes;
    for (const Node* in : best_.graph->inputs())
      for (int64_t s : in->meta().at(0).sizes)
        if (s > 1) sizes.insert(s);
    for (int64_t s : sizes) {
      if (stopped()) return;
      auto label = [&](int64_t from, int64_t to) {
        return "inputs' size " + std::to_string(from) + " -> " + std::to_string(to);
      };
      if (attempt(resize(*best_.graph, best_.inputs, s, 1), label(s, 1))) continue;
      for (int64_t t = s / 2; t > 1 && !stopped(); t /= 2) {
        if (!attempt(resize(*best_.graph, best_.inputs, s, t), label(s, t))) break;
        s = t;
      }
    }
  }

  const Checker& check_;
  Failure target_;
  const MinifyOptions& options_;
  size_t start_compiles_ = 0;
  size_t original_calls_ = 0;
  Candidate best_;
  Values values_;
};

}  // namespace

MinifyResult minify(const Graph& g, const std::vector<Tensor>& inputs, const Checker& check, const Failure& target,
                    const MinifyOptions& options) {
  return Minifier(g, inputs, check, target, options).run();
}

MinifyResult minify_repro(const Repro& r, const Backend& backend, const std::string& out_dir,
                          const MinifyOptions& options) {
  ScopedConfig scoped(r.config);
  Checker check{backend, r.accuracy, r.tolerance};
  Failure target;
  if (r.failure) {
    target = *r.failure;
  } else {
    // A launcher written before the backend ran (REPRO_LEVEL=3), or a bare graph: chase
    // the failure it shows now.
    std::optional<Failure> f = check(*r.graph, r.inputs);
    EMBER_CHECK_VALUE(f) << "minifier: graph " << r.graph->name() << " does not fail with backend '" << r.backend << "'"
                         << (r.accuracy ? " (compared with eager against float64)" : "") << "; nothing to minify"
                         << (r.accuracy ? "" : " (pass --accuracy to check accuracy)");
    target = *f;
  }
  Repro out = r;
  out.kind = "repro";
  out.failure = target;
  auto write = [&](const Graph& g, const std::vector<Tensor>& inputs) {
    out.graph = g.clone();
    for (const auto& [name, value] : g.constants()) out.graph->set_constant(name, value);
    out.inputs = inputs;
    write_repro(out, out_dir, "repro");
  };
  MinifyOptions o = options;
  o.on_improved = [&](const Graph& g, const std::vector<Tensor>& inputs) {
    write(g, inputs);
    if (options.on_improved) options.on_improved(g, inputs);
  };
  MinifyResult result = minify(*r.graph, r.inputs, check, target, o);
  write(*result.graph, result.inputs);
  return result;
}

}  // namespace ember::debug
