// kernels/cpu/norm.h — layer norm (fused per row: moments and affine transform while the
// row is in cache) and batch norm (per-channel statistics in double, as ATen's CPU
// accumulation type, then one affine pass).
#pragma once

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// Normalizes each of M contiguous rows of N elements of `in`; gamma/beta (undefined, or
/// N contiguous elements of in's dtype) scale and shift. mean and rstd receive M values.
void layer_norm(const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t M, int64_t N, double eps,
                Tensor& out, Tensor& mean, Tensor& rstd);

/// Batch norm of a contiguous [N, C, S] input, or with `channels_last` of an input and
/// output dense in [N, S, C] order (NHWC activations: channels fastest). Parameters
/// (weight, bias, running stats) are 1-D of C elements with any stride, or undefined.
/// Training uses batch statistics and updates the running stats (if defined) in place;
/// evaluation uses the running stats. save_mean / save_invstd receive C values in training
/// and nothing otherwise.
void batch_norm(const Tensor& in, int64_t N, int64_t C, int64_t S, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps,
                Tensor& out, Tensor& save_mean, Tensor& save_invstd, bool channels_last = false);

/// aten::batch_norm_update_stats of a contiguous [N, C, S] input, or with `channels_last`
/// of an input dense in [N, S, C] order: each channel's batch mean and biased variance into
/// save_mean / save_var (C values), the running stats (if defined) updated in place as
/// batch_norm's training step updates them. One pass over the input; the mean equals
/// batch_norm's save_mean (of the same layout) bit for bit.
void batch_norm_update_stats(const Tensor& in, int64_t N, int64_t C, int64_t S, const Tensor& running_mean,
                             const Tensor& running_var, double momentum, Tensor& save_mean, Tensor& save_var,
                             bool channels_last = false);

}  // namespace ember::kernels::cpu
