// ember/dtype.h — element types: the ScalarType enum, the 16-bit float storage types,
// and PyTorch's type-promotion lattice.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <string_view>

namespace ember {

/// Element types, in PyTorch's names. The order is part of the promotion table.
enum class ScalarType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Half,
  BFloat16,
  Float,
  Double,
  ComplexFloat,   // complex64: std::complex<float>, real and imaginary parts interleaved
  ComplexDouble,  // complex128: std::complex<double>
};
inline constexpr int kNumScalarTypes = 12;

// Short names as PyTorch spells them: ember::kFloat == torch.float32.
inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kInt8 = ScalarType::Int8;
inline constexpr ScalarType kInt16 = ScalarType::Int16;
inline constexpr ScalarType kInt32 = ScalarType::Int32;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kHalf = ScalarType::Half;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kDouble = ScalarType::Double;
inline constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
inline constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;
inline constexpr ScalarType kFloat32 = ScalarType::Float;
inline constexpr ScalarType kFloat64 = ScalarType::Double;
inline constexpr ScalarType kFloat16 = ScalarType::Half;
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kInt = ScalarType::Int32;
inline constexpr ScalarType kComplex64 = ScalarType::ComplexFloat;
inline constexpr ScalarType kComplex128 = ScalarType::ComplexDouble;
inline constexpr ScalarType kCFloat = ScalarType::ComplexFloat;
inline constexpr ScalarType kCDouble = ScalarType::ComplexDouble;

/// IEEE binary16, stored as bits; arithmetic happens in float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float value);  // NOLINT: implicit, as c10::Half
  operator float() const;
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

/// bfloat16 (the upper half of a float), stored as bits; arithmetic happens in float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value);  // NOLINT: implicit, as c10::BFloat16
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

inline BFloat16::BFloat16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    bits = 0x7fc0;  // quiet NaN
  } else {
    // Round to nearest, ties to even.
    uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>((u + rounding_bias) >> 16);
  }
}

/// Name as PyTorch prints it in a dtype: "float32", "int64", "bool", ….
std::string_view dtype_name(ScalarType t);
/// Name as PyTorch's C++ API (c10) spells it: "Float", "Long", ….
std::string_view scalar_type_name(ScalarType t);
/// Parses either spelling ("float32" / "Float" / "torch.float32"); nullopt if unknown.
std::optional<ScalarType> parse_dtype(std::string_view name);

size_t element_size(ScalarType t);
inline bool is_floating_point(ScalarType t) {
  return t == kHalf || t == kBFloat16 || t == kFloat || t == kDouble;
}
inline bool is_integral(ScalarType t, bool include_bool) {
  return (t >= kUInt8 && t <= kInt64) || (include_bool && t == kBool);
}
inline bool is_reduced_float(ScalarType t) { return t == kHalf || t == kBFloat16; }
inline bool is_signed(ScalarType t) { return t != kBool && t != kUInt8; }
/// complex64 or complex128 (torch.is_complex). See Note [complex dtypes].
inline bool is_complex(ScalarType t) { return t == kComplexFloat || t == kComplexDouble; }
/// The type of a complex type's real and imaginary parts (float32 for complex64); any
/// other type is its own (c10::toRealValueType).
inline ScalarType to_real_value_type(ScalarType t) {
  return t == kComplexFloat ? kFloat : t == kComplexDouble ? kDouble : t;
}
/// The complex type whose parts are `t` (complex64 for float32 and for the 16-bit floats,
/// complex128 for float64); a complex type is its own (c10::toComplexType). Returns
/// nullopt for integral and bool types, which have none.
std::optional<ScalarType> to_complex_type(ScalarType t);

/// PyTorch's torch.promote_types.
ScalarType promote_types(ScalarType a, ScalarType b);
/// The default floating type for Python floats and factory functions (torch.float32).
inline constexpr ScalarType kDefaultFloat = kFloat;

/// Whether a value of type `from` may be written into a tensor of type `to` by an
/// in-place op (torch.can_cast).
bool can_cast(ScalarType from, ScalarType to);

std::ostream& operator<<(std::ostream& os, ScalarType t);

/// C++ type for a ScalarType and back.
template <ScalarType T> struct CppTypeOf;
template <> struct CppTypeOf<kBool> { using type = bool; };
template <> struct CppTypeOf<kUInt8> { using type = uint8_t; };
template <> struct CppTypeOf<kInt8> { using type = int8_t; };
template <> struct CppTypeOf<kInt16> { using type = int16_t; };
template <> struct CppTypeOf<kInt32> { using type = int32_t; };
template <> struct CppTypeOf<kInt64> { using type = int64_t; };
template <> struct CppTypeOf<kHalf> { using type = Half; };
template <> struct CppTypeOf<kBFloat16> { using type = BFloat16; };
template <> struct CppTypeOf<kFloat> { using type = float; };
template <> struct CppTypeOf<kDouble> { using type = double; };
template <> struct CppTypeOf<kComplexFloat> { using type = std::complex<float>; };
template <> struct CppTypeOf<kComplexDouble> { using type = std::complex<double>; };

template <typename T> constexpr ScalarType scalar_type_of();
template <> constexpr ScalarType scalar_type_of<bool>() { return kBool; }
template <> constexpr ScalarType scalar_type_of<uint8_t>() { return kUInt8; }
template <> constexpr ScalarType scalar_type_of<int8_t>() { return kInt8; }
template <> constexpr ScalarType scalar_type_of<int16_t>() { return kInt16; }
template <> constexpr ScalarType scalar_type_of<int32_t>() { return kInt32; }
template <> constexpr ScalarType scalar_type_of<int64_t>() { return kInt64; }
template <> constexpr ScalarType scalar_type_of<Half>() { return kHalf; }
template <> constexpr ScalarType scalar_type_of<BFloat16>() { return kBFloat16; }
template <> constexpr ScalarType scalar_type_of<float>() { return kFloat; }
template <> constexpr ScalarType scalar_type_of<double>() { return kDouble; }
template <> constexpr ScalarType scalar_type_of<std::complex<float>>() { return kComplexFloat; }
template <> constexpr ScalarType scalar_type_of<std::complex<double>>() { return kComplexDouble; }

/// The type arithmetic on T is done in: float for the 16-bit floats, T otherwise.
template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;

}  // namespace ember

/// Calls `__VA_ARGS__` (a lambda body using `scalar_t`) with scalar_t bound to the C++
/// type of `TYPE`. The _ALL variant covers every real dtype (bool, integers, floats);
/// _FLOATING only float types; _COMPLEX the two complex types; _ALL_AND_COMPLEX both.
/// A dtype outside a macro's set raises ember::Error "\"<NAME>\" not implemented for
/// 'ComplexFloat'" (PyTorch's words), never an internal error: kernels that do not
/// support complex reject it here (Note [complex dtypes]).
#define EMBER_DISPATCH_CASE(ENUM, ...)                        \
  case ENUM: {                                                \
    using scalar_t = ::ember::CppTypeOf<ENUM>::type;          \
    return __VA_ARGS__();                                     \
  }

#define EMBER_DISPATCH_REAL_CASES_(...)                       \
  EMBER_DISPATCH_CASE(::ember::kBool, __VA_ARGS__)            \
  EMBER_DISPATCH_CASE(::ember::kUInt8, __VA_ARGS__)           \
  EMBER_DISPATCH_CASE(::ember::kInt8, __VA_ARGS__)            \
  EMBER_DISPATCH_CASE(::ember::kInt16, __VA_ARGS__)           \
  EMBER_DISPATCH_CASE(::ember::kInt32, __VA_ARGS__)           \
  EMBER_DISPATCH_CASE(::ember::kInt64, __VA_ARGS__)           \
  EMBER_DISPATCH_CASE(::ember::kHalf, __VA_ARGS__)            \
  EMBER_DISPATCH_CASE(::ember::kBFloat16, __VA_ARGS__)        \
  EMBER_DISPATCH_CASE(::ember::kFloat, __VA_ARGS__)           \
  EMBER_DISPATCH_CASE(::ember::kDouble, __VA_ARGS__)

#define EMBER_DISPATCH_COMPLEX_CASES_(...)                  \
  EMBER_DISPATCH_CASE(::ember::kComplexFloat, __VA_ARGS__) \
  EMBER_DISPATCH_CASE(::ember::kComplexDouble, __VA_ARGS__)

#define EMBER_DISPATCH_FLOATING_CASES_(...)            \
  EMBER_DISPATCH_CASE(::ember::kHalf, __VA_ARGS__)     \
  EMBER_DISPATCH_CASE(::ember::kBFloat16, __VA_ARGS__) \
  EMBER_DISPATCH_CASE(::ember::kFloat, __VA_ARGS__)    \
  EMBER_DISPATCH_CASE(::ember::kDouble, __VA_ARGS__)

#define EMBER_DISPATCH_NUMERIC_CASES_(...)            \
  EMBER_DISPATCH_CASE(::ember::kUInt8, __VA_ARGS__)   \
  EMBER_DISPATCH_CASE(::ember::kInt8, __VA_ARGS__)    \
  EMBER_DISPATCH_CASE(::ember::kInt16, __VA_ARGS__)   \
  EMBER_DISPATCH_CASE(::ember::kInt32, __VA_ARGS__)   \
  EMBER_DISPATCH_CASE(::ember::kInt64, __VA_ARGS__)   \
  EMBER_DISPATCH_FLOATING_CASES_(__VA_ARGS__)

#define EMBER_DISPATCH_REAL_AND_COMPLEX_CASES_(...) \
  EMBER_DISPATCH_REAL_CASES_(__VA_ARGS__)           \
  EMBER_DISPATCH_COMPLEX_CASES_(__VA_ARGS__)

#define EMBER_DISPATCH_NOT_IMPLEMENTED_(TYPE, NAME) \
  EMBER_FAIL() << "\"" << NAME << "\" not implemented for '" << ::ember::scalar_type_name(TYPE) << "'"

/// The one shape of every dispatch macro: a switch over TYPE with the cases CASES (one of
/// the _CASES_ lists above) writes for the lambda body, and FAIL for any other dtype.
#define EMBER_DISPATCH_SWITCH_(TYPE, CASES, FAIL, ...) \
  [&] {                                                \
    switch (TYPE) {                                    \
      CASES(__VA_ARGS__)                               \
      default:                                         \
        break;                                         \
    }                                                  \
    FAIL;                                              \
  }()

#define EMBER_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
  EMBER_DISPATCH_SWITCH_(TYPE, EMBER_DISPATCH_REAL_CASES_, EMBER_DISPATCH_NOT_IMPLEMENTED_(TYPE, NAME), __VA_ARGS__)

#define EMBER_DISPATCH_COMPLEX_TYPES(TYPE, NAME, ...) \
  EMBER_DISPATCH_SWITCH_(TYPE, EMBER_DISPATCH_COMPLEX_CASES_, EMBER_DISPATCH_NOT_IMPLEMENTED_(TYPE, NAME), __VA_ARGS__)

#define EMBER_DISPATCH_ALL_TYPES_AND_COMPLEX(TYPE, NAME, ...)                                       \
  EMBER_DISPATCH_SWITCH_(TYPE, EMBER_DISPATCH_REAL_AND_COMPLEX_CASES_,                              \
                         EMBER_INTERNAL_ASSERT(false) << NAME << ": unhandled dtype " << (TYPE), __VA_ARGS__)

#define EMBER_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                                \
  EMBER_DISPATCH_SWITCH_(TYPE, EMBER_DISPATCH_FLOATING_CASES_,                                        \
                         EMBER_FAIL() << NAME << ": expected a floating point dtype, got " << (TYPE), \
                         __VA_ARGS__)

#define EMBER_DISPATCH_NUMERIC_TYPES(TYPE, NAME, ...) \
  EMBER_DISPATCH_SWITCH_(TYPE, EMBER_DISPATCH_NUMERIC_CASES_, EMBER_DISPATCH_NOT_IMPLEMENTED_(TYPE, NAME), __VA_ARGS__)
