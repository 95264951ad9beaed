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

/// How a phase's time relates to the phases timed while it is open on the same thread.
enum class Nesting {
  /// They are its parts: their rows sit under it, and their times add up to at most its own.
  Parts,
  /// It records its own time only (theirs taken out): they are parts of the phase around
  /// it. Capture's time leaves out the backend compile and the first run it starts.
  OwnTime,
};

/// Times one phase of a compile from construction to destruction, wall and CPU time, into
/// compile_times(): the row of (function, phase, the innermost Nesting::Parts phase open
/// around it on this thread). CPU time is this thread's, plus that of the processes it ran
/// and waited for while the phase was open (add_process_cpu_time: the C++ compiler).
class PhaseTimer {
 public:
  /// A phase of the function the innermost phase open on this thread belongs to
  /// (kNoFunction when none is open: a backend called directly).
  explicit PhaseTimer(std::string phase, Nesting nesting = Nesting::Parts);
  PhaseTimer(std::string function, std::string phase, Nesting nesting = Nesting::Parts);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  friend void add_process_cpu_time(double seconds);
  friend void record_part(const std::string& part, double seconds, double cpu_seconds);
  friend std::string current_compile_function();
  PhaseTimer* outer_;
  std::string function_, phase_, parent_;
  Nesting nesting_;
  std::chrono::steady_clock::time_point start_;
  double start_cpu_;
  double nested_seconds_ = 0, nested_cpu_ = 0;  // of the phases timed inside an OwnTime phase
  double process_cpu_ = 0;
};

/// The function name of phases timed with no compiled function's phase open.
inline constexpr const char* kNoFunction = "(backend called directly)";

/// The function of the innermost phase open on this thread; "" when none is.
std::string current_compile_function();

/// Adds the CPU time of a process this thread ran and waited for to every phase open on it.
void add_process_cpu_time(double seconds);

/// Records `seconds` (wall) and `cpu_seconds` as a part `part` of the innermost phase open
/// on this thread, for time measured by a lower layer while it was open (the autotuner's
/// timing runs in a first run). Nothing when no phase is open.
void record_part(const std::string& part, double seconds, double cpu_seconds);

/// CPU seconds this thread has used.
double thread_cpu_seconds();

/// Runs `run` (compiled code's first run) as phase `phase` of `function` ("" for the
/// function of the innermost phase open), the autotuner's timing runs it makes (new
/// product shapes; Note [sgemm autotuning]) recorded as its part "autotuning (timing runs)".
std::vector<Tensor> timed_run(const std::string& function, const std::string& phase,
                              const std::function<std::vector<Tensor>()>& run);

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
