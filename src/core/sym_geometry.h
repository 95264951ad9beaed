// core/sym_geometry.h — the symbolic geometry of a traced value and what meta functions
// compute it with: sizes, strides and offset as SymInts (core/sym_int.h), read from a
// fake tensor (TensorImpl::sym) or, for a static one, from its plain geometry, and the
// shape rules (broadcasting, contiguous strides, view strides, -1 in a view) over
// SymInts. A meta function written with these is one code path for static and symbolic
// sizes: plain SymInts are int64 arithmetic and record nothing. See Note [dynamic shapes].
#pragma once

#include <vector>

#include "core/sym_int.h"
#include "ember/tensor.h"

namespace ember::core {

using SymInts = std::vector<SymInt>;

struct SymGeometry {
  SymInts sizes;
  SymInts strides;
  SymInt storage_offset;
};

/// The geometry of `t` as SymInts; reading it specializes nothing.
SymInts sym_sizes(const Tensor& t);
SymInts sym_strides(const Tensor& t);
/// Size and stride of `dim` (negative counts from the end).
SymInt sym_size(const Tensor& t, int64_t dim);
SymInt sym_stride(const Tensor& t, int64_t dim);
SymInt sym_numel(const Tensor& t);
SymInt sym_storage_offset(const Tensor& t);

/// A meta function's output: the example values in sizes/strides/offset, and `sym` set
/// when any of them is symbolic.
TensorMeta make_meta(const SymInts& sizes, const SymInts& strides, const SymInt& storage_offset, ScalarType dtype,
                     Device device);
/// A contiguous output of `sizes`.
TensorMeta contiguous_sym_meta(const SymInts& sizes, ScalarType dtype, Device device);
std::vector<int64_t> hints(const SymInts& v);
SymInts to_sym(IntArrayRef v);
/// Whether any element is symbolic.
bool any_symbolic(const SymInts& v);

// The shape rules of core/shape.h over SymInts (the same checks, the same messages).
SymInt sym_numel_of(const SymInts& sizes);
SymInts sym_contiguous_strides(const SymInts& sizes);
SymInts sym_broadcast_shapes(const SymInts& a, const SymInts& b);
SymInts sym_broadcast_strides(const SymInts& sizes, const SymInts& strides, const SymInts& target);
/// `shape` with its -1 replaced by what makes the element count `numel`.
SymInts sym_infer_size(IntArrayRef shape, const SymInt& numel);
/// The strides of a view of (sizes, strides) as `shape`, or false when the view would
/// straddle non-contiguous chunks (ATen's computeStride).
bool sym_compute_view_strides(const SymInts& sizes, const SymInts& strides, const SymInts& shape, SymInts& out);

}  // namespace ember::core
