// ember/nn/loss.h — the loss modules of torch.nn: configuration as nn::Attribute (a
// compiled function is guarded on it), class weights as buffers named as PyTorch's
// ("weight", "pos_weight"; absent when not given, as PyTorch's None buffers), forwards
// calling the functions of ember/ops/loss.h.
#pragma once

#include <optional>
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

/// A module whose forward takes (input, target); operator() calls forward.
class LossModule : public Module {
 public:
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  /// Errors inside name the caller's line, as UnaryModule's operator() does.
  Tensor operator()(const Tensor& input, const Tensor& target, Loc loc = Loc::current());
  /// "none", "mean" or "sum".
  Attribute<std::string> reduction;

 protected:
  explicit LossModule(std::string reduction);
  /// Registers `value` as buffer `name` when given (PyTorch registers None, which no
  /// state dict holds); returns whether it did.
  bool register_optional_buffer(const std::string& name, const std::optional<Tensor>& value);
  /// The buffer `name` when `present`, else nullopt.
  std::optional<Tensor> optional_buffer(const std::string& name, bool present) const;
};

class MSELoss : public LossModule {
 public:
  explicit MSELoss(std::string reduction = "mean") : LossModule(std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "MSELoss"; }
};

class L1Loss : public LossModule {
 public:
  explicit L1Loss(std::string reduction = "mean") : LossModule(std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "L1Loss"; }
};

class SmoothL1Loss : public LossModule {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "SmoothL1Loss"; }
  Attribute<double> beta;
};

/// input holds probabilities; weight (buffer) rescales each element's loss.
class BCELoss : public LossModule {
 public:
  explicit BCELoss(std::optional<Tensor> weight = std::nullopt, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "BCELoss"; }

 private:
  bool has_weight_;
};

/// input holds logits; weight and pos_weight are buffers.
class BCEWithLogitsLoss : public LossModule {
 public:
  explicit BCEWithLogitsLoss(std::optional<Tensor> weight = std::nullopt, std::string reduction = "mean",
                             std::optional<Tensor> pos_weight = std::nullopt);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "BCEWithLogitsLoss"; }

 private:
  bool has_weight_, has_pos_weight_;
};

/// input holds log-probabilities; target class indices.
class NLLLoss : public LossModule {
 public:
  explicit NLLLoss(std::optional<Tensor> weight = std::nullopt, int64_t ignore_index = -100,
                   std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "NLLLoss"; }
  Attribute<int64_t> ignore_index;

 private:
  bool has_weight_;
};

/// input holds logits; target class indices or (same shape as input) class probabilities.
class CrossEntropyLoss : public LossModule {
 public:
  explicit CrossEntropyLoss(std::optional<Tensor> weight = std::nullopt, int64_t ignore_index = -100,
                            std::string reduction = "mean", double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "CrossEntropyLoss"; }
  Attribute<int64_t> ignore_index;
  Attribute<double> label_smoothing;

 private:
  bool has_weight_;
};

}  // namespace ember::nn
