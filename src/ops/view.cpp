// ops/view.cpp — view ops: outputs share their input's storage and differ only in
// sizes, strides and storage offset. Each meta function computes that geometry; the
// dispatcher makes the aliasing tensor. Composite forms (reshape, flatten, narrow, …)
// decompose into these.
#include "core/shape.h"
#include "core/shape_rules.h"
#include "core/sym_geometry.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

// The geometry of views is written once over an integer type (core::Geometry): int64_t
// for a static tensor, SymInt for one with symbolic sizes, whose views then have symbolic
// sizes, strides and offset (Note [dynamic shapes]).
using core::SymInt;
namespace rules = core::rules;

template <typename Int>
using Ints = std::vector<Int>;

template <typename Int>
TensorMeta view_of(const Tensor& self, Ints<Int> sizes, Ints<Int> strides, const Int& offset) {
  return core::Geometry<Int>::meta(std::move(sizes), std::move(strides), offset, self.dtype(), self.device());
}

template <typename Int>
Ints<Int> sizes_of(const Tensor& self) {
  const auto s = core::Geometry<Int>::sizes(self);
  return Ints<Int>(s.begin(), s.end());
}

template <typename Int>
Ints<Int> strides_of(const Tensor& self) {
  const auto s = core::Geometry<Int>::strides(self);
  return Ints<Int>(s.begin(), s.end());
}

/// Enters a view's meta function over the integer type of `self`'s geometry.
template <typename F>
std::vector<TensorMeta> view_metas(const Tensor& self, F&& f) {
  return {core::over_geometry({&self}, std::forward<F>(f))};
}

/// The same geometry as `self`'s (alias, detach).
template <typename Int>
TensorMeta same_view(const Tensor& self) {
  return view_of<Int>(self, sizes_of<Int>(self), strides_of<Int>(self), core::Geometry<Int>::offset(self));
}

/// Enters a meta function over SymInt when the size list `list` holds symbols (a view of
/// a static tensor into a symbolic shape), else over the integer type of `self`.
template <typename F>
std::vector<TensorMeta> view_metas(const Tensor& self, const IValue& list, F&& f) {
  if (list.is_sym_int_list()) return {f.template operator()<SymInt>()};
  return view_metas(self, std::forward<F>(f));
}

/// A SymInt[] argument over the integer type a meta function runs on: plain values for
/// int64_t, the entries' expressions for SymInt.
template <typename Int>
Ints<Int> size_list(const IValue& v) {
  if constexpr (std::is_same_v<Int, SymInt>) {
    return core::sym_int_list(v);
  } else {
    return v.to_int_list();
  }
}

/// A SymInt argument over the integer type a meta function runs on (a symbolic value read
/// as an int64_t is specialized).
template <typename Int>
Int size_arg(const IValue& v) {
  if constexpr (std::is_same_v<Int, SymInt>) {
    return core::sym_int_arg(v);
  } else {
    return v.to_int();
  }
}
template <typename Int>
std::optional<Int> optional_size_arg(const IValue& v) {
  if (v.is_none()) return std::nullopt;
  return size_arg<Int>(v);
}

/// Enters a function over SymInt when a SymInt argument in `args` is symbolic (a slice of a
/// static tensor at a symbolic position), else over the integer type of `self`.
template <typename F>
decltype(auto) over_size_args(const Tensor& self, std::initializer_list<const IValue*> args, F&& f) {
  for (const IValue* v : args)
    if (v->is_sym_int()) return f.template operator()<SymInt>();
  return core::over_geometry({&self}, std::forward<F>(f));
}

/// Over symbols, a view that stays within its input's own elements (the common case: a
/// graph input's storage is its extent) guards that it does, as PyTorch's
/// checkInBoundsForStorage guards the storage's symbolic size: a compiled view never reads
/// past an input at a size the guards admit. One reaching past them into a base's storage
/// is checked at the example values only (check_as_strided_bounds).
void guard_within_input(const Tensor& self, const Ints<SymInt>& size, const Ints<SymInt>& stride,
                        const SymInt& offset) {
  using G = core::Geometry<SymInt>;
  SymInt last = offset, input_last = G::offset(self);
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == SymInt(0)) return;
    last = last + (size[i] - SymInt(1)) * stride[i];
  }
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (G::size(self, d) == SymInt(0)) return;
    input_last = input_last + (G::size(self, d) - SymInt(1)) * G::stride(self, d);
  }
  (void)(last <= input_last);  // the comparison records the guard
}

/// as_strided's checks on the view's geometry `m`: sizes and strides not negative, and
/// the last element within self's storage. Over symbols they are checked at the example
/// values (the trace's sizes), guard_within_input guarding the common case; the eager op
/// checks every call's (Note [aot], "Dynamic shapes").
void check_as_strided_bounds(const Tensor& self, const TensorMeta& m) {
  int64_t extent = m.storage_offset;
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    EMBER_CHECK(m.sizes[i] >= 0) << "as_strided: Negative sizes are not allowed, got " << m.sizes[i];
    EMBER_CHECK(m.strides[i] >= 0) << "as_strided: Negative strides are not supported at the moment, got strides: "
                                   << IntArrayRef(m.strides);
    if (m.sizes[i] == 0) extent = -1;
    if (extent >= 0) extent += (m.sizes[i] - 1) * m.strides[i];
  }
  const int64_t storage_elems = static_cast<int64_t>(self.storage()->nbytes() / self.element_size());
  EMBER_CHECK(extent < storage_elems)
      << "setStorage: sizes " << IntArrayRef(m.sizes) << ", strides " << IntArrayRef(m.strides) << ", storage offset "
      << m.storage_offset << ", and itemsize " << self.element_size() << " requiring a storage size of "
      << (extent + 1) * static_cast<int64_t>(self.element_size()) << " are out of bounds for storage of size "
      << self.storage()->nbytes();
}

template <typename Int>
TensorMeta view_meta(const Tensor& self, const Ints<Int>& size) {
  using G = core::Geometry<Int>;
  Ints<Int> shape = rules::infer_size(ArrayRef<Int>(size), G::numel(self));
  Ints<Int> strides;
  const auto in_sizes = G::sizes(self);
  const auto in_strides = G::strides(self);
  EMBER_CHECK(rules::compute_view_strides(ArrayRef<Int>(in_sizes), ArrayRef<Int>(in_strides), ArrayRef<Int>(shape),
                                          strides))
      << "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
         "two contiguous subspaces). Use .reshape(...) instead.";
  return view_of<Int>(self, std::move(shape), std::move(strides), G::offset(self));
}

template <typename Int>
TensorMeta slice_meta(const Tensor& self, int64_t dim, const std::optional<Int>& start_opt,
                      const std::optional<Int>& end_opt, int64_t step) {
  using G = core::Geometry<Int>;
  EMBER_CHECK(self.dim() > 0) << "slice() cannot be applied to a 0-dim tensor.";
  dim = core::wrap_dim(dim, self.dim());
  EMBER_CHECK(step > 0) << "slice step must be positive";
  const Int size = G::size(self, dim);
  Int start = start_opt.value_or(Int(0));
  Int end = end_opt ? *end_opt : size;
  if (start_opt && *start_opt < 0) start = start + size;
  if (end_opt && *end_opt < 0) end = end + size;
  // Clamped into [0, size] as ATen does; against a symbolic size each comparison is a guard.
  if (start < 0) start = 0;
  if (start > size) start = size;
  if (end < start) end = start;
  if (end > size) end = size;
  Ints<Int> sizes = sizes_of<Int>(self), strides = strides_of<Int>(self);
  const Int stride = strides[dim];
  sizes[dim] = rules::divide(end - start + step - 1, Int(step));
  strides[dim] = stride * step;
  return view_of<Int>(self, std::move(sizes), std::move(strides), G::offset(self) + start * stride);
}

/// ATen's diagonal: dims dim1 and dim2 dropped, the diagonal appended as the last dim
/// (stride: the sum of theirs), starting `offset` above (or below) the main one.
template <typename Int>
TensorMeta diagonal_meta(const Tensor& self, int64_t offset, int64_t dim1_arg, int64_t dim2_arg) {
  using G = core::Geometry<Int>;
  const int64_t dim1 = core::wrap_dim(dim1_arg, self.dim()), dim2 = core::wrap_dim(dim2_arg, self.dim());
  EMBER_CHECK(dim1 != dim2) << "diagonal dimensions cannot be identical " << dim1_arg << ", " << dim2_arg;
  Ints<Int> sizes = sizes_of<Int>(self), strides = strides_of<Int>(self);
  Int rows = sizes[dim1], cols = sizes[dim2];
  if (offset >= 0) cols = cols - offset;
  else rows = rows + offset;
  Int diag = rows < cols ? rows : cols;
  if (diag < 0) diag = 0;
  Int start = G::offset(self);
  if (diag > 0) start = start + (offset >= 0 ? strides[dim2] * offset : strides[dim1] * (-offset));
  const Int stride = strides[dim1] + strides[dim2];
  for (int64_t d : {std::max(dim1, dim2), std::min(dim1, dim2)}) {
    sizes.erase(sizes.begin() + d);
    strides.erase(strides.begin() + d);
  }
  sizes.push_back(diag);
  strides.push_back(stride);
  return view_of<Int>(self, std::move(sizes), std::move(strides), start);
}

template <typename Int>
TensorMeta squeeze_meta(const Tensor& self, const std::vector<bool>& which) {
  using G = core::Geometry<Int>;
  Ints<Int> sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const Int size = G::size(self, d);
    if (which[d] && size == 1) continue;
    sizes.push_back(size);
    strides.push_back(G::stride(self, d));
  }
  return view_of<Int>(self, std::move(sizes), std::move(strides), G::offset(self));
}

/// expand's strides, as ATen's inferExpandGeometry: a dim that keeps its size keeps its
/// stride (a size-1 dim too), a size-1 dim expanded to another size gets stride 0, and a
/// new leading dim gets the stride a contiguous tensor would have there (size * stride of
/// the dim after it) when it has size 1, else 0; a 0-dim input expands with all strides 0.
template <typename Int>
Ints<Int> expand_strides(const Tensor& self, const Ints<Int>& size) {
  using G = core::Geometry<Int>;
  const int64_t nd = static_cast<int64_t>(size.size()), in_nd = self.dim();
  Ints<Int> strides(size.size(), Int(0));
  if (in_nd == 0) return strides;
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t d = in_nd - (nd - i);
    const Int in_size = d >= 0 ? G::size(self, d) : Int(1);
    Int stride = d >= 0 ? G::stride(self, d) : size[i + 1] * strides[i + 1];
    if (in_size != size[i]) {
      EMBER_CHECK(in_size == 1) << "The expanded size of the tensor (" << rules::shown(size[i])
                                << ") must match the existing size (" << rules::shown(in_size)
                                << ") at non-singleton dimension " << i
                                << ".  Target sizes: " << IntArrayRef(rules::shown(ArrayRef<Int>(size)))
                                << ".  Tensor sizes: " << self.sizes();
      stride = 0;
    }
    strides[i] = stride;
  }
  return strides;
}

/// split_with_sizes' outputs, over SymInt when self or a split size is symbolic (the other
/// dims of a symbolic input stay symbolic; a symbolic size gives a symbolic slice).
std::vector<TensorMeta> split_metas(const Tensor& self, const IValue& split_sizes, int64_t dim) {
  EMBER_CHECK(self.dim() > 0) << "split expects at least a 1-dimensional tensor";
  dim = core::wrap_dim(dim, self.dim());
  auto metas = [&]<typename Int>() {
    const Ints<Int> sizes = size_list<Int>(split_sizes);
    Int total = 0;
    for (const Int& s : sizes) {
      EMBER_CHECK(s >= 0) << "split_with_sizes expects split_sizes have only non-negative entries, but got "
                          << "split_sizes=" << rules::shape_text(ArrayRef<Int>(sizes));
      total = total + s;
    }
    const Int size = core::Geometry<Int>::size(self, dim);
    EMBER_CHECK(total == size) << "split_with_sizes expects split_sizes to sum exactly to " << rules::size_text(size)
                               << " (input tensor's size at dimension " << dim << "), but got split_sizes="
                               << rules::shape_text(ArrayRef<Int>(sizes));
    std::vector<TensorMeta> out;
    Int start = 0;
    for (const Int& s : sizes) {
      out.push_back(slice_meta<Int>(self, dim, start, start + s, 1));
      start = start + s;
    }
    return out;
  };
  if (split_sizes.is_sym_int_list()) return metas.template operator()<SymInt>();
  return core::over_geometry({&self}, metas);
}

}  // namespace

void register_view_ops(Registry& r) {
  r.def("view(Tensor(a) self, SymInt[] size) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    return view_metas(self, a[1], [&]<typename Int>() { return view_meta<Int>(self, size_list<Int>(a[1])); });
  });

  // Over SymInt when self or the shape is symbolic, so that a reshape of a traced value
  // stays a view (or clone + view) over the symbols.
  r.def("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    auto decompose = [&]<typename Int>() -> Stack {
      using G = core::Geometry<Int>;
      const Ints<Int> shape = rules::infer_size(ArrayRef<Int>(size_list<Int>(a[1])), G::numel(self));
      const auto in_sizes = G::sizes(self);
      const auto in_strides = G::strides(self);
      Ints<Int> strides;
      const IValue arg = core::size_list_value(shape);
      if (rules::compute_view_strides(ArrayRef<Int>(in_sizes), ArrayRef<Int>(in_strides), ArrayRef<Int>(shape),
                                      strides))
        return call_op("aten::view", {self, arg});
      Tensor c = call_op_tensor("aten::clone", {self, std::string("contiguous_format")});
      return call_op("aten::view", {c, arg});
    };
    if (a[1].is_sym_int_list() || core::is_symbolic(self)) return decompose.template operator()<SymInt>();
    return decompose.template operator()<int64_t>();
  });

  r.def("_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    // Over SymInt when either list holds symbols.
    return view_metas(self, a[1].is_sym_int_list() ? a[1] : a[2], [&]<typename Int>() {
      return view_of<Int>(self, size_list<Int>(a[1]), size_list<Int>(a[2]), core::Geometry<Int>::offset(self));
    });
  });

  r.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const auto& dims = a[1].to_int_list();
    EMBER_CHECK(static_cast<int64_t>(dims.size()) == self.dim())
        << "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
           "ordering of dimensions i.e. input.dim() = "
        << self.dim() << " is not equal to len(dims) = " << dims.size();
    const std::vector<int64_t> perm = core::wrap_dims(dims, self.dim());
    return view_metas(self, [&]<typename Int>() {
      using G = core::Geometry<Int>;
      Ints<Int> sizes, strides;
      for (int64_t d : perm) {
        sizes.push_back(G::size(self, d));
        strides.push_back(G::stride(self, d));
      }
      return view_of<Int>(self, std::move(sizes), std::move(strides), G::offset(self));
    });
  });

  r.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const int64_t d0 = core::wrap_dim(a[1].to_int(), self.dim()), d1 = core::wrap_dim(a[2].to_int(), self.dim());
    return view_metas(self, [&]<typename Int>() {
      Ints<Int> sizes = sizes_of<Int>(self), strides = strides_of<Int>(self);
      if (self.dim() > 0) {
        std::swap(sizes[d0], sizes[d1]);
        std::swap(strides[d0], strides[d1]);
      }
      return view_of<Int>(self, std::move(sizes), std::move(strides), core::Geometry<Int>::offset(self));
    });
  });

  r.def("t(Tensor(a) self) -> Tensor(a)").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(self.dim() <= 2) << "t() expects a tensor with <= 2 dimensions, but self is " << self.dim() << "D";
    if (self.dim() < 2) return call_op("aten::alias", {self});
    return call_op("aten::transpose.int", {self, int64_t{0}, int64_t{1}});
  });

  r.def("alias(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    return view_metas(self, [&]<typename Int>() { return same_view<Int>(self); });
  });

  // Tensor::detach(): an alias outside the autograd graph (not differentiable, so the
  // dispatcher gives it no view_base: in-place writes into it are not routed to self's
  // history, as in PyTorch). An op, not a TensorImpl made in C++, so that capture records it.
  r.def("detach(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    return view_metas(self, [&]<typename Int>() { return same_view<Int>(self); });
  });

  r.def("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    return view_metas(self, a[1], [&]<typename Int>() {
      Ints<Int> size = size_list<Int>(a[1]);
      EMBER_CHECK(static_cast<int64_t>(size.size()) >= self.dim())
          << "the number of sizes provided (" << size.size() << ") must be greater or equal to the number of "
          << "dimensions in the tensor (" << self.dim() << ")";
      const size_t off = size.size() - static_cast<size_t>(self.dim());
      for (size_t i = 0; i < size.size(); ++i) {
        if (!rules::is_symbolic_entry(size[i]) && rules::shown(size[i]) == -1) {
          EMBER_CHECK(i >= off) << "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                                   "dimension "
                                << i;
          size[i] = core::Geometry<Int>::size(self, static_cast<int64_t>(i - off));
        }
      }
      Ints<Int> strides = expand_strides<Int>(self, size);
      return view_of<Int>(self, std::move(size), std::move(strides), core::Geometry<Int>::offset(self));
    });
  });
  r.def("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)").set_decomposition([](const Stack& a) {
    return call_op("aten::expand", {a[0], IValue(ember::sym_sizes(a[1].to_tensor()))});
  });

  r.def("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)")
      .set_view([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        // start and end may be symbolic (`x[:, : sym_size(x, 1) / 2]`): the view is then over them.
        return std::vector<TensorMeta>{over_size_args(self, {&a[2], &a[3]}, [&]<typename Int>() {
          return slice_meta<Int>(self, a[1].to_int(), optional_size_arg<Int>(a[2]), optional_size_arg<Int>(a[3]),
                                 a[4].to_int());
        })};
      });
  r.def("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)")
      .set_decomposition([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK(self.dim() > 0) << "narrow() cannot be applied to a 0-dim tensor.";
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        // Over SymInt when self's size, start or length is symbolic: the checks are guards
        // (the ranges decide most: `x.narrow(0, 0, sym_size(x, 0) - 1)` records none).
        return over_size_args(self, {&a[2], &a[3]}, [&]<typename Int>() -> Stack {
          Int start = size_arg<Int>(a[2]);
          const Int length = size_arg<Int>(a[3]);
          const Int size = core::Geometry<Int>::size(self, dim);
          EMBER_CHECK_INDEX(start >= Int(0) - size && start <= size)
              << "start out of range (expected to be in range of [" << -rules::shown(size) << ", "
              << rules::size_text(size) << "], but got " << rules::size_text(start) << ")";
          if (start < 0) start = start + size;
          EMBER_CHECK(length >= 0 && start <= size - length)
              << "start (" << rules::size_text(start) << ") + length (" << rules::size_text(length)
              << ") exceeds dimension size (" << rules::size_text(size) << ").";
          return call_op("aten::slice.Tensor",
                         {self, dim, core::size_value(start), core::size_value(start + length), int64_t{1}});
        });
      });

  r.def("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK_INDEX(self.dim() > 0) << "select() cannot be applied to a 0-dim tensor.";
    const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
    // The index may be symbolic (`x.select(0, sym_size(x, 0) - 1)`): the offset is then over it.
    return std::vector<TensorMeta>{over_size_args(self, {&a[2]}, [&]<typename Int>() {
      using G = core::Geometry<Int>;
      const Int size = G::size(self, dim);
      const Int literal = size_arg<Int>(a[2]);
      EMBER_CHECK_INDEX(literal >= Int(0) - size && literal < size)
          << "select(): index " << rules::size_text(literal) << " out of range for tensor of size " << self.sizes()
          << " at dimension " << dim;
      const Int index = literal < 0 ? size + literal : literal;
      Ints<Int> sizes = sizes_of<Int>(self), strides = strides_of<Int>(self);
      const Int stride = strides[dim];
      sizes.erase(sizes.begin() + dim);
      strides.erase(strides.begin() + dim);
      return view_of<Int>(self, std::move(sizes), std::move(strides), G::offset(self) + index * stride);
    })};
  });

  r.def("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    return view_metas(self, [&]<typename Int>() {
      return diagonal_meta<Int>(self, a[1].to_int(), a[2].to_int(), a[3].to_int());
    });
  });

  r.def("squeeze(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const std::vector<bool> which(static_cast<size_t>(self.dim()), true);
    return view_metas(self, [&]<typename Int>() { return squeeze_meta<Int>(self, which); });
  });
  r.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const std::vector<bool> which = core::dim_mask({a[1].to_int()}, self.dim());
    return view_metas(self, [&]<typename Int>() { return squeeze_meta<Int>(self, which); });
  });
  r.def("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const std::vector<bool> which = core::dim_mask(a[1].to_int_list(), self.dim(), false);
    return view_metas(self, [&]<typename Int>() { return squeeze_meta<Int>(self, which); });
  });

  r.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim() + 1);
    return view_metas(self, [&]<typename Int>() {
      Ints<Int> sizes = sizes_of<Int>(self), strides = strides_of<Int>(self);
      const Int stride = dim >= self.dim() ? Int(1) : sizes[dim] * strides[dim];
      sizes.insert(sizes.begin() + dim, Int(1));
      strides.insert(strides.begin() + dim, stride);
      return view_of<Int>(self, std::move(sizes), std::move(strides), core::Geometry<Int>::offset(self));
    });
  });

  // Sizes, strides and offset are SymInts, as in PyTorch's schema: a view of a symbolic
  // extent (`x.as_strided({sym_size(x, 0), 2}, {2, 1})`) stays over the symbols.
  r.def("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)")
      .set_view([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        auto meta = [&]<typename Int>() {
          using G = core::Geometry<Int>;
          const Ints<Int> size = size_list<Int>(a[1]), stride = size_list<Int>(a[2]);
          const Int offset = a[3].is_none() ? G::offset(self) : size_arg<Int>(a[3]);
          EMBER_CHECK(size.size() == stride.size()) << "mismatch in length of strides and shape";
          if constexpr (std::is_same_v<Int, SymInt>) guard_within_input(self, size, stride, offset);
          return view_of<Int>(self, size, stride, offset);
        };
        const TensorMeta m = a[1].is_sym_int_list() || a[2].is_sym_int_list() || a[3].is_sym_int()
                                 ? meta.template operator()<SymInt>()
                                 : core::over_geometry({&self}, meta);
        check_as_strided_bounds(self, m);
        return metas(m);
      });

  r.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
      .set_decomposition([](const Stack& a) -> Stack {
        const Tensor& self = a[0].to_tensor();
        if (self.dim() == 0) return call_op("aten::reshape", {self, std::vector<int64_t>{1}});
        const int64_t s = core::wrap_dim(a[1].to_int(), self.dim()), e = core::wrap_dim(a[2].to_int(), self.dim());
        EMBER_CHECK(s <= e) << "flatten() has invalid args: start_dim cannot come after end_dim";
        // Over self's integer type: flatten(1) of [s0, s1, 8] reshapes to [s0, 8*s1].
        return core::over_geometry({&self}, [&]<typename Int>() -> Stack {
          const Ints<Int> sizes = sizes_of<Int>(self);
          Ints<Int> shape(sizes.begin(), sizes.begin() + s);
          Int n = 1;
          for (int64_t d = s; d <= e; ++d) n = n * sizes[d];
          shape.push_back(n);
          shape.insert(shape.end(), sizes.begin() + e + 1, sizes.end());
          return call_op("aten::reshape", {self, core::size_list_value(shape)});
        });
      });

  r.def("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)").set_decomposition([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
    // Over SymInt when self or the sizes are symbolic: unflatten(1, {s1, 4}) of [s0, 4*s1].
    auto decompose = [&]<typename Int>() -> Stack {
      const Ints<Int> sizes = size_list<Int>(a[2]);
      EMBER_CHECK(!sizes.empty()) << "unflatten: sizes must be non-empty";
      const Ints<Int> in = sizes_of<Int>(self);
      const Ints<Int> inner = rules::infer_size(ArrayRef<Int>(sizes), in[dim]);
      Ints<Int> shape(in.begin(), in.begin() + dim);
      shape.insert(shape.end(), inner.begin(), inner.end());
      shape.insert(shape.end(), in.begin() + dim + 1, in.end());
      return call_op("aten::view", {self, core::size_list_value(shape)});
    };
    if (a[2].is_sym_int_list()) return decompose.template operator()<SymInt>();
    return core::over_geometry({&self}, decompose);
  });

  r.def("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(self.dim() > 0) << "Dimension specified as 0 but tensor has no dimensions";
    const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
    // The number of outputs is the unbound dim's size, read as an integer (a symbolic one
    // is specialized, as PyTorch's unbind does); the other dims stay symbolic.
    const int64_t n = self.size(dim);
    return core::over_geometry({&self}, [&]<typename Int>() {
      Ints<Int> sizes = sizes_of<Int>(self), strides = strides_of<Int>(self);
      const Int step = strides[static_cast<size_t>(dim)];
      sizes.erase(sizes.begin() + dim);
      strides.erase(strides.begin() + dim);
      std::vector<TensorMeta> out;
      for (int64_t i = 0; i < n; ++i)
        out.push_back(view_of<Int>(self, sizes, strides, core::Geometry<Int>::offset(self) + Int(i) * step));
      return out;
    });
  });

  r.def("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]")
      .set_view([](const Stack& a) { return split_metas(a[0].to_tensor(), a[1], a[2].to_int()); });
  r.def("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]")
      .set_decomposition([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK(self.dim() > 0) << "split expects at least a 1-dimensional tensor";
        const int64_t dim = core::wrap_dim(a[2].to_int(), self.dim());
        // Over SymInt when the size or split_size is symbolic: the number of pieces is
        // guarded (as PyTorch does), their sizes stay expressions (the last one
        // `size - split*(k-1)`).
        return over_size_args(self, {&a[1]}, [&]<typename Int>() -> Stack {
          const Int split = size_arg<Int>(a[1]);
          const Int size = core::Geometry<Int>::size(self, dim);
          EMBER_CHECK(split > 0 || (split == 0 && size == 0))
              << "split_size can only be 0 if dimension size is 0, but got dimension size of " << rules::size_text(size);
          const int64_t pieces = split == 0 ? 1 : std::max<int64_t>(rules::guard_int(rules::divide(size + split - 1, split)), 1);
          Ints<Int> sizes;
          for (int64_t k = 0; k + 1 < pieces; ++k) sizes.push_back(split);
          sizes.push_back(size - split * (pieces - 1));
          return call_op("aten::split_with_sizes", {self, core::size_list_value(sizes), dim});
        });
      });
  r.def("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]").set_decomposition([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(self.dim() > 0) << "chunk expects at least a 1-dimensional tensor";
    const int64_t chunks = a[1].to_int();
    EMBER_CHECK(chunks > 0) << "chunk expects `chunks` to be greater than 0, got: " << chunks;
    const int64_t size = self.size(a[2].to_int());
    const int64_t split = (size + chunks - 1) / chunks;
    return call_op("aten::split.Tensor", {self, std::max<int64_t>(split, size == 0 ? 0 : 1), a[2]});
  });
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_at;
using ops::call_tensor;

Tensor view(const Tensor& self, IntArrayRef size, Loc loc) {
  return call_tensor(EMBER_OP("aten::view"), {self, size}, loc);
}
Tensor reshape(const Tensor& self, IntArrayRef shape, Loc loc) {
  return call_tensor(EMBER_OP("aten::reshape"), {self, shape}, loc);
}
Tensor view(const Tensor& self, SymIntArrayRef size, Loc loc) {
  return call_tensor(EMBER_OP("aten::view"), {self, IValue(size)}, loc);
}
Tensor reshape(const Tensor& self, SymIntArrayRef shape, Loc loc) {
  return call_tensor(EMBER_OP("aten::reshape"), {self, IValue(shape)}, loc);
}
Tensor expand(const Tensor& self, SymIntArrayRef size, Loc loc) {
  return call_tensor(EMBER_OP("aten::expand"), {self, IValue(size)}, loc);
}
Tensor permute(const Tensor& self, IntArrayRef dims, Loc loc) {
  return call_tensor(EMBER_OP("aten::permute"), {self, dims}, loc);
}
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1, Loc loc) {
  return call_tensor(EMBER_OP("aten::transpose.int"), {self, dim0, dim1}, loc);
}
Tensor t(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::t"), {self}, loc); }
Tensor expand(const Tensor& self, IntArrayRef size, Loc loc) {
  return call_tensor(EMBER_OP("aten::expand"), {self, size}, loc);
}
Tensor slice(const Tensor& self, int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end, int64_t step,
             Loc loc) {
  return call_tensor(EMBER_OP("aten::slice.Tensor"), {self, dim, start, end, step}, loc);
}
Tensor narrow(const Tensor& self, int64_t dim, SymInt start, SymInt length, Loc loc) {
  return call_tensor(EMBER_OP("aten::narrow"), {self, dim, start, length}, loc);
}
Tensor select(const Tensor& self, int64_t dim, SymInt index, Loc loc) {
  return call_tensor(EMBER_OP("aten::select.int"), {self, dim, index}, loc);
}
Tensor squeeze(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::squeeze"), {self}, loc); }
Tensor squeeze(const Tensor& self, int64_t dim, Loc loc) {
  return call_tensor(EMBER_OP("aten::squeeze.dim"), {self, dim}, loc);
}
Tensor unsqueeze(const Tensor& self, int64_t dim, Loc loc) {
  return call_tensor(EMBER_OP("aten::unsqueeze"), {self, dim}, loc);
}
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset,
                  Loc loc) {
  return call_tensor(EMBER_OP("aten::as_strided"), {self, size, stride, storage_offset}, loc);
}
Tensor as_strided(const Tensor& self, SymIntArrayRef size, SymIntArrayRef stride, std::optional<SymInt> storage_offset,
                  Loc loc) {
  return call_tensor(EMBER_OP("aten::as_strided"), {self, IValue(size), IValue(stride), storage_offset}, loc);
}
Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim, Loc loc) {
  return call_tensor(EMBER_OP("aten::flatten.using_ints"), {self, start_dim, end_dim}, loc);
}
Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes, Loc loc) {
  return call_tensor(EMBER_OP("aten::unflatten.int"), {self, dim, sizes}, loc);
}
Tensor unflatten(const Tensor& self, int64_t dim, SymIntArrayRef sizes, Loc loc) {
  return call_tensor(EMBER_OP("aten::unflatten.int"), {self, dim, IValue(sizes)}, loc);
}
Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2, Loc loc) {
  return call_tensor(EMBER_OP("aten::diagonal"), {self, offset, dim1, dim2}, loc);
}
Tensor alias(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::alias"), {self}, loc); }
std::vector<Tensor> unbind(const Tensor& self, int64_t dim, Loc loc) {
  return ops::tensor_list(call_at(EMBER_OP("aten::unbind.int"), {self, dim}, loc));
}
std::vector<Tensor> split(const Tensor& self, SymInt split_size, int64_t dim, Loc loc) {
  return ops::tensor_list(call_at(EMBER_OP("aten::split.Tensor"), {self, split_size, dim}, loc));
}
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim, Loc loc) {
  return ops::tensor_list(call_at(EMBER_OP("aten::split_with_sizes"), {self, split_sizes, dim}, loc));
}
std::vector<Tensor> split_with_sizes(const Tensor& self, SymIntArrayRef split_sizes, int64_t dim, Loc loc) {
  return ops::tensor_list(call_at(EMBER_OP("aten::split_with_sizes"), {self, IValue(split_sizes), dim}, loc));
}
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim, Loc loc) {
  return ops::tensor_list(call_at(EMBER_OP("aten::chunk"), {self, chunks, dim}, loc));
}

}  // namespace ember
