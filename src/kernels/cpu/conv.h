// kernels/cpu/conv.h — eager CPU kernels of the conv family: 2-D convolution (oneDNN for
// float32, im2col + GEMM for the other dtypes) and 2-D max/avg/adaptive-avg pooling.
// Callers pass dense (contiguous) NCHW inputs and preallocated contiguous outputs.
#pragma once

#include <cstdint>
#include <optional>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

struct Conv2dParams {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  /// Activations (input and output, and their gradients) are NHWC in memory, channels
  /// fastest: a 4-D tensor of channels_last strides (a 3-D one of strides [L*C, 1, C]).
  /// Weights stay dense OIHW. Only the float32 oneDNN paths take it; the ops layer gives
  /// the other kernels contiguous tensors.
  bool channels_last = false;
};

/// out = conv2d(input, weight) + bias. input [N, C, H, W], weight [OC, C/groups, KH, KW],
/// bias [OC] or undefined; all of out's dtype and contiguous (input and out dense NHWC
/// when p.channels_last, float32 only). Floating and integral dtypes.
void conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                    const Conv2dParams& p);

/// How many convolution weights have been reordered into oneDNN's layout and kept (Note
/// [kept convolution weights], conv.cpp), and the bytes kept now.
int64_t conv2d_weight_reorders_kept();
int64_t conv2d_kept_weight_bytes();

/// Transposed convolution (the gradient of conv2d with respect to its input). input
/// [N, C, H, W], weight [C, OC/groups, KH, KW], bias [OC]; p.in_* and p.out_* describe
/// input and output, p.out_channels is OC.
void conv_transpose2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                              const Conv2dParams& p);

/// Geometry of one pooling call over `planes` independent H*W planes.
struct Pool2dParams {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};

/// Max pooling; `indices` (int64) receives the flat H*W index of each maximum (NaN wins).
void max_pool2d_forward(const Tensor& input, const Tensor& out, const Tensor& indices, const Pool2dParams& p);
/// The same over NHWC (channels_last) tensors: input [N, C, H, W] dense channels_last,
/// `out` and `indices` [N, C, out_h, out_w] dense channels_last; p.planes = N * C. Values
/// and indices are max_pool2d_forward's of the same input.
void max_pool2d_forward_nhwc(const Tensor& input, const Tensor& out, const Tensor& indices, int64_t channels,
                             const Pool2dParams& p);
/// Average pooling with ATen's divisor rules (count_include_pad, divisor_override).
void avg_pool2d_forward(const Tensor& input, const Tensor& out, const Pool2dParams& p, bool count_include_pad,
                        std::optional<int64_t> divisor_override);
/// Adaptive average pooling (ATen's start/end index formulas); uses planes, in_*, out_*.
void adaptive_avg_pool2d_forward(const Tensor& input, const Tensor& out, const Pool2dParams& p);

}  // namespace ember::kernels::cpu
