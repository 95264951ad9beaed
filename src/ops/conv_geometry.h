// ops/conv_geometry.h — the argument checks and geometry of convolution and 2-D pooling
// (defined in conv.cpp), shared with their backward ops (nn_backward.cpp), which check
// their arguments exactly as the forward op did.
#pragma once

#include <vector>

#include "ember/ivalue.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv3d.h"

namespace ember::ops {

/// A checked convolution's geometry. 1-D and 2-D convolutions fill p; 3-D ones (dims == 3)
/// fill p3, and of p only batch, in_channels, out_channels and groups.
struct ConvSetup {
  int64_t dims = 2;
  kernels::cpu::Conv2dParams p;
  kernels::cpu::Conv3dParams p3;
  /// Whether the output (and grad_input, grad_weight) is channels_last (channels_last_3d
  /// for 3-D), by PyTorch's rule: Note [channels_last convolution] for 1-D and 2-D (with
  /// Note [channels_last transposed convolution on CUDA] in conv.cpp), Note [3-D
  /// convolution] for 3-D.
  bool channels_last = false;
  std::vector<int64_t> out_sizes;
  bool transposed = false;
};

/// Checks a convolution call (aten::convolution's arguments) as ATen's
/// _convolution/check_shape_forward do, and returns its geometry with 1-D convolutions
/// expressed as 2-D ones of height 1 (3-D ones in ConvSetup::p3).
ConvSetup conv_setup(const Stack& a);

/// Note [channels_last convolution]: PyTorch's rule for a CPU convolution's memory format
/// (ConvUtils.h's mkldnn_conv_use_channels_last and thnn_conv_use_channels_last): a 2-D
/// convolution on the CPU (and on meta tensors) is channels_last when its input or its
/// weight suggests it (c10's is_channels_last_strides_2d); its output, grad_input and
/// grad_weight are then channels_last (NHWC) too, transposed convolutions included
/// (PyTorch 2's rule; torch 1.13 kept those contiguous). 1-D convolutions stay contiguous
/// (ATen makes their 3-D input contiguous first). For a 3-D convolution this answers
/// whether the input or weight suggests channels_last_3d (c10's is_channels_last_strides_3d),
/// which is necessary but not enough: ConvSetup::channels_last has the answer.
bool conv_channels_last(const Tensor& input, const Tensor& weight);

/// Geometry of max_pool2d_with_indices / avg_pool2d / _adaptive_avg_pool2d from their
/// forward arguments (checked as the forward ops check them).
kernels::cpu::Pool2dParams max_pool_setup(const Stack& a);
kernels::cpu::Pool2dParams avg_pool_setup(const Stack& a);
kernels::cpu::Pool2dParams adaptive_setup(const Stack& a);

/// ATen's pooling_output_shape: the number of windows along a dim of `in` elements (its
/// stride and padding checks included); 2-D and 3-D pooling share it.
int64_t pooling_output_shape(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode);
/// pooling_output_shape of a size that may be symbolic (3-D pooling traced with dynamic
/// shapes): the same checks and formula over SymInt; the last-window correction is a
/// comparison the ranges decide or a guard.
SymInt pooling_output_shape(const SymInt& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                            bool ceil_mode);

/// `input`'s sizes with the last two replaced by out_h, out_w.
std::vector<int64_t> pooled_sizes(const Tensor& input, int64_t out_h, int64_t out_w);

}  // namespace ember::ops
