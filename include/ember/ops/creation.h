// ember/ops/creation.h — factory functions, as torch.* spells them.
#pragma once

#include <concepts>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor empty(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions options = {}, Loc loc = Loc::current());
Tensor zeros(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor ones(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
/// dtype defaults to the fill value's kind: float32 for a float, int64 for an int, bool.
Tensor full(IntArrayRef size, const Scalar& fill_value, TensorOptions options = {}, Loc loc = Loc::current());
// Size lists whose entries may be SymInts (ember::sym_size): a braced list takes these
// overloads, and one with a symbolic entry keeps it symbolic in a trace (Note [dynamic shapes]).
Tensor empty(SymIntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor zeros(SymIntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor ones(SymIntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor full(SymIntArrayRef size, const Scalar& fill_value, TensorOptions options = {}, Loc loc = Loc::current());
inline Tensor empty(std::initializer_list<SymInt> size, TensorOptions options = {}, Loc loc = Loc::current()) {
  return empty(SymIntArrayRef(size), options, loc);
}
inline Tensor zeros(std::initializer_list<SymInt> size, TensorOptions options = {}, Loc loc = Loc::current()) {
  return zeros(SymIntArrayRef(size), options, loc);
}
inline Tensor ones(std::initializer_list<SymInt> size, TensorOptions options = {}, Loc loc = Loc::current()) {
  return ones(SymIntArrayRef(size), options, loc);
}
inline Tensor full(std::initializer_list<SymInt> size, const Scalar& fill_value, TensorOptions options = {},
                   Loc loc = Loc::current()) {
  return full(SymIntArrayRef(size), fill_value, options, loc);
}
Tensor arange(const Scalar& end, TensorOptions options = {}, Loc loc = Loc::current());
/// arange of a size (`arange(sym_size(x, 1))`): a symbolic end stays symbolic in a trace
/// (Note [dynamic shapes]); int64 by default, as arange of an int. A template so that a
/// plain integer takes the Scalar overload.
Tensor arange_of_size(const SymInt& end, TensorOptions options, Loc loc);
template <std::same_as<SymInt> S>
Tensor arange(const S& end, TensorOptions options = {}, Loc loc = Loc::current()) {
  return arange_of_size(end, options, loc);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {},
              Loc loc = Loc::current());
/// arange over sizes (`arange(T, 2 * T)`, `arange(0, T, 2)` with T = sym_size(x, 1)): a
/// symbolic start, end or step stays symbolic in a trace, the length is
/// `(end - start + step - sgn(step)) // step` over the symbols (Note [dynamic shapes]);
/// int64 by default. Taken when one argument is a SymInt and the others are SymInts or
/// integers, so that plain numbers keep the Scalar overload.
Tensor arange_of_sizes(const SymInt& start, const SymInt& end, const SymInt& step, TensorOptions options, Loc loc);
template <typename A, typename B, typename C = int64_t>
  requires(std::same_as<A, SymInt> || std::same_as<B, SymInt> || std::same_as<C, SymInt>) &&
          (std::same_as<A, SymInt> || std::integral<A>) && (std::same_as<B, SymInt> || std::integral<B>) &&
          (std::same_as<C, SymInt> || std::integral<C>)
Tensor arange(const A& start, const B& end, const C& step = 1, TensorOptions options = {}, Loc loc = Loc::current()) {
  return arange_of_sizes(SymInt(start), SymInt(end), SymInt(step), options, loc);
}
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
