// inductor/trace.h — what the inductor backend writes for TORCH_COMPILE_DEBUG=1 (one
// directory per compiled graph, each file written as its stage finishes), what
// config().inductor.debug prints, and the bugs config().inductor.inject_relu_bug_TESTING_ONLY
// injects. See Note [inductor] (docs/notes/inductor.md), "The trace directory".
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/logging.h"
#include "inductor/ir.h"

namespace ember::inductor {

/// One compile_graph call's trace: created before lowering, told as each stage finishes.
/// With trace.enabled it owns torchinductor/<model>__<n>_forward_<k>.<m>/ (debug.log
/// takes the DEBUG lines of inductor while it lives) and torchinductor/aot_<model>_<n>_debug.log;
/// with inductor.debug, inductor's DEBUG lines and the generated code go to stderr.
/// Every stage's time is logged at DEBUG on `inductor` ("stage lowering: 1.2 ms").
class GraphTrace {
 public:
  explicit GraphTrace(const Graph& g);
  ~GraphTrace();
  GraphTrace(const GraphTrace&) = delete;
  GraphTrace& operator=(const GraphTrace&) = delete;

  /// The graph's directory, when tracing.
  const std::optional<std::filesystem::path>& dir() const { return dir_; }

  /// Ends the running stage: logs and records its time.
  void stage_done(const std::string& stage);
  /// The graph after inductor's graph passes (fx_graph_transformed.txt).
  void transformed(const Graph& g);
  void lowered(const Graph& g, const LoweredGraph& lowered);
  void scheduled(const Graph& g, const LoweredGraph& lowered, const std::vector<Kernel>& kernels);
  void generated(const std::string& source);
  /// The CUDA translation unit and its launch plan (output_code.cu).
  void generated_cuda(const std::string& source);
  /// After the code is loaded: timings, and the optional profile and diagram.
  void finished(const Graph& g, const LoweredGraph& lowered, const std::vector<Kernel>& kernels, bool cache_hit);

 private:
  void write(const std::string& file, const std::string& text);

  std::optional<std::filesystem::path> dir_;
  std::unique_ptr<logging::ScopedSink> debug_log_, aot_log_, stderr_debug_;
  std::chrono::steady_clock::time_point start_, last_;
  std::vector<std::pair<std::string, double>> stages_;  // name, ms
};

/// The scheduler nodes of ir_pre_fusion.txt (every lowered node alone) and
/// ir_post_fusion.txt (kernels and extern calls): buffer, writes, met and unmet
/// dependencies, device, iteration group, sizes and loop body, as PyTorch prints them.
std::string ir_pre_fusion_text(const Graph& g, const LoweredGraph& lowered);
std::string ir_post_fusion_text(const Graph& g, const LoweredGraph& lowered, const std::vector<Kernel>& kernels);

/// inject_relu_bug_TESTING_ONLY: the function relu's body calls instead of op_relu
/// ("" when no bug or the bug is runtime_error). Raises ember::Error (ValueError) for a
/// value other than "", compile_error, runtime_error, accuracy.
std::string injected_relu_function();
/// The C++ of an injected function ("" for other names).
std::string injected_function_definition(const std::string& fn);
/// Whether the wrapper raises after each kernel that computes a relu.
bool injects_relu_runtime_error();

}  // namespace ember::inductor
