// kernels/cuda/cudnn.h — one cuDNN convolution pass on the current stream, through
// cuDNN 9's graph API (an execution plan per geometry from the instant heuristics, made
// on its first call; per call a variant pack of pointers), or, for a geometry the graph
// API offers no plan for, its v7 convolution API (cudnnConvolutionForward / BackwardData
// / BackwardFilter, the algorithm from cudnnGetConvolution*Algorithm_v7), with cuDNN
// opened by dlopen on first use (EMBER_CUDNN_LIBRARY, libcudnn.so.9, the toolkit's library
// directory) and reached through a table of function pointers. A handle per thread and
// device; the workspace from the caching allocator on the current stream. A build without
// CUDA (or without cuDNN's headers) links cudnn_off.cpp, which raises. See Note [cuda],
// "Convolution".
#pragma once

#include <cstdint>
#include <string>

#include "ember/dtype.h"

namespace ember::kernels::cuda {

/// Whether cuDNN can be opened and has every function Ember calls; `reason` says why not.
bool cudnn_available(std::string* reason);
/// cuDNN's version number (cudnnGetVersion: 91900 for 9.19.0).
int64_t cudnn_version();

/// Which pass of the convolution y = conv(x, w) a call computes, and so which of x, w, y
/// it writes: Forward writes y, BackwardData writes x (from y as dy), BackwardFilter
/// writes w (from x and y as dy).
enum class ConvPass { Forward, BackwardData, BackwardFilter };

/// One pass over contiguous NCHW tensors (a 1-D convolution has H = 1) or, with
/// `spatial` 3, NCDHW ones: x [N, C, (D,) H, W], w [K, C / groups, (T,) R, S], y [N, K,
/// (O,) P, Q], with O, P and Q the convolution's output sizes of D, H and W. Only the
/// first `spatial` + 2 sizes of x, w, y and the first `spatial` of pad, stride and
/// dilation are read. float32 computes in float32 (TF32 when `allow_tf32`), half and
/// bfloat16 in float32, float64 in float64. The written tensor is overwritten.
struct CudnnConv {
  ConvPass pass = ConvPass::Forward;
  ScalarType dtype = kFloat;
  bool allow_tf32 = false;
  int spatial = 2;
  int64_t x[5] = {}, w[5] = {}, y[5] = {};
  int64_t pad[3] = {}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t groups = 1;
  void* x_ptr = nullptr;
  void* w_ptr = nullptr;
  void* y_ptr = nullptr;
  int device = 0;
};
void cudnn_convolution(const CudnnConv& call);

}  // namespace ember::kernels::cuda
