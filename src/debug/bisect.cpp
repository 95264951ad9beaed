// debug/bisect.cpp — the compiler bisector (bisect.h): the backends in order, then the
// inductor's subsystems, each disabled whole and, when that removes the failure, bisected by
// count through the knobs inductor.bisect_max_* (inductor/bisect_limits.cpp). See
// Note [minifier] (docs/notes/minifier.md), "The compiler bisector".
#include "debug/bisect.h"

#include <iostream>
#include <optional>

#include "ember/config.h"
#include "inductor/pipeline.h"

namespace ember::debug {
namespace {

using inductor::BisectSubsystem;

/// Tried in this order: fusions before lowerings, since a graph with no lowering has no
/// fusion either (disabling lowerings would also remove a fusion's failure and blame a
/// lowering). Graph passes first: they change the graph the other two see.
constexpr BisectSubsystem kSubsystems[] = {BisectSubsystem::GraphPasses, BisectSubsystem::Fusions,
                                           BisectSubsystem::Lowerings};

/// Restores the bisector's knobs as the caller had them.
class SavedLimits {
 public:
  SavedLimits() {
    for (BisectSubsystem s : kSubsystems) saved_.push_back(inductor::bisect_limit(s));
  }
  ~SavedLimits() {
    size_t i = 0;
    for (BisectSubsystem s : kSubsystems) inductor::bisect_limit(s) = saved_[i++];
  }
  SavedLimits(const SavedLimits&) = delete;
  SavedLimits& operator=(const SavedLimits&) = delete;

 private:
  std::vector<int64_t> saved_;
};

std::string join_names(const std::vector<std::string>& names, const char* last_sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? last_sep : ", ") + names[i];
  return out;
}

class Bisector {
 public:
  Bisector(const Graph& g, const std::vector<Tensor>& inputs, const BisectOptions& options)
      : g_(g), inputs_(inputs), options_(options) {
    result_.failure = options.target;
  }

  BisectResult run() {
    const std::vector<std::string> backends = bisect_backends(options_.backend);
    say("graph " + g_.name() + " (" + std::to_string(g_.op_count()) + " ops" +
        (training_ ? ", a training graph: run forward and backward" : "") + "); backends " + join_names(backends, ", ") +
        "; chasing " + (result_.failure ? result_.failure->str() : std::string("the first failure a backend shows")));
    for (BisectSubsystem s : kSubsystems) inductor::bisect_limit(s) = -1;
    std::string passed;
    for (const std::string& backend : backends) {
      if (!attempt(backend, backend + (backend == "eager" ? " (capture only)" : ""))) {
        passed = backend;
        continue;
      }
      result_.failed = true;
      result_.backend = backend;
      result_.last_passing = passed;
      bisect_subsystems();
      break;
    }
    if (!result_.failed) result_.failure.reset();
    say("done after " + std::to_string(result_.runs) + " runs: " + result_.summary());
    return std::move(result_);
  }

 private:
  /// Runs the graph with `backend` under the current limits; true when it shows the failure
  /// chased (the first failure seen becomes the one chased when none was given).
  bool attempt(const std::string& backend, const std::string& label) {
    for (BisectSubsystem s : kSubsystems) inductor::bisect_begin(s);
    Checker check{lookup_backend(backend), options_.accuracy, options_.tolerance};
    // A training graph compiles a forward and a backward graph per run: their decisions
    // are numbered as one sequence, each naming its graph.
    std::optional<inductor::BisectSpan> span;
    if (training_) span.emplace();
    const std::optional<Failure> f = check(g_, inputs_);
    ++result_.runs;
    const std::string head = "run " + std::to_string(result_.runs) + ": " + label + ": ";
    if (!f) {
      say(head + (options_.accuracy ? "passes (matches eager)" : "passes"));
      return false;
    }
    if (result_.failure && !f->same_as(*result_.failure)) {
      say(head + "fails differently (" + f->str() + "); counted as passing");
      return false;
    }
    if (!result_.failure) result_.failure = *f;
    say(head + "fails: " + f->str());
    return true;
  }

  /// Within an inductor backend: each subsystem disabled whole; the first whose disabling
  /// removes the failure is bisected to the decision that brings it in.
  /// A backend goes through the inductor's steps when its failing run counted decisions
  /// (inductor, inductor_inner, or a custom backend calling compile_fx_inner); others stop
  /// at the backend level.
  void bisect_subsystems() {
    // The failing run just made counted every decision at full strength.
    std::vector<std::vector<std::string>> full;
    bool any = false;
    for (BisectSubsystem s : kSubsystems) {
      full.push_back(inductor::bisect_decisions(s));
      any = any || !full.back().empty();
    }
    if (!any) {
      say(result_.backend +
          " made no decision of the inductor's (graph passes, fusions, lowerings); nothing to bisect");
      return;
    }
    size_t k = 0;
    for (BisectSubsystem s : kSubsystems) {
      const std::vector<std::string>& decisions = full[k++];
      const std::string name = inductor::bisect_subsystem_name(s);
      if (decisions.empty()) {
        say(name + ": none in this graph; nothing to disable");
        continue;
      }
      inductor::bisect_limit(s) = 0;
      const bool still =
          attempt(result_.backend, result_.backend + " with all " + std::to_string(decisions.size()) + " " + name +
                                       " disabled (" + inductor::bisect_limit_knob(s) + "=0)");
      if (still) {
        say("disabling " + name + " does not remove the failure");
        result_.ruled_out.push_back(name);
        inductor::bisect_limit(s) = -1;
        continue;
      }
      say("disabling " + name + " removes the failure; bisecting " + std::to_string(decisions.size()) + " " + name);
      // Invariant: `good` decisions pass, `bad` fail.
      int64_t good = 0, bad = static_cast<int64_t>(decisions.size());
      std::vector<std::string> at_bad = decisions;
      while (bad - good > 1) {
        const int64_t mid = good + (bad - good) / 2;
        inductor::bisect_limit(s) = mid;
        if (attempt(result_.backend, result_.backend + " with the first " + std::to_string(mid) + " of " +
                                         std::to_string(decisions.size()) + " " + name + " (" +
                                         inductor::bisect_limit_knob(s) + "=" + std::to_string(mid) + ")")) {
          bad = mid;
          at_bad = inductor::bisect_decisions(s);
        } else {
          good = mid;
        }
      }
      inductor::bisect_limit(s) = -1;
      result_.subsystem = name;
      result_.knob = inductor::bisect_limit_knob(s);
      result_.decision = bad;
      result_.what = at_bad.at(static_cast<size_t>(bad - 1));
      result_.decision_noun = inductor::bisect_decision_noun(s);
      return;
    }
    say("disabling " + join_names(result_.ruled_out, " or ") + " does not remove the failure");
  }

  void say(const std::string& line) const {
    if (options_.progress) {
      options_.progress(line);
    } else {
      std::cerr << "[bisect] " << line << std::endl;
    }
  }

  const Graph& g_;
  const std::vector<Tensor>& inputs_;
  const BisectOptions& options_;
  const bool training_ = needs_gradients(inputs_);
  BisectResult result_;
};

}  // namespace

std::vector<std::string> bisect_backends(const std::string& backend) {
  if (backend == "eager") return {"eager"};
  if (backend == "aot_eager") return {"eager", "aot_eager"};
  if (backend == "inductor") return {"eager", "aot_eager", "inductor"};
  return {"eager", backend};
}

std::string BisectResult::summary() const {
  if (!failed) return "no failure: the graph passes with every backend tried";
  const std::string f = failure ? failure->str() : std::string("a failure");
  if (!subsystem.empty())
    return backend + " " + decision_noun + " #" + std::to_string(decision) + ": " + what +
           " — with it the failure appears, without it the graph passes (" + knob + "=" + std::to_string(decision) +
           " fails, " + std::to_string(decision - 1) + " passes): " + f;
  std::string s = "the failure appears with backend " + backend;
  if (backend == "eager")
    s += " (capture only: the graph fails as captured, before any compiler)";
  else if (!last_passing.empty())
    s += " (" + last_passing + " passes)";
  if (!ruled_out.empty()) s += "; disabling " + join_names(ruled_out, " or ") + " does not remove it";
  return s + ": " + f;
}

BisectResult bisect(const Graph& g, const std::vector<Tensor>& inputs, const BisectOptions& options) {
  SavedLimits saved;
  return Bisector(g, inputs, options).run();
}

}  // namespace ember::debug
