// aot/joint.h — training graphs: the joint forward-backward graph (joint.cpp), its split
// into a forward and a backward graph (partition.cpp), and the runtime that runs them
// under one autograd node (runtime.cpp). See Note [aot] (docs/notes/aot.md), "Training".
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aot/aot.h"
#include "ember/compile.h"

namespace ember::aot {

/// A training graph's forward and backward traced together (PyTorch's joint graph).
struct JointGraph {
  /// Inputs: the forward graph's inputs, then one tangent per forward output that
  /// requires grad. Outputs: the forward outputs, then one gradient per forward input that
  /// requires grad and that a gradient reaches.
  std::unique_ptr<Graph> graph;
  size_t num_forward_inputs = 0;
  size_t num_forward_outputs = 0;
  /// Per forward output: its tangent's index among the tangents, or -1 (it needs none:
  /// it does not require grad, or it is a graph input itself). Outputs of one value share it.
  std::vector<int> tangent_of_output;
  /// Per forward input: its gradient's index among the gradient outputs, or -1.
  std::vector<int> grad_of_input;
  /// The nodes of the forward part (inputs, constants and calls copied from the forward
  /// graph); every other node is the backward's.
  std::set<const Node*> forward_nodes;
  size_t num_tangents() const;
  size_t num_grads() const;
};

/// Traces `forward` (functionalized and decomposed) and the registry's derivative formulas
/// over it into one graph. `requires_grad[i]` says whether forward input i requires grad.
/// A value requires grad as the Autograd layer decides (grad mode at its node, a
/// differentiable op, an input that requires grad); formulas run in reverse node order on
/// fakes recorded into the graph (capture::GraphRecorder), their gradients summed to
/// each input's shape and dtype and added up per value, as eager's FormulaNode and engine
/// do. Raises an Error when the graph cannot be differentiated this way (a write into a
/// value that requires grad, a formula that reads data, an op without a formula): the
/// caller then runs the graph in the interpreter. Logs the graph on `aot_joint_graph`.
JointGraph make_joint_graph(const Graph& forward, const std::vector<bool>& requires_grad);

/// channels_last_convolutions (layout.cpp). Requires: a functional forward graph, static or
/// over size symbols (its rules compare geometry as expressions, reading no size as an
/// integer; a convolution whose input has a symbolic dim other than the batch is left
/// alone). Guarantees: the input of each 2-D float32 CPU convolution (not transposed, its
/// input and weight contiguous or channels_last) is channels_last — `clone(x,
/// memory_format=channels_last)` where it was not already —, and every node reading a
/// value whose strides changed has its output geometry from its meta function again (a
/// convolution over NHWC returns NHWC, as do batch norm, relu and add over it), so
/// activations stay NHWC from one convolution to the next. Outputs keep their sizes and
/// dtypes, not necessarily their strides (restore_output_strides). Returns nullptr when no
/// convolution changes, or a node whose input strides changed has no meta function.
/// `changed` (when given) counts the converted convolution inputs.
std::unique_ptr<Graph> channels_last_convolutions(const Graph& forward, size_t* changed = nullptr);

/// Whether geometries `a` and `b` have the same sizes and offset, and the same strides on
/// every dim of size above 1 (compared as expressions over the size symbols: no guard).
bool same_layout(const TensorMeta& a, const TensorMeta& b);

/// The memory format ("contiguous_format", "channels_last") whose clone gives `m`'s
/// strides, or nullopt when neither does (or the offset is not 0).
std::optional<std::string> memory_format_of(const TensorMeta& m);

/// For a node being rebuilt by graph::rewrite: whether any of its tensor arguments in the new
/// graph (`args`) is laid out other than the one it read in the old graph (`n.args()`).
bool arguments_moved(const Node& n, const std::vector<Arg>& args);

/// Whether a node's output geometry can be computed again from its op's meta function: a
/// call of a functional, view or in-place op that has one (not a composite, whose parts
/// were traced, nor a data-dependent op).
bool geometry_recomputable(const Node& n);

/// Gives each output of `joint` (forward outputs and gradients) the strides of the same
/// output of `reference`, the joint graph of the graph before channels_last_convolutions —
/// what eager returns —, by a clone in that memory format (a forward output's in the
/// forward part). Returns false, leaving `joint` as it was, when an output's strides differ
/// and the reference's are neither contiguous nor channels_last.
bool restore_output_strides(JointGraph& joint, const JointGraph& reference);
/// The same on a plain graph: each output of `g` gets the strides of the same output of
/// `reference` by a clone in that memory format (`copies`, if given: the clone of each
/// output, or null); false, leaving `g` as it was, when one cannot.
bool restore_output_strides(Graph& g, const Graph& reference, std::vector<Node*>* copies = nullptr);

/// Layout optimization of an inference graph (config().aot.inference_layout_optimization,
/// Note [aot], "Layout optimization"): channels_last_convolutions(g) when every output keeps
/// the strides it has in `g` (what eager returns), or nullptr (`g` is to run as it is) when
/// no convolution changes or an output's layout would change: copying an activation back
/// to NCHW costs more than the reorders the rewrite saves. Logs what it did on `aot`.
std::unique_ptr<Graph> layout_optimized_inference_graph(const Graph& g);

/// Layout optimization of a training graph (config().aot.layout_optimization, Note [aot]):
/// the joint graph of channels_last_convolutions(forward) with its outputs' strides those
/// of `reference` (make_joint_graph(forward, requires_grad)), or `reference` itself when no
/// convolution changes or restore_output_strides fails. Logs what it did on `aot`.
JointGraph make_layout_optimized_joint_graph(const Graph& forward, const std::vector<bool>& requires_grad,
                                             JointGraph reference);

/// A partitioned joint graph.
struct Partition {
  /// Inputs: the forward inputs. Outputs: the forward outputs, then the saved values
  /// computed in the graph (saved_outputs of them).
  std::unique_ptr<Graph> forward;
  /// Inputs: the saved values (those the forward returns, then the saved forward inputs,
  /// in saved_inputs' order), then the tangents. Outputs: the gradients (JointGraph order).
  std::unique_ptr<Graph> backward;
  size_t saved_outputs = 0;
  /// Forward inputs that the backward reads, by index.
  std::vector<size_t> saved_inputs;
  /// Bytes of the saved values (by their recorded geometry), for the log.
  int64_t saved_bytes = 0;
};

/// How the partitioner chooses what the backward reads. See Note [aot], "Partitioners".
enum class Partitioner {
  /// Every forward value a formula reads is saved (PyTorch's default_partition); for bisecting.
  SaveAll,
  /// Min-cut rematerialization: cheap pointwise chains are recomputed in the backward when
  /// that saves fewer bytes (PyTorch's min_cut_rematerialization_partition).
  MinCut,
};

/// The partitioner config().aot.partitioner names ("min_cut" or "default").
Partitioner configured_partitioner();

/// Splits `joint` into a forward and a backward graph. Logs the saved-tensor count and
/// bytes on `aot`, and both graphs on `aot_graphs`.
Partition partition_joint_graph(const JointGraph& joint, Partitioner how);

/// The training runtime: hands `p`'s backward to `ahead` (if given, aot_compile says
/// why), compiles `p`'s forward with `inner` now (on `example_inputs`) and its backward on
/// the first backward call; returns a CompiledGraph whose outputs that require grad have
/// one grad_fn, a CompiledFunctionBackward node. `joint` gives the tangent and gradient
/// maps; `aot_id` numbers the graphs' GraphRole (aot.h).
CompiledGraph make_training_function(std::shared_ptr<Partition> p, const JointGraph& joint,
                                     const std::vector<Tensor>& example_inputs, const Backend& inner,
                                     const std::string& inner_name, int aot_id, const CompileAhead& ahead = {});

}  // namespace ember::aot
