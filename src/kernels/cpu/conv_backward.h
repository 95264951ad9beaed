// kernels/cpu/conv_backward.h — eager CPU kernels of the conv family's backward ops: the
// weight and bias gradients of a 2-D convolution (im2col + GEMM; the input gradient is a
// transposed convolution, see conv.h) and the input gradients of 2-D max, average and
// adaptive-average pooling. Callers pass dense NCHW tensors and contiguous outputs.
#pragma once

#include <optional>

#include "kernels/cpu/conv.h"

namespace ember::kernels::cpu {

/// grad_weight[g] = sum_n a[n, g] @ im2col(b[n, g])^T for each group g, where
/// a is [N, q.out_channels, q.out_h, q.out_w] and b is [N, q.in_channels, q.in_h, q.in_w];
/// out is [q.out_channels, q.in_channels / groups, KH, KW]. For a convolution, a is the
/// output gradient and b the input (q is the forward geometry); for a transposed one, a is
/// the input and b the output gradient (q with the two swapped). Floating dtypes.
void conv2d_weight_grad(const Tensor& a, const Tensor& b, const Tensor& out, const Conv2dParams& q);

/// float32 gradients of a (non-transposed) convolution through oneDNN, written where the
/// pointer is not null: grad_input, grad_weight, and grad_bias (only together with
/// grad_weight). Activations dense NCHW (NHWC when p.channels_last), weights dense OIHW. Returns false when oneDNN cannot take the
/// geometry; the caller then uses the GEMM kernels.
bool conv2d_backward_dnnl(const float* grad_out, const float* input, const float* weight, float* grad_input,
                          float* grad_weight, float* grad_bias, const Conv2dParams& p);

/// out[c] = sum over n, h, w of grad[n, c, h, w] (accumulated in double), for [N, C, S] grad.
void conv_bias_grad(const Tensor& grad, const Tensor& out);

/// Max pooling's input gradient: each output gradient added at the flat H*W index its
/// maximum came from. Raises an index error for an index outside the plane.
void max_pool2d_backward(const Tensor& grad_output, const Tensor& indices, const Tensor& grad_input,
                         const Pool2dParams& p);
/// Average pooling's input gradient (the forward's divisor rules).
void avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const Pool2dParams& p,
                         bool count_include_pad, std::optional<int64_t> divisor_override);
/// Adaptive average pooling's input gradient.
void adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const Pool2dParams& p);

}  // namespace ember::kernels::cpu
