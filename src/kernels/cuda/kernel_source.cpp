// kernels/cuda/kernel_source.cpp — see kernel_source.h.
#include "kernels/cuda/kernel_source.h"

#include <sstream>

#include "ember/error.h"

namespace ember::kernels::cuda {
namespace {

/// What every kernel's translation unit starts with. No headers: NVRTC compiles it as is.
/// Conversions follow kernels/cpu/copy.cpp's convert (float to integer through int64,
/// NaN and out-of-range giving int64's minimum); the helpers follow the scalar branches of
/// kernels/cpu/vec.h, so a row means the same on both devices.
constexpr const char* kPrelude = R"CUDA(
namespace ember_dev {
struct Half { unsigned short bits; };
struct BFloat16 { unsigned short bits; };

template <typename A, typename B> struct Same { static constexpr bool value = false; };
template <typename A> struct Same<A, A> { static constexpr bool value = true; };
template <typename T> struct IsFloat {
  static constexpr bool value = Same<T, float>::value || Same<T, double>::value || Same<T, Half>::value ||
                                Same<T, BFloat16>::value;
};
template <typename T> struct OpMath { typedef T type; };
template <> struct OpMath<Half> { typedef float type; };
template <> struct OpMath<BFloat16> { typedef float type; };

__device__ __forceinline__ float widen(Half v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
__device__ __forceinline__ float widen(BFloat16 v) { return __uint_as_float(static_cast<unsigned>(v.bits) << 16); }
template <typename T> __device__ __forceinline__ T widen(T v) { return v; }

template <typename To, typename From>
__device__ __forceinline__ To cvt(From raw) {
  const auto v = widen(raw);
  typedef decltype(widen(raw)) F;
  if constexpr (Same<To, From>::value) {
    return raw;
  } else if constexpr (Same<To, Half>::value) {
    Half h;
    const float f = static_cast<float>(v);
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
  } else if constexpr (Same<To, BFloat16>::value) {
    unsigned u = __float_as_uint(static_cast<float>(v));
    BFloat16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      b.bits = 0x7fc0;
    } else {
      b.bits = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    return b;
  } else if constexpr (Same<To, bool>::value) {
    return v != F(0);
  } else if constexpr (!IsFloat<To>::value && IsFloat<F>::value) {
    if (!(v == v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18)
      return static_cast<To>(-9223372036854775807LL - 1);
    return static_cast<To>(static_cast<long long>(v));
  } else {
    return static_cast<To>(v);
  }
}

#define EMBER_DEV_MATH1(name, f32, f64)                                     \
  __device__ __forceinline__ float name(float x) { return ::f32(x); }       \
  __device__ __forceinline__ double name(double x) { return ::f64(x); }
EMBER_DEV_MATH1(exp, expf, exp)
EMBER_DEV_MATH1(expm1, expm1f, expm1)
EMBER_DEV_MATH1(log, logf, log)
EMBER_DEV_MATH1(log1p, log1pf, log1p)
EMBER_DEV_MATH1(log2, log2f, log2)
EMBER_DEV_MATH1(log10, log10f, log10)
EMBER_DEV_MATH1(sqrt, sqrtf, sqrt)
EMBER_DEV_MATH1(sin, sinf, sin)
EMBER_DEV_MATH1(cos, cosf, cos)
EMBER_DEV_MATH1(tan, tanf, tan)
EMBER_DEV_MATH1(tanh, tanhf, tanh)
EMBER_DEV_MATH1(erf, erff, erf)
EMBER_DEV_MATH1(floor, floorf, floor)
EMBER_DEV_MATH1(ceil, ceilf, ceil)
EMBER_DEV_MATH1(trunc, truncf, trunc)
EMBER_DEV_MATH1(round_even, rintf, rint)
EMBER_DEV_MATH1(fabs, fabsf, fabs)
#undef EMBER_DEV_MATH1
#define EMBER_DEV_MATH2(name, f32, f64)                                                \
  __device__ __forceinline__ float name(float a, float b) { return ::f32(a, b); }      \
  __device__ __forceinline__ double name(double a, double b) { return ::f64(a, b); }
EMBER_DEV_MATH2(pow, powf, pow)
EMBER_DEV_MATH2(atan2, atan2f, atan2)
EMBER_DEV_MATH2(fmod, fmodf, fmod)
EMBER_DEV_MATH2(copysign, copysignf, copysign)
#undef EMBER_DEV_MATH2
// Integers are their own floor, ceil, trunc and rounding, and never NaN.
template <typename T> __device__ __forceinline__ T floor(T x) { return x; }
template <typename T> __device__ __forceinline__ T ceil(T x) { return x; }
template <typename T> __device__ __forceinline__ T trunc(T x) { return x; }
template <typename T> __device__ __forceinline__ T round_even(T x) { return x; }
__device__ __forceinline__ bool isnan(float x) { return x != x; }
__device__ __forceinline__ bool isnan(double x) { return x != x; }
template <typename T> __device__ __forceinline__ bool isnan(T) { return false; }

template <typename T> __device__ __forceinline__ T where(bool c, T a, T b) { return c ? a : b; }

template <typename T> __device__ __forceinline__ T abs_(T x) {
  if constexpr (IsFloat<T>::value) return fabs(x);
  else if constexpr (Same<T, bool>::value || Same<T, unsigned char>::value) return x;
  else return x < 0 ? static_cast<T>(-x) : x;
}
template <typename T> __device__ __forceinline__ T bitnot_(T x) {
  if constexpr (Same<T, bool>::value) return !x;
  else return static_cast<T>(~x);
}
template <typename T> __device__ __forceinline__ T pymod_(T a, T b) {
  if constexpr (IsFloat<T>::value) {
    T m = fmod(a, b);
    return where((m != T(0)) && ((b < T(0) && m > T(0)) || (b > T(0) && m < T(0))), m + b, m);
  } else {
    T m = static_cast<T>(a % b);
    return (m != 0 && ((b < 0) != (m < 0))) ? static_cast<T>(m + b) : m;
  }
}
template <typename T> __device__ __forceinline__ T cmod_(T a, T b) {
  if constexpr (IsFloat<T>::value) return fmod(a, b);
  else return static_cast<T>(a % b);
}
template <typename T> __device__ __forceinline__ T floordiv_(T a, T b) {
  if constexpr (IsFloat<T>::value) {
    if (b == 0) return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    T fl;
    if (div != 0) {
      fl = floor(div);
      if (div - fl > T(0.5)) fl += T(1);
    } else {
      fl = copysign(T(0), a / b);
    }
    return fl;
  } else {
    T q = static_cast<T>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  }
}
template <typename T> __device__ __forceinline__ T truncdiv_(T a, T b) {
  if constexpr (IsFloat<T>::value) return trunc(a / b);
  else return static_cast<T>(a / b);
}
template <typename T> __device__ __forceinline__ T pow_(T a, T b) {
  if constexpr (IsFloat<T>::value) {
    return pow(a, b);
  } else if constexpr (Same<T, bool>::value) {
    return a || !b;
  } else {
    if (b < 0) {  // only 1 and -1 have integral negative powers
      if (a == 1) return 1;
      if (a == -1) return (b & 1) ? T(-1) : T(1);
      return 0;
    }
    T result = 1;
    unsigned long long e = static_cast<unsigned long long>(b);
    T base = a;
    while (e) {
      if (e & 1) result = static_cast<T>(result * base);
      base = static_cast<T>(base * base);
      e >>= 1;
    }
    return result;
  }
}

struct Geometry {
  long long numel;
  int ndim;
  long long sizes[EMBER_MAX_DIMS];
  long long strides[EMBER_MAX_OPERANDS][EMBER_MAX_DIMS];
};
}  // namespace ember_dev
)CUDA";

}  // namespace

const char* cuda_type_name(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "unsigned char";
    case kInt8: return "signed char";
    case kInt16: return "short";
    case kInt32: return "int";
    case kInt64: return "long long";
    case kHalf: return "ember_dev::Half";
    case kBFloat16: return "ember_dev::BFloat16";
    case kFloat: return "float";
    case kDouble: return "double";
  }
  EMBER_INTERNAL_ASSERT(false) << "no CUDA type for dtype " << t;
}

const char* dtype_tag(ScalarType t) {
  switch (t) {
    case kBool: return "b8";
    case kUInt8: return "u8";
    case kInt8: return "i8";
    case kInt16: return "i16";
    case kInt32: return "i32";
    case kInt64: return "i64";
    case kHalf: return "f16";
    case kBFloat16: return "bf16";
    case kFloat: return "f32";
    case kDouble: return "f64";
  }
  EMBER_INTERNAL_ASSERT(false) << "no short name for dtype " << t;
}

namespace {

std::string params(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += "T " + n + ", ";
  return s + "double p0";
}

}  // namespace

std::vector<std::string> input_names(size_t arity) {
  switch (arity) {
    case 0: return {};
    case 1: return {"x"};
    case 2: return {"a", "b"};
    case 3: return {"a", "b", "c"};
    default: break;
  }
  EMBER_INTERNAL_ASSERT(false) << "pointwise kernels take at most 3 inputs, got " << arity;
}

std::string render_row_function(const std::string& name, int arity, const std::string& expr) {
  return "template <typename T> __device__ __forceinline__ auto row_" + name + "(" +
         params(input_names(static_cast<size_t>(arity))) + ") { return " + expr + "; }\n";
}

std::string render_prelude() {
  std::ostringstream os;
  os << "#define EMBER_MAX_DIMS " << kMaxDims << "\n#define EMBER_MAX_OPERANDS " << kMaxOperands << "\n" << kPrelude;
  return os.str();
}

std::string kernel_symbol(const PointwiseKernel& k) {
  std::string s = "ember_pointwise_" + k.name;
  for (ScalarType t : k.inputs) s += std::string("_") + dtype_tag(t);
  s += std::string("_") + dtype_tag(k.compute) + "_to_" + dtype_tag(k.out);
  return s;
}

std::string render_pointwise(const PointwiseKernel& k) {
  const size_t n = k.inputs.size();
  EMBER_INTERNAL_ASSERT(n + 1 <= static_cast<size_t>(kMaxOperands)) << "too many inputs for a pointwise kernel";
  const std::vector<std::string> names = input_names(n);
  std::ostringstream os;
  os << "// " << k.name << ": " << k.expr << "\n";
  os << render_prelude() << "\nnamespace ember_dev {\n";
  for (const auto& h : k.helpers) os << h;
  os << "template <typename T> __device__ __forceinline__ auto body(" << params(names) << ") { return " << k.expr
     << "; }\n}  // namespace ember_dev\n\n";
  os << "extern \"C\" __global__ void " << kernel_symbol(k) << "(" << cuda_type_name(k.out) << "* out";
  for (size_t i = 0; i < n; ++i) os << ", const " << cuda_type_name(k.inputs[i]) << "* in" << i;
  os << ", double p0, ember_dev::Geometry g) {\n";
  os << "  typedef " << cuda_type_name(k.compute) << " C;\n";
  os << "  typedef ember_dev::OpMath<C>::type T;\n";
  os << "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n";
  os << "  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += step) {\n";
  os << "    long long off[" << n + 1 << "] = {};\n";
  os << "    long long rest = i;\n";
  os << "    for (int d = g.ndim - 1; d >= 0; --d) {\n";
  os << "      const long long idx = rest % g.sizes[d];\n";
  os << "      rest /= g.sizes[d];\n";
  os << "      for (int k = 0; k < " << n + 1 << "; ++k) off[k] += idx * g.strides[k][d];\n";
  os << "    }\n";
  for (size_t i = 0; i < n; ++i)
    os << "    const T " << names[i] << " = ember_dev::cvt<T>(ember_dev::cvt<C>(in" << i << "[off[" << i + 1 << "]]));\n";
  os << "    out[off[0]] = ember_dev::cvt<" << cuda_type_name(k.out) << ">(ember_dev::body<T>(";
  for (size_t i = 0; i < n; ++i) os << names[i] << ", ";
  os << "p0));\n  }\n}\n";
  return os.str();
}

}  // namespace ember::kernels::cuda
