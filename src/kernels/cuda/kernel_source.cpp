// kernels/cuda/kernel_source.cpp — see kernel_source.h.
#include "kernels/cuda/kernel_source.h"

#include <algorithm>
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
EMBER_DEV_MATH1(sinh, sinhf, sinh)
EMBER_DEV_MATH1(cosh, coshf, cosh)
EMBER_DEV_MATH1(asin, asinf, asin)
EMBER_DEV_MATH1(acos, acosf, acos)
EMBER_DEV_MATH1(atan, atanf, atan)
EMBER_DEV_MATH1(asinh, asinhf, asinh)
EMBER_DEV_MATH1(acosh, acoshf, acosh)
EMBER_DEV_MATH1(atanh, atanhf, atanh)
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
EMBER_DEV_MATH2(fmax, fmaxf, fmax)
#undef EMBER_DEV_MATH2
// Integers are their own floor, ceil, trunc and rounding, and never NaN.
template <typename T> __device__ __forceinline__ T floor(T x) { return x; }
template <typename T> __device__ __forceinline__ T ceil(T x) { return x; }
template <typename T> __device__ __forceinline__ T trunc(T x) { return x; }
template <typename T> __device__ __forceinline__ T round_even(T x) { return x; }
__device__ __forceinline__ bool isnan(float x) { return x != x; }
__device__ __forceinline__ bool isnan(double x) { return x != x; }
template <typename T> __device__ __forceinline__ bool isnan(T) { return false; }
__device__ __forceinline__ bool isinf(float x) { return fabsf(x) == __int_as_float(0x7f800000); }
__device__ __forceinline__ bool isinf(double x) { return fabs(x) == __longlong_as_double(0x7ff0000000000000LL); }
template <typename T> __device__ __forceinline__ bool isinf(T) { return false; }

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
/// a / b for the activations whose quotient has a denominator of at least 1 (sigmoid,
/// silu; scalar_ops.def): a float multiplies by the MUFU reciprocal (rcp.approx.ftz.f32:
/// within 1 ulp, a reciprocal below 2^-126 flushed to 0), which saves the IEEE division's
/// refinement and slow-path test; other types divide. Note [quick division].
template <typename T> __device__ __forceinline__ T quick_div_(T a, T b) {
  if constexpr (Same<T, float>::value) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    return a * r;
  } else {
    return a / b;
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

/// An element passed by value as its bits (the low bytes of a 64-bit argument).
template <typename T> __device__ __forceinline__ T from_bits(unsigned long long bits) {
  union { unsigned long long u; T v; } b;
  b.u = bits;
  return b.v;
}
/// N elements read or written with one access.
template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

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
    case kComplexFloat:
    case kComplexDouble:
      // No CUDA kernel takes complex yet (Note [complex dtypes]).
      EMBER_FAIL_KIND(ErrorKind::NotImplementedError)
          << "Ember's CUDA kernels do not take complex tensors (got " << scalar_type_name(t) << ")";
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
    case kComplexFloat: return "c64";
    case kComplexDouble: return "c128";
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

PointwiseLayout strided_layout(const PointwiseKernel& k) {
  return PointwiseLayout{.contiguous = false, .vec = 1, .inputs = std::vector<Access>(k.inputs.size(), Access::Strided)};
}

std::string kernel_symbol(const PointwiseKernel& k, const PointwiseLayout& layout) {
  std::string s = "ember_pointwise_" + k.name;
  for (ScalarType t : k.inputs) s += std::string("_") + dtype_tag(t);
  s += std::string("_") + dtype_tag(k.compute) + "_to_" + dtype_tag(k.out);
  const bool plain = !layout.contiguous && std::all_of(layout.inputs.begin(), layout.inputs.end(),
                                                       [](Access a) { return a == Access::Strided; });
  if (plain) return s;
  s += layout.contiguous ? "_c" + std::to_string(layout.vec) : std::string("_s");
  if (!layout.inputs.empty()) s += "_";
  for (Access a : layout.inputs) s += static_cast<char>(a);
  return s;
}

std::string kernel_symbol(const PointwiseKernel& k) { return kernel_symbol(k, strided_layout(k)); }

namespace {

void check_layout(const PointwiseKernel& k, const PointwiseLayout& layout) {
  EMBER_INTERNAL_ASSERT(k.inputs.size() + 1 <= static_cast<size_t>(kMaxOperands)) << "too many inputs for a pointwise kernel";
  EMBER_INTERNAL_ASSERT(layout.inputs.size() == k.inputs.size()) << "pointwise layout of " << layout.inputs.size()
                                                                 << " inputs for kernel '" << k.name << "'";
  EMBER_INTERNAL_ASSERT(layout.vec >= 1) << "pointwise layout with vectors of " << layout.vec;
  for (Access a : layout.inputs) {
    const bool fits = a == Access::Value || (layout.contiguous ? a != Access::Strided : a == Access::Strided);
    EMBER_INTERNAL_ASSERT(fits) << "input access '" << static_cast<char>(a) << "' in a "
                                << (layout.contiguous ? "contiguous" : "strided") << " pointwise kernel";
  }
}

/// "ember_dev::cvt<T>(ember_dev::cvt<C>(<raw>))": an input as the formula sees it.
std::string as_math(const std::string& raw) { return "ember_dev::cvt<T>(ember_dev::cvt<C>(" + raw + "))"; }

/// The call of the formula on the inputs' names, converted to the output's dtype.
std::string result(const PointwiseKernel& k, const std::vector<std::string>& names) {
  std::string r = std::string("ember_dev::cvt<") + cuda_type_name(k.out) + ">(ember_dev::body<T>(";
  for (const auto& n : names) r += n + ", ";
  return r + "p0))";
}

/// The grid-stride loop over the Geometry: per-operand offsets from the linear index.
void render_strided_body(std::ostringstream& os, const PointwiseKernel& k, const PointwiseLayout& layout,
                         const std::vector<std::string>& names) {
  int pointers = 1;  // the output is operand 0 of the Geometry
  std::vector<int> operand(k.inputs.size(), -1);
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (layout.inputs[i] == Access::Strided) operand[i] = pointers++;
  os << "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n";
  os << "  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += step) {\n";
  os << "    long long off[" << pointers << "] = {};\n";
  os << "    long long rest = i;\n";
  os << "    for (int d = g.ndim - 1; d >= 0; --d) {\n";
  os << "      const long long idx = rest % g.sizes[d];\n";
  os << "      rest /= g.sizes[d];\n";
  os << "      for (int k = 0; k < " << pointers << "; ++k) off[k] += idx * g.strides[k][d];\n";
  os << "    }\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (operand[i] >= 0)
      os << "    const T " << names[i] << " = " << as_math("in" + std::to_string(i) + "[off[" + std::to_string(operand[i]) + "]]")
         << ";\n";
  os << "    out[off[0]] = " << result(k, names) << ";\n  }\n";
}

/// Aligned: `vec` elements per access of every dense operand, then the remainder one by
/// one; unaligned: every element one by one. The flag is the same for the whole grid.
void render_contiguous_body(std::ostringstream& os, const PointwiseKernel& k, const PointwiseLayout& layout,
                            const std::vector<std::string>& names) {
  const std::string V = std::to_string(layout.vec);
  const std::string out_t = cuda_type_name(k.out);
  os << "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n";
  os << "  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
  os << "  const long long vectors = aligned ? n / " << V << " : 0;\n";
  os << "  for (long long v = first; v < vectors; v += step) {\n";
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    if (layout.inputs[i] != Access::Dense) continue;
    const std::string vt = std::string("ember_dev::Vec<") + cuda_type_name(k.inputs[i]) + ", " + V + ">";
    os << "    const " << vt << " v" << i << " = reinterpret_cast<const " << vt << "*>(in" << i << ")[v];\n";
  }
  os << "    ember_dev::Vec<" << out_t << ", " << V << "> r;\n";
  os << "#pragma unroll\n    for (int j = 0; j < " << V << "; ++j) {\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (layout.inputs[i] == Access::Dense)
      os << "      const T " << names[i] << " = " << as_math("v" + std::to_string(i) + ".v[j]") << ";\n";
  os << "      r.v[j] = " << result(k, names) << ";\n    }\n";
  os << "    reinterpret_cast<ember_dev::Vec<" << out_t << ", " << V << ">*>(out)[v] = r;\n  }\n";
  os << "  for (long long i = vectors * " << V << " + first; i < n; i += step) {\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (layout.inputs[i] == Access::Dense)
      os << "    const T " << names[i] << " = " << as_math("in" + std::to_string(i) + "[i]") << ";\n";
  os << "    out[i] = " << result(k, names) << ";\n  }\n";
}

}  // namespace

std::string render_pointwise(const PointwiseKernel& k, const PointwiseLayout& layout) {
  check_layout(k, layout);
  const size_t n = k.inputs.size();
  const std::vector<std::string> names = input_names(n);
  std::ostringstream os;
  os << "// " << k.name << ": " << k.expr << "\n";
  os << render_prelude() << "\nnamespace ember_dev {\n";
  for (const auto& h : k.helpers) os << h;
  os << "template <typename T> __device__ __forceinline__ auto body(" << params(names) << ") { return " << k.expr
     << "; }\n}  // namespace ember_dev\n\n";
  os << "extern \"C\" __global__ void " << kernel_symbol(k, layout) << "(" << cuda_type_name(k.out) << "* out";
  for (size_t i = 0; i < n; ++i) {
    if (layout.inputs[i] == Access::Value) os << ", unsigned long long in" << i;
    else os << ", const " << cuda_type_name(k.inputs[i]) << "* in" << i;
  }
  os << (layout.contiguous ? ", double p0, long long n, int aligned) {\n" : ", double p0, ember_dev::Geometry g) {\n");
  os << "  typedef " << cuda_type_name(k.compute) << " C;\n";
  os << "  typedef ember_dev::OpMath<C>::type T;\n";
  // Inputs that are the same for every element are read once.
  for (size_t i = 0; i < n; ++i) {
    const std::string in = "in" + std::to_string(i);
    if (layout.inputs[i] == Access::Value)
      os << "  const T " << names[i] << " = "
         << as_math(std::string("ember_dev::from_bits<") + cuda_type_name(k.inputs[i]) + ">(" + in + ")") << ";\n";
    else if (layout.inputs[i] == Access::Broadcast)
      os << "  const T " << names[i] << " = " << as_math(in + "[0]") << ";\n";
  }
  if (layout.contiguous) render_contiguous_body(os, k, layout, names);
  else render_strided_body(os, k, layout, names);
  os << "}\n";
  return os.str();
}

std::string render_pointwise(const PointwiseKernel& k) { return render_pointwise(k, strided_layout(k)); }

}  // namespace ember::kernels::cuda
