// ember/debug.h — tools for finding out why compiled code is slow, wrong or recompiling.
// The CompileProfiler is the guide's torch._dynamo.utils.CompileProfiler; same() is the
// accuracy check of TORCHDYNAMO_REPRO_LEVEL=4 and of the minifier (Note [minifier]).
#pragma once

#include <map>
#include <memory>
#include <optional>
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
    /// One per graph compiled: its inputs whose sizes are symbols, as "x [s0, 8]".
    std::vector<std::vector<std::string>> symbolic_inputs;
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

// --- accuracy --------------------------------------------------------------------------

/// How same() judges a compiled result (torch._dynamo.utils.same). See Note [minifier],
/// "Accuracy", for examples of what passes and fails.
struct SameOptions {
  /// Tolerance: results within allclose(rtol = atol = tol) of eager pass at once; otherwise
  /// tol / 10 is the absolute floor of the error comparison. The repro machinery passes
  /// config().dynamo.repro_tolerance.
  double tol = 1e-4;
  /// Compare by the cosine similarity of eager and compiled results (>= 0.99 passes)
  /// instead of by their errors against the fp64 reference.
  bool cos_similarity = false;
  /// A NaN where eager also has one passes.
  bool equal_nan = true;
  /// Results of different dtypes fail.
  bool exact_dtype = true;
  /// How many times eager's error the compiled error may be; 0 means PyTorch's choice
  /// (3 for float16/bfloat16 results, 2 otherwise).
  double multiplier = 0;
};

/// The verdict of same(): `passed`, and when not, `why` in words (the output, the errors).
struct SameResult {
  bool passed = true;
  std::string why;
  explicit operator bool() const { return passed; }
};

/// Whether the compiled result `res` is as accurate as the eager result `ref`, both judged
/// against `fp64_ref` (the same computation in float64; pass `ref` when there is none):
///  - sizes must match, and dtypes unless !exact_dtype; integer and bool results must be equal;
///  - where eager or compiled is NaN or ±inf, compiled must equal eager there (NaN with NaN
///    when equal_nan) or the fp64 reference; other non-finite values fail;
///  - finite values within allclose(ref, res, rtol = atol = tol) pass;
///  - otherwise RMSE(res, fp64_ref) <= multiplier * RMSE(ref, fp64_ref) + tol / 10 passes
///    (RMSE over the elements finite in all three): compiled may be less accurate than
///    eager only by that factor (or, with cos_similarity, cosine(ref, res) >= 0.99).
SameResult same(const Tensor& ref, const Tensor& res, const Tensor& fp64_ref, const SameOptions& options = {});
/// same() per output; fails at the first output that fails, naming it.
SameResult same(const std::vector<Tensor>& ref, const std::vector<Tensor>& res, const std::vector<Tensor>& fp64_ref,
                const SameOptions& options = {});

/// Runs `g` with the interpreter on `inputs` cast to float64 (floating inputs and constants
/// only): the reference same() compares against. Returns nullopt (and logs why at INFO on
/// `dynamo`) when the graph cannot run in float64, e.g. a literal dtype forces float32 into
/// an op that then mixes dtypes.
std::optional<std::vector<Tensor>> run_graph_fp64(const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace ember
