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
#include "core/shape_rules.h"
#include "core/sym_geometry.h"
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
/// `innermost` (dim.back() of r2c and c2r, whose length changes) last; dense. Over the
/// integer type of the sizes: symbolic sizes give strides over the symbols.
template <typename Int>
TensorMeta fft_out_meta(const Tensor& self, std::vector<Int> sizes, ScalarType dtype,
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
  std::vector<Int> strides(static_cast<size_t>(nd), Int(1));
  Int step = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[static_cast<size_t>(*it)] = step;
    step = step * core::rules::at_least_one(sizes[static_cast<size_t>(*it)]);
  }
  return core::Geometry<Int>::meta(std::move(sizes), std::move(strides), Int(0), dtype, self.device());
}

/// `self`'s sizes over the integer type of its geometry.
template <typename Int>
std::vector<Int> sizes_over(const Tensor& self) {
  const auto s = core::Geometry<Int>::sizes(self);
  return std::vector<Int>(s.begin(), s.end());
}

/// The transforms take float32/float64 (real) or complex64/complex128 inputs: FFTW has
/// no 16-bit transforms, and PyTorch's CPU none either.
void check_fft_input(const Tensor& self, bool want_complex, const char* op) {
  const ScalarType t = self.dtype();
  // PyTorch's CPU backend (MKL) raises for empty tensors ("Inconsistent configuration
  // parameters"); Ember raises too, with a clearer message. Over symbols the ranges
  // decide it (a symbolic size is at least 2), so nothing is specialized.
  const bool empty = core::over_geometry({&self}, [&]<typename Int>() {
    return core::Geometry<Int>::numel(self) == Int(0);
  });
  EMBER_CHECK(!empty) << op << ": expected a non-empty tensor, got sizes " << self.sizes();
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
  // Both over the integer type of self's geometry (Note [dynamic shapes]): a complex view
  // of a symbolic FFT output has sizes and strides over its symbols.
  r.def("view_as_real(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(is_complex(self.dtype())) << "view_as_real is only supported for complex tensors, got "
                                          << self.dtype();
    return metas(core::over_geometry({&self}, [&]<typename Int>() {
      using G = core::Geometry<Int>;
      std::vector<Int> sizes = sizes_over<Int>(self), strides;
      for (const Int& s : G::strides(self)) strides.push_back(Int(2) * s);
      sizes.push_back(Int(2));
      strides.push_back(Int(1));
      return G::meta(std::move(sizes), std::move(strides), Int(2) * G::offset(self), to_real_value_type(self.dtype()),
                     self.device());
    }));
  });
  r.def("view_as_complex(Tensor(a) self) -> Tensor(a)").set_view([](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(self.dtype() == kFloat || self.dtype() == kDouble)
        << "view_as_complex is only supported for float and double tensors (Ember has no complex32), but got a "
           "tensor of scalar type: "
        << scalar_type_name(self.dtype());
    EMBER_CHECK(self.dim() != 0) << "Input tensor must have one or more dimensions";
    return metas(core::over_geometry({&self}, [&]<typename Int>() {
      using G = core::Geometry<Int>;
      EMBER_CHECK(G::size(self, self.dim() - 1) == Int(2)) << "Tensor must have a last dimension of size 2";
      EMBER_CHECK(G::stride(self, self.dim() - 1) == Int(1)) << "Tensor must have a last dimension with stride 1";
      std::vector<Int> sizes = sizes_over<Int>(self), strides;
      sizes.pop_back();
      for (int64_t d = 0; d + 1 < self.dim(); ++d) {
        EMBER_CHECK(core::rules::remainder(G::stride(self, d), Int(2)) == Int(0))
            << "Tensor must have a stride divisible by 2 for all but last dimension";
        strides.push_back(core::rules::divide(G::stride(self, d), Int(2)));
      }
      EMBER_CHECK(core::rules::remainder(G::offset(self), Int(2)) == Int(0)) << "Tensor must have a storage_offset divisible by 2";
      return G::meta(std::move(sizes), std::move(strides), core::rules::divide(G::offset(self), Int(2)),
                     *to_complex_type(self.dtype()), self.device());
    }));
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
        // Over SymInt as PyTorch's meta_fft_r2c: the onesided length n // 2 + 1 over the symbols.
        const int64_t last = dims.back();
        return metas(core::over_geometry({&self}, [&]<typename Int>() {
          std::vector<Int> sizes = sizes_over<Int>(self);
          if (a[3].to_bool()) sizes[static_cast<size_t>(last)] = core::rules::divide(sizes[static_cast<size_t>(last)], Int(2)) + Int(1);
          return fft_out_meta<Int>(self, std::move(sizes), *to_complex_type(self.dtype()), dims, last);
        }));
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
        // Over SymInt as PyTorch's meta_fft_c2r: last_dim_size may be symbolic (2 * (m - 1)
        // of a symbolic onesided length m); the check that the input holds n // 2 + 1
        // entries compares SymInts (a guard where the ranges do not decide it).
        const int64_t last = dims.back();
        auto meta = [&]<typename Int>() {
          Int n;
          if constexpr (std::is_same_v<Int, core::SymInt>) {
            n = core::sym_int_arg(a[3]);
          } else {
            n = a[3].to_int();
          }
          const Int have = core::Geometry<Int>::size(self, last);
          const Int half = core::rules::divide(n, Int(2)) + Int(1);
          EMBER_CHECK(n >= Int(1)) << "_fft_c2r: Invalid number of data points (" << core::rules::size_text(n)
                                   << ") specified";
          EMBER_CHECK(have == half) << "_fft_c2r: a onesided signal of " << core::rules::size_text(n) << " points has "
                                    << core::rules::size_text(half) << " entries along dim " << last << ", got "
                                    << core::rules::size_text(have) << " (input sizes " << self.sizes() << ")";
          std::vector<Int> sizes = sizes_over<Int>(self);
          sizes[static_cast<size_t>(last)] = n;
          return fft_out_meta<Int>(self, std::move(sizes), to_real_value_type(self.dtype()), dims, last);
        };
        return metas(a[3].is_sym_int() ? meta.template operator()<core::SymInt>()
                                       : core::over_geometry({&self}, meta));
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
        return metas(core::over_geometry({&self}, [&]<typename Int>() {
          return fft_out_meta<Int>(self, sizes_over<Int>(self), self.dtype(), dims, std::nullopt);
        }));
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
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, SymInt last_dim_size, Loc loc) {
  return call_tensor(EMBER_OP("aten::_fft_c2r"), {self, dim.vec(), normalization, last_dim_size}, loc);
}
Tensor _fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, Loc loc) {
  return call_tensor(EMBER_OP("aten::_fft_c2c"), {self, dim.vec(), normalization, forward}, loc);
}

}  // namespace ember
