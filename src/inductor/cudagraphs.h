// inductor/cudagraphs.h — CUDA graphs for graphs compiled for a CUDA device (compile mode
// "reduce-overhead", PyTorch's cudagraphify in its simple form): which graphs may be
// captured, and the runner that warms a graph up, captures the wrapper's CUDA work into a
// cudaGraph_t on a private stream and replays it. Internal to the inductor. See Note
// [inductor] (docs/notes/inductor.md), "CUDA graphs".
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "ember/graph.h"

namespace ember::inductor {

/// Whether the compile under way on this thread wants CUDA graphs: its function's mode is
/// "reduce-overhead" or "max-autotune", or config().inductor.cudagraphs is set.
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

/// How a captured graph reads an input.
enum class InputUse {
  /// Copied into a static buffer at each call (skipped when the input is that buffer).
  Copied,
  /// Read in place when the warm-up and the capture saw it at one address (a module's
  /// parameters and buffers; any input of a training graph: a parameter the optimizer
  /// updates in place, a batch passed again): PyTorch's static inputs.
  InPlaceIfUnmoved,
  /// Read in place from the capture on: a backward's saved values, which its forward's
  /// replays leave at the same addresses (the warm-up's were the forward's warm-up outputs).
  InPlaceFromCapture,
};

/// Runs one compiled graph through a CUDA graph. Call 1 runs `run` (the wrapper) as it is:
/// the warm-up, which settles the libraries' plans and workspaces. Call 2 captures `run` on
/// a private stream with a core::cuda::GraphPool (so every intermediate, output and
/// workspace address stays the graph's), instantiates the graph and replays it. A module's
/// parameters and buffers (the graph's Attribute inputs, PyTorch's static inputs) given at
/// the same address in calls 1 and 2 are read in place: the runner holds them, and the
/// graph reads whatever they hold at each replay. Every other input is copied into a
/// static buffer the graph reads. Later calls copy those inputs
/// into their buffers (skipped when the input is the buffer) and replay; an in-place input
/// given at another address re-records the graph with that input copied from then on
/// (logged; the earlier graph's memory stays with the runner, as its outputs may still be
/// held). The results are the static outputs: the next call overwrites them. A capture
/// that fails is logged and the runner runs `run` from then on.
///
/// A training graph's runner (`held_outputs_from` set) hands out aliases of its static
/// outputs (new handles of the same memory, no autograd history) and protects the outputs
/// from that index on (a forward's saved values, a backward's gradients): while any is
/// still referenced outside the runner — a backward that has not run holds its saved values,
/// a gradient left in a grad slot is accumulated into by the next backward — a call runs
/// `run` instead of replaying (fresh outputs, logged once), so nothing autograd holds is
/// overwritten. Its other outputs (the forward's results) are overwritten as an inference
/// graph's are.
class CudaGraphRunner {
 public:
  using Run = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  /// `inputs`: the recorded geometry of each graph input (the static buffers'); `uses`:
  /// how each is read; `held_outputs_from`: a training graph's first protected output.
  CudaGraphRunner(std::string graph_name, int device, std::vector<TensorMeta> inputs, std::vector<InputUse> uses,
                  Run run, std::optional<size_t> held_outputs_from = std::nullopt);
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  /// Whether a graph was captured (and replays), or the capture failed (runs `run`).
  bool captured() const { return exec_ != nullptr; }
  bool failed() const { return failed_; }

 private:
  bool capture(const std::vector<Tensor>& inputs);
  /// Copies the copied inputs into their buffers; false when an in-place input came at
  /// another address (its index in `moved`).
  bool copy_inputs(const std::vector<Tensor>& inputs, size_t* moved = nullptr);
  /// Destroys the instantiated graph after the device has finished it; keeps its pool.
  void retire_graph();
  /// Whether a protected static output is referenced outside the runner.
  bool outputs_held() const;

  std::string graph_name_;
  int device_;
  std::vector<TensorMeta> input_metas_;
  Run run_;
  std::mutex mu_;
  bool warmed_up_ = false;
  bool failed_ = false;
  /// Where each input was at the warm-up call, and whether it is read in place. Calls
  /// run one at a time (mu_) and launch on the caller's current stream: a caller that
  /// switches streams between calls must synchronize them, as with any static buffer.
  /// The storage (held weakly: a storage freed and another made at its address is not it)
  /// and offset of each input at the warm-up call; after the capture, of each input read in
  /// place from the capture on, which the runner does not keep alive (a backward's saved
  /// values: their holder is the forward's runner, and autograd while they are saved).
  struct Seen {
    std::weak_ptr<Storage> storage;
    int64_t offset = 0;
    bool is(const Tensor& t) const {
      return t.defined() && !storage.expired() && storage.lock() == t.storage() && t.storage_offset() == offset;
    }
  };
  std::vector<Seen> first_seen_;
  std::vector<Seen> captured_unheld_;
  std::vector<InputUse> uses_;
  std::vector<bool> in_place_;
  std::optional<size_t> held_outputs_from_;
  /// For each protected output, how many of the runner's static outputs hold its storage.
  std::vector<long> own_storage_refs_;
  bool logged_held_ = false;
  // Destroyed in reverse: the static tensors before the pools that hold the graphs' blocks.
  std::vector<std::unique_ptr<core::cuda::GraphPool>> retired_pools_;
  std::unique_ptr<core::cuda::GraphPool> pool_;
  std::vector<Tensor> static_inputs_;
  std::vector<Tensor> static_outputs_;
  void* exec_ = nullptr;
};

}  // namespace ember::inductor
