// ember/ops/creation.h — factory functions, as torch.* spells them.
#pragma once

#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor empty(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions options = {}, Loc loc = Loc::current());
Tensor zeros(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor ones(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
/// dtype defaults to the fill value's kind: float32 for a float, int64 for an int, bool.
Tensor full(IntArrayRef size, const Scalar& fill_value, TensorOptions options = {}, Loc loc = Loc::current());
Tensor arange(const Scalar& end, TensorOptions options = {}, Loc loc = Loc::current());
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {},
              Loc loc = Loc::current());
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {},
                Loc loc = Loc::current());
Tensor eye(int64_t n, TensorOptions options = {}, Loc loc = Loc::current());
Tensor eye(int64_t n, int64_t m, TensorOptions options = {}, Loc loc = Loc::current());
Tensor scalar_tensor(const Scalar& value, TensorOptions options = {}, Loc loc = Loc::current());

Tensor empty_like(const Tensor& self, TensorOptions options = {}, Loc loc = Loc::current());
Tensor zeros_like(const Tensor& self, TensorOptions options = {}, Loc loc = Loc::current());
Tensor ones_like(const Tensor& self, TensorOptions options = {}, Loc loc = Loc::current());
Tensor full_like(const Tensor& self, const Scalar& fill_value, TensorOptions options = {}, Loc loc = Loc::current());

/// A tensor holding `values` with the given sizes (default: 1-D). The dtype follows the
/// C++ element type (float -> float32, double -> float64, int64_t -> int64, bool -> bool)
/// unless options say otherwise.
template <typename T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes = {}, TensorOptions options = {});
template <typename T>
Tensor tensor(std::initializer_list<T> values, IntArrayRef sizes = {}, TensorOptions options = {}) {
  return tensor(std::vector<T>(values), sizes, options);
}
template <>
Tensor tensor<bool>(const std::vector<bool>& values, IntArrayRef sizes, TensorOptions options);
/// Wraps memory owned by the caller (no copy); the caller keeps it alive.
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype);

}  // namespace ember
