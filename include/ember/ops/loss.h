// ember/ops/loss.h — loss functions as torch.nn.functional has them (string reductions
// "none" | "mean" | "sum"), and the ATen ops behind nll_loss.
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

/// Mean squared error: reduce((input - target)²); the two broadcast.
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                Loc loc = Loc::current());
/// Mean absolute error: reduce(|input - target|).
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
               Loc loc = Loc::current());
/// Huber-like loss: 0.5·d²/beta where |d| < beta, |d| - 0.5·beta elsewhere (beta = 0: l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                      double beta = 1.0, Loc loc = Loc::current());
/// -(target·log(input) + (1 - target)·log(1 - input)), logs clamped at -100; input holds
/// probabilities and has target's shape; weight multiplies each element's loss.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const std::optional<Tensor>& weight = std::nullopt, const std::string& reduction = "mean",
                            Loc loc = Loc::current());
/// binary_cross_entropy of sigmoid(input), computed stably from the logits; pos_weight
/// (one value per class, broadcast over the last dim) weighs the positive term.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight = std::nullopt,
                                        const std::string& reduction = "mean",
                                        const std::optional<Tensor>& pos_weight = std::nullopt,
                                        Loc loc = Loc::current());
/// Negative log likelihood of int64 class indices: input (C), (N, C) or (N, C, d1, …) of
/// log-probabilities, target (), (N) or (N, d1, …). Targets equal to ignore_index count
/// for nothing; "mean" divides by the summed weight of the targets counted.
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                int64_t ignore_index = -100, const std::string& reduction = "mean", Loc loc = Loc::current());
/// log_softmax over the class dim (1, or 0 for a 1-D input), then nll_loss; a target of
/// input's shape holds class probabilities instead. label_smoothing in [0, 1] mixes the
/// target with the uniform distribution.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                     int64_t ignore_index = -100, const std::string& reduction = "mean", double label_smoothing = 0.0,
                     Loc loc = Loc::current());

/// ATen's nll_loss_forward (reduction: 0 none, 1 mean, 2 sum): (output, total_weight).
std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight, int64_t reduction,
                                            int64_t ignore_index, Loc loc = Loc::current());
/// ATen's nll_loss_backward: the gradient of nll_loss_forward's output w.r.t. self.
Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight, Loc loc = Loc::current());

}  // namespace ember
