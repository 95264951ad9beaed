// ember/optim.h — optimizers in the shape of torch.optim: SGD and AdamW with PyTorch 1.13's
// single-tensor update rules, applied to a list of leaf parameters. Design: docs/notes/optim.md.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember::optim {

/// Holds the parameters; subclasses keep per-parameter state and implement step().
class Optimizer {
 public:
  /// Raises ValueError for an empty list or a non-leaf tensor, as torch.optim does.
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient; runs without recording the graph.
  virtual void step() = 0;
  /// Clears the gradients: undefined (set_to_none) or zero-filled in place.
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
};

struct SGDOptions {
  double lr;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/// State of one SGD parameter: the momentum buffer (undefined until its first step with momentum).
struct SGDParamState {
  Tensor momentum_buffer;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  const SGDOptions& options() const { return options_; }
  /// State of params()[i].
  const SGDParamState& state(size_t i) const { return state_.at(i); }

 private:
  SGDOptions options_;
  std::vector<SGDParamState> state_;
};

struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
  /// PyTorch's `capturable`: the step count lives on the parameters' device (CUDA only) and
  /// the bias corrections are computed there in float32, so a step reads no host value and
  /// can be captured into a CUDA graph. `ember::compile` sets it, as torch.compile does,
  /// when it traces the first step of parameters that are all on CUDA (Note [capturable]).
  bool capturable = false;
};

/// State of one AdamW parameter; every tensor is created at its first step (undefined
/// before). `step` counts the steps as a 0-dim float32 tensor, as torch.optim's
/// state['step'] (on the CPU, or on the parameter's device when capturable): the bias
/// corrections are computed from it by ops, so a compiled step reads and advances it as
/// graph state and one graph serves every step.
struct AdamWParamState {
  Tensor step;
  Tensor exp_avg;
  Tensor exp_avg_sq;
  Tensor max_exp_avg_sq;  // amsgrad only
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  void step() override;
  const AdamWOptions& options() const { return options_; }
  /// State of params()[i].
  const AdamWParamState& state(size_t i) const { return state_.at(i); }

 private:
  AdamWOptions options_;
  std::vector<AdamWParamState> state_;
};

}  // namespace ember::optim
