// kernels/cuda/conv.h — convolutions of CUDA tensors through cuDNN (cudnn.h): the forward
// of aten::convolution (1-D as 2-D of height 1, 2-D and 3-D; strided, padded, dilated,
// grouped, transposed, with a bias) and its backward (grad_input, grad_weight, grad_bias).
// Inputs of any strides are made contiguous (NCHW, NCDHW); outputs are contiguous, as the
// callers hand them (a channels_last result is computed contiguous and copied). Shapes and
// dtypes are the ops' to check. See Note [cuda] (docs/notes/cuda.md), "Convolution".
#pragma once

#include <vector>

#include "ember/tensor.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv3d.h"
#include "kernels/cuda/kernel_source.h"

namespace ember::kernels::cuda {

/// out = convolution(input, weight) + bias (bias undefined: none) with geometry `p`, as
/// ops/conv_geometry.h computes it (for a transposed convolution, weight is
/// [in_channels, out_channels / groups, kh, kw]). `allow_tf32`: float32 may use TF32.
void conv_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const cpu::Conv2dParams& p, bool transposed, bool allow_tf32);

/// grads = {grad_input, grad_weight, grad_bias} of that convolution from grad_output;
/// each undefined tensor is not computed.
void conv_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                   const std::vector<Tensor>& grads, const cpu::Conv2dParams& p, bool transposed, bool allow_tf32);

/// The 3-D forms (5-D tensors, Note [3-D convolution]), same contracts, with the geometry
/// `p` as ops/conv.cpp's conv3d_setup makes it: for a transposed convolution, that of the
/// convolution it is the transpose of (p.in the transposed output's sizes, p.out its
/// input's; weight [p.out_channels, p.in_channels / groups, kd, kh, kw]).
void conv_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const cpu::Conv3dParams& p, bool transposed, bool allow_tf32);
void conv_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                   const std::vector<Tensor>& grads, const cpu::Conv3dParams& p, bool transposed, bool allow_tf32);

/// Whether cuDNN takes this geometry as it is: a transposed convolution's output_padding
/// must be below its stride (the output is then the size whose convolution is the input).
/// Larger ones (allowed below the dilation) run on the full output of padding 0, cropped.
bool cudnn_fits(const cpu::Conv2dParams& p, bool transposed);
/// The same for a 3-D convolution (p as conv3d_setup makes it): in every spatial dim.
bool cudnn_fits(const cpu::Conv3dParams& p, bool transposed);

/// out += bias over channels: out and bias (broadcast over N and the spatial dims) of one dtype.
PointwiseKernel bias_add_kernel(ScalarType dtype);

}  // namespace ember::kernels::cuda
