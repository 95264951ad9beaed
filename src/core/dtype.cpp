// core/dtype.cpp — dtype names, sizes, 16-bit float conversion and the promotion table.
#include "ember/dtype.h"

#include <array>

#include "ember/error.h"

namespace ember {
namespace {

struct DtypeInfo {
  std::string_view name;       // torch.<name>
  std::string_view c10_name;   // c10::ScalarType::<name>
  size_t size;
};

constexpr std::array<DtypeInfo, kNumScalarTypes> kInfo = {{
    {"bool", "Bool", 1},
    {"uint8", "Byte", 1},
    {"int8", "Char", 1},
    {"int16", "Short", 2},
    {"int32", "Int", 4},
    {"int64", "Long", 8},
    {"float16", "Half", 2},
    {"bfloat16", "BFloat16", 2},
    {"float32", "Float", 4},
    {"float64", "Double", 8},
    {"complex64", "ComplexFloat", 8},
    {"complex128", "ComplexDouble", 16},
}};

// IEEE half <-> float, exact (round to nearest even), after c10's fp16 routines.
uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to Inf
  if (abs < 0x38800000u) {  // subnormal half or zero
    // Add 0.5 (as a float) to shift the mantissa into place; hardware rounds.
    float af;
    std::memcpy(&af, &abs, sizeof af);
    af += 0.5f;
    uint32_t r;
    std::memcpy(&r, &af, sizeof r);
    return static_cast<uint16_t>(sign | (r - 0x3f000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

Half::Half(float value) : bits(float_to_half_bits(value)) {}
Half::operator float() const { return half_bits_to_float(bits); }

std::string_view dtype_name(ScalarType t) { return kInfo[static_cast<int>(t)].name; }
std::string_view scalar_type_name(ScalarType t) { return kInfo[static_cast<int>(t)].c10_name; }
size_t element_size(ScalarType t) { return kInfo[static_cast<int>(t)].size; }

std::optional<ScalarType> parse_dtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (int i = 0; i < kNumScalarTypes; ++i) {
    if (kInfo[i].name == name || kInfo[i].c10_name == name) return static_cast<ScalarType>(i);
  }
  if (name == "float") return kFloat;
  if (name == "double") return kDouble;
  if (name == "half") return kHalf;
  if (name == "long") return kInt64;
  if (name == "int") return kInt32;
  if (name == "short") return kInt16;
  if (name == "cfloat") return kComplexFloat;
  if (name == "cdouble") return kComplexDouble;
  return std::nullopt;
}

std::optional<ScalarType> to_complex_type(ScalarType t) {
  if (is_complex(t)) return t;
  if (t == kDouble) return kComplexDouble;
  if (is_floating_point(t)) return kComplexFloat;
  return std::nullopt;
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  // Complex with anything: the complex type whose parts are the promotion of the real
  // value types (complex64 with float64 gives complex128; with an integer, complex64),
  // as PyTorch's table has it. See Note [complex dtypes].
  if (is_complex(a) || is_complex(b)) {
    const ScalarType real = promote_types(to_real_value_type(a), to_real_value_type(b));
    return real == kDouble ? kComplexDouble : kComplexFloat;
  }
  // Rows and columns in enum order: b1 u1 i1 i2 i4 i8 f2 bf f4 f8 (PyTorch's table).
  constexpr ScalarType b1 = kBool, u1 = kUInt8, i1 = kInt8, i2 = kInt16, i4 = kInt32, i8 = kInt64,
                       f2 = kHalf, bf = kBFloat16, f4 = kFloat, f8 = kDouble;
  constexpr int kReal = 10;  // Bool … Double
  static constexpr ScalarType table[kReal][kReal] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

bool can_cast(ScalarType from, ScalarType to) {
  // Complex results cannot go into real tensors, floating ones into integral tensors,
  // nor non-bool into bool.
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating_point(from) && is_integral(to, /*include_bool=*/true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << "torch." << dtype_name(t); }

}  // namespace ember
