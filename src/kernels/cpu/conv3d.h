// kernels/cpu/conv3d.h — eager CPU kernels of 3-D convolution: the forward convolution,
// its transpose (which is also the input gradient) and the weight gradient over NCDHW
// tensors: float32 on oneDNN's convolution primitives (conv3d_dnnl.cpp), other dtypes and
// geometries oneDNN rejects as direct loops (conv3d.cpp). Note [3-D convolution] in
// docs/notes/nn.md.
#pragma once

#include <array>
#include <cstdint>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// Geometry of a 3-D convolution: index 0, 1, 2 of each array is depth, height, width.
/// `in` and `out` are the spatial sizes of the convolution's input and output; for a
/// transposed convolution they are those of the convolution it is the transpose of.
struct Conv3dParams {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  std::array<int64_t, 3> in{}, out{}, kernel{}, stride{1, 1, 1}, pad{}, dilation{1, 1, 1};
  /// Activations (input, output and their gradients) NDHWC instead of NCDHW: only the
  /// oneDNN forms below take it; the loops never see it set.
  bool channels_last = false;
};

/// out = conv3d(input, weight) + bias. input [N, C, D, H, W] of spatial sizes p.in,
/// weight [OC, C/groups, KD, KH, KW], bias [OC] or undefined, out [N, OC, p.out...]; all
/// dense NCDHW of out's dtype. Output positions are computed only up to p.out, so p.out
/// may be shorter than the full convolution (the input gradient of a transposed one).
void conv3d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                    const Conv3dParams& p);

/// The transpose of conv3d_forward of geometry p: out [N, C, p.in...] (p.in_channels = C)
/// receives, for every element of `grad` [N, OC, p.out...], its products with `weight`
/// [OC, C/groups, KD, KH, KW] scattered onto the input positions it was computed from;
/// then bias [C] (or undefined) is added. Both the input gradient of a convolution and the
/// forward of a transposed one; out is overwritten.
void conv3d_transpose(const Tensor& grad, const Tensor& weight, const Tensor& bias, const Tensor& out,
                      const Conv3dParams& p);

/// The weight gradient of conv3d_forward of geometry p: out [OC, C/groups, KD, KH, KW] =
/// sum over images and output positions of grad [N, OC, p.out...] times the input
/// [N, C, p.in...] elements each weight multiplied. out is overwritten.
void conv3d_weight_grad(const Tensor& grad, const Tensor& input, const Tensor& out, const Conv3dParams& p);

/// float32 forms on oneDNN (conv3d_dnnl.cpp), same contracts as the three above over dense
/// NCDHW (NDHWC when p.channels_last) activations and OIDHW float weights (the transpose
/// without its bias). Each returns false,
/// computing nothing, when oneDNN cannot run geometry p (a size 0, an output shorter than
/// oneDNN's consistency rule allows, no implementation); the caller then runs the loops.
bool conv3d_forward_dnnl(const float* input, const float* weight, const float* bias, float* out,
                         const Conv3dParams& p);
bool conv3d_backward_data_dnnl(const float* grad, const float* weight, float* out, const Conv3dParams& p);
bool conv3d_backward_weights_dnnl(const float* grad, const float* input, float* out, const Conv3dParams& p);

/// How many 3-D convolution kernel calls (forward, transpose, weight gradient) oneDNN ran
/// in this process so far (the rest ran the loops).
int64_t conv3d_dnnl_calls();
/// How many of those read and wrote NDHWC activations as they were (Conv3dParams::channels_last).
int64_t conv3d_dnnl_ndhwc_calls();

}  // namespace ember::kernels::cpu
