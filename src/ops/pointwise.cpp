// ops/pointwise.cpp — elementwise ops. The scalar function of each comes from
// scalar_ops.def; this file gives their schemas (ATen's overloads), the dtype rules of
// each kind, and the ops with more than a scalar function (where, clamp, masked_fill,
// gelu, div rounding modes).
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/shape.h"
#include "kernels/cpu/loops.h"
#include "kernels/cuda/loops.h"
#include "ember/ops/pointwise.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"
#include "ops/scalar_rows.h"


namespace ember::ops {
namespace {

using kernels::cpu::PointwiseLoop;
using kernels::cpu::pointwise_kernel;

struct Types {
  ScalarType compute;
  ScalarType out;
};

Types types_for(Kind kind, ScalarType common, const char* name) {
  switch (kind) {
    case Kind::FloatPromote: {
      ScalarType f = is_floating_point(common) ? common : kDefaultFloat;
      return {f, f};
    }
    case Kind::FloatOnly:
      if (!is_floating_point(common)) not_implemented(name, common);
      return {common, common};
    case Kind::SameNoBool:
    case Kind::ArithNoBool:
      if (common == kBool) {
        const std::string_view n = name;
        EMBER_CHECK(n != "neg") << "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                   "to invert a mask, use the `~` or `logical_not()` operator instead.";
        EMBER_CHECK(n != "sub") << "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                                   "`^` or `logical_xor()` operator instead.";
        EMBER_CHECK(n != "relu") << "Boolean inputs not supported for relu";
        not_implemented(name, common);
      }
      return {common, common};
    case Kind::Same:
    case Kind::Arith:
      return {common, common};
    case Kind::BoolOut:
    case Kind::Compare:
    case Kind::Logical:
      return {common, kBool};
    case Kind::Integral:
      if (is_floating_point(common)) not_implemented(name, common);
      return {common, common};
  }
  EMBER_INTERNAL_ASSERT(false);
}

/// The CUDA kernel of a scalar_ops.def row for one call (Note [cuda]).
kernels::cuda::PointwiseKernel cuda_row(const char* name, const char* expr, const std::vector<Tensor>& inputs,
                                        ScalarType compute, const Tensor& out) {
  kernels::cuda::PointwiseKernel k{.name = name, .expr = expr, .helpers = {}, .inputs = {}, .compute = compute,
                                   .out = out.dtype()};
  for (const Tensor& t : inputs) k.inputs.push_back(t.dtype());
  return k;
}

/// Runs functor F over (out, inputs) with inputs cast to `compute`. The kind decides,
/// at compile time, which dtypes F is instantiated for and whether the result is bool.
template <Kind K, typename F, int N>
void run(const F& f, Tensor& out, std::vector<Tensor> inputs, ScalarType compute) {
  constexpr bool kBoolOut = K == Kind::BoolOut || K == Kind::Compare || K == Kind::Logical;
  constexpr bool kFloats = K != Kind::Integral;
  constexpr bool kInts = K != Kind::FloatPromote && K != Kind::FloatOnly;
  [[maybe_unused]] constexpr bool kBools = kInts && K != Kind::SameNoBool && K != Kind::ArithNoBool;
  for (auto& t : inputs) t = cast(t, compute);
  PointwiseLoop loop(out, inputs);
  auto body = [&]<typename in_t>() {
    using math_t = opmath_t<in_t>;
    auto scalar_fn = [&](auto... xs) { return f(static_cast<math_t>(xs)...); };
    if constexpr (kBoolOut) {
      pointwise_kernel<bool, in_t, N>(loop, scalar_fn, nullptr);
    } else {
      pointwise_kernel<in_t, in_t, N>(loop, scalar_fn, f);
    }
  };
  if constexpr (kFloats) {
    switch (compute) {
      case kFloat: return body.template operator()<float>();
      case kDouble: return body.template operator()<double>();
      case kHalf: return body.template operator()<Half>();
      case kBFloat16: return body.template operator()<BFloat16>();
      default: break;
    }
  }
  if constexpr (kInts) {
    switch (compute) {
      case kBool:
        if constexpr (kBools) return body.template operator()<bool>();
        break;
      case kUInt8: return body.template operator()<uint8_t>();
      case kInt8: return body.template operator()<int8_t>();
      case kInt16: return body.template operator()<int16_t>();
      case kInt32: return body.template operator()<int32_t>();
      case kInt64: return body.template operator()<int64_t>();
      default: break;
    }
  }
  EMBER_INTERNAL_ASSERT(false) << "pointwise kernel for dtype " << compute;
}

// --- unary ---------------------------------------------------------------------------

template <typename F>
void def_unary(Registry& r, const char* name) {
  constexpr Kind kind = F::kind;
  const std::string n = name;
  r.def(n + "(Tensor self) -> Tensor")
      .set_meta([kind, name](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        Types t = types_for(kind, self.dtype(), name);
        return metas(pointwise_meta({&self}, t.out));
      })
      .set_cpu([name](const Stack& a, std::vector<Tensor>& out) {
        Types t = types_for(kind, a[0].to_tensor().dtype(), name);
        run<kind, F, 1>(F{}, out[0], {a[0].to_tensor()}, t.compute);
      })
      .set_cuda([name](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        Types t = types_for(kind, self.dtype(), name);
        kernels::cuda::pointwise(cuda_row(name, F::source, {self}, t.compute, out[0]), out[0], {self});
      });
  if (n != "isnan" && n != "isinf") r.def(n + "_(Tensor(a!) self) -> Tensor(a!)").set_inplace_of("aten::" + n);
}

// --- binary --------------------------------------------------------------------------

/// The right-hand operand as a tensor: a Scalar becomes a 0-dim tensor.
Tensor operand(const IValue& v, ScalarType dtype, Device device) {
  if (v.is_tensor()) return v.to_tensor();
  return scalar_tensor(v.to_scalar(), dtype, device);
}

void check_int_divisor(const Tensor& b, ScalarType compute, const char* name) {
  if (is_floating_point(compute)) return;
  Tensor bc = cast(b, compute);
  bool zero = false;
  for (int64_t v : bc.to_vector<int64_t>()) zero = zero || v == 0;
  EMBER_CHECK(!zero) << "ZeroDivisionError";
}

/// PyTorch's operand checks that depend on more than the common dtype.
void check_operands(std::string_view name, const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const bool other_bool = a[1].is_tensor() ? a[1].to_tensor().dtype() == kBool : a[1].to_scalar().is_bool();
  // Two bools fail in types_for ("with two bool tensors"); one bool fails here.
  if (name == "sub" && (self.dtype() == kBool) != other_bool) {
    EMBER_FAIL() << "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                    "a mask, use the `~` or `logical_not()` operator instead.";
  }
  if (name == "pow" && !a[1].is_tensor() && is_integral(self.dtype(), true)) {
    const Scalar e = a[1].to_scalar();
    EMBER_CHECK(!(e.is_integral() && e.to_long() < 0)) << "Integers to negative integer powers are not allowed.";
  }
}

/// What both kernels of a binary op compute before running: the dtypes, the right-hand
/// operand as a tensor (a Scalar becomes a 0-dim tensor on `scalar_device`) and alpha.
struct BinaryCall {
  Types types;
  Tensor other;
  double p0 = 1;
};
BinaryCall binary_call(const Stack& a, Kind kind, const char* name, bool has_alpha, bool divides, Device scalar_device) {
  BinaryCall c{types_for(kind, result_type({&a[0], &a[1]}), name), Tensor(), 1};
  c.other = operand(a[1], c.types.compute, scalar_device);
  if (has_alpha) {
    const Scalar alpha = a[2].to_scalar();
    EMBER_CHECK(!(is_integral(c.types.compute, true) && alpha.is_floating_point()))
        << "For integral input tensors, argument alpha must not be a floating point number.";
    c.p0 = alpha.to_double();
  }
  if (divides) check_int_divisor(c.other, c.types.compute, name);
  return c;
}

/// Registers `name.<overload>` computing F(self, other) (alpha, if the schema has one,
/// becomes F's p0).
template <typename F>
void def_binary(Registry& r, const std::string& schema, const char* name, bool inplace_too = true) {
  constexpr Kind kind = F::kind;
  OpDef& op = r.def(schema);
  const bool has_alpha = op.schema.index_of("alpha") >= 0;
  const bool divides = std::string_view(name) == "remainder" || std::string_view(name) == "fmod" ||
                       std::string_view(name).starts_with("div_");
  op.set_meta([kind, name](const Stack& a) {
      const Tensor& self = a[0].to_tensor();
      ScalarType common = result_type({&a[0], &a[1]});
      check_operands(name, a);
      Types t = types_for(kind, common, name);
      if (a[1].is_tensor()) {
        const Tensor& other = a[1].to_tensor();
        return metas(pointwise_meta({&self, &other}, t.out));
      }
      return metas(pointwise_meta({&self}, t.out));
    })
      .set_cpu([name, has_alpha, divides](const Stack& a, std::vector<Tensor>& out) {
        const BinaryCall c = binary_call(a, kind, name, has_alpha, divides, a[0].to_tensor().device());
        F f;
        if (has_alpha) f.p0 = c.p0;
        run<kind, F, 2>(f, out[0], {a[0].to_tensor(), c.other}, c.types.compute);
      })
      .set_cuda([name, has_alpha, divides](const Stack& a, std::vector<Tensor>& out) {
        // A Scalar operand stays a 0-dim CPU tensor; the launcher copies it to the device.
        const BinaryCall c = binary_call(a, kind, name, has_alpha, divides, kCPU);
        const Tensor& self = a[0].to_tensor();
        kernels::cuda::pointwise(cuda_row(name, F::source, {self, c.other}, c.types.compute, out[0]), out[0],
                                 {self, c.other}, has_alpha ? c.p0 : F{}.p0);
      });
  if (inplace_too) {
    // add.Tensor -> add_.Tensor
    std::string inplace = schema;
    const size_t dot = inplace.find_first_of(".(");
    inplace.insert(dot, "_");
    inplace.replace(inplace.find("Tensor self"), 11, "Tensor(a!) self");
    inplace.replace(inplace.rfind("-> Tensor"), 9, "-> Tensor(a!)");
    const std::string functional = "aten::" + schema.substr(0, schema.find('('));
    r.def(inplace).set_inplace_of(functional);
  }
}

template <typename F>
void def_binary_ts(Registry& r, const char* name, const char* extra = "") {
  const std::string n = name;
  def_binary<F>(r, n + ".Tensor(Tensor self, Tensor other" + extra + ") -> Tensor", name);
  def_binary<F>(r, n + ".Scalar(Tensor self, Scalar other" + (*extra ? std::string(", Scalar alpha=1") : "") + ") -> Tensor",
                name);
}

// --- ops with more than a scalar function ----------------------------------------------

void check_condition(const Tensor& cond) {
  EMBER_CHECK(cond.dtype() == kBool || cond.dtype() == kUInt8)
      << "where expected condition to be a boolean tensor, but got a tensor with dtype "
      << scalar_type_name(cond.dtype());
}

/// where on a CUDA device: one kernel reading the condition and both values in their own
/// dtypes (0-dim CPU values are copied to the device by the launcher).
void where_cuda(const Tensor& cond, const Tensor& self, const Tensor& other, const Tensor& out) {
  check_condition(cond);
  kernels::cuda::pointwise(cuda_row("where", "where(a != T(0), b, c)", {cond, self, other}, out.dtype(), out), out,
                           {cond, self, other});
}

/// `m ? x : y` without a branch (a ternary GCC compiles to one): the bits of x where the
/// mask of m is all ones, else those of y.
template <typename T>
T select(bool m, const T& x, const T& y) {
  if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                                 std::conditional_t<sizeof(T) == 2, uint16_t,
                                                    std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    const U mask = static_cast<U>(-static_cast<U>(m));
    return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(x) & mask) | (std::bit_cast<U>(y) & ~mask)));
  } else {
    return m ? x : y;
  }
}

/// o[i] = c[i] ? a[i * kAStep] : b[i * kBStep] over a dense row (a step of 0: a broadcast
/// scalar), vectorized.
template <typename T, int64_t kAStep, int64_t kBStep>
void select_row(T* __restrict__ o, const uint8_t* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                int64_t n) {
  // (The mask is read as bytes: GCC does not vectorize loads of bool.)
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) o[i] = select(c[i] != 0, a[i * kAStep], b[i * kBStep]);
}

Tensor where_impl(const Tensor& cond, const Tensor& self, const Tensor& other, Tensor& out) {
  check_condition(cond);
  Tensor c = cast(cond, kBool);
  Tensor a = cast(self, out.dtype());
  Tensor b = cast(other, out.dtype());
  PointwiseLoop loop(out, {c, a, b});
  EMBER_DISPATCH_ALL_TYPES_AND_COMPLEX(out.dtype(), "where", [&] {
    loop.for_each_row([&](char** p, const int64_t* s, int64_t n) {
      // Both values are read and one kept, without a branch: a condition like relu's
      // backward mask (`where(out <= 0, 0, grad)`) is random, and a branch on it
      // mispredicted every other element. Dense rows (a value may be a broadcast scalar)
      // take a loop the compiler vectorizes.
      constexpr int64_t kSize = sizeof(scalar_t);
      const auto* c = reinterpret_cast<const bool*>(p[1]);
      auto* o = reinterpret_cast<scalar_t*>(p[0]);
      const auto* a = reinterpret_cast<const scalar_t*>(p[2]);
      const auto* b = reinterpret_cast<const scalar_t*>(p[3]);
      const auto dense = [&](auto a_step, auto b_step) {
        select_row<scalar_t, decltype(a_step)::value, decltype(b_step)::value>(o, reinterpret_cast<const uint8_t*>(c), a,
                                                                                b, n);
      };
      const bool a_scalar = s[2] == 0, b_scalar = s[3] == 0;
      if (s[0] == kSize && s[1] == 1 && (a_scalar || s[2] == kSize) && (b_scalar || s[3] == kSize)) {
        using Zero = std::integral_constant<int64_t, 0>;
        using One = std::integral_constant<int64_t, 1>;
        if (a_scalar && b_scalar) return dense(Zero{}, Zero{});
        if (a_scalar) return dense(Zero{}, One{});
        if (b_scalar) return dense(One{}, Zero{});
        return dense(One{}, One{});
      }
      for (int64_t i = 0; i < n; ++i) {
        const bool m = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
        const scalar_t x = *reinterpret_cast<const scalar_t*>(p[2] + i * s[2]);
        const scalar_t y = *reinterpret_cast<const scalar_t*>(p[3] + i * s[3]);
        *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = select(m, x, y);
      }
    });
  });
  return out;
}

void register_where(Registry& r) {
  auto meta = [](const Stack& a) {
    const Tensor& cond = a[0].to_tensor();
    ScalarType dt = result_type({&a[1], &a[2]});
    std::vector<const Tensor*> ins{&cond};
    Tensor s1 = a[1].is_tensor() ? a[1].to_tensor() : Tensor();
    Tensor s2 = a[2].is_tensor() ? a[2].to_tensor() : Tensor();
    if (s1.defined()) ins.push_back(&s1);
    if (s2.defined()) ins.push_back(&s2);
    return metas(pointwise_meta(ins, dt));
  };
  auto kernel = [](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& cond = a[0].to_tensor();
    Tensor x = operand(a[1], out[0].dtype(), cond.device());
    Tensor y = operand(a[2], out[0].dtype(), cond.device());
    where_impl(cond, x, y, out[0]);
  };
  auto cuda = [](const Stack& a, std::vector<Tensor>& out) {
    where_cuda(a[0].to_tensor(), operand(a[1], out[0].dtype(), kCPU), operand(a[2], out[0].dtype(), kCPU), out[0]);
  };
  r.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor").set_meta(meta).set_cpu(kernel).set_cuda(cuda);
  r.def("where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor")
      .set_meta(meta)
      .set_cpu(kernel)
      .set_cuda(cuda);
  r.def("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor")
      .set_meta(meta)
      .set_cpu(kernel)
      .set_cuda(cuda);
  r.def("where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor").set_meta(meta).set_cpu(kernel).set_cuda(cuda);
}

void register_masked_fill(Registry& r) {
  auto meta = [](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    const Tensor& mask = a[1].to_tensor();
    EMBER_CHECK(mask.dtype() == kBool) << "masked_fill_ only supports boolean masks, but got mask with dtype "
                                       << scalar_type_name(mask.dtype());
    if (a[2].is_tensor()) {
      EMBER_CHECK(a[2].to_tensor().dim() == 0)
          << "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
          << a[2].to_tensor().dim() << " dimension(s).";
    }
    // The functional op broadcasts self with the mask (ATen's expand_outplace); the
    // in-place op rejects a result larger than self when it copies back.
    return metas(pointwise_meta({&self, &mask}, self.dtype()));
  };
  auto kernel = [](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& self = a[0].to_tensor();
    Tensor value = a[2].is_tensor() ? cast(a[2].to_tensor(), self.dtype()) : scalar_tensor(a[2].to_scalar(), self.dtype(), self.device());
    where_impl(a[1].to_tensor(), value, self, out[0]);
  };
  auto cuda = [](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& self = a[0].to_tensor();
    where_cuda(a[1].to_tensor(), a[2].is_tensor() ? a[2].to_tensor() : scalar_tensor(a[2].to_scalar(), self.dtype(), kCPU),
               self, out[0]);
  };
  r.def("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor").set_meta(meta).set_cpu(kernel).set_cuda(cuda);
  r.def("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor").set_meta(meta).set_cpu(kernel).set_cuda(cuda);
  r.def("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)")
      .set_inplace_of("aten::masked_fill.Scalar");
  r.def("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)")
      .set_inplace_of("aten::masked_fill.Tensor");
}

/// clamp(x, lo, hi) = minimum(maximum(x, lo), hi): NaN in x or in a bound propagates,
/// and lo > hi gives hi, as in ATen.
struct ClampOp {
  template <typename T>
  auto operator()(T x, T lo, T hi) const {
    using namespace vec;
    T t = where(x != x, x, where(x > lo, x, lo));
    return where(t != t, t, where(t < hi, t, hi));
  }
};

/// clamp(x, min, max); bounds may be None (one of them at least must be given).
void register_clamp(Registry& r) {
  auto meta = [](const Stack& a) {
    const Tensor& self = a[0].to_tensor();
    EMBER_CHECK(!a[1].is_none() || !a[2].is_none()) << "At least one of 'min' or 'max' must not be None";
    ScalarType dt = result_type({&a[0], &a[1], &a[2]});
    std::vector<const Tensor*> ins{&self};
    for (int i = 1; i <= 2; ++i)
      if (a[i].is_tensor()) ins.push_back(&a[i].to_tensor());
    return metas(pointwise_meta(ins, dt));
  };
  // A missing bound is the dtype's extreme, so one three-input kernel covers all forms.
  auto bounds = [](const Stack& a, ScalarType dt, Device device) {
    EMBER_CHECK(dt != kBool) << "\"clamp\" not implemented for 'Bool'";
    auto bound = [&](const IValue& v, bool lower) -> Tensor {
      if (!v.is_none()) return v.is_tensor() ? cast(v.to_tensor(), dt) : operand(v, dt, device);
      return EMBER_DISPATCH_ALL_TYPES(dt, "clamp", [&] {
        using lim = std::numeric_limits<opmath_t<scalar_t>>;
        const double extreme = lim::has_infinity ? (lower ? -lim::infinity() : lim::infinity())
                                                 : static_cast<double>(lower ? lim::lowest() : lim::max());
        return lim::has_infinity || sizeof(scalar_t) < 8
                   ? scalar_tensor(Scalar(extreme), dt, device)
                   : scalar_tensor(Scalar(lower ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()),
                                   dt, device);
      });
    };
    return std::pair{bound(a[1], true), bound(a[2], false)};
  };
  auto kernel = [bounds](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& x = a[0].to_tensor();
    const auto [lo, hi] = bounds(a, out[0].dtype(), x.device());
    run<Kind::Arith, ClampOp, 3>(ClampOp{}, out[0], {x, lo, hi}, out[0].dtype());
  };
  // On CUDA, clamp is minimum(maximum(x, lo), hi) of the scalar_ops.def rows, which is
  // ClampOp's formula (NaN in x or a bound propagates; lo > hi gives hi).
  auto cuda = [bounds](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& x = a[0].to_tensor();
    const auto [lo, hi] = bounds(a, out[0].dtype(), kCPU);
    kernels::cuda::PointwiseKernel k = cuda_row("clamp", "row_minimum(row_maximum(a, b, p0), c, p0)", {x, lo, hi},
                                                out[0].dtype(), out[0]);
    k.helpers = {kernels::cuda::render_row_function("maximum", 2, vec::fns::maximum_op::source),
                 kernels::cuda::render_row_function("minimum", 2, vec::fns::minimum_op::source)};
    kernels::cuda::pointwise(k, out[0], {x, lo, hi});
  };
  r.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor").set_meta(meta).set_cpu(kernel).set_cuda(cuda);
  r.def("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor")
      .set_meta(meta)
      .set_cpu(kernel)
      .set_cuda(cuda);
  r.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)").set_inplace_of("aten::clamp");
  r.def("clamp_min(Tensor self, Scalar min) -> Tensor").set_decomposition([](const Stack& a) {
    return call_op("aten::clamp", {a[0], a[1], None{}});
  });
  r.def("clamp_max(Tensor self, Scalar max) -> Tensor").set_decomposition([](const Stack& a) {
    return call_op("aten::clamp", {a[0], None{}, a[1]});
  });
}


void register_gelu(Registry& r) {
  using vec::fns::GeluErf;
  using vec::fns::GeluTanh;
  r.def("gelu(Tensor self, *, str approximate=\"none\") -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const std::string& approx = a[1].to_string_ref();
        EMBER_CHECK_VALUE(approx == "none" || approx == "tanh")
            << "approximate argument must be either none or tanh, got '" << approx << "'";
        if (!is_floating_point(self.dtype())) not_implemented("GeluKernelImpl", self.dtype());
        return metas(pointwise_meta({&self}, self.dtype()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        if (a[1].to_string_ref() == "tanh") run<Kind::FloatOnly, GeluTanh, 1>(GeluTanh{}, out[0], {self}, self.dtype());
        else run<Kind::FloatOnly, GeluErf, 1>(GeluErf{}, out[0], {self}, self.dtype());
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const bool tanh = a[1].to_string_ref() == "tanh";
        kernels::cuda::pointwise(cuda_row(tanh ? "gelu_tanh" : "gelu", tanh ? GeluTanh::source : GeluErf::source,
                                          {self}, self.dtype(), out[0]),
                                 out[0], {self});
      });
}

void register_div(Registry& r) {
  def_binary_ts<vec::fns::div_op>(r, "div");
  // Rounding modes: None (true division), "trunc", "floor".
  for (const char* overload : {"Tensor_mode", "Scalar_mode"}) {
    const bool is_tensor = std::string_view(overload) == "Tensor_mode";
    const std::string schema = std::string("div.") + overload + "(Tensor self, " + (is_tensor ? "Tensor" : "Scalar") +
                               " other, *, str? rounding_mode) -> Tensor";
    r.def(schema).set_decomposition([](const Stack& a) {
      const std::optional<std::string> mode = a[2].to_optional_string();
      const bool tensor = a[1].is_tensor();
      if (!mode) return call_op(tensor ? "aten::div.Tensor" : "aten::div.Scalar", {a[0], a[1]});
      EMBER_CHECK_VALUE(*mode == "trunc" || *mode == "floor")
          << "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" << *mode << "'";
      // PyTorch's kernels of the rounding modes have no complex dispatch (Note [complex dtypes]).
      const ScalarType common = result_type({&a[0], &a[1]});
      if (is_complex(common)) not_implemented(*mode == "trunc" ? "div_trunc_cpu" : "div_floor_cpu", common);
      // _div_trunc/_div_floor take tensors; a 0-dim tensor of the promoted dtype
      // promotes exactly as the Scalar would.
      IValue other = tensor ? a[1] : IValue(operand(a[1], result_type({&a[0], &a[1]}), a[0].to_tensor().device()));
      return call_op(*mode == "trunc" ? "aten::_div_trunc" : "aten::_div_floor", {a[0], other});
    });
  }
  def_binary<vec::fns::div_trunc_op>(r, "_div_trunc(Tensor self, Tensor other) -> Tensor", "div_trunc", false);
  def_binary<vec::fns::div_floor_op>(r, "_div_floor(Tensor self, Tensor other) -> Tensor", "div_floor", false);
  r.def("floor_divide(Tensor self, Tensor other) -> Tensor").set_decomposition([](const Stack& a) {
    return call_op("aten::_div_floor", {a[0], a[1]});
  });
}

}  // namespace

void register_pointwise_ops(Registry& r) {
  using namespace vec::fns;
  // Every unary row of scalar_ops.def becomes `name(Tensor self)` and `name_(…)`.
#define EMBER_UNARY(name, kind, expr) def_unary<vec::fns::name##_op>(r, #name);
#define EMBER_BINARY(name, kind, expr)
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY

  def_binary_ts<vec::fns::add_op>(r, "add", ", *, Scalar alpha=1");
  def_binary_ts<vec::fns::sub_op>(r, "sub", ", *, Scalar alpha=1");
  def_binary_ts<vec::fns::mul_op>(r, "mul");
  register_div(r);
  def_binary_ts<vec::fns::remainder_op>(r, "remainder");
  def_binary_ts<vec::fns::fmod_op>(r, "fmod");
  def_binary<vec::fns::pow_op>(r, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", "pow", false);
  def_binary<vec::fns::pow_op>(r, "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", "pow", false);
  r.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)").set_inplace_of("aten::pow.Tensor_Tensor");
  r.def("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)").set_inplace_of("aten::pow.Tensor_Scalar");
  def_binary<vec::fns::maximum_op>(r, "maximum(Tensor self, Tensor other) -> Tensor", "maximum", false);
  def_binary<vec::fns::minimum_op>(r, "minimum(Tensor self, Tensor other) -> Tensor", "minimum", false);
  def_binary<vec::fns::atan2_op>(r, "atan2(Tensor self, Tensor other) -> Tensor", "atan2");
  def_binary_ts<vec::fns::eq_op>(r, "eq");
  def_binary_ts<vec::fns::ne_op>(r, "ne");
  def_binary_ts<vec::fns::lt_op>(r, "lt");
  def_binary_ts<vec::fns::le_op>(r, "le");
  def_binary_ts<vec::fns::gt_op>(r, "gt");
  def_binary_ts<vec::fns::ge_op>(r, "ge");
  def_binary<vec::fns::logical_and_op>(r, "logical_and(Tensor self, Tensor other) -> Tensor", "logical_and");
  def_binary<vec::fns::logical_or_op>(r, "logical_or(Tensor self, Tensor other) -> Tensor", "logical_or");
  def_binary<vec::fns::logical_xor_op>(r, "logical_xor(Tensor self, Tensor other) -> Tensor", "logical_xor");
  def_binary_ts<vec::fns::bitwise_and_op>(r, "bitwise_and");
  def_binary_ts<vec::fns::bitwise_or_op>(r, "bitwise_or");
  def_binary_ts<vec::fns::bitwise_xor_op>(r, "bitwise_xor");

  register_where(r);
  register_masked_fill(r);
  register_clamp(r);
  register_gelu(r);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_inplace;
using ops::call_tensor;

#define EMBER_UNARY(name, kind, expr)                                                   \
  Tensor name(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::" #name), {self}, loc); }
#define EMBER_BINARY(name, kind, expr)
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY

#define EMBER_UNARY_INPLACE(name)                                                     \
  Tensor& name##_(Tensor& self, Loc loc) { return call_inplace(EMBER_OP("aten::" #name "_"), self, {self}, loc); }
EMBER_UNARY_INPLACE(abs)
EMBER_UNARY_INPLACE(neg)
EMBER_UNARY_INPLACE(exp)
EMBER_UNARY_INPLACE(expm1)
EMBER_UNARY_INPLACE(log)
EMBER_UNARY_INPLACE(log1p)
EMBER_UNARY_INPLACE(log2)
EMBER_UNARY_INPLACE(sqrt)
EMBER_UNARY_INPLACE(rsqrt)
EMBER_UNARY_INPLACE(reciprocal)
EMBER_UNARY_INPLACE(sin)
EMBER_UNARY_INPLACE(cos)
EMBER_UNARY_INPLACE(tanh)
EMBER_UNARY_INPLACE(sigmoid)
EMBER_UNARY_INPLACE(relu)
EMBER_UNARY_INPLACE(silu)
EMBER_UNARY_INPLACE(erf)
EMBER_UNARY_INPLACE(sign)
EMBER_UNARY_INPLACE(floor)
EMBER_UNARY_INPLACE(ceil)
EMBER_UNARY_INPLACE(round)
EMBER_UNARY_INPLACE(trunc)
EMBER_UNARY_INPLACE(logical_not)
EMBER_UNARY_INPLACE(bitwise_not)
EMBER_UNARY_INPLACE(acos)
EMBER_UNARY_INPLACE(asin)
EMBER_UNARY_INPLACE(atan)
EMBER_UNARY_INPLACE(acosh)
EMBER_UNARY_INPLACE(asinh)
EMBER_UNARY_INPLACE(atanh)
EMBER_UNARY_INPLACE(sinh)
EMBER_UNARY_INPLACE(cosh)
EMBER_UNARY_INPLACE(tan)
EMBER_UNARY_INPLACE(log10)
#undef EMBER_UNARY_INPLACE

Tensor gelu(const Tensor& self, const std::string& approximate, Loc loc) {
  return call_tensor(EMBER_OP("aten::gelu"), {self, approximate}, loc);
}

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha, Loc loc) {
  return call_tensor(EMBER_OP("aten::add.Tensor"), {self, other, alpha}, loc);
}
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha, Loc loc) {
  return call_tensor(EMBER_OP("aten::add.Scalar"), {self, other, alpha}, loc);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha, Loc loc) {
  return call_tensor(EMBER_OP("aten::sub.Tensor"), {self, other, alpha}, loc);
}
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha, Loc loc) {
  return call_tensor(EMBER_OP("aten::sub.Scalar"), {self, other, alpha}, loc);
}
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode, Loc loc) {
  if (!rounding_mode) return call_tensor(EMBER_OP("aten::div.Tensor"), {self, other}, loc);
  return call_tensor(EMBER_OP("aten::div.Tensor_mode"), {self, other, *rounding_mode}, loc);
}
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string> rounding_mode, Loc loc) {
  if (!rounding_mode) return call_tensor(EMBER_OP("aten::div.Scalar"), {self, other}, loc);
  return call_tensor(EMBER_OP("aten::div.Scalar_mode"), {self, other, *rounding_mode}, loc);
}
Tensor pow(const Tensor& self, const Tensor& exponent, Loc loc) {
  return call_tensor(EMBER_OP("aten::pow.Tensor_Tensor"), {self, exponent}, loc);
}
Tensor pow(const Tensor& self, const Scalar& exponent, Loc loc) {
  return call_tensor(EMBER_OP("aten::pow.Tensor_Scalar"), {self, exponent}, loc);
}

#define EMBER_BINARY_TS(name)                                                              \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc) {                         \
    return call_tensor(EMBER_OP("aten::" #name ".Tensor"), {self, other}, loc);           \
  }                                                                                        \
  Tensor name(const Tensor& self, const Scalar& other, Loc loc) {                         \
    return call_tensor(EMBER_OP("aten::" #name ".Scalar"), {self, other}, loc);           \
  }
EMBER_BINARY_TS(mul)
EMBER_BINARY_TS(remainder)
EMBER_BINARY_TS(fmod)
EMBER_BINARY_TS(eq)
EMBER_BINARY_TS(ne)
EMBER_BINARY_TS(lt)
EMBER_BINARY_TS(le)
EMBER_BINARY_TS(gt)
EMBER_BINARY_TS(ge)
EMBER_BINARY_TS(bitwise_and)
EMBER_BINARY_TS(bitwise_or)
EMBER_BINARY_TS(bitwise_xor)
#undef EMBER_BINARY_TS

#define EMBER_BINARY_T(name)                                                               \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc) {                         \
    return call_tensor(EMBER_OP("aten::" #name), {self, other}, loc);                     \
  }
EMBER_BINARY_T(maximum)
EMBER_BINARY_T(minimum)
EMBER_BINARY_T(atan2)
EMBER_BINARY_T(logical_and)
EMBER_BINARY_T(logical_or)
EMBER_BINARY_T(logical_xor)
#undef EMBER_BINARY_T

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other, Loc loc) {
  return call_tensor(EMBER_OP("aten::where.self"), {condition, self, other}, loc);
}
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other, Loc loc) {
  return call_tensor(EMBER_OP("aten::where.ScalarSelf"), {condition, self, other}, loc);
}
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other, Loc loc) {
  return call_tensor(EMBER_OP("aten::where.ScalarOther"), {condition, self, other}, loc);
}
Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) {
  return call_tensor(EMBER_OP("aten::clamp"), {self, min, max}, loc);
}
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max, Loc loc) {
  return call_tensor(EMBER_OP("aten::clamp.Tensor"), {self, min, max}, loc);
}
Tensor clamp_min(const Tensor& self, const Scalar& min, Loc loc) {
  return call_tensor(EMBER_OP("aten::clamp_min"), {self, min}, loc);
}
Tensor clamp_max(const Tensor& self, const Scalar& max, Loc loc) {
  return call_tensor(EMBER_OP("aten::clamp_max"), {self, max}, loc);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, Loc loc) {
  return call_tensor(EMBER_OP("aten::masked_fill.Scalar"), {self, mask, value}, loc);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value, Loc loc) {
  return call_tensor(EMBER_OP("aten::masked_fill.Tensor"), {self, mask, value}, loc);
}
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value, Loc loc) {
  return call_inplace(EMBER_OP("aten::masked_fill_.Scalar"), self, {self, mask, value}, loc);
}

Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha, Loc loc) {
  return call_inplace(EMBER_OP("aten::add_.Tensor"), self, {self, other, alpha}, loc);
}
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha, Loc loc) {
  return call_inplace(EMBER_OP("aten::sub_.Tensor"), self, {self, other, alpha}, loc);
}
Tensor& mul_(Tensor& self, const Tensor& other, Loc loc) {
  return call_inplace(EMBER_OP("aten::mul_.Tensor"), self, {self, other}, loc);
}
Tensor& mul_(Tensor& self, const Scalar& other, Loc loc) {
  return call_inplace(EMBER_OP("aten::mul_.Scalar"), self, {self, other}, loc);
}
Tensor& div_(Tensor& self, const Tensor& other, Loc loc) {
  return call_inplace(EMBER_OP("aten::div_.Tensor"), self, {self, other}, loc);
}
Tensor& div_(Tensor& self, const Scalar& other, Loc loc) {
  return call_inplace(EMBER_OP("aten::div_.Scalar"), self, {self, other}, loc);
}

}  // namespace ember
