// kernels/cpu/vec.h — Vectorized<float> / Vectorized<double>: SIMD values (512-bit with
// AVX-512, else 256-bit) with the same operators and math functions as plain scalars,
// so that one expression from
// ops/scalar_ops.def compiles to both the scalar tail loop and the SIMD main loop (and,
// later, into generated kernels). Math functions come from Sleef (ULP-bounded), except
// float32 exp, log, tanh and erf: inline polynomials (See Note [vectorized math]).
//
// Scalar overloads live in the same namespace, so an expression written as
// `where(x < T(0), T(0), x)` works for T = float, double, int, Vectorized<float>, ….
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <sleef.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ember::vec {

template <typename T> struct Vectorized;

// The widest SIMD registers the build targets: 512 bits with AVX-512, else 256 (AVX2).
// Sleef's functions are named by lane count (expf16 / expf8, expd8 / expd4).
#if defined(__AVX512F__)
#define EMBER_VEC_BYTES 64
#define EMBER_SLEEF_F(name, suffix) Sleef_##name##f16##suffix
#define EMBER_SLEEF_D(name, suffix) Sleef_##name##d8##suffix
#else
#define EMBER_VEC_BYTES 32
#define EMBER_SLEEF_F(name, suffix) Sleef_##name##f8##suffix
#define EMBER_SLEEF_D(name, suffix) Sleef_##name##d4##suffix
#endif

#define EMBER_VEC_BODY(T, N, RAW, MASKRAW)                                                  \
  using value_type = T;                                                                    \
  using raw_type = RAW;                                                                    \
  using mask_raw = MASKRAW;                                                                \
  static constexpr int size() { return N; }                                                \
  RAW v;                                                                                   \
  Vectorized() = default;                                                                  \
  explicit Vectorized(RAW r) : v(r) {}                                                     \
  Vectorized(T s) { v = RAW{} + s; } /* NOLINT: broadcast, as a scalar would convert */    \
  static Vectorized load(const T* p) {                                                     \
    Vectorized r;                                                                          \
    std::memcpy(&r.v, p, sizeof(RAW));                                                     \
    return r;                                                                              \
  }                                                                                        \
  void store(T* p) const { std::memcpy(p, &v, sizeof(RAW)); }                              \
  friend Vectorized operator+(Vectorized a, Vectorized b) { return Vectorized(a.v + b.v); } \
  friend Vectorized operator-(Vectorized a, Vectorized b) { return Vectorized(a.v - b.v); } \
  friend Vectorized operator*(Vectorized a, Vectorized b) { return Vectorized(a.v * b.v); } \
  friend Vectorized operator/(Vectorized a, Vectorized b) { return Vectorized(a.v / b.v); } \
  friend Vectorized operator-(Vectorized a) { return Vectorized(-a.v); }                   \
  /* Comparisons give all-ones / all-zeros lanes, as a mask for where(). */                 \
  friend Mask operator<(Vectorized a, Vectorized b) { return Mask{a.v < b.v}; }            \
  friend Mask operator<=(Vectorized a, Vectorized b) { return Mask{a.v <= b.v}; }          \
  friend Mask operator>(Vectorized a, Vectorized b) { return Mask{a.v > b.v}; }            \
  friend Mask operator>=(Vectorized a, Vectorized b) { return Mask{a.v >= b.v}; }          \
  friend Mask operator==(Vectorized a, Vectorized b) { return Mask{a.v == b.v}; }          \
  friend Mask operator!=(Vectorized a, Vectorized b) { return Mask{a.v != b.v}; }

template <>
struct Vectorized<float> {
  typedef float raw8 __attribute__((vector_size(EMBER_VEC_BYTES)));
  typedef int32_t mask8 __attribute__((vector_size(EMBER_VEC_BYTES)));
  struct Mask {
    mask8 m;
    friend Mask operator&&(Mask a, Mask b) { return Mask{a.m & b.m}; }
    friend Mask operator||(Mask a, Mask b) { return Mask{a.m | b.m}; }
    friend Mask operator!(Mask a) { return Mask{~a.m}; }
  };
  EMBER_VEC_BODY(float, EMBER_VEC_BYTES / 4, raw8, mask8)
};

template <>
struct Vectorized<double> {
  typedef double raw4 __attribute__((vector_size(EMBER_VEC_BYTES)));
  typedef int64_t mask4 __attribute__((vector_size(EMBER_VEC_BYTES)));
  struct Mask {
    mask4 m;
    friend Mask operator&&(Mask a, Mask b) { return Mask{a.m & b.m}; }
    friend Mask operator||(Mask a, Mask b) { return Mask{a.m | b.m}; }
    friend Mask operator!(Mask a) { return Mask{~a.m}; }
  };
  EMBER_VEC_BODY(double, EMBER_VEC_BYTES / 8, raw4, mask4)
};
#undef EMBER_VEC_BODY

using VecF = Vectorized<float>;
using VecD = Vectorized<double>;

template <typename T> struct is_vectorized : std::false_type {};
template <typename T> struct is_vectorized<Vectorized<T>> : std::true_type {};

// --- where / select ----------------------------------------------------------------
template <typename T>
inline T where(bool c, T a, T b) { return c ? a : b; }
inline VecF where(VecF::Mask c, VecF a, VecF b) { return VecF(c.m ? a.v : b.v); }
inline VecD where(VecD::Mask c, VecD a, VecD b) { return VecD(c.m ? a.v : b.v); }

// --- math: scalar versions ------------------------------------------------------------
// std:: functions for float and double; integers go through double where a math
// function is asked of them (ops promote integers to float before that happens).
#define EMBER_SCALAR_MATH(name, expr)                      \
  inline float name(float x) { return expr; }              \
  inline double name(double x) { return expr; }
EMBER_SCALAR_MATH(exp, std::exp(x))
EMBER_SCALAR_MATH(expm1, std::expm1(x))
EMBER_SCALAR_MATH(log, std::log(x))
EMBER_SCALAR_MATH(log1p, std::log1p(x))
EMBER_SCALAR_MATH(log2, std::log2(x))
EMBER_SCALAR_MATH(log10, std::log10(x))
EMBER_SCALAR_MATH(sqrt, std::sqrt(x))
EMBER_SCALAR_MATH(sin, std::sin(x))
EMBER_SCALAR_MATH(cos, std::cos(x))
EMBER_SCALAR_MATH(tan, std::tan(x))
EMBER_SCALAR_MATH(tanh, std::tanh(x))
EMBER_SCALAR_MATH(sinh, std::sinh(x))
EMBER_SCALAR_MATH(cosh, std::cosh(x))
EMBER_SCALAR_MATH(asin, std::asin(x))
EMBER_SCALAR_MATH(acos, std::acos(x))
EMBER_SCALAR_MATH(atan, std::atan(x))
EMBER_SCALAR_MATH(asinh, std::asinh(x))
EMBER_SCALAR_MATH(acosh, std::acosh(x))
EMBER_SCALAR_MATH(atanh, std::atanh(x))
EMBER_SCALAR_MATH(erf, std::erf(x))
EMBER_SCALAR_MATH(floor, std::floor(x))
EMBER_SCALAR_MATH(ceil, std::ceil(x))
EMBER_SCALAR_MATH(trunc, std::trunc(x))
EMBER_SCALAR_MATH(round_even, std::nearbyint(x))
EMBER_SCALAR_MATH(fabs, std::fabs(x))
#undef EMBER_SCALAR_MATH
inline float pow(float a, float b) { return std::pow(a, b); }
inline double pow(double a, double b) { return std::pow(a, b); }
inline float atan2(float a, float b) { return std::atan2(a, b); }
inline double atan2(double a, double b) { return std::atan2(a, b); }
inline float fmod(float a, float b) { return std::fmod(a, b); }
inline double fmod(double a, double b) { return std::fmod(a, b); }
// Rounding is the identity on integers.
#define EMBER_INT_IDENTITY(name) \
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0> inline T name(T x) { return x; }
EMBER_INT_IDENTITY(floor)
EMBER_INT_IDENTITY(ceil)
EMBER_INT_IDENTITY(trunc)
EMBER_INT_IDENTITY(round_even)
#undef EMBER_INT_IDENTITY
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline bool isnan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline bool isinf(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
  else return false;
}

// --- math: vector versions (Sleef, 1.0-ULP variants unless noted) ---------------------
#define EMBER_SLEEF_1(name, sleef, suffix)                                                \
  inline VecF name(VecF x) { return VecF(EMBER_SLEEF_F(sleef, suffix)(x.v)); }             \
  inline VecD name(VecD x) { return VecD(EMBER_SLEEF_D(sleef, suffix)(x.v)); }
#define EMBER_SLEEF_2(name, sleef, suffix)                                                \
  inline VecF name(VecF a, VecF b) { return VecF(EMBER_SLEEF_F(sleef, suffix)(a.v, b.v)); } \
  inline VecD name(VecD a, VecD b) { return VecD(EMBER_SLEEF_D(sleef, suffix)(a.v, b.v)); }
EMBER_SLEEF_1(expm1, expm1, _u10)
EMBER_SLEEF_1(log1p, log1p, _u10)
EMBER_SLEEF_1(log2, log2, _u10)
EMBER_SLEEF_1(log10, log10, _u10)
EMBER_SLEEF_1(sqrt, sqrt, _u05)
EMBER_SLEEF_1(sin, sin, _u10)
EMBER_SLEEF_1(cos, cos, _u10)
EMBER_SLEEF_1(tan, tan, _u10)
EMBER_SLEEF_1(sinh, sinh, _u10)
EMBER_SLEEF_1(cosh, cosh, _u10)
EMBER_SLEEF_1(asin, asin, _u10)
EMBER_SLEEF_1(acos, acos, _u10)
EMBER_SLEEF_1(atan, atan, _u10)
EMBER_SLEEF_1(asinh, asinh, _u10)
EMBER_SLEEF_1(acosh, acosh, _u10)
EMBER_SLEEF_1(atanh, atanh, _u10)
EMBER_SLEEF_1(floor, floor, )
EMBER_SLEEF_1(ceil, ceil, )
EMBER_SLEEF_1(trunc, trunc, )
EMBER_SLEEF_1(round_even, rint, )
EMBER_SLEEF_1(fabs, fabs, )
EMBER_SLEEF_2(pow, pow, _u10)
EMBER_SLEEF_2(atan2, atan2, _u10)
EMBER_SLEEF_2(fmod, fmod, )
#undef EMBER_SLEEF_1
#undef EMBER_SLEEF_2
// exp, log, tanh and erf: Sleef's 1.0-ULP functions for double; the float ones are the
// inline polynomials below.
inline VecD exp(VecD x) { return VecD(EMBER_SLEEF_D(exp, _u10)(x.v)); }
inline VecD log(VecD x) { return VecD(EMBER_SLEEF_D(log, _u10)(x.v)); }
inline VecD tanh(VecD x) { return VecD(EMBER_SLEEF_D(tanh, _u10)(x.v)); }
inline VecD erf(VecD x) { return VecD(EMBER_SLEEF_D(erf, _u10)(x.v)); }
inline VecF::Mask isnan(VecF x) { return x != x; }
inline VecD::Mask isnan(VecD x) { return x != x; }
inline VecF::Mask isinf(VecF x) { return fabs(x) == VecF(__builtin_inff()); }
inline VecD::Mask isinf(VecD x) { return fabs(x) == VecD(__builtin_inf()); }

// --- float32 exp, log, tanh, erf: inline polynomials ----------------------------------
// The hot transcendentals of pointwise kernels, inline so that a fused kernel keeps its
// values in registers (a Sleef call per vector and function costs more than the memory
// traffic of W1). Each is a range reduction, a polynomial fitted (near-minimax, in long
// double, by tools/fit_vec_math.cpp) for float32, and selects for the special values,
// evaluated branch-free for every lane. Measured errors against float64 and why they are
// within PyTorch's float32 tolerances: Note [vectorized math] (docs/notes/vec_math.md).
namespace detail {
using RawF = VecF::raw_type;
using RawI = VecF::mask_raw;
inline VecF fmadd(VecF a, VecF b, VecF c) {
#if defined(__AVX512F__)
  return VecF(_mm512_fmadd_ps(a.v, b.v, c.v));
#elif defined(__FMA__)
  return VecF(_mm256_fmadd_ps(a.v, b.v, c.v));
#else
  return a * b + c;
#endif
}
/// c0 + x * (c1 + x * (c2 + …)), Horner's scheme with fused multiply-adds.
inline VecF poly(VecF, float c0) { return VecF(c0); }
template <typename... Cs>
inline VecF poly(VecF x, float c0, Cs... cs) { return fmadd(poly(x, cs...), x, VecF(c0)); }
inline VecF from_bits(RawI i) { return VecF(reinterpret_cast<RawF>(i)); }
inline RawI bits(VecF x) { return reinterpret_cast<RawI>(x.v); }
/// |x|, and `y` with the sign bit of `x` or-ed in (y >= 0).
inline VecF abs_bits(VecF x) { return from_bits(bits(x) & 0x7fffffff); }
inline VecF with_sign_of(VecF y, VecF x) { return from_bits(bits(y) | (bits(x) & int32_t(0x80000000))); }
inline constexpr float kInf = __builtin_inff();
}  // namespace detail

/// e^x: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, Cody and Waite), e^r = 1 + r +
/// r^2 P(r), times 2^n: one vscalefps with AVX-512, else two power-of-two factors, so that
/// results down in the subnormals are rounded once.
inline VecF exp(VecF x) {
  using namespace detail;
  // Outside [-104, 89] the result is 0 or inf whatever n is; the clamp keeps r finite for
  // x = +-inf and n's exponent bits in range. NaN passes both selects and propagates.
  const VecF xc = where(x < VecF(-104.f), VecF(-104.f), where(x > VecF(89.f), VecF(89.f), x));
  const VecF shifter(0x1.8p23f);  // adding it rounds to an integer, held in the low bits
  const VecF t = fmadd(xc, VecF(0x1.715476p+0f), shifter);
  const VecF n = t - shifter;
  VecF r = fmadd(n, VecF(-0x1.62e4p-1f), xc);  // ln2's high part has 8 trailing zero bits
  r = fmadd(n, VecF(-0x1.7f7d1cp-20f), r);
  const VecF p = poly(r, 4.999923110e-01f, 1.666711420e-01f, 4.189011455e-02f, 8.312525228e-03f);
  const VecF er = fmadd(r * r, p, r) + VecF(1.f);
#if defined(__AVX512F__)
  return VecF(_mm512_maskz_scalef_ps(__mmask16(0xffff), er.v, n.v));  // er * 2^n, rounded once
#else
  const RawI ni = bits(t) - 0x4B400000;
  const RawI n1 = ni >> 1;
  return er * from_bits((n1 + 127) << 23) * from_bits((ni - n1 + 127) << 23);
#endif
}

/// tanh(x) = sign(x) tanh(|x|): below 0.5493 (where tanh is 1/2) |x| + |x|^3 Q(x^2); above,
/// 1 - 2 / (e^(2|x|) + 1), whose cancellation costs at most a factor 2 there.
inline VecF tanh(VecF x) {
  using namespace detail;
  const VecF a = abs_bits(x);
  const VecF a2 = a * a;
  const VecF small = fmadd(a * a2, poly(a2, -3.333294988e-01f, 1.332081258e-01f, -5.267762765e-02f,
                                        1.644900441e-02f), a);
  const VecF large = VecF(1.f) - VecF(2.f) / (exp(a + a) + VecF(1.f));  // e^(2|x|) = inf: 1
  return with_sign_of(where(a < VecF(0.5493f), small, large), x);
}

/// erf(x) = sign(x) erf(|x|): below 1 |x| P(x^2); above, 1 - e^(-x^2) G(1/|x|) with x^2
/// split exactly into hi + lo (so e^(-x^2) = e^(-hi) (1 - lo)), G fitted to erfc(x) e^(x^2).
inline VecF erf(VecF x) {
  using namespace detail;
  const VecF a = abs_bits(x);
  const VecF hi = a * a;
  // P's leading coefficient, 2/sqrt(pi), in two parts, so that its product with |x| is
  // rounded once; q holds the rest of P.
  const VecF q = poly(hi, -3.761262596e-01f, 1.128358543e-01f, -2.685381100e-02f, 5.188327748e-03f,
                      -8.010193123e-04f, 7.853860006e-05f);
  const VecF small = fmadd(a, VecF(0x1.20dd76p+0f), a * fmadd(hi, q, VecF(-0x1.f7ac92p-25f)));
  // Past 4, erf(x) rounds to 1: clamping keeps x^2 finite (NaN passes).
  const VecF al = where(a > VecF(4.f), VecF(4.f), a);
  const VecF hl = al * al, lo = fmadd(al, al, -hl);
  const VecF e = exp(-hl);
  const VecF g = poly(VecF(1.f) / al, 2.649826638e-04f, 5.591317415e-01f, 4.136681929e-02f, -4.690484703e-01f,
                      4.905777872e-01f, -2.322479337e-01f, 1.498250570e-02f, 3.292819858e-02f, -1.037204545e-02f);
  const VecF large = VecF(1.f) - fmadd(e, -lo, e) * g;
  return with_sign_of(where(a < VecF(1.f), small, large), x);
}

/// log(x) = k ln2 + log(m), m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s) = 2s + s^3 R(s^2)
/// with s = (m - 1) / (m + 1). Subnormal inputs are scaled by 2^23 first.
inline VecF log(VecF x) {
  using namespace detail;
  const VecF::Mask sub = x < VecF(0x1p-126f);
  const VecF xs = where(sub, x * VecF(0x1p23f), x);
  const RawI ix = bits(xs);
  const RawI k = (ix - 0x3f3504f3) >> 23;  // 0x3f3504f3: sqrt(1/2)
  const VecF m = from_bits(ix - (k << 23));
  const VecF kf = VecF(__builtin_convertvector(k, RawF)) - where(sub, VecF(23.f), VecF(0.f));
  const VecF f = m - VecF(1.f);
  const VecF s = f / (VecF(2.f) + f);
  const VecF s2 = s * s;
  const VecF logm = fmadd(s * s2, poly(s2, 6.666677594e-01f, 3.997752666e-01f, 2.987215221e-01f), s + s);
  const VecF y = fmadd(kf, VecF(0x1.62e4p-1f), fmadd(kf, VecF(0x1.7f7d1cp-20f), logm));
  // 0 and -0: -inf; negative: NaN; inf: inf; NaN: NaN.
  const VecF special = where(x == VecF(0.f), VecF(-kInf), where(x == VecF(kInf), x, VecF(__builtin_nanf(""))));
  return where(x > VecF(0.f) && x < VecF(kInf), y, special);
}

}  // namespace ember::vec

namespace ember::vec {

// --- helpers used by scalar_ops.def expressions, for every value type ------------------
template <typename T>
inline T abs_(T x) {
  if constexpr (is_vectorized<T>::value || std::is_floating_point_v<T>) return fabs(x);
  else if constexpr (std::is_same_v<T, bool>) return x;
  else if constexpr (std::is_unsigned_v<T>) return x;
  else return x < 0 ? static_cast<T>(-x) : x;
}
template <typename T>
inline T bitnot_(T x) {
  if constexpr (std::is_same_v<T, bool>) return !x;
  else return static_cast<T>(~x);
}
/// Python's modulo: the result has the sign of the divisor.
template <typename T>
inline T pymod_(T a, T b) {
  if constexpr (is_vectorized<T>::value || std::is_floating_point_v<T>) {
    T m = fmod(a, b);
    return where((m != T(0)) && ((b < T(0) && m > T(0)) || (b > T(0) && m < T(0))), m + b, m);
  } else {
    T m = static_cast<T>(a % b);
    return (m != 0 && ((b < 0) != (m < 0))) ? static_cast<T>(m + b) : m;
  }
}
/// C's fmod: the result has the sign of the dividend.
template <typename T>
inline T cmod_(T a, T b) {
  if constexpr (is_vectorized<T>::value || std::is_floating_point_v<T>) return fmod(a, b);
  else return static_cast<T>(a % b);
}
/// Integer division rounded towards negative infinity (Python's //), and its float form
/// with ATen's corrections.
template <typename T, std::enable_if_t<!is_vectorized<T>::value, int> = 0>
inline T floordiv_(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    T fl;
    if (div != 0) {
      fl = std::floor(div);
      if (div - fl > T(0.5)) fl += T(1);
    } else {
      fl = std::copysign(T(0), a / b);
    }
    return fl;
  } else {
    T q = static_cast<T>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  }
}
template <typename T, std::enable_if_t<!is_vectorized<T>::value, int> = 0>
inline T truncdiv_(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::trunc(a / b);
  else return static_cast<T>(a / b);
}
/// a / b: the CPU form of the CUDA prelude's quick division, which sigmoid and silu call
/// (Note [quick division]); here it is the division itself, for scalars and vectors.
template <typename T>
inline T quick_div_(T a, T b) {
  return a / b;
}
/// Integer power by squaring (negative exponents are rejected before the kernel runs).
template <typename T>
inline T pow_(T a, T b) {
  if constexpr (is_vectorized<T>::value || std::is_floating_point_v<T>) {
    return pow(a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    if (b < 0) {  // ATen: only 1 and -1 have integral negative powers
      if (a == 1) return 1;
      if (a == -1) return (b & 1) ? T(-1) : T(1);
      return 0;
    }
    T result = 1;
    auto e = static_cast<std::make_unsigned_t<T>>(b);
    T base = a;
    while (e) {
      if (e & 1) result = static_cast<T>(result * base);
      base = static_cast<T>(base * base);
      e >>= 1;
    }
    return result;
  }
}

/// The sum and maximum of a vector's lanes (horizontal reductions).
template <typename T>
inline T lane_sum(Vectorized<T> v) {
  T lanes[Vectorized<T>::size()];
  v.store(lanes);
  T s = 0;
  for (int i = 0; i < Vectorized<T>::size(); ++i) s += lanes[i];
  return s;
}
template <typename T>
inline T lane_max(Vectorized<T> v) {
  T lanes[Vectorized<T>::size()];
  v.store(lanes);
  T m = lanes[0];
  for (int i = 1; i < Vectorized<T>::size(); ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}

}  // namespace ember::vec
