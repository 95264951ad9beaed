// ops/fft.cpp — the complex views (view_as_real, view_as_complex, and the composites
// real and imag over them), ATen's discrete Fourier transforms _fft_r2c, _fft_c2r and
// _fft_c2c, whose kernels run on FFTW (kernels/cpu/fft.cpp), and abs of complex tensors
// (the modulus, wrapped around the pointwise row of abs). Their derivative rows are
// in derivatives.cpp. See Note [complex dtypes] (docs/notes/registry.md).
#include <algorithm>
#include <complex>
#include <cstring>
#include <vector>

#include "core/shape.h"
#include "ember/ops/creation.h"
#include "ember/ops/fft.h"
#include "ember/ops/view.h"
#include "kernels/cpu/fft.h"
#include "kernels/cpu/loops.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

using kernels::cpu::FftNorm;

/// `dim` wrapped against self's rank: not empty, each in range and named once.
std::vector<int64_t> signal_dims(const Tensor& self, const IValue& dim, const char* op) {
  std::vector<int64_t> dims = dim.to_int_list();
  EMBER_CHECK(!dims.empty()) << op << ": expected at least one dim to transform, got dim=[]";
  std::vector<bool> seen(static_cast<size_t>(self.dim()), false);
  for (int64_t& d : dims) {
    d = core::wrap_dim(d, self.dim(), /*scalar_ok=*/false);
    EMBER_CHECK(!seen[static_cast<size_t>(d)]) << op << ": dim " << d << " appears more than once in dim="
                                               << IntArrayRef(dim.to_int_list());
    seen[static_cast<size_t>(d)] = true;
  }
  return dims;
}

/// The normalization argument as a mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n.
FftNorm norm_mode(const IValue& v, const char* op) {
  const int64_t n = v.to_int();
  EMBER_CHECK(n >= 0 && n <= 2) << op << ": expected normalization 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got " << n;
  return static_cast<FftNorm>(n);
}

/// PyTorch's layout of an FFT output (that of its CPU backend for a dense input): the
/// batch dims outermost in order, then the transformed dims in increasing order, with
/// `innermost` (dim.back() of r2c and c2r, whose length changes) last; dense.
TensorMeta fft_out_meta(const Tensor& self, std::vector<int64_t> sizes, ScalarType dtype,
                        const std::vector<int64_t>& dims, std::optional<int64_t> innermost) {
  const int64_t nd = self.dim();
  std::vector<bool> is_signal(static_cast<size_t>(nd), false);
  for (int64_t d : dims) is_signal[static_cast<size_t>(d)] = true;
  std::vector<int64_t> order;  // outermost first
  for (int64_t d = 0; d < nd; ++d)
    if (!is_signal[static_cast<size_t>(d)]) order.push_back(d);
  for (int64_t d = 0; d < nd; ++d)
    if (is_signal[static_cast<size_t>(d)] && d != innermost) order.push_back(d);
  if (innermost) order.push_back(*innermost);
  std::vector<int64_t> strides(static_cast<size_t>(nd), 1);
  int64_t step = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[static_cast<size_t>(*it)] = step;
    step *= std::max<int64_t>(sizes[static_cast<size_t>(*it)], 1);
  }
  TensorMeta m = contiguous_meta(sizes, dtype, self.device());
  m.strides = std::move(strides);
  return m;
}

/// The transforms take float32/float64 (real) or complex64/complex128 inputs: FFTW has
/// no 16-bit transforms, and PyTorch's CPU none either.
void check_fft_input(const Tensor& self, bool want_complex, const char* op) {
  const ScalarType t = self.dtype();
  // PyTorch's CPU backend (MKL) raises for empty tensors ("Inconsistent configuration
  // parameters"); Ember raises too, with a clearer message.
  EMBER_CHECK(self.numel() > 0) << op << ": expected a non-empty tensor, got sizes " << self.sizes();
  if (want_complex) {
    EMBER_CHECK(is_complex(t)) << op << ": Only supports complex dtypes, but found: " << scalar_type_name(t);
  } else {
    EMBER_CHECK(t == kFloat || t == kDouble)
        << op << ": Only supports floating-point dtypes (float32, float64), but found: " << scalar_type_name(t);
  }
}

/// view_as_real and view_as_complex (views whose dtype differs from their base's, with
/// PyTorch's checks and messages), and the composites real and imag.
void register_complex_views(Registry& r) {
  r.def("view_as_real(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(is_complex(self.dtype())) << "view_as_real is only supported for complex tensors, got "
                                          << self.dtype();
    std::vector<int64_t> sizes = self.sizes().vec(), strides;
    for (int64_t s : self.strides()) strides.push_back(2 * s);
    sizes.push_back(2);
    strides.push_back(1);
    TensorMeta m = contiguous_meta(sizes, to_real_value_type(self.dtype()), self.device());
    m.strides = std::move(strides);
    m.storage_offset = 2 * self.storage_offset();
    return metas(std::move(m));
  });
  r.def("view_as_complex(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(self.dtype() == kFloat || self.dtype() == kDouble)
        << "view_as_complex is only supported for float and double tensors (Ember has no complex32), but got a "
           "tensor of scalar type: "
        << scalar_type_name(self.dtype());
    EMBER_CHECK(self.dim() != 0) << "Input tensor must have one or more dimensions";
    EMBER_CHECK(self.size(-1) == 2) << "Tensor must have a last dimension of size 2";
    EMBER_CHECK(self.stride(-1) == 1) << "Tensor must have a last dimension with stride 1";
    std::vector<int64_t> sizes = self.sizes().vec(), strides;
    sizes.pop_back();
    for (int64_t d = 0; d + 1 < self.dim(); ++d) {
      EMBER_CHECK(self.stride(d) % 2 == 0) << "Tensor must have a stride divisible by 2 for all but last dimension";
      strides.push_back(self.stride(d) / 2);
    }
    EMBER_CHECK(self.storage_offset() % 2 == 0) << "Tensor must have a storage_offset divisible by 2";
    TensorMeta m = contiguous_meta(sizes, *to_complex_type(self.dtype()), self.device());
    m.strides = std::move(strides);
    m.storage_offset = self.storage_offset() / 2;
    return metas(std::move(m));
  });
  // CompositeImplicit in PyTorch: a select of the real view (a real tensor is its own
  // real part).
  r.def("real(Tensor(a) self) -> Tensor(a)").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    if (!is_complex(self.dtype())) return {self};
    return {view_as_real(self).select(-1, 0)};
  });
  r.def("imag(Tensor(a) self) -> Tensor(a)").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(is_complex(self.dtype())) << "imag is not implemented for tensors with non-complex dtypes.";
    return {view_as_real(self).select(-1, 1)};
  });
}

/// _fft_r2c, _fft_c2r and _fft_c2c: meta functions with PyTorch's output geometry and
/// checks, kernels on FFTW (kernels/cpu/fft.h).
void register_transforms(Registry& r) {
  r.def("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        check_fft_input(self, /*want_complex=*/false, "_fft_r2c");
        const std::vector<int64_t> dims = signal_dims(self, a[1], "_fft_r2c");
        norm_mode(a[2], "_fft_r2c");
        std::vector<int64_t> sizes = self.sizes().vec();
        const int64_t last = dims.back();
        if (a[3].to_bool()) sizes[static_cast<size_t>(last)] = sizes[static_cast<size_t>(last)] / 2 + 1;
        return metas(fft_out_meta(self, sizes, *to_complex_type(self.dtype()), dims, last));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const std::vector<int64_t> dims = signal_dims(self, a[1], "_fft_r2c");
        const FftNorm norm = norm_mode(a[2], "_fft_r2c");
        if (a[3].to_bool()) return kernels::cpu::fft_r2c(self, out[0], dims, norm);
        // The two-sided transform of a real signal is that of the signal as complex.
        kernels::cpu::fft_c2c(self.to(out[0].dtype()), out[0], dims, norm, /*forward=*/true);
      })
      .set_complex();

  r.def("_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        check_fft_input(self, /*want_complex=*/true, "_fft_c2r");
        const std::vector<int64_t> dims = signal_dims(self, a[1], "_fft_c2r");
        norm_mode(a[2], "_fft_c2r");
        const int64_t last = dims.back(), n = a[3].to_int();
        EMBER_CHECK(n >= 1) << "_fft_c2r: Invalid number of data points (" << n << ") specified";
        EMBER_CHECK(self.size(last) == n / 2 + 1)
            << "_fft_c2r: a onesided signal of " << n << " points has " << n / 2 + 1 << " entries along dim " << last
            << ", got " << self.size(last) << " (input sizes " << self.sizes() << ")";
        std::vector<int64_t> sizes = self.sizes().vec();
        sizes[static_cast<size_t>(last)] = n;
        return metas(fft_out_meta(self, sizes, to_real_value_type(self.dtype()), dims, last));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        std::vector<int64_t> dims = signal_dims(self, a[1], "_fft_c2r");
        const FftNorm norm = norm_mode(a[2], "_fft_c2r");
        // As PyTorch's CPU backend: a c2c inverse over all dims but the last, then a 1-D
        // c2r. A multi-dimensional c2r would assume Hermitian symmetry the input need
        // not have, and give other values for inputs without it.
        Tensor in = self;
        const int64_t last = dims.back();
        dims.pop_back();
        if (!dims.empty()) {
          Tensor tmp = empty_like(self);
          kernels::cpu::fft_c2c(self, tmp, dims, norm, /*forward=*/false);
          in = tmp;
        }
        kernels::cpu::fft_c2r(in, out[0], last, norm);
      })
      .set_complex();

  r.def("_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        check_fft_input(self, /*want_complex=*/true, "_fft_c2c");
        const std::vector<int64_t> dims = signal_dims(self, a[1], "_fft_c2c");
        norm_mode(a[2], "_fft_c2c");
        return metas(fft_out_meta(self, self.sizes().vec(), self.dtype(), dims, std::nullopt));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        kernels::cpu::fft_c2c(self, out[0], signal_dims(self, a[1], "_fft_c2c"), norm_mode(a[2], "_fft_c2c"),
                              a[3].to_bool());
      })
      .set_complex();
}

/// abs of a complex tensor is its modulus, of the parts' real type (PyTorch's abs): the
/// pointwise row's meta function and kernel, wrapped to take complex tensors too.
void extend_abs(Registry& r) {
  OpDef& abs = r.edit("aten::abs");
  MetaFn real_meta = abs.meta;
  KernelFn real_cpu = abs.cpu;
  abs.set_meta([real_meta](const Stack& a) {
       const Tensor& self = a[0].to_tensor();
       if (!is_complex(self.dtype())) return real_meta(a);
       return metas(pointwise_meta({&self}, to_real_value_type(self.dtype())));
     })
      .set_cpu([real_cpu](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        if (!is_complex(self.dtype())) return real_cpu(a, out);
        if (out[0].numel() == 0) return;
        EMBER_DISPATCH_COMPLEX_TYPES(self.dtype(), "abs", [&] {
          using real_t = typename scalar_t::value_type;
          kernels::cpu::PointwiseLoop loop(out[0], {self});
          loop.for_each_row([](char** p, const int64_t* s, int64_t n) {
            for (int64_t i = 0; i < n; ++i) {
              scalar_t z;
              std::memcpy(&z, p[1] + i * s[1], sizeof z);
              const real_t m = std::abs(z);  // hypot: no overflow for large parts
              std::memcpy(p[0] + i * s[0], &m, sizeof m);
            }
          });
        });
      })
      .set_complex();
}

}  // namespace

void register_fft_ops(Registry& r) {
  register_complex_views(r);
  register_transforms(r);
  extend_abs(r);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor view_as_real(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::view_as_real"), {self}, loc); }
Tensor view_as_complex(const Tensor& self, Loc loc) {
  return call_tensor(EMBER_OP("aten::view_as_complex"), {self}, loc);
}
Tensor real(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::real"), {self}, loc); }
Tensor imag(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::imag"), {self}, loc); }
Tensor _fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided, Loc loc) {
  return call_tensor(EMBER_OP("aten::_fft_r2c"), {self, dim.vec(), normalization, onesided}, loc);
}
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size, Loc loc) {
  return call_tensor(EMBER_OP("aten::_fft_c2r"), {self, dim.vec(), normalization, last_dim_size}, loc);
}
Tensor _fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, Loc loc) {
  return call_tensor(EMBER_OP("aten::_fft_c2c"), {self, dim.vec(), normalization, forward}, loc);
}

}  // namespace ember
