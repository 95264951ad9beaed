// ember/debug.h — tools for finding out why compiled code is slow, wrong or recompiling.
// The CompileProfiler is the guide's torch._dynamo.utils.CompileProfiler.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember {

/// A backend that records every graph it is given, and, while it lives, every
/// recompilation of the functions compiled with it together with the guard that failed:
///
///   CompileProfiler prof;
///   auto f = compile(fn, {.custom_backend = prof.backend()});
///   … calls …
///   std::cout << prof.report();
///
/// Graphs run with the eager interpreter.
class CompileProfiler {
 public:
  CompileProfiler();
  ~CompileProfiler();
  CompileProfiler(const CompileProfiler&) = delete;
  CompileProfiler& operator=(const CompileProfiler&) = delete;

  Backend backend();

  struct FunctionStats {
    std::string where;
    std::vector<size_t> graph_op_counts;            // one per graph compiled
    std::vector<std::string> graph_breaks;          // reason and line
    std::vector<std::vector<std::string>> recompiles;  // per recompilation: guard failures
    size_t cache_limit_hits = 0;
  };
  /// Per function name.
  std::map<std::string, FunctionStats> stats() const;
  /// Per function: graphs, breaks, recompilations with their guard failures, and advice.
  std::string report() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  int observer_ = -1;
};

}  // namespace ember
