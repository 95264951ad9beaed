// aot/aot.h — the AOT stage between capture and a code generator (PyTorch's AOT
// autograd): functionalization, then decomposition to the ops the code generator lowers
// well; training graphs are then traced with their backward (aot/joint.h). The "inductor"
// and "aot_eager" backends run it first; the graphs it hands on are what
// TORCHDYNAMO_REPRO_AFTER=aot cuts. See Note [aot] (docs/notes/aot.md).
#pragma once

#include <functional>

#include <memory>
#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::graph {
class GraphBuilder;
}

namespace ember::aot {

/// Functionalization (functionalize.cpp). Requires: a verified graph. Guarantees: a
/// `copy_(dst, src)` whose dst is an intermediate (a Call's output that no view reads, not
/// an input) and whose src has dst's sizes, strides and dtype is gone: later readers of dst
/// (and of the copy_'s result) read src. Writes to graph inputs stay: the caller sees them.
/// `removed` counts the copies removed.
std::unique_ptr<Graph> functionalize(const Graph& g, size_t* removed = nullptr);

/// A graph input whose writes lift_input_writes took out of the graph: the value last
/// written is output `output`, for the runtime to copy into input `input` after the call.
struct InputWrite {
  size_t input;
  size_t output;
};

/// Lifting input writes (functionalize.cpp), for inference graphs. Requires: a functional
/// graph. Guarantees: a graph input written only by `copy_` of values of its geometry, read
/// by no view and no output, is written no more: readers after each copy_ read its source,
/// and the value last written is appended to the outputs; `writes` lists those inputs and
/// outputs in input order. The caller must copy them back (AOT autograd's runtime epilogue
/// for mutated inputs), and only when no written input shares memory with another input.
std::unique_ptr<Graph> lift_input_writes(const Graph& g, std::vector<InputWrite>* writes);

/// One row of the decomposition table: an op, when it is decomposed, into what.
struct DecompositionInfo {
  std::string op;
  std::string when;
  std::string into;
};

/// Decomposition (decompositions.cpp). Requires: a functional graph. Guarantees: every
/// node whose op has a row in the table and meets its condition is replaced by calls of
/// core ops with the same results (the same formula as the eager kernel where it matters
/// for rounding); other nodes are unchanged. `decomposed` counts the replaced nodes. With
/// `for_joint` (a graph whose joint graph is traced next) the rows whose formulas
/// differentiate otherwise than the op (linalg_vector_norm) are left out.
std::unique_ptr<Graph> decompose(const Graph& g, size_t* decomposed = nullptr, bool for_joint = false);
/// The table, in order (for docs and `ember` tools).
std::vector<DecompositionInfo> decomposition_table();

/// Batch norm's per-channel affine map as the eager kernel computes it (kernels/cpu/
/// norm.cpp), appended with `b`: alpha = invstd * weight, beta = bias - mean * alpha, out =
/// x * alpha.view(C, 1, ...) + beta.view(C, 1, ...). `weight` and `bias` are null when
/// absent; mean and invstd are [C] values of x's dtype. Returns out.
ValueRef batch_norm_affine(graph::GraphBuilder& b, ValueRef x, const ValueRef* weight, const ValueRef* bias,
                           ValueRef mean, ValueRef invstd);

/// The whole stage for an inference graph: functionalize, decompose, dead-code
/// elimination. Logs a summary at INFO on `aot`. (A training graph is prepared the same
/// way, `for_joint`, before its joint graph is traced: aot/joint.h.)
std::unique_ptr<Graph> prepare_inference_graph(const Graph& g, bool for_joint = false);

/// Which graph of a compiled function an inner compiler is compiling: the inference graph,
/// or a training graph's forward or backward, and the number of the aot_compile call that
/// made it (the trace directory names its folders `<model>__<n>_forward_<k>` and
/// `<model>__<n>_backward_<k>` by them). Outside aot_compile: Inference, id -1.
struct GraphRole {
  enum class Kind { Inference, Forward, Backward };
  Kind kind = Kind::Inference;
  int aot_id = -1;
  /// An inference graph's input writes taken out of it (lift_input_writes): the compiler
  /// may have the graph write output `output` straight into input `input` (the runtime
  /// then finds the value there and copies nothing). Empty where the caller's inputs must
  /// stay untouched (a repro cut at "aot" runs the graph on the example inputs).
  std::vector<InputWrite> input_writes;
  /// A training forward: its outputs from this index on are the values saved for its
  /// backward, held by autograd until the backward runs (a CUDA graph replay must not
  /// overwrite them while held). A backward: 0, its gradients are held by the grad slots
  /// they go to.
  size_t first_held_output = 0;
  /// A backward: how many of its leading inputs are its forward's saved outputs (read where
  /// the forward left them), and where its tangents start (after the saved forward inputs).
  size_t saved_forward_outputs = 0;
  size_t first_tangent = 0;
};
const GraphRole& current_graph_role();

/// Sets the role of the graphs compiled on this thread while alive.
class GraphRoleScope {
 public:
  explicit GraphRoleScope(GraphRole role);
  ~GraphRoleScope();
  GraphRoleScope(const GraphRoleScope&) = delete;
  GraphRoleScope& operator=(const GraphRoleScope&) = delete;

 private:
  GraphRole saved_;
};

/// aot_module: prepares `g` and hands the result to `inner` (the inductor's inner
/// compiler, or the interpreter for "aot_eager"), registered as the backend `inner_name`.
/// A call that would record autograd history (grad mode on, an input that requires grad
/// reaching a result: graph::why_autograd_records) runs a training graph instead: the
/// joint graph, partitioned, its forward and backward each handed to `inner` (aot/joint.h);
/// the inference graph logs on `aot_graphs`. Each kind is compiled when a call first needs
/// it, the example call's kind at once. What AOT autograd cannot trace runs in the
/// interpreter (capture::warn_interpreted says why). The hand-over to `inner` is the cut
/// of TORCHDYNAMO_REPRO_AFTER=aot (capture/repro_hooks.h): a launcher written there names
/// `inner_name`, which runs a prepared graph without this stage.
///
/// `ahead`, when given, gets each training graph's backward graph as soon as the
/// partitioner made it, before the forward is compiled: a code generator may start its
/// slow work there (inductor starts the C++ compiler), so that the backward compiles while
/// the forward does. It must have no effect a caller can see but speed: `inner` still
/// compiles the backward at the first backward call.
///
/// `before_joint`, when given, rewrites a training graph's prepared forward graph before
/// its joint graph is traced, told which forward inputs require grad (returning null
/// keeps it): the code generator's own
/// training-graph passes (PyTorch's joint-graph passes), whose ops' derivative rows then
/// give the backward — inductor's fuse_attention puts the fused attention op there, and
/// the joint graph gets its backward op from that op's formula.
using CompileAhead = std::function<void(Graph& backward)>;
using ForwardPass =
    std::function<std::unique_ptr<Graph>(const Graph& forward, const std::vector<bool>& requires_grad)>;
CompiledGraph aot_compile(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& inner,
                          const std::string& inner_name = "eager", CompileAhead ahead = {},
                          ForwardPass before_joint = {});

}  // namespace ember::aot
