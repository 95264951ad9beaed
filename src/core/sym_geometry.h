// core/sym_geometry.h — the symbolic geometry of a traced value and what meta functions
// compute it with: sizes, strides and offset as SymInts (core/sym_int.h), read from a
// fake tensor (TensorImpl::sym) or, for a static one, from its plain geometry, and the
// shape rules (broadcasting, contiguous strides, view strides, -1 in a view) over
// SymInts. A meta function written with these is one code path for static and symbolic
// sizes: plain SymInts are int64 arithmetic and record nothing. See Note [dynamic shapes].
#pragma once

#include <initializer_list>
#include <vector>

#include "core/shape_rules.h"
#include "core/sym_int.h"
#include "ember/ivalue.h"
#include "ember/tensor.h"

namespace ember::core {

using SymInts = std::vector<SymInt>;

struct SymGeometry {
  SymInts sizes;
  SymInts strides;
  SymInt storage_offset;
};

/// Whether `t` has symbolic geometry (a fake traced with dynamic shapes).
inline bool is_symbolic(const Tensor& t) { return t.defined() && t.impl()->sym != nullptr; }

/// A meta function's reads and result over one integer type, so that it is written once
/// as a template and instantiated twice: over int64_t for tensors without symbolic
/// geometry (the plain fields, no copies: the static path costs what it did) and over
/// SymInt when any input has it.
template <typename Int>
struct Geometry;
template <>
struct Geometry<int64_t> {
  static IntArrayRef sizes(const Tensor& t) { return t.impl()->sizes; }
  static IntArrayRef strides(const Tensor& t) { return t.impl()->strides; }
  static int64_t size(const Tensor& t, int64_t d) { return t.impl()->sizes[static_cast<size_t>(d)]; }
  static int64_t stride(const Tensor& t, int64_t d) { return t.impl()->strides[static_cast<size_t>(d)]; }
  static int64_t offset(const Tensor& t) { return t.impl()->storage_offset; }
  static int64_t numel(const Tensor& t) { return t.impl()->numel; }
  static TensorMeta meta(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset, ScalarType dtype,
                         Device device) {
    TensorMeta m;
    m.sizes = std::move(sizes);
    m.strides = std::move(strides);
    m.storage_offset = offset;
    m.dtype = dtype;
    m.device = device;
    return m;
  }
};
template <>
struct Geometry<SymInt>;  // below, after the SymInt accessors

/// A contiguous output of `sizes` over either integer type.
inline TensorMeta contiguous_meta_over(std::vector<int64_t> sizes, ScalarType dtype, Device device);
inline TensorMeta contiguous_meta_over(const SymInts& sizes, ScalarType dtype, Device device);

/// Calls `f.template operator()<Int>()` with Int = SymInt when any of `tensors` has
/// symbolic geometry, else int64_t: how a templated meta function is entered.
template <typename F>
decltype(auto) over_geometry(std::initializer_list<const Tensor*> tensors, F&& f) {
  for (const Tensor* t : tensors)
    if (is_symbolic(*t)) return f.template operator()<SymInt>();
  return f.template operator()<int64_t>();
}

/// `s` with what its environment knows now applied (a specialized symbol is a constant,
/// so the SymInt becomes plain).
SymInt current(const SymInt& s);

/// `s`'s expression as it is evaluated against one array of values per compiled call
/// (graph::run_call_node's, the inductor's `ks`): current(s), with each unbacked symbol u<k>
/// renamed to the slot after the environment's input symbols, num_symbols() + k, where the
/// call puts the size the op that computes it returned.
sym::Expr value_slots_expr(const SymInt& s);
/// How many slots such an array has for `env`: its input symbols, then its unbacked ones.
size_t value_slot_count(const ShapeEnv& env);

/// The geometry of `t` as SymInts, as the environment knows it now; reading it
/// specializes nothing.
SymInts sym_sizes(const Tensor& t);
SymInts sym_strides(const Tensor& t);
/// Size and stride of `dim` (negative counts from the end).
SymInt sym_size(const Tensor& t, int64_t dim);
SymInt sym_stride(const Tensor& t, int64_t dim);
SymInt sym_numel(const Tensor& t);
SymInt sym_storage_offset(const Tensor& t);

/// `g` shared, keeping the shape environment its symbols belong to alive as long as any
/// tensor or graph value holds it (when that environment is itself owned by a
/// shared_ptr): a graph kept past its trace (a compiled entry, a parsed or imported
/// graph) prints and evaluates its geometry through it. The one way geometry is made.
std::shared_ptr<const SymGeometry> share_geometry(SymGeometry g);
/// A meta function's output: the example values in sizes/strides/offset, and `sym` set
/// when any of them is symbolic (made by share_geometry).
TensorMeta make_meta(const SymInts& sizes, const SymInts& strides, const SymInt& storage_offset, ScalarType dtype,
                     Device device);
/// A contiguous output of `sizes`.
TensorMeta contiguous_sym_meta(const SymInts& sizes, ScalarType dtype, Device device);
std::vector<int64_t> hints(const SymInts& v);
SymInts to_sym(IntArrayRef v);
/// Whether any element is symbolic.
bool any_symbolic(const SymInts& v);
/// A SymInt[] argument's entries as core SymInts, as the environment knows them now
/// (a plain list gives plain entries).
SymInts sym_int_list(const IValue& v);
/// The SymInts a literal holds: a SymInt, or a SymInt[]'s entries (as written, not
/// brought to the environment's current form); none for any other value.
std::vector<ember::SymInt> literal_sym_ints(const IValue& v);
/// Drops `t`'s symbolic geometry once its sizes, strides and offset are all constants in
/// the environment (every symbol it read has been specialized): `t` is static from then on.
void drop_geometry_if_static(const Tensor& t);
/// The value of a SymInt[] argument holding `sizes` (a plain int list when none is symbolic).
IValue size_list_value(const SymInts& sizes);
inline IValue size_list_value(const std::vector<int64_t>& sizes) { return IValue(sizes); }
/// A SymInt argument's value as a core SymInt, as the environment knows it now (a plain
/// int gives a plain one).
SymInt sym_int_arg(const IValue& v);
/// The value of a SymInt argument holding `size` (a plain int unless it is symbolic).
IValue size_value(const SymInt& size);
inline IValue size_value(int64_t size) { return IValue(size); }

template <>
struct Geometry<SymInt> {
  static SymInts sizes(const Tensor& t) { return core::sym_sizes(t); }
  static SymInts strides(const Tensor& t) { return core::sym_strides(t); }
  static SymInt size(const Tensor& t, int64_t d) { return core::sym_size(t, d); }
  static SymInt stride(const Tensor& t, int64_t d) { return core::sym_stride(t, d); }
  static SymInt offset(const Tensor& t) { return core::sym_storage_offset(t); }
  static SymInt numel(const Tensor& t) { return core::sym_numel(t); }
  static TensorMeta meta(const SymInts& sizes, const SymInts& strides, const SymInt& offset, ScalarType dtype,
                         Device device) {
    return make_meta(sizes, strides, offset, dtype, device);
  }
};

inline TensorMeta contiguous_meta_over(std::vector<int64_t> sizes, ScalarType dtype, Device device) {
  std::vector<int64_t> strides = rules::contiguous_strides(IntArrayRef(sizes));
  return Geometry<int64_t>::meta(std::move(sizes), std::move(strides), 0, dtype, device);
}
inline TensorMeta contiguous_meta_over(const SymInts& sizes, ScalarType dtype, Device device) {
  return contiguous_sym_meta(sizes, dtype, device);
}

// The shape rules of core/shape.h over SymInts (the same checks, the same messages).
SymInt sym_numel_of(const SymInts& sizes);
SymInts sym_contiguous_strides(const SymInts& sizes);
SymInts sym_broadcast_shapes(const SymInts& a, const SymInts& b);
SymInts sym_broadcast_strides(const SymInts& sizes, const SymInts& strides, const SymInts& target);
/// c10's is_channels_last_strides_2d over SymInts (rules::is_channels_last_strides_2d:
/// what the ranges do not decide is guarded, no size is specialized).
bool sym_is_channels_last_strides_2d(const SymInts& sizes, const SymInts& strides);
/// The strides of a dense channels_last tensor of `sizes` (rank 3 or more), over the symbols.
SymInts sym_channels_last_strides(const SymInts& sizes);
/// `shape` with its -1 replaced by what makes the element count `numel`.
SymInts sym_infer_size(IntArrayRef shape, const SymInt& numel);
/// The strides of a view of (sizes, strides) as `shape`, or false when the view would
/// straddle non-contiguous chunks (ATen's computeStride).
bool sym_compute_view_strides(const SymInts& sizes, const SymInts& strides, const SymInts& shape, SymInts& out);

}  // namespace ember::core
