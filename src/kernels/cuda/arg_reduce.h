// kernels/cuda/arg_reduce.h — CUDA row kernels that reduce to an index: max.dim/min.dim
// (values and indices) and argmax/argmin, rendered after the row head of reduce_source.h
// and run over the row geometry of reduce.h. PyTorch's rules: NaN is the maximum and the
// minimum (the first NaN wins), and of equal values the first index wins. Shapes, dtypes
// and errors (empty rows, bool argmax) come from the ops' meta functions. See Note [cuda]
// (docs/notes/cuda.md), "Index reductions".
#pragma once

#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

struct ArgReduceKernel {
  bool is_max = true;
  ScalarType in = kFloat;
};

/// "ember_argmax_f16", "ember_argmin_i64".
std::string kernel_symbol(const ArgReduceKernel& k);
/// The translation unit: `(T* values, long long* indices, const T* in, RowGeometry g)`;
/// values may be null.
std::string render_arg_reduce(const ArgReduceKernel& k);

/// Over the dims of `self` that `mask` marks, the index of each row's maximum (or
/// minimum) into `indices` (int64), its value into `values` when defined. The index is the
/// row-major position among the reduced dims (along the one dim for max.dim; into the
/// flattened input when every dim is reduced). Rows are not empty.
void arg_reduce(const Tensor& self, const std::vector<bool>& mask, const Tensor& values, const Tensor& indices,
                bool is_max);

}  // namespace ember::kernels::cuda
