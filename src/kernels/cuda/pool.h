// kernels/cuda/pool.h — CUDA kernels of 2-D pooling and their backward ops
// (max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d): one thread per output
// element forward, one per input element backward, which gathers the gradients of the
// output windows that cover it (no atomics, so results do not depend on scheduling). The
// geometry is the CPU's Pool2dParams over contiguous [planes, H, W] tensors; windows,
// divisors and NaN rules follow the CPU kernels (kernels/cpu/conv.cpp), which follow
// ATen's. See Note [cuda] (docs/notes/cuda.md), "Pooling".
#pragma once

#include <optional>
#include <string>

#include "ember/tensor.h"
#include "kernels/cpu/conv.h"

namespace ember::kernels::cuda {

enum class Pool { MaxForward, AvgForward, AdaptiveForward, MaxBackward, AvgBackward, AdaptiveBackward };

struct PoolKernel {
  Pool op = Pool::MaxForward;
  ScalarType dtype = kFloat;
};

const char* pool_name(Pool op);
/// "ember_pool_max_forward_f32".
std::string kernel_symbol(const PoolKernel& k);
/// The translation unit: `(T* out, long long* indices, const T* in, PoolGeometry p,
/// int count_include_pad, long long divisor_override)`; each kernel reads what it needs.
std::string render_pool(const PoolKernel& k);

/// Max pooling of contiguous `input`: out gets the window maxima (NaN wins), indices the
/// flat H*W index of each.
void max_pool2d(const Tensor& input, const Tensor& out, const Tensor& indices, const cpu::Pool2dParams& p);
void avg_pool2d(const Tensor& input, const Tensor& out, const cpu::Pool2dParams& p, bool count_include_pad,
                std::optional<int64_t> divisor_override);
void adaptive_avg_pool2d(const Tensor& input, const Tensor& out, const cpu::Pool2dParams& p);

/// Input gradients from contiguous grad_output (and indices): grad_input is contiguous.
void max_pool2d_backward(const Tensor& grad_output, const Tensor& indices, const Tensor& grad_input,
                         const cpu::Pool2dParams& p);
void avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const cpu::Pool2dParams& p,
                         bool count_include_pad, std::optional<int64_t> divisor_override);
void adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const cpu::Pool2dParams& p);

}  // namespace ember::kernels::cuda
