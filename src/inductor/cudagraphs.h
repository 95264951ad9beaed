// inductor/cudagraphs.h — CUDA graphs for graphs compiled for a CUDA device (compile mode
// "reduce-overhead", PyTorch's cudagraphify in its simple form): which graphs may be
// captured, and the runner that warms a graph up, captures the wrapper's CUDA work into a
// cudaGraph_t on a private stream and replays it. Internal to the inductor. See Note
// [inductor] (docs/notes/inductor.md), "CUDA graphs".
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "ember/graph.h"

namespace ember::inductor {

/// Whether the compile under way on this thread wants CUDA graphs: its function's mode is
/// "reduce-overhead", or config().inductor.cudagraphs is set.
bool cudagraphs_wanted();

/// Why the wrapper of `g` cannot be captured into a CUDA graph ("cpu device (%x)"), or ""
/// when it can. The rules, first match wins:
///
/// | graph has                                         | reason                          |
/// |---------------------------------------------------|---------------------------------|
/// | an input that is not one tensor                   | non-tensor input (%input)       |
/// | an input or output on the CPU (0-dim ones too)    | cpu device (%node)              |
/// | size symbols                                      | dynamic shapes (%node)          |
/// | an op whose result the host reads (item, nonzero) | host sync (%node, op)           |
/// | a random op (its generator state would be frozen) | random op (%node, op)           |
/// | an in-place write into a graph input              | mutated inputs (%node, op)      |
/// | an output that is an input or a view of one       | output aliases input (%input)   |
std::string why_not_cudagraphs(const Graph& g);

/// "skipping cudagraphs due to <reason>" on TORCH_LOGS=cudagraphs, naming the graph.
void log_cudagraphs_skip(const std::string& graph, const std::string& reason);

/// Runs one compiled graph through a CUDA graph. Call 1 runs `run` (the wrapper) as it is:
/// the warm-up, which settles the libraries' plans and workspaces. Call 2 copies the inputs
/// into static input buffers, captures `run` over them on a private stream with a
/// core::cuda::GraphPool (so every intermediate, output and workspace address stays the
/// graph's), instantiates the graph and replays it. Later calls copy each input into its
/// static buffer (skipped when the input is that buffer) and replay. The results are the
/// static outputs: the next call overwrites them. A capture that fails is logged and the
/// runner runs `run` from then on.
class CudaGraphRunner {
 public:
  using Run = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  /// `inputs`: the recorded geometry of each graph input (the static buffers').
  CudaGraphRunner(std::string graph_name, int device, std::vector<TensorMeta> inputs, Run run);
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  /// Whether a graph was captured (and replays), or the capture failed (runs `run`).
  bool captured() const { return exec_ != nullptr; }
  bool failed() const { return failed_; }

 private:
  bool capture(const std::vector<Tensor>& inputs);
  void copy_inputs(const std::vector<Tensor>& inputs);

  std::string graph_name_;
  int device_;
  std::vector<TensorMeta> input_metas_;
  Run run_;
  std::mutex mu_;
  int calls_ = 0;
  bool failed_ = false;
  // Destroyed in reverse: the static tensors before the pool that holds the graph's blocks.
  std::unique_ptr<core::cuda::GraphPool> pool_;
  std::vector<Tensor> static_inputs_;
  std::vector<Tensor> static_outputs_;
  void* exec_ = nullptr;
};

}  // namespace ember::inductor
