// ops/copy.cpp — copying and conversion: copy_ (the one primitive that writes into an
// existing tensor, with broadcasting and dtype conversion), _to_copy, clone, fill_.
#include <cstring>

#include "core/shape.h"
#include "kernels/cpu/loops.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

using kernels::cpu::PointwiseLoop;

template <typename dst_t, typename src_t>
inline dst_t convert(src_t v) {
  if constexpr (std::is_same_v<dst_t, src_t>) {
    return v;
  } else if constexpr (std::is_same_v<dst_t, bool>) {
    return static_cast<opmath_t<src_t>>(v) != 0;
  } else if constexpr (std::is_integral_v<dst_t> && !std::is_integral_v<opmath_t<src_t>>) {
    // Float to integer: truncation, as a C cast; out-of-range values are undefined in C++,
    // so go through int64 (ATen's result on x86 for the common cases).
    const auto f = static_cast<opmath_t<src_t>>(v);
    if (!(f == f)) return static_cast<dst_t>(std::numeric_limits<int64_t>::min());
    if (f >= 9.2233720368547758e18 || f < -9.2233720368547758e18) return static_cast<dst_t>(std::numeric_limits<int64_t>::min());
    return static_cast<dst_t>(static_cast<int64_t>(f));
  } else {
    return static_cast<dst_t>(static_cast<opmath_t<src_t>>(v));
  }
}

/// dst[...] = src[...] with broadcasting and conversion.
void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  PointwiseLoop loop(dst, {src});
  if (dst.dtype() == src.dtype()) {
    const int64_t es = static_cast<int64_t>(dst.element_size());
    loop.for_each_row([&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == es && s[1] == es) {
        std::memcpy(p[0], p[1], static_cast<size_t>(n * es));
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], static_cast<size_t>(es));
      }
    });
    return;
  }
  EMBER_DISPATCH_ALL_TYPES(dst.dtype(), "copy_", [&] {
    using dst_t = scalar_t;
    EMBER_DISPATCH_ALL_TYPES(src.dtype(), "copy_", [&] {
      using src_t = scalar_t;
      loop.for_each_row([&](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          src_t v;
          std::memcpy(&v, p[1] + i * s[1], sizeof v);
          const dst_t d = convert<dst_t, src_t>(v);
          std::memcpy(p[0] + i * s[0], &d, sizeof d);
        }
      });
    });
  });
}

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

TensorMeta like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  TensorMeta m;
  m.sizes = self.sizes().vec();
  // Preserve a dense layout (e.g. a transposed tensor copies as transposed), else contiguous.
  m.strides = core::is_non_overlapping_and_dense(self.sizes(), self.strides()) ? self.strides().vec()
                                                                                : core::contiguous_strides(self.sizes());
  m.dtype = dtype.value_or(self.dtype());
  m.device = device.value_or(self.device());
  return m;
}

}  // namespace

void register_copy_ops(Registry& r) {
  r.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Tensor& src = a[1].to_tensor();
        core::broadcast_strides(src.sizes(), src.strides(), self.sizes());  // raises if src does not broadcast
        return std::vector<TensorMeta>{};
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) {
        const Tensor& self = a[0].to_tensor();
        Tensor src = a[1].to_tensor();
        if (self.is_same(src)) return;
        if (may_overlap(self, src)) src = src.clone();
        copy_kernel(self, src);
      });

  r.def("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor")
      .set_meta([](const Stack& a) {
        return metas(like(a[0].to_tensor(), a[1].to_optional_scalar_type(),
                          a[3].is_none() ? std::nullopt : std::optional<Device>(a[3].to_device())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK(!self.is_meta()) << "cannot copy out of meta tensor; no data!";
        copy_kernel(out[0], self);
      });

  r.def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        if (a[1].is_string() && a[1].to_string_ref() == "contiguous_format")
          return metas(contiguous_meta(self.sizes(), self.dtype(), self.device()));
        return metas(like(self, std::nullopt, std::nullopt));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { copy_kernel(out[0], a[0].to_tensor()); });

  r.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")
      .set_meta([](const Stack&) { return std::vector<TensorMeta>{}; })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) {
        const Tensor& self = a[0].to_tensor();
        copy_kernel(self, scalar_tensor(a[1].to_scalar(), self.dtype(), self.device()));
      });
  r.def("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)")
      .set_meta([](const Stack& a) {
        EMBER_CHECK(a[1].to_tensor().dim() == 0)
            << "fill_ only supports 0-dimension value tensor but got tensor with " << a[1].to_tensor().dim()
            << " dimensions.";
        return std::vector<TensorMeta>{};
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) { copy_kernel(a[0].to_tensor(), a[1].to_tensor()); });
  r.def("zero_(Tensor(a!) self) -> Tensor(a!)").set_decomposition([](const Stack& a) {
    return call_op("aten::fill_.Scalar", {a[0], Scalar(0)});
  });
  r.def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)")
      .set_decomposition([](const Stack& a) -> Stack {
        const Tensor& self = a[0].to_tensor();
        if (self.is_contiguous()) return {self};
        return call_op("aten::clone", {self, std::string("contiguous_format")});
      });
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

}  // namespace ember
