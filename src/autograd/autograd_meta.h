// autograd/autograd_meta.h — the autograd library's internals: the per-tensor state
// (AutogradMeta, hung on TensorImpl::autograd_meta), saved tensors with their version
// check, the leaf node (AccumulateGrad) and the engine entry point.
#pragma once

#include <string>
#include <vector>

#include "ember/autograd.h"

namespace ember::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  /// Set by requires_grad_ on leaves; non-leaves require grad by having a grad_fn.
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  /// The AccumulateGrad node of a leaf, shared by every use of the leaf in the graph.
  std::weak_ptr<Node> grad_accumulator;
  bool retains_grad = false;
  /// Hooks of a leaf (run by AccumulateGrad before it accumulates).
  std::vector<std::pair<unsigned, Hook>> hooks;
  /// For views (TensorImpl::view_base set): the base's grad_fn when this view's history
  /// was recorded (none for a view taken while its base had no history). A different
  /// grad_fn now means the base was written in place, directly or through another view,
  /// and this view's history is regenerated (refresh_view_history).
  std::weak_ptr<Node> view_base_fn;
};

/// The tensor's AutogradMeta, or null when it has none.
AutogradMeta* meta_of(const Tensor& t);
AutogradMeta& ensure_meta(const Tensor& t);
bool requires_grad(const Tensor& t);
/// Where the gradient of `t` goes: its grad_fn, or its leaf's AccumulateGrad; invalid if
/// it does not require grad. Raises if `t` is a view whose history went stale.
Edge gradient_edge(const Tensor& t);
/// The same storage, sizes and strides, without autograd state.
Tensor alias_without_grad(const Tensor& t);
/// "torch.FloatTensor" for a float32 tensor, as PyTorch names tensor types in messages.
std::string tensor_type_name(const Tensor& t);

/// A tensor kept for the backward pass. It holds the data without autograd state (so an
/// output saved by its own grad_fn makes no reference cycle) and the storage version at
/// save time, which unpack() checks.
class SavedVariable {
 public:
  SavedVariable() = default;
  /// `owner_name`/`output_nr` name the node that produced `t` (for the error message).
  SavedVariable(const Tensor& t, std::string producer, uint32_t output_nr);
  Tensor unpack() const;
  void reset();
  bool defined() const { return defined_; }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  std::string producer_;
  uint32_t output_nr_ = 0;
  bool defined_ = false;
};

/// The leaf node: accumulates the incoming gradient into the leaf's grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

/// Regenerates the history of a view whose base was written in place since the view's
/// history was recorded: its grad_fn becomes an AsStridedBackward0 node from the view's
/// geometry into the base's current gradient edge (PyTorch regenerates views the same
/// way). Does nothing for other tensors. requires_grad, gradient_edge and
/// Tensor::grad_fn call it, so a stale history is never used.
void refresh_view_history(const Tensor& t);

/// Records an in-place write into a view (Note [autograd], CopySlices): `fn` is the
/// write's node, whose input 0 is the view's old value and whose other inputs are the
/// written values. The view's base gets a CopySlices node as its grad_fn (the base's
/// gradient with the view's region replaced by fn's gradient for input 0 goes to the
/// base's old history; fn's other gradients to the written values) and the view an
/// AsStridedBackward0 node into it.
void rebase_view_history(const Tensor& view, std::shared_ptr<Node> fn);

/// Runs the backward pass from `roots` seeded with `grads`. With `capture` non-empty
/// (autograd::grad), returns the gradients arriving at those edges and runs only the
/// nodes needed to compute them (leaves are not accumulated into).
std::vector<Tensor> run_backward(const std::vector<Edge>& roots, const std::vector<Tensor>& grads, bool retain_graph,
                                 const std::vector<Edge>& capture);

/// Installs the Autograd dispatch layer (idempotent).
void install_autograd_layer();

}  // namespace ember::autograd
