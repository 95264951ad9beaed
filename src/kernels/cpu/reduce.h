// kernels/cpu/reduce.h — eager CPU reduction kernels: sum/mean, prod, amax/amin,
// max/min with indices, var, any/all over any set of dims of a strided input, and cumsum.
// Callers (ops/reduction.cpp) check arguments and allocate outputs; inputs arrive already
// converted to the dtype the kernel computes in (see each function).
#pragma once

#include <vector>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// out = sum of `self` over the dims where `mask` holds (out has the keepdim or the
/// squeezed shape). self.dtype() == out.dtype(); floats accumulate in double, 16-bit
/// floats in float, integers in int64. With `mean`, divides by the reduced count.
void sum_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, bool mean);
/// out = product over the masked dims; self.dtype() == out.dtype().
void prod_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out);
/// out = max (or min) over the masked dims, NaN-propagating; self.dtype() == out.dtype().
void minmax_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, bool is_max);
/// Max (or min) along `dim` and its int64 index (first occurrence; the first NaN wins).
/// `values` may be undefined (argmax); its dtype is self's.
void arg_minmax_kernel(const Tensor& self, int64_t dim, const Tensor& values, const Tensor& indices, bool is_max);
/// out = sum((x - mean)^2) / max(0, N - correction) over the masked dims (two passes, in
/// double); self is floating and self.dtype() == out.dtype().
void var_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, double correction);
/// out (bool or uint8) = any/all of self != 0 over the masked dims; self of any dtype.
void any_all_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, bool is_all);
/// out = running sum of self along `dim`; self.dtype() == out.dtype().
void cumsum_kernel(const Tensor& self, int64_t dim, const Tensor& out);

}  // namespace ember::kernels::cpu
