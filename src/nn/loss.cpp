// The loss modules of ember/nn/loss.h: configuration and buffers as torch.nn's, forwards
// over ember/ops/loss.h.
#include "ember/nn/loss.h"

#include "ember/error.h"
#include "ember/ops/loss.h"
#include "support/call_context.h"

namespace ember::nn {

LossModule::LossModule(std::string reduction_) : reduction(this, "reduction", std::move(reduction_)) {
  const std::string& r = reduction.get();
  EMBER_CHECK_KIND(ErrorKind::ValueError, r == "none" || r == "mean" || r == "sum")
      << r << " is not a valid value for reduction";
}

bool LossModule::register_optional_buffer(const std::string& name, const std::optional<Tensor>& value) {
  if (!value) return false;
  register_buffer(name, *value);
  return true;
}

std::optional<Tensor> LossModule::optional_buffer(const std::string& name, bool present) const {
  return present ? std::optional<Tensor>(tensor(name)) : std::nullopt;
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) { return mse_loss(input, target, reduction); }

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) { return l1_loss(input, target, reduction); }

SmoothL1Loss::SmoothL1Loss(std::string reduction_, double beta_)
    : LossModule(std::move(reduction_)), beta(this, "beta", beta_) {}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction, beta);
}

BCELoss::BCELoss(std::optional<Tensor> weight, std::string reduction_)
    : LossModule(std::move(reduction_)), has_weight_(register_optional_buffer("weight", weight)) {}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, optional_buffer("weight", has_weight_), reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(std::optional<Tensor> weight, std::string reduction_,
                                     std::optional<Tensor> pos_weight)
    : LossModule(std::move(reduction_)),
      has_weight_(register_optional_buffer("weight", weight)),
      has_pos_weight_(register_optional_buffer("pos_weight", pos_weight)) {}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, optional_buffer("weight", has_weight_), reduction,
                                          optional_buffer("pos_weight", has_pos_weight_));
}

NLLLoss::NLLLoss(std::optional<Tensor> weight, int64_t ignore_index_, std::string reduction_)
    : LossModule(std::move(reduction_)),
      ignore_index(this, "ignore_index", ignore_index_),
      has_weight_(register_optional_buffer("weight", weight)) {}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, optional_buffer("weight", has_weight_), ignore_index, reduction);
}

CrossEntropyLoss::CrossEntropyLoss(std::optional<Tensor> weight, int64_t ignore_index_, std::string reduction_,
                                   double label_smoothing_)
    : LossModule(std::move(reduction_)),
      ignore_index(this, "ignore_index", ignore_index_),
      label_smoothing(this, "label_smoothing", label_smoothing_),
      has_weight_(register_optional_buffer("weight", weight)) {}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, optional_buffer("weight", has_weight_), ignore_index, reduction, label_smoothing);
}

Tensor LossModule::operator()(const Tensor& input, const Tensor& target, Loc loc) {
  support::UserLocScope scope(loc);
  return forward(input, target);
}

}  // namespace ember::nn
