// ember/autograd.h — reverse-mode automatic differentiation, as libtorch spells it:
// grad mode guards, the grad_fn graph (Node, Edge), backward() and autograd::grad().
// Tensor's autograd methods (requires_grad_, grad, backward, register_hook, …) are
// declared in ember/tensor.h. Design: docs/notes/autograd.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// Whether ops on this thread record the graph for backward (true unless a NoGradGuard is alive).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

/// Disables gradient recording on this thread while alive (torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Enables gradient recording on this thread while alive (torch.enable_grad()).
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

namespace autograd {

/// Input `input_nr` of node `function`: where a gradient goes.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};

using Hook = std::function<Tensor(const Tensor&)>;

/// One backward function of the graph: takes the gradients of its forward op's outputs
/// and returns those of the op's tensor inputs, which flow along next_edges.
class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(uint32_t num_inputs);
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// PyTorch's name for the node: "AddBackward0", "AccumulateGrad", …
  virtual std::string name() const = 0;
  /// Gradients of the forward outputs (undefined where none flowed) -> gradients of the inputs.
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  /// Frees saved tensors after a backward pass without retain_graph.
  virtual void release_variables() {}

  /// Number of gradients the node takes (its forward op's outputs).
  uint32_t num_inputs() const { return num_inputs_; }
  /// Where each returned gradient goes (invalid edges: inputs that need no gradient).
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  /// Creation order; the engine runs later nodes first among those ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  // --- used by the engine and the autograd layer -------------------------------------
  std::vector<Edge> next_edges_;
  /// Hooks on the gradient of input `first` (tensor hooks of non-leaf tensors).
  std::vector<std::pair<uint32_t, std::pair<unsigned, Hook>>> pre_hooks_;
  /// Non-leaf tensors that retain their gradient: (input, tensor); run after the hooks.
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained_;

 protected:
  uint32_t num_inputs_;
  uint64_t sequence_nr_;
};

/// Computes the gradients of `tensors` (seeded with `grad_tensors`, default ones for
/// scalars) and accumulates them into the grad() of the leaves.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              bool retain_graph = false, Loc loc = Loc::current());

/// The gradients of `outputs` w.r.t. `inputs` (torch.autograd.grad); leaves' grad() are
/// not touched. With allow_unused, an input the outputs do not depend on gets an
/// undefined Tensor instead of an error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false, Loc loc = Loc::current());

}  // namespace autograd
}  // namespace ember
