// kernels/cpu/vec.h — Vectorized<float> / Vectorized<double>: SIMD values (512-bit with
// AVX-512, else 256-bit) with the same operators and math functions as plain scalars,
// so that one expression from
// ops/scalar_ops.def compiles to both the scalar tail loop and the SIMD main loop (and,
// later, into generated kernels). Math functions come from Sleef (ULP-bounded).
//
// Scalar overloads live in the same namespace, so an expression written as
// `where(x < T(0), T(0), x)` works for T = float, double, int, Vectorized<float>, ….
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <sleef.h>

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

// --- math: vector versions (Sleef, 1.0-ULP variants unless noted) ---------------------
#define EMBER_SLEEF_1(name, sleef, suffix)                                                \
  inline VecF name(VecF x) { return VecF(EMBER_SLEEF_F(sleef, suffix)(x.v)); }             \
  inline VecD name(VecD x) { return VecD(EMBER_SLEEF_D(sleef, suffix)(x.v)); }
#define EMBER_SLEEF_2(name, sleef, suffix)                                                \
  inline VecF name(VecF a, VecF b) { return VecF(EMBER_SLEEF_F(sleef, suffix)(a.v, b.v)); } \
  inline VecD name(VecD a, VecD b) { return VecD(EMBER_SLEEF_D(sleef, suffix)(a.v, b.v)); }
EMBER_SLEEF_1(exp, exp, _u10)
EMBER_SLEEF_1(expm1, expm1, _u10)
EMBER_SLEEF_1(log, log, _u10)
EMBER_SLEEF_1(log1p, log1p, _u10)
EMBER_SLEEF_1(log2, log2, _u10)
EMBER_SLEEF_1(log10, log10, _u10)
EMBER_SLEEF_1(sqrt, sqrt, _u05)
EMBER_SLEEF_1(sin, sin, _u10)
EMBER_SLEEF_1(cos, cos, _u10)
EMBER_SLEEF_1(tan, tan, _u10)
EMBER_SLEEF_1(tanh, tanh, _u10)
EMBER_SLEEF_1(erf, erf, _u10)
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
inline VecF::Mask isnan(VecF x) { return x != x; }
inline VecD::Mask isnan(VecD x) { return x != x; }

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
