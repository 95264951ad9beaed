// capture/events.h — what the compile path reports as it goes, for the tools that watch
// it: compile times per function and phase (compile_times()), and events (a graph
// compiled, a recompilation with its guard failures, a graph break, the cache limit hit)
// for observers such as the CompileProfiler; and the warning that a compiled graph runs
// in the interpreter.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::capture {

/// Adds `seconds` to `phase` of `function` (one call).
void record_compile_time(const std::string& function, const std::string& phase, double seconds);

/// Times a phase from construction to destruction.
class PhaseTimer {
 public:
  PhaseTimer(std::string function, std::string phase)
      : function_(std::move(function)), phase_(std::move(phase)), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    record_compile_time(function_, phase_,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  std::string function_, phase_;
  std::chrono::steady_clock::time_point start_;
};

struct CompileEvent {
  enum class Kind { GraphCompiled, Recompile, CacheLimit, GraphBreak };
  Kind kind;
  std::string function;
  SourceLoc where;
  /// GraphCompiled: the graph text; GraphBreak: the reason and line; others: empty.
  std::string detail;
  /// Recompile and CacheLimit: the first failing guard of each existing entry, newest first.
  std::vector<std::string> guard_failures;
  size_t op_count = 0;
};

using CompileObserver = std::function<void(const CompileEvent&)>;
int add_compile_observer(CompileObserver observer);
void remove_compile_observer(int id);
void notify(const CompileEvent& event);
bool has_observers();

/// A backend's compiled code runs `graph` in the interpreter (eager kernels) on this call,
/// for `reason`: said at WARNING once per compiled function (once per graph name when no
/// compiled function is calling), and on the perf_hints artifact. See Note [capture],
/// "Interpreted graphs".
void warn_interpreted(const std::string& graph, const std::string& reason);

}  // namespace ember::capture
