// ops/scalar_rows.h — the scalar functions of elementwise ops as functors: one per row
// of scalar_ops.def (vec::fns::<name>_op) and GELU's two forms (vec::fns::GeluErf,
// GeluTanh). Each is a template over plain scalars and Vectorized<T>, and carries its
// expression as text for the CUDA kernels. Used by ops/pointwise.cpp and by the
// measurements of the vector math (ops/vec_math_cases.h).
#pragma once

#include "kernels/cpu/vec.h"

namespace ember::ops {
/// The dtype rule of an elementwise op (see scalar_ops.def).
enum class Kind { FloatPromote, FloatOnly, Same, SameNoBool, BoolOut, Integral, Arith, ArithNoBool, Compare, Logical };
}  // namespace ember::ops

// One functor per row of scalar_ops.def, in namespace ember::vec so the expressions find
// the vector math functions before any global ones.
namespace ember::vec::fns {
#define EMBER_UNARY(name, kind_, expr)                 \
  struct name##_op {                                        \
    static constexpr ops::Kind kind = ops::Kind::kind_; \
    static constexpr const char* source = #expr;       \
    double p0 = 0;                                     \
    template <typename T>                              \
    auto operator()(T x) const -> decltype(expr) { return expr; } \
  };
#define EMBER_BINARY(name, kind_, expr)                \
  struct name##_op {                                        \
    static constexpr ops::Kind kind = ops::Kind::kind_; \
    static constexpr const char* source = #expr;       \
    double p0 = 1;                                     \
    template <typename T>                              \
    auto operator()(T a, T b) const -> decltype(expr) { return expr; } \
  };
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
}  // namespace ember::vec::fns

namespace ember::vec::fns {
// GELU's two forms, like a scalar_ops.def row: the CPU instantiates the expression, the
// CUDA kernel is rendered from its text.
#define EMBER_GELU_ROW(name, expr)                   \
  struct name {                                      \
    static constexpr const char* source = #expr;     \
    template <typename T>                            \
    auto operator()(T x) const {                     \
      using namespace vec;                           \
      return expr;                                   \
    }                                                \
  };
// 0.7071… is 1/sqrt(2); 0.7978… is sqrt(2/pi).
EMBER_GELU_ROW(GeluErf, T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440))))
EMBER_GELU_ROW(GeluTanh, T(0.5) * x * (T(1) + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
#undef EMBER_GELU_ROW
}  // namespace ember::vec::fns
