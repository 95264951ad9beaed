// kernels/cpu/norm_backward.h — batch norm's backward kernel (the CPU kernel of
// aten::native_batch_norm_backward): per-channel sums of the output gradient in double,
// then the input gradient in one pass.
#pragma once

#include <vector>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// Statistics and parameters of one batch norm backward call, one value per channel:
/// mean and invstd are the saved batch statistics in training, the running mean and
/// 1/sqrt(running_var + eps) otherwise; weight is empty when the forward had none (1).
struct BatchNormBackwardStats {
  std::vector<double> mean, invstd, weight;
};

/// Gradients of batch norm over contiguous [N, C, S] `input` and `grad_out` (same dtype),
/// or with `channels_last` over input, grad_out and grad_input dense in [N, S, C] order
/// (NHWC: channels fastest). grad_input (input's dtype) and grad_weight / grad_bias (C
/// elements, any floating dtype, contiguous) are filled when defined. Training uses the
/// batch-statistics formula (the mean and variance depend on the input); evaluation the
/// affine one.
void batch_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t N, int64_t C, int64_t S,
                         const BatchNormBackwardStats& stats, bool train, const Tensor& grad_input,
                         const Tensor& grad_weight, const Tensor& grad_bias, bool channels_last = false);

}  // namespace ember::kernels::cpu
