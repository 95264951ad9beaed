// debug/compile_profiler.cpp — CompileProfiler (ember/debug.h): a backend plus an observer
// of the compile path's events, summarized with advice.
#include <mutex>
#include <set>

#include "capture/events.h"
#include "core/sym_geometry.h"
#include "ember/config.h"
#include "ember/debug.h"

namespace ember {

namespace {

/// Which argument a guard failure names and what changed: "tensor 'x' size mismatch …" →
/// {x, size}; "'n' == 3 (actual 4)" and "len('xs') == 2 …" → {n, value}; otherwise empty.
struct GuardFailure {
  std::string argument;
  std::string what;
};

GuardFailure parse_failure(const std::string& text) {
  auto quoted = [&](size_t open) -> std::string {
    const size_t close = text.find('\'', open + 1);
    return close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
  };
  if (text.rfind("tensor '", 0) == 0) {
    const std::string arg = quoted(7);
    const size_t after = 8 + arg.size() + 2;  // past "tensor '", the name, "' "
    if (arg.empty() || after > text.size()) return {};
    const std::string word = text.substr(after, text.find(' ', after) - after);
    for (const char* w : {"size", "stride", "dtype", "device", "rank", "requires_grad"})
      if (word == w) return {arg, word};
    return {};
  }
  const size_t open = text.rfind("len('", 0) == 0 ? 4 : (text.rfind("'", 0) == 0 ? 0 : std::string::npos);
  if (open == std::string::npos) return {};
  const std::string arg = quoted(open);
  if (arg.empty() || text.find(" == ", open) == std::string::npos) return {};
  return {arg, "value"};
}

/// The inputs of `g` whose sizes are symbols (traced with dynamic shapes), as "x [s0, 8]".
std::vector<std::string> symbolic_inputs(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.inputs()) {
    if (n->meta().empty() || !n->meta()[0].sym) continue;
    std::string sizes;
    for (const core::SymInt& s : n->meta()[0].sym->sizes) sizes += (sizes.empty() ? "" : ", ") + s.str();
    out.push_back(n->name() + " [" + sizes + "]");
  }
  return out;
}

}  // namespace

struct CompileProfiler::State {
  mutable std::mutex mu;
  std::set<std::string> functions;  // compiled with this profiler's backend
  std::map<std::string, FunctionStats> stats;
};

CompileProfiler::CompileProfiler() : state_(std::make_shared<State>()) {
  std::weak_ptr<State> weak = state_;
  observer_ = capture::add_compile_observer([weak](const capture::CompileEvent& e) {
    auto s = weak.lock();
    if (!s) return;
    std::lock_guard lock(s->mu);
    const bool ours = s->functions.contains(e.function);
    if (!ours && e.kind != capture::CompileEvent::Kind::GraphCompiled) return;
    FunctionStats& f = s->stats[e.function];
    f.where = e.where.str();
    switch (e.kind) {
      case capture::CompileEvent::Kind::GraphCompiled: break;  // counted by the backend itself
      case capture::CompileEvent::Kind::Recompile: f.recompiles.push_back(e.guard_failures); break;
      case capture::CompileEvent::Kind::CacheLimit: ++f.cache_limit_hits; break;
      case capture::CompileEvent::Kind::GraphBreak: f.graph_breaks.push_back(e.detail); break;
    }
  });
}

CompileProfiler::~CompileProfiler() { capture::remove_compile_observer(observer_); }

Backend CompileProfiler::backend() {
  std::weak_ptr<State> weak = state_;
  // The eager backend underneath runs graphs over size symbols, so the profiler's graphs
  // become dynamic as a registered backend's do, and the report shows it.
  return with_symbolic_sizes([weak](Graph& g, const std::vector<Tensor>&) {
    if (auto s = weak.lock()) {
      std::lock_guard lock(s->mu);
      s->functions.insert(g.name());
      FunctionStats& f = s->stats[g.name()];
      f.graph_op_counts.push_back(g.op_count());
      f.symbolic_inputs.push_back(symbolic_inputs(g));
    }
    return eager_backend(g);
  });
}

std::map<std::string, CompileProfiler::FunctionStats> CompileProfiler::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

std::string CompileProfiler::report() const {
  const auto all = stats();
  std::string out = "Ember CompileProfiler report\n============================\n";
  if (all.empty()) return out + "No function was compiled with this profiler's backend.\n";
  for (const auto& [name, f] : all) {
    out += "\nFunction '" + name + "'" + (f.where.empty() ? "" : " (" + f.where + ")") + "\n";
    size_t ops = 0;
    for (size_t n : f.graph_op_counts) ops += n;
    out += "  graphs compiled: " + std::to_string(f.graph_op_counts.size()) + " (" + std::to_string(ops) + " ops)\n";
    std::string dynamic;  // the first graph over size symbols
    for (size_t i = 0; i < f.symbolic_inputs.size() && dynamic.empty(); ++i) {
      if (f.symbolic_inputs[i].empty()) continue;
      dynamic = "graph " + std::to_string(i + 1) + ": ";
      for (size_t j = 0; j < f.symbolic_inputs[i].size(); ++j) dynamic += (j ? ", " : "") + f.symbolic_inputs[i][j];
    }
    for (size_t i = 0; i < f.symbolic_inputs.size(); ++i) {
      if (f.symbolic_inputs[i].empty()) continue;
      out += "    graph " + std::to_string(i + 1) + " takes symbolic sizes:";
      for (const std::string& s : f.symbolic_inputs[i]) out += " " + s;
      out += "\n";
    }
    out += "  graph breaks: " + std::to_string(f.graph_breaks.size()) + "\n";
    for (size_t i = 0; i < f.graph_breaks.size(); ++i) {
      out += "    " + std::to_string(i + 1) + ". " + f.graph_breaks[i] + "\n";
    }
    out += "  recompilations: " + std::to_string(f.recompiles.size()) + "\n";
    std::map<std::string, std::map<std::string, size_t>> changes;  // argument -> what -> count
    for (size_t i = 0; i < f.recompiles.size(); ++i) {
      const std::string first = f.recompiles[i].empty() ? "(unknown)" : f.recompiles[i].front();
      out += "    " + std::to_string(i + 1) + ". " + first + "\n";
      const GuardFailure g = parse_failure(first);
      ++changes[g.argument.empty() ? "(other)" : g.argument][g.argument.empty() ? first : g.what];
    }
    if (f.cache_limit_hits) {
      out += "  cache_size_limit (" + std::to_string(config().dynamo.cache_size_limit) + ") reached: " +
             std::to_string(f.cache_limit_hits) + " call" + (f.cache_limit_hits == 1 ? "" : "s") + " ran eagerly\n";
    }
    std::string advice;
    for (const auto& [arg, kinds] : changes) {
      for (const auto& [what, count] : kinds) {
        if (arg == "(other)") continue;
        if (what == "size" || what == "rank") {
          // The profiler's backend takes size symbols (with_symbolic_sizes), so automatic
          // dynamic shapes apply to its functions as to a registered backend's.
          advice += "    - argument '" + arg + "' changed shape in " + std::to_string(count) + " recompilation(s): ";
          if (!dynamic.empty()) {
            advice += "automatic dynamic shapes made the sizes that changed symbolic (" + dynamic +
                      "), so later shapes reuse that graph. mark_dynamic(" + arg +
                      ", dim) or CompileOptions::dynamic = true compiles it over symbols from the first call, "
                      "without the recompilation.\n";
          } else {
            advice += "its graphs stay static (CompileOptions::dynamic = false, sizes marked static, a change of "
                      "rank, or sizes 0 and 1, which are specialized), so each new shape compiles again. "
                      "mark_dynamic(" + arg + ", dim) or CompileOptions::dynamic = true makes sizes symbolic; "
                      "otherwise pad or bucket its sizes to a few values, or raise "
                      "config().dynamo.cache_size_limit (TORCHDYNAMO_CACHE_SIZE_LIMIT) above the number of "
                      "shapes.\n";
          }
        } else if (what == "value") {
          advice += "    - argument '" + arg + "' changed value in " + std::to_string(count) +
                    " recompilation(s): numbers are specialized into the graph. Pass it as a 0-dim tensor to "
                    "keep one graph.\n";
        } else {
          advice += "    - argument '" + arg + "' changed " + what + " in " + std::to_string(count) +
                    " recompilation(s): keep its " + what + " the same across calls (e.g. call .contiguous() or "
                    ".to(dtype) before the compiled function).\n";
        }
      }
    }
    if (!f.graph_breaks.empty()) {
      advice += "    - graph breaks split the function and make it run in segment mode; see the reasons above "
                "(explain() gives each one's hint).\n";
    }
    if (!advice.empty()) out += "  advice:\n" + advice;
  }
  return out;
}

}  // namespace ember
