// ops/copy.cpp — copying and conversion: copy_ (the one primitive that writes into an
// existing tensor, with broadcasting and dtype conversion), _to_copy, clone, fill_, the
// functional fill.Scalar and copy, and _local_scalar_dense (item() as an op).
#include <cstring>
#include <numeric>
#include <optional>

#include "core/shape.h"
#include "core/shape_rules.h"
#include "core/sym_geometry.h"
#include "kernels/cpu/copy.h"
#include "kernels/cuda/loops.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

/// Whether two tensors' memory may overlap (same storage and intersecting extents).
bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  auto extent = [](const Tensor& t) {
    int64_t lo = t.storage_offset(), hi = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) {
      const int64_t span = (t.size(d) - 1) * t.stride(d);
      if (span < 0) lo += span; else hi += span;
    }
    return std::pair{lo, hi};
  };
  auto [alo, ahi] = extent(a);
  auto [blo, bhi] = extent(b);
  return alo <= bhi && blo <= ahi;
}

/// Whether two lists are equal expression by expression (no guard: equal for every size).
bool same_exprs(const core::SymInts& a, const core::SymInts& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].expr() != b[i].expr()) return false;
  return true;
}

/// The strides of a symbolic `self` when they are dense for every size: the contiguous
/// strides of its sizes taken in the order of its example strides (a contiguous or a
/// transposed/permuted tensor); nullopt otherwise.
std::optional<core::SymInts> dense_sym_strides(const Tensor& self) {
  const core::SymInts sizes = core::sym_sizes(self), strides = core::sym_strides(self);
  std::vector<size_t> order(sizes.size());  // innermost first
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return strides[a].hint() < strides[b].hint() || (strides[a].hint() == strides[b].hint() && a > b);
  });
  core::SymInts dense(sizes.size(), core::SymInt(1));
  core::SymInt next(1);
  for (size_t d : order) {
    dense[d] = next;
    next = next * sizes[d];
  }
  if (!same_exprs(dense, strides)) return std::nullopt;
  return dense;
}

/// infer_dense_strides over the symbols: c10's dim order, its comparisons of strides and
/// sizes decided by the ranges or recorded as guards, then dense strides in that order.
core::SymInts sym_infer_dense_strides(const core::SymInts& sizes, const core::SymInts& strides) {
  const std::vector<int64_t> perm = dense_dim_order_over(sizes, strides);
  core::SymInts out(sizes.size(), core::SymInt(1));
  core::SymInt next(1);
  for (int64_t d : perm) {
    out[static_cast<size_t>(d)] = next;
    if (sizes[d] > 1) next = next * sizes[d];
  }
  return out;
}

TensorMeta like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  // Over the symbols when self is dense for every size (Note [dynamic shapes]).
  if (core::is_symbolic(self)) {
    if (auto strides = dense_sym_strides(self))
      return core::make_meta(core::sym_sizes(self), *strides, core::SymInt(0), dtype.value_or(self.dtype()),
                             device.value_or(self.device()));
    // Not dense at the example sizes (a slice with a step, an expanded dim): empty_like's
    // infer_dense_strides over the symbols. Where such a tensor is dense at other sizes,
    // those strides are its own, as empty_like keeps them.
    const core::SymInts sizes = core::sym_sizes(self), strides = core::sym_strides(self);
    if (!core::is_non_overlapping_and_dense(core::hints(sizes), core::hints(strides)))
      return core::make_meta(sizes, sym_infer_dense_strides(sizes, strides), core::SymInt(0),
                             dtype.value_or(self.dtype()), device.value_or(self.device()));
  }
  TensorMeta m;
  m.sizes = self.sizes().vec();
  // A dense layout kept (a transposed tensor copies as transposed); else dense strides in
  // its dims' order, as PyTorch's empty_like.
  m.strides = core::is_non_overlapping_and_dense(self.sizes(), self.strides()) ? self.strides().vec()
                                                                                : infer_dense_strides(self.sizes(), self.strides());
  m.dtype = dtype.value_or(self.dtype());
  m.device = device.value_or(self.device());
  return m;
}

/// Raises unless src broadcasts to self's sizes (over SymInt for symbolic sizes: Note
/// [dynamic shapes]).
void check_broadcasts_to(const Tensor& src, const Tensor& self) {
  core::over_geometry({&self, &src}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    const auto sizes = G::sizes(src);
    const auto strides = G::strides(src);
    const auto target = G::sizes(self);
    return core::rules::broadcast_strides(ArrayRef<Int>(sizes), ArrayRef<Int>(strides), ArrayRef<Int>(target)).size();
  });
}

/// The functional forms of fill_ and copy_ (Core ATen's fill.Scalar and copy): a new tensor
/// of self's geometry (empty_like's strides), dtype and device, written as the in-place op
/// would write self. Their derivative rows are in derivatives.cpp.
// Note [geometry reads]: sym_size.int, sym_stride.int, sym_numel, sym_storage_offset and
// sym_is_contiguous are how Core ATen graphs read a tensor's geometry. Like x.size(d) they
// are composites: eagerly an int (a bool), and under capture with dynamic shapes the traced
// tensor's size expression, with no node recorded (Ember's graphs carry sizes in their
// values' geometry, not as nodes; the .pt2 importer folds these nodes the same way).
// sym_is_contiguous reads the strides' example values, as Tensor::is_contiguous does.
void register_geometry_reads(Registry& r) {
  r.def("sym_size.int(Tensor self, int dim) -> SymInt").set_decomposition([](const Stack& a) -> Stack {
    return {IValue(sym_size(a[0].to_tensor(), a[1].to_int()))};
  });
  r.def("sym_stride.int(Tensor self, int dim) -> SymInt").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& t = a[0].to_tensor();
    return {IValue(core::is_symbolic(t) ? SymInt(core::sym_stride(t, a[1].to_int())) : SymInt(t.stride(a[1].to_int())))};
  });
  r.def("sym_numel(Tensor self) -> SymInt").set_decomposition([](const Stack& a) -> Stack {
    return {IValue(sym_numel(a[0].to_tensor()))};
  });
  r.def("sym_storage_offset(Tensor self) -> SymInt").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& t = a[0].to_tensor();
    return {IValue(core::is_symbolic(t) ? SymInt(core::sym_storage_offset(t)) : SymInt(t.storage_offset()))};
  });
  r.def("sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> SymBool")
      .set_decomposition([](const Stack& a) -> Stack {
        const Tensor& t = a[0].to_tensor();
        return {IValue(core::is_contiguous_as(t.sizes(), t.strides(), a[1].is_string() ? a[1].to_string_ref() : ""))};
      });
}

void register_functional_fill_copy(Registry& r) {
  r.def("fill.Scalar(Tensor self, Scalar value) -> Tensor")
      .set_meta([](const Stack& a) { return metas(like(a[0].to_tensor(), std::nullopt, std::nullopt)); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        // A complex tensor gets the real value (Scalars are real): copy_into sets the
        // imaginary parts to zero.
        kernels::cpu::copy_into(out[0], scalar_tensor(a[1].to_scalar(), to_real_value_type(out[0].dtype()),
                                                      out[0].device()));
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        kernels::cuda::copy_into(out[0], scalar_tensor(a[1].to_scalar(), out[0].dtype(), kCPU));
      })
      .set_complex();
  r.def("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        check_broadcasts_to(a[1].to_tensor(), self);
        return metas(like(self, std::nullopt, std::nullopt));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { kernels::cpu::copy_into(out[0], a[1].to_tensor()); })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        kernels::cuda::copy_into(out[0], a[1].to_tensor(), a[2].to_bool());
      })
      .set_cross_device()
      .set_complex();
  // Tensor::item as an op: composite, so that under capture the read of a traced tensor's
  // value is the graph break `Tensor.item()` is (Note [capture]).
  r.def("_local_scalar_dense(Tensor self) -> Scalar").set_decomposition([](const Stack& a) -> Stack {
    return {a[0].to_tensor().item()};
  });
  register_geometry_reads(r);
}

}  // namespace

TensorMeta memory_format_like(const Tensor& self, const IValue& memory_format, std::optional<ScalarType> dtype,
                              std::optional<Device> device) {
  const ScalarType dt = dtype.value_or(self.dtype());
  const Device dev = device.value_or(self.device());
  const std::string format = memory_format.is_string() ? memory_format.to_string_ref() : "preserve_format";
  // Over the symbols when asked for a contiguous result; otherwise like() keeps a layout
  // that is dense for every size (Note [dynamic shapes]).
  if (format == "contiguous_format") return contiguous_over(self, dt, dev);
  if (format == "channels_last") {
    EMBER_CHECK(self.dim() == 4) << "required rank 4 tensor to use channels_last format, got a tensor of "
                                 << self.dim() << " dims";
    return layout_meta_of(self, dt, dev, true);
  }
  return like(self, dtype, device);
}

void register_copy_ops(Registry& r) {
  r.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
      .set_meta([](const Stack& a) {
        check_broadcasts_to(a[1].to_tensor(), a[0].to_tensor());
        return std::vector<TensorMeta>{};
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) {
        const Tensor& self = a[0].to_tensor();
        Tensor src = a[1].to_tensor();
        if (self.is_same(src)) return;
        if (may_overlap(self, src)) src = src.clone();
        kernels::cpu::copy_into(self, src);
      })
      // Any copy with a CUDA tensor on either side (Note [cuda]).
      .set_cuda([](const Stack& a, std::vector<Tensor>&) {
        const Tensor& self = a[0].to_tensor();
        Tensor src = a[1].to_tensor();
        if (self.is_same(src)) return;
        if (may_overlap(self, src)) src = src.clone();
        kernels::cuda::copy_into(self, src, a[2].to_bool());
      })
      .set_cross_device()
      .set_complex();

  r.def("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor")
      .set_meta([](const Stack& a) {
        return metas(like(a[0].to_tensor(), a[1].to_optional_scalar_type(),
                          a[3].is_none() ? std::nullopt : std::optional<Device>(a[3].to_device())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK(!self.is_meta()) << "cannot copy out of meta tensor; no data!";
        kernels::cpu::copy_into(out[0], self);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK(!self.is_meta()) << "cannot copy out of meta tensor; no data!";
        kernels::cuda::copy_into(out[0], self, a[5].to_bool());
      })
      .set_cross_device()
      .set_complex();

  r.def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")
      .set_meta([](const Stack& a) { return metas(memory_format_like(a[0].to_tensor(), a[1], std::nullopt, std::nullopt)); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { kernels::cpu::copy_into(out[0], a[0].to_tensor()); })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) { kernels::cuda::copy_into(out[0], a[0].to_tensor()); })
      .set_complex();

  r.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")
      .set_meta([](const Stack&) { return std::vector<TensorMeta>{}; })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) {
        const Tensor& self = a[0].to_tensor();
        kernels::cpu::copy_into(self, scalar_tensor(a[1].to_scalar(), to_real_value_type(self.dtype()), self.device()));
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>&) {
        const Tensor& self = a[0].to_tensor();
        kernels::cuda::copy_into(self, scalar_tensor(a[1].to_scalar(), self.dtype(), kCPU));
      })
      .set_complex();
  r.def("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)")
      .set_meta([](const Stack& a) {
        EMBER_CHECK(a[1].to_tensor().dim() == 0)
            << "fill_ only supports 0-dimension value tensor but got tensor with " << a[1].to_tensor().dim()
            << " dimensions.";
        return std::vector<TensorMeta>{};
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) { kernels::cpu::copy_into(a[0].to_tensor(), a[1].to_tensor()); })
      .set_cuda([](const Stack& a, std::vector<Tensor>&) { kernels::cuda::copy_into(a[0].to_tensor(), a[1].to_tensor()); });
  r.def("zero_(Tensor(a!) self) -> Tensor(a!)").set_decomposition([](const Stack& a) {
    return call_op("aten::fill_.Scalar", {a[0], Scalar(0)});
  });
  r.def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)")
      .set_decomposition([](const Stack& a) -> Stack {
        const Tensor& self = a[0].to_tensor();
        if (self.is_contiguous()) return {self};
        return call_op("aten::clone", {self, std::string("contiguous_format")});
      });
  register_functional_fill_copy(r);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_inplace;
using ops::call_tensor;

Tensor contiguous(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::contiguous"), {self}, loc); }
Tensor clone(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::clone"), {self}, loc); }
Tensor to(const Tensor& self, ScalarType dtype, Loc loc) {
  if (self.dtype() == dtype) return self;
  return call_tensor(EMBER_OP("aten::_to_copy"), {self, dtype}, loc);
}
Tensor& copy_(Tensor& self, const Tensor& src, Loc loc) {
  return call_inplace(EMBER_OP("aten::copy_"), self, {self, src}, loc);
}
Tensor& fill_(Tensor& self, const Scalar& value, Loc loc) {
  return call_inplace(EMBER_OP("aten::fill_.Scalar"), self, {self, value}, loc);
}
Tensor& zero_(Tensor& self, Loc loc) { return call_inplace(EMBER_OP("aten::zero_"), self, {self}, loc); }
Tensor fill(const Tensor& self, const Scalar& value, Loc loc) {
  return call_tensor(EMBER_OP("aten::fill.Scalar"), {self, value}, loc);
}
Tensor copy(const Tensor& self, const Tensor& src, bool non_blocking, Loc loc) {
  return call_tensor(EMBER_OP("aten::copy"), {self, src, non_blocking}, loc);
}
Scalar _local_scalar_dense(const Tensor& self, Loc loc) {
  return ops::call_at(EMBER_OP("aten::_local_scalar_dense"), {self}, loc).at(0).to_scalar();
}

}  // namespace ember
