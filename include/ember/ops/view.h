// ember/ops/view.h — views (share storage) and copies that change layout or dtype.
#pragma once

#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor view(const Tensor& self, IntArrayRef size, Loc loc = Loc::current());
Tensor reshape(const Tensor& self, IntArrayRef shape, Loc loc = Loc::current());
/// Size lists whose entries may be SymInts (ember::sym_size; Note [dynamic shapes]).
Tensor view(const Tensor& self, SymIntArrayRef size, Loc loc = Loc::current());
Tensor reshape(const Tensor& self, SymIntArrayRef shape, Loc loc = Loc::current());
inline Tensor view(const Tensor& self, std::initializer_list<SymInt> size, Loc loc = Loc::current()) {
  return view(self, SymIntArrayRef(size), loc);
}
inline Tensor reshape(const Tensor& self, std::initializer_list<SymInt> shape, Loc loc = Loc::current()) {
  return reshape(self, SymIntArrayRef(shape), loc);
}
Tensor permute(const Tensor& self, IntArrayRef dims, Loc loc = Loc::current());
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1, Loc loc = Loc::current());
Tensor t(const Tensor& self, Loc loc = Loc::current());
Tensor expand(const Tensor& self, IntArrayRef size, Loc loc = Loc::current());
Tensor expand(const Tensor& self, SymIntArrayRef size, Loc loc = Loc::current());
inline Tensor expand(const Tensor& self, std::initializer_list<SymInt> size, Loc loc = Loc::current()) {
  return expand(self, SymIntArrayRef(size), loc);
}
/// start, end, length, index and split_size are sizes (SymInt): one read with
/// ember::sym_size stays symbolic in a trace (Note [dynamic shapes]).
Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<SymInt> start = std::nullopt,
             std::optional<SymInt> end = std::nullopt, int64_t step = 1, Loc loc = Loc::current());
Tensor narrow(const Tensor& self, int64_t dim, SymInt start, SymInt length, Loc loc = Loc::current());
Tensor select(const Tensor& self, int64_t dim, SymInt index, Loc loc = Loc::current());
Tensor squeeze(const Tensor& self, Loc loc = Loc::current());
Tensor squeeze(const Tensor& self, int64_t dim, Loc loc = Loc::current());
Tensor unsqueeze(const Tensor& self, int64_t dim, Loc loc = Loc::current());
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset = std::nullopt, Loc loc = Loc::current());
/// as_strided whose sizes, strides and offset may be SymInts (PyTorch's `SymInt[] size,
/// SymInt[] stride, SymInt? storage_offset`): one read with ember::sym_size stays symbolic
/// in a trace (Note [dynamic shapes]).
Tensor as_strided(const Tensor& self, SymIntArrayRef size, SymIntArrayRef stride,
                  std::optional<SymInt> storage_offset = std::nullopt, Loc loc = Loc::current());
inline Tensor as_strided(const Tensor& self, std::initializer_list<SymInt> size, std::initializer_list<SymInt> stride,
                         std::optional<SymInt> storage_offset = std::nullopt, Loc loc = Loc::current()) {
  return as_strided(self, SymIntArrayRef(size), SymIntArrayRef(stride), storage_offset, loc);
}
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current());
Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes, Loc loc = Loc::current());
Tensor unflatten(const Tensor& self, int64_t dim, SymIntArrayRef sizes, Loc loc = Loc::current());
inline Tensor unflatten(const Tensor& self, int64_t dim, std::initializer_list<SymInt> sizes,
                        Loc loc = Loc::current()) {
  return unflatten(self, dim, SymIntArrayRef(sizes), loc);
}
/// The diagonal of dims dim1 and dim2 (a view), `offset` above the main one, as the last dim.
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1, Loc loc = Loc::current());
Tensor alias(const Tensor& self, Loc loc = Loc::current());
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0, Loc loc = Loc::current());
std::vector<Tensor> split(const Tensor& self, SymInt split_size, int64_t dim = 0, Loc loc = Loc::current());
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0,
                                     Loc loc = Loc::current());
std::vector<Tensor> split_with_sizes(const Tensor& self, SymIntArrayRef split_sizes, int64_t dim = 0,
                                     Loc loc = Loc::current());
inline std::vector<Tensor> split_with_sizes(const Tensor& self, std::initializer_list<SymInt> split_sizes,
                                            int64_t dim = 0, Loc loc = Loc::current()) {
  return split_with_sizes(self, SymIntArrayRef(split_sizes), dim, loc);
}
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0, Loc loc = Loc::current());

Tensor contiguous(const Tensor& self, Loc loc = Loc::current());
Tensor clone(const Tensor& self, Loc loc = Loc::current());
/// A copy converted to `dtype` (the same tensor when it already has it).
Tensor to(const Tensor& self, ScalarType dtype, Loc loc = Loc::current());
/// Writes src (broadcast, converted) into self; returns self.
Tensor& copy_(Tensor& self, const Tensor& src, Loc loc = Loc::current());
Tensor& fill_(Tensor& self, const Scalar& value, Loc loc = Loc::current());
Tensor& zero_(Tensor& self, Loc loc = Loc::current());
/// Functional fill_: a new tensor of self's geometry holding `value`.
Tensor fill(const Tensor& self, const Scalar& value, Loc loc = Loc::current());
/// Functional copy_: a new tensor of self's geometry, dtype and device holding src
/// (broadcast, converted).
Tensor copy(const Tensor& self, const Tensor& src, bool non_blocking = false, Loc loc = Loc::current());
/// The value of a one-element tensor (Tensor::item as an op; a graph break when traced).
Scalar _local_scalar_dense(const Tensor& self, Loc loc = Loc::current());

}  // namespace ember
