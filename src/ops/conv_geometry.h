// ops/conv_geometry.h — the argument checks and geometry of convolution and 2-D pooling
// (defined in conv.cpp), shared with their backward ops (nn_backward.cpp), which check
// their arguments exactly as the forward op did.
#pragma once

#include <vector>

#include "ember/ivalue.h"
#include "kernels/cpu/conv.h"

namespace ember::ops {

struct ConvSetup {
  kernels::cpu::Conv2dParams p;
  std::vector<int64_t> out_sizes;
  bool transposed = false;
};

/// Checks a convolution call (aten::convolution's arguments) as ATen's
/// _convolution/check_shape_forward do, and returns its geometry with 1-D convolutions
/// expressed as 2-D ones of height 1.
ConvSetup conv_setup(const Stack& a);

/// Note [channels_last convolution]: PyTorch's rule for a CPU convolution's memory format
/// (ConvUtils.h's mkldnn_conv_use_channels_last and thnn_conv_use_channels_last): a 2-D
/// convolution on the CPU (and on meta tensors) is channels_last when its input or its
/// weight suggests it (c10's is_channels_last_strides_2d); its output, grad_input and
/// grad_weight are then channels_last (NHWC) too, transposed convolutions included
/// (PyTorch 2's rule; torch 1.13 kept those contiguous). 1-D convolutions stay contiguous
/// (ATen makes their 3-D input contiguous first).
bool conv_channels_last(const Tensor& input, const Tensor& weight);

/// Geometry of max_pool2d_with_indices / avg_pool2d / _adaptive_avg_pool2d from their
/// forward arguments (checked as the forward ops check them).
kernels::cpu::Pool2dParams max_pool_setup(const Stack& a);
kernels::cpu::Pool2dParams avg_pool_setup(const Stack& a);
kernels::cpu::Pool2dParams adaptive_setup(const Stack& a);

/// ATen's pooling_output_shape: the number of windows along a dim of `in` elements (its
/// stride and padding checks included); 2-D and 3-D pooling share it.
int64_t pooling_output_shape(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode);

/// `input`'s sizes with the last two replaced by out_h, out_w.
std::vector<int64_t> pooled_sizes(const Tensor& input, int64_t out_h, int64_t out_w);

}  // namespace ember::ops
