// ops/op_utils.h — helpers shared by op families: type promotion, output geometry of
// elementwise ops, and small constructors. Meta functions are built from these.
#pragma once

#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "ember/ivalue.h"
#include "ops/registry.h"

namespace ember::ops {

/// PyTorch's result_type over tensor and Scalar arguments: tensors with dims outrank
/// 0-dim tensors, which outrank Scalars; a lower rank only matters when it is of a
/// higher category (bool < integral < floating).
ScalarType result_type(std::initializer_list<const IValue*> values);

/// Output sizes and strides of an elementwise op over `inputs` (broadcast; strides
/// follow the inputs' memory layout as TensorIterator does).
TensorMeta pointwise_meta(const std::vector<const Tensor*>& inputs, ScalarType dtype);

TensorMeta contiguous_meta(IntArrayRef sizes, ScalarType dtype, Device device);
/// A contiguous tensor of `self`'s sizes, over its size symbols where it has them.
TensorMeta contiguous_over(const Tensor& self, ScalarType dtype, Device device);

/// c10's dim order for infer_dense_strides, innermost first: by increasing stride, the
/// larger size first between equal strides, a dim of stride 0 left where it is (an
/// insertion sort from the last dim, as c10 sorts).
std::vector<int64_t> dense_dim_order(IntArrayRef sizes, IntArrayRef strides);
/// The same over sizes and strides of type Int (int64_t, or core::SymInt: each comparison
/// then decided by the ranges or recorded as a guard).
template <typename Int>
std::vector<int64_t> dense_dim_order_over(const std::vector<Int>& sizes, const std::vector<Int>& strides) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> perm;
  for (int64_t d = n - 1; d >= 0; --d) perm.push_back(d);
  auto should_swap = [&](int64_t a, int64_t b) {
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (int64_t i = 1; i < n; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
      if (c > 0) {
        std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return perm;
}
/// c10's infer_dense_strides: dense strides for `sizes` in dense_dim_order (a dim of size
/// 0 or 1 multiplies nothing). What empty_like and clone give a tensor that is not
/// non-overlapping and dense: its dims' order kept, the gaps closed.
std::vector<int64_t> infer_dense_strides(IntArrayRef sizes, IntArrayRef strides);

/// The geometry clone and the *_like factories give `self` for a MemoryFormat argument:
/// contiguous_format, channels_last (4-D), or (None, preserve_format) self's strides when
/// it is non-overlapping and dense, else infer_dense_strides, as PyTorch's empty_like;
/// over the symbols where `self` has them and the result is dense for every size.
TensorMeta memory_format_like(const Tensor& self, const IValue& memory_format, std::optional<ScalarType> dtype,
                              std::optional<Device> device);
inline std::vector<TensorMeta> metas(TensorMeta m) { return {std::move(m)}; }

/// Whether `a` and `b` have the same sizes, compared as SymInts: over size symbols the
/// ranges decide or a guard is added, and no size is read as an integer (a check written
/// `a.sizes() == b.sizes()` would specialize every symbolic size it reads).
bool same_sizes(const Tensor& a, const Tensor& b);

/// PyTorch's suggest_memory_format() == ChannelsLast: a 4-D tensor of channels_last
/// strides (core::is_channels_last_strides_2d). Convolution, batch norm and cat on the CPU
/// follow it (Note [channels_last convolution]). For a fake over size symbols the rule runs
/// over its SymInts (core::sym_is_channels_last_strides_2d): the static answer, with a
/// guard only for a comparison the ranges do not decide, and no size specialized.
bool suggests_channels_last(const Tensor& t);
/// A contiguous meta of `sizes`, or with channels_last strides (core::channels_last_strides)
/// when `channels_last`.
TensorMeta layout_meta(IntArrayRef sizes, ScalarType dtype, Device device, bool channels_last);
/// layout_meta of `t`'s sizes, over its symbols when it has symbolic geometry.
TensorMeta layout_meta_of(const Tensor& t, ScalarType dtype, Device device, bool channels_last);
/// `t` without its symbolic geometry (TensorImpl::sym) and autograd state: a stand-in
/// holding the example sizes, whose sizes a meta function reads without specializing a
/// symbol (ops/batch_meta.cpp, ops/spatial_meta.cpp).
Tensor without_symbols(const Tensor& t);
/// `t` (4-D, or 5-D: channels_last_3d) dense in channels_last order: `t` itself when it
/// already is, otherwise a copy.
Tensor channels_last_dense(const Tensor& t);
/// Whether `t` (4-D or 5-D) is dense with channels fastest (NHWC / NDHWC memory).
bool is_channels_last_dense(const Tensor& t);

/// Runs `kernel`, which writes only contiguous tensors, on `out` with every defined
/// non-contiguous slot replaced by a contiguous tensor of its sizes, dtype and device, then
/// copies those into `out` (a CUDA kernel's results in a channels_last output).
void with_contiguous_outputs(std::vector<Tensor>& out, const std::function<void(std::vector<Tensor>&)>& kernel);

/// A 0-dim tensor holding `value` (what PyTorch calls a wrapped number).
Tensor scalar_tensor(const Scalar& value, ScalarType dtype, Device device);

/// A size as a 0-dim int64 tensor, for a composite whose tensor arithmetic takes a size
/// that may be symbolic (a Scalar holds no symbol): `arange(n, n + 1)` selected at 0. Its
/// length is 1 for every n, so its geometry is static, while its value is the size on each
/// call an entry over size symbols serves. (Composites use it only for symbolic sizes; a
/// plain size stays a Scalar.)
Tensor size_tensor(const SymInt& n, Device device);
/// The same, as a 0-dim tensor of `dtype` (a size divided in float arithmetic).
Tensor size_tensor(const SymInt& n, Device device, ScalarType dtype);

/// `t` converted to `dtype` (no copy when it already is).
Tensor cast(const Tensor& t, ScalarType dtype);

/// Raises PyTorch's NotImplementedError for a kernel that lacks a dtype:
/// "\"<kernel>\" not implemented for '<Dtype>'".
[[noreturn]] void not_implemented(const char* kernel, ScalarType t);

/// A CUDA kernel for a factory whose values are cheap to make on the host (arange, eye,
/// linspace): `cpu` fills host tensors, which are then copied into the device outputs.
KernelFn via_host(KernelFn cpu);

/// Raises unless `t` is defined; `what` names the argument.
void check_defined(const Tensor& t, const char* what);

/// Calls an op by name from inside another op (user location already set).
Stack call_op(const char* name, Stack args);
Tensor call_op_tensor(const char* name, Stack args);

}  // namespace ember::ops
