// ops/complex_arith.cpp — complex64/complex128 on the CPU for the arithmetic ops: add,
// sub, mul, div (Tensor and Scalar overloads), neg, reciprocal, exp, log, sqrt, eq, ne,
// where, sum and mean, and the conjugates (_conj_physical, conj_physical(_), conj,
// resolve_conj). Each real op's meta function and CPU kernel are wrapped: a call whose
// result type is real runs the real op unchanged, a complex one runs a plain scalar loop
// over std::complex with c10::complex's formulas. They are marked set_complex_on_cpu(): a
// call on CUDA with a complex argument is refused by the backend before any kernel.
// See Note [complex dtypes] (docs/notes/registry.md).
#include <complex>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ember/ops/fft.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/reduce.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

// --- c10::complex's arithmetic ------------------------------------------------------------

/// (a + bi)(c + di) = (ac - bd) + (ad + bc)i, as c10::complex's operator* (no C99 Annex G
/// recovery of infinities: (inf + 0i)(1 + 0i) is inf + nan i, as in PyTorch).
template <typename T>
std::complex<T> c10_mul(std::complex<T> x, std::complex<T> y) {
  const T a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  return {a * c - b * d, a * d + b * c};
}

/// x / y by c10::complex's operator/= (numpy's scaled division, Smith's algorithm): the
/// larger part of the divisor scales the other, so neither c² + d² nor the products
/// overflow or underflow for large or tiny magnitudes; a zero divisor divides each part
/// by zero (a complex inf or nan, as PyTorch gives).
template <typename T>
std::complex<T> c10_div(std::complex<T> x, std::complex<T> y) {
  const T a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  const T abs_c = std::abs(c), abs_d = std::abs(d);
  if (abs_c >= abs_d) {
    if (abs_c == T(0) && abs_d == T(0)) return {a / abs_c, b / abs_d};
    const T rat = d / c;
    const T scl = T(1) / (c + d * rat);
    return {(a + b * rat) * scl, (b - a * rat) * scl};
  }
  const T rat = c / d;
  const T scl = T(1) / (d + c * rat);
  return {(a * rat + b) * scl, (b * rat - a) * scl};
}

// --- loops ------------------------------------------------------------------------------------

/// The T at p (any alignment).
template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Writes v at p (any alignment).
template <typename T>
void store(char* p, const T& v) {
  std::memcpy(p, &v, sizeof v);
}

/// out = f(inputs...) elementwise, the inputs cast to the complex type `compute` and read
/// as std::complex<T> (T of `compute`'s parts); f returns a value of out's C++ type
/// (`compute`'s, or bool for out of dtype bool). A plain scalar loop (correctness first:
/// no SIMD path).
template <int N, typename F>
void complex_loop(const Tensor& out, std::vector<Tensor> inputs, ScalarType compute, const F& f) {
  EMBER_INTERNAL_ASSERT(is_complex(compute)) << "complex_loop over " << compute;
  if (out.numel() == 0) return;
  for (Tensor& t : inputs) t = cast(t, compute);
  kernels::cpu::PointwiseLoop loop(out, inputs);
  EMBER_DISPATCH_COMPLEX_TYPES(compute, "complex_loop", [&] {
    using out_t = decltype([&] {
      if constexpr (N == 1) return f(scalar_t());
      else return f(scalar_t(), scalar_t());
    }());
    EMBER_INTERNAL_ASSERT(out.dtype() == scalar_type_of<out_t>()) << "complex_loop: out of dtype " << out.dtype();
    loop.for_each_row([&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (N == 1) {
          store(p[0] + i * s[0], f(load<scalar_t>(p[1] + i * s[1])));
        } else {
          store(p[0] + i * s[0], f(load<scalar_t>(p[1] + i * s[1]), load<scalar_t>(p[2] + i * s[2])));
        }
      }
    });
  });
}

/// A Scalar operand as a 0-dim tensor of the complex type `dtype` (imaginary part 0).
Tensor complex_operand(const IValue& v, ScalarType dtype, Device device) {
  if (v.is_tensor()) return v.to_tensor();
  return scalar_tensor(v.to_scalar(), dtype, device);
}

// --- binary ops ---------------------------------------------------------------------------

enum class Binary { Add, Sub, Mul, Div, Eq, Ne };

/// PyTorch's sub_check: a bool operand is refused whatever the other's type.
void check_sub(const Stack& a) {
  const bool self_bool = a[0].to_tensor().dtype() == kBool;
  const bool other_bool = a[1].is_tensor() ? a[1].to_tensor().dtype() == kBool : a[1].to_scalar().is_bool();
  EMBER_CHECK(!self_bool && !other_bool)
      << "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
         "use the `~` or `logical_not()` operator instead.";
}

/// Whether self or other is a complex tensor: the result type of a binary op is complex
/// exactly then (a Scalar holds no complex value). Cheaper than result_type, so real
/// calls pay one dtype test each in the meta function and the kernel.
bool complex_operands(const Stack& a) {
  return is_complex(a[0].to_tensor().dtype()) || (a[1].is_tensor() && is_complex(a[1].to_tensor().dtype()));
}

/// `name` (add.Tensor, mul.Scalar, …) takes complex operands: a call with a complex
/// operand computes in the result type (c10's result_type of self and other); any other
/// runs the real op's meta function and kernel unchanged.
void extend_binary(Registry& r, const char* name, Binary kind) {
  OpDef& op = r.edit(name);
  const MetaFn real_meta = op.meta;
  const KernelFn real_cpu = op.cpu;
  const bool has_alpha = op.schema.index_of("alpha") >= 0;
  const bool compare = kind == Binary::Eq || kind == Binary::Ne;
  op.set_meta([real_meta, kind, compare](const Stack& a) {
      if (!complex_operands(a)) return real_meta(a);
      const ScalarType common = result_type({&a[0], &a[1]});
      if (kind == Binary::Sub) check_sub(a);
      const Tensor& self = a[0].to_tensor();
      const ScalarType out = compare ? kBool : common;
      if (a[1].is_tensor()) return metas(pointwise_meta({&self, &a[1].to_tensor()}, out));
      return metas(pointwise_meta({&self}, out));
    })
      .set_cpu([real_cpu, kind, has_alpha](const Stack& a, std::vector<Tensor>& out) {
        if (!complex_operands(a)) return real_cpu(a, out);
        const ScalarType common = result_type({&a[0], &a[1]});
        const Tensor& self = a[0].to_tensor();
        const Tensor other = complex_operand(a[1], common, self.device());
        // add/sub: self + alpha * other with alpha a complex of zero imaginary part, as
        // c10 computes it (sub is add with -alpha), so infinities give PyTorch's NaNs.
        const double alpha = has_alpha ? a[2].to_scalar().to_double() : 1.0;
        switch (kind) {
          case Binary::Add:
          case Binary::Sub: {
            const double s = kind == Binary::Add ? alpha : -alpha;
            return complex_loop<2>(out[0], {self, other}, common, [s](auto x, auto y) {
              using T = typename decltype(x)::value_type;
              return x + c10_mul(decltype(x)(static_cast<T>(s), T(0)), y);
            });
          }
          case Binary::Mul:
            return complex_loop<2>(out[0], {self, other}, common, [](auto x, auto y) { return c10_mul(x, y); });
          case Binary::Div:
            return complex_loop<2>(out[0], {self, other}, common, [](auto x, auto y) { return c10_div(x, y); });
          case Binary::Eq:
            return complex_loop<2>(out[0], {self, other}, common, [](auto x, auto y) { return x == y; });
          case Binary::Ne:
            return complex_loop<2>(out[0], {self, other}, common, [](auto x, auto y) { return x != y; });
        }
      })
      .set_complex_on_cpu();
}

// --- unary ops ----------------------------------------------------------------------------

/// `name` takes a complex tensor, computing f over std::complex into a tensor of its type;
/// a real tensor runs the real op unchanged.
template <typename F>
void extend_unary(Registry& r, const char* name, F f) {
  OpDef& op = r.edit(name);
  const MetaFn real_meta = op.meta;
  const KernelFn real_cpu = op.cpu;
  op.set_meta([real_meta](const Stack& a) {
      const Tensor& self = a[0].to_tensor();
      if (!is_complex(self.dtype())) return real_meta(a);
      return metas(pointwise_meta({&self}, self.dtype()));
    })
      .set_cpu([real_cpu, f](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        if (!is_complex(self.dtype())) return real_cpu(a, out);
        complex_loop<1>(out[0], {self}, self.dtype(), f);
      })
      .set_complex_on_cpu();
}

void extend_unary_ops(Registry& r) {
  extend_unary(r, "aten::neg", [](auto z) { return -z; });
  // c10: static_cast<scalar_t>(1) / z, the scaled division (1/0 is inf + nan i).
  extend_unary(r, "aten::reciprocal", [](auto z) { return c10_div(decltype(z)(1), z); });
  // PyTorch's CPU kernels call std::exp/log/sqrt of std::complex (glibc's cexp, clog, csqrt).
  extend_unary(r, "aten::exp", [](auto z) { return std::exp(z); });
  extend_unary(r, "aten::log", [](auto z) { return std::log(z); });
  extend_unary(r, "aten::sqrt", [](auto z) { return std::sqrt(z); });
}

/// _conj_physical (the kernel), conj_physical(_), conj and resolve_conj: conj of a complex
/// tensor materializes, resolve_conj is the identity, and a real tensor is its own
/// conjugate. See Note [conj materializes].
void register_conj_ops(Registry& r) {
  r.def("_conj_physical(Tensor self) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(pointwise_meta({&self}, self.dtype()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        if (!is_complex(self.dtype())) {
          out[0].copy_(self);  // the conjugate of a real value is itself
          return;
        }
        complex_loop<1>(out[0], {self}, self.dtype(), [](auto z) { return std::conj(z); });
      })
      .set_complex();
  r.def("conj_physical(Tensor self) -> Tensor").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    if (!is_complex(self.dtype())) return {self};
    return call_op("aten::_conj_physical", {self});
  });
  r.def("conj_physical_(Tensor(a!) self) -> Tensor(a!)").set_inplace_of("aten::_conj_physical");
  r.def("conj(Tensor(a) self) -> Tensor(a)").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    if (!is_complex(self.dtype())) return {self};
    return call_op("aten::_conj_physical", {self});  // Note [conj materializes]
  });
  r.def("resolve_conj(Tensor(a) self) -> Tensor(a)").set_decomposition([](const Stack& a) -> Stack {
    return {a[0]};  // Note [conj materializes]: nothing is ever lazily conjugated
  });
}

// --- where, sum, mean -------------------------------------------------------------------------

/// where's four overloads take complex values (the kernel selects elements of any type).
void extend_where(Registry& r) {
  for (const char* name : {"aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther", "aten::where.Scalar"}) {
    OpDef& op = r.edit(name);
    op.set_complex_on_cpu();
  }
}

/// sum and mean whose result is complex (a complex input, or a complex dtype argument):
/// the sum of the input's real view over the same dims, its (real, imaginary) pair dim
/// kept, written into the output's real view; mean divides each part by the count. The
/// real meta function gives the geometry, asked for the parts' real type.
void extend_sum_mean(Registry& r, const char* name, bool mean) {
  OpDef& op = r.edit(name);
  const MetaFn real_meta = op.meta;
  const KernelFn real_cpu = op.cpu;
  const int dtype_arg = static_cast<int>(op.schema.index_of("dtype"));
  const int dim_arg = static_cast<int>(op.schema.index_of("dim"));
  auto out_dtype = [dtype_arg](const Stack& a) {
    const std::optional<ScalarType> dtype = a[static_cast<size_t>(dtype_arg)].to_optional_scalar_type();
    return dtype ? *dtype : a[0].to_tensor().dtype();
  };
  op.set_meta([real_meta, out_dtype, dtype_arg](const Stack& a) {
      const ScalarType out = out_dtype(a);
      if (!is_complex(out)) return real_meta(a);
      Stack real_args = a;
      real_args[static_cast<size_t>(dtype_arg)] = to_real_value_type(out);
      std::vector<TensorMeta> m = real_meta(real_args);
      m[0].dtype = out;
      return m;
    })
      .set_cpu([real_cpu, out_dtype, dim_arg, mean](const Stack& a, std::vector<Tensor>& out) {
        const ScalarType out_t = out_dtype(a);
        if (!is_complex(out_t)) return real_cpu(a, out);
        const Tensor& self = a[0].to_tensor();
        std::vector<bool> mask(static_cast<size_t>(self.dim()) + 1, false);
        const std::optional<std::vector<int64_t>> dims =
            dim_arg >= 0 ? a[static_cast<size_t>(dim_arg)].to_optional_int_list() : std::nullopt;
        if (self.dim() == 0) {
          // nothing to reduce: the (real, imaginary) pair dim alone is kept
        } else if (!dims || dims->empty()) {
          for (int64_t d = 0; d < self.dim(); ++d) mask[static_cast<size_t>(d)] = true;
        } else {
          for (int64_t d : *dims) mask[static_cast<size_t>(core::wrap_dim(d, self.dim()))] = true;
        }
        kernels::cpu::sum_kernel(view_as_real(cast(self, out_t)), mask, view_as_real(out[0]), mean);
      })
      .set_complex_on_cpu();
}

}  // namespace

void register_complex_arith_ops(Registry& r) {
  for (const char* n : {"aten::add.Tensor", "aten::add.Scalar"}) extend_binary(r, n, Binary::Add);
  for (const char* n : {"aten::sub.Tensor", "aten::sub.Scalar"}) extend_binary(r, n, Binary::Sub);
  for (const char* n : {"aten::mul.Tensor", "aten::mul.Scalar"}) extend_binary(r, n, Binary::Mul);
  for (const char* n : {"aten::div.Tensor", "aten::div.Scalar"}) extend_binary(r, n, Binary::Div);
  for (const char* n : {"aten::eq.Tensor", "aten::eq.Scalar"}) extend_binary(r, n, Binary::Eq);
  for (const char* n : {"aten::ne.Tensor", "aten::ne.Scalar"}) extend_binary(r, n, Binary::Ne);
  extend_unary_ops(r);
  register_conj_ops(r);
  extend_where(r);
  extend_sum_mean(r, "aten::sum", false);
  extend_sum_mean(r, "aten::sum.dim_IntList", false);
  extend_sum_mean(r, "aten::mean", true);
  extend_sum_mean(r, "aten::mean.dim", true);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_inplace;
using ops::call_tensor;

Tensor conj(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::conj"), {self}, loc); }
Tensor conj_physical(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::conj_physical"), {self}, loc); }
Tensor& conj_physical_(Tensor& self, Loc loc) {
  return call_inplace(EMBER_OP("aten::conj_physical_"), self, {self}, loc);
}
Tensor resolve_conj(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::resolve_conj"), {self}, loc); }

}  // namespace ember
