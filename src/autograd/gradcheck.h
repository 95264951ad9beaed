// autograd/gradcheck.h — torch.autograd.gradcheck for Ember: compares the gradients
// autograd computes with central finite differences in float64.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/autograd.h"

namespace ember::autograd {

struct GradcheckResult {
  bool ok = true;
  /// On failure: which input and element, the analytic and the numeric value.
  std::string message;
};

using GradcheckFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

/// Checks d(sum_k <out_k, w_k>)/d(input) for fixed weights w_k against central
/// differences with step `eps`. Floating-point inputs are converted to contiguous float64
/// leaves that require grad; other inputs (masks, indices) are passed unchanged.
/// Tolerances are PyTorch's gradcheck defaults.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3);

}  // namespace ember::autograd
