// kernels/cuda/norm.h — CUDA kernels of layer norm (native_layer_norm) and batch norm
// (native_batch_norm and native_batch_norm_backward): row kernels rendered after the row
// head of reduce_source.h (Welford statistics merged with block_combine) and launched a
// block per row (layer norm) or per channel (batch norm). Inputs are contiguous (the ops
// make them so); statistics are kept in float for half and bfloat16, as PyTorch's CUDA
// kernels keep them. Shapes, dtypes and errors come from the ops' meta functions. See
// Note [cuda] (docs/notes/cuda.md), "Norms".
#pragma once

#include <string>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

/// The dtype CUDA norms keep and return statistics in (mean, rstd, save_mean,
/// save_invstd): float for half and bfloat16 inputs, the input's dtype otherwise
/// (PyTorch's acc_type with is_cuda=true).
ScalarType norm_stat_dtype(ScalarType input);

/// One layer norm kernel: input/output dtype `in`, statistics dtype `stat`.
struct LayerNormKernel {
  ScalarType in = kFloat;
  ScalarType stat = kFloat;
  bool warp_rows = false;  ///< a warp per row (N at most kWarpRowMax), else a block per row
  int vec = 1;             ///< a warp row's elements per access: warp_row_vector
  int slots = 32;          ///< a warp row's elements per lane: warp_row_slots
};
/// One batch norm kernel: input/output `in`, parameters (weight, bias, running stats)
/// `param`, saved statistics `stat`. The backward kernel reads the statistics as `stat`
/// (saved ones in training, running ones in evaluation, then `stat` is the running
/// stats' dtype) and writes grad_weight/grad_bias as `param`.
struct BatchNormKernel {
  bool backward = false;
  bool eval = false;  ///< forward with the running statistics: a pointwise pass over planes
  ScalarType in = kFloat;
  ScalarType param = kFloat;
  ScalarType stat = kFloat;
};

std::string kernel_symbol(const LayerNormKernel& k);
std::string kernel_symbol(const BatchNormKernel& k);
std::string render_layer_norm(const LayerNormKernel& k);
std::string render_batch_norm(const BatchNormKernel& k);

/// Layer norm of M contiguous rows of N elements: out = (x - mean) * rstd * weight + bias
/// (weight/bias undefined, or N contiguous elements of x's dtype); mean and rstd get M
/// values (rstd = 1/sqrt(biased var + eps)). An empty row gives mean 0 and rstd NaN.
void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& rstd);

/// Batch norm of a contiguous [N, C, S] input. Parameters are 1-D with any stride, or
/// undefined. Training normalizes with the batch statistics, writes save_mean and
/// save_invstd and updates the running stats in place (momentum, unbiased variance); an
/// empty batch saves 0 and leaves them alone. Evaluation normalizes with the running stats
/// and saves them (the mean and 1/sqrt(var + eps)), as PyTorch's CUDA kernel does.
void batch_norm(const Tensor& x, int64_t N, int64_t C, int64_t S, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps,
                const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd);

/// Batch norm's gradients over contiguous [N, C, S] grad_out and input. `mean` and `var`
/// are the saved mean and invstd in training, the running mean and variance otherwise
/// (any stride, one dtype). grad_input (contiguous), grad_weight and grad_bias (C
/// contiguous elements) are written when defined.
void batch_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t N, int64_t C, int64_t S, const Tensor& weight,
                         const Tensor& mean, const Tensor& var, bool train, double eps, const Tensor& grad_input,
                         const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace ember::kernels::cuda
