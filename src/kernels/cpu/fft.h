// kernels/cpu/fft.h — the discrete Fourier transforms of _fft_r2c, _fft_c2r and _fft_c2c
// on FFTW3 (fftw3f for complex64, fftw3 for complex128). Strided and batched tensors
// go to FFTW's guru interface as they are (no copies); plans are made with FFTW_ESTIMATE,
// cached per geometry and dtype, and made under one mutex (FFTW's planner is not
// thread-safe; executing a plan is). See Note [complex dtypes] (docs/notes/registry.md).
#pragma once

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// PyTorch's normalization modes of the _fft_* ops: 0 none, 1 by 1/sqrt(n), 2 by 1/n,
/// with n the product of the signal sizes (the real sizes for r2c and c2r).
enum class FftNorm : int64_t { None = 0, BySqrtN = 1, ByN = 2 };

/// out = the forward real-to-complex transform of the float/double tensor `in` over
/// `dims` (distinct, wrapped), onesided: out's size along dims.back() is n/2 + 1 and its
/// other sizes are in's; out is complex of in's precision, dense (any dim order).
void fft_r2c(const Tensor& in, const Tensor& out, const std::vector<int64_t>& dims, FftNorm norm);

/// out = the complex-to-real (inverse, onesided) transform of `in` over one dim `dim`:
/// in's size there is out's / 2 + 1; the imaginary parts FFTW ignores (the zero and,
/// for even sizes, the last frequency) do not matter. out is dense.
void fft_c2r(const Tensor& in, const Tensor& out, int64_t dim, FftNorm norm);

/// out = the complex-to-complex transform of `in` over `dims`: forward (e^{-2πi…}) or
/// backward (e^{+2πi…}). out has in's sizes and dtype and is dense.
void fft_c2c(const Tensor& in, const Tensor& out, const std::vector<int64_t>& dims, FftNorm norm, bool forward);

}  // namespace ember::kernels::cpu
