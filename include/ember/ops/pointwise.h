// ember/ops/pointwise.h — elementwise ops with PyTorch's broadcasting and type promotion.
#pragma once

#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember {

// Unary (each also has an in-place form `name_`, e.g. exp_, except isnan and isinf).
#define EMBER_DECLARE_UNARY(name)                              \
  Tensor name(const Tensor& self, Loc loc = Loc::current());   \
  Tensor& name##_(Tensor& self, Loc loc = Loc::current());
EMBER_DECLARE_UNARY(abs)
EMBER_DECLARE_UNARY(neg)
EMBER_DECLARE_UNARY(exp)
EMBER_DECLARE_UNARY(expm1)
EMBER_DECLARE_UNARY(log)
EMBER_DECLARE_UNARY(log1p)
EMBER_DECLARE_UNARY(log2)
EMBER_DECLARE_UNARY(sqrt)
EMBER_DECLARE_UNARY(rsqrt)
EMBER_DECLARE_UNARY(reciprocal)
EMBER_DECLARE_UNARY(sin)
EMBER_DECLARE_UNARY(cos)
EMBER_DECLARE_UNARY(tanh)
EMBER_DECLARE_UNARY(sigmoid)
EMBER_DECLARE_UNARY(relu)
EMBER_DECLARE_UNARY(silu)
EMBER_DECLARE_UNARY(erf)
EMBER_DECLARE_UNARY(sign)
EMBER_DECLARE_UNARY(floor)
EMBER_DECLARE_UNARY(ceil)
EMBER_DECLARE_UNARY(round)
EMBER_DECLARE_UNARY(trunc)
EMBER_DECLARE_UNARY(logical_not)
EMBER_DECLARE_UNARY(bitwise_not)
EMBER_DECLARE_UNARY(acos)
EMBER_DECLARE_UNARY(asin)
EMBER_DECLARE_UNARY(atan)
EMBER_DECLARE_UNARY(acosh)
EMBER_DECLARE_UNARY(asinh)
EMBER_DECLARE_UNARY(atanh)
EMBER_DECLARE_UNARY(sinh)
EMBER_DECLARE_UNARY(cosh)
EMBER_DECLARE_UNARY(tan)
EMBER_DECLARE_UNARY(log10)
#undef EMBER_DECLARE_UNARY
Tensor isnan(const Tensor& self, Loc loc = Loc::current());
Tensor isinf(const Tensor& self, Loc loc = Loc::current());
/// ELU: scale·x for x > 0, else scale·alpha·(exp(input_scale·x) − 1) (floating dtypes).
Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1,
           Loc loc = Loc::current());
/// x for x > 0, else negative_slope·x (floating dtypes).
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01, Loc loc = Loc::current());
/// x clamped to [min_val, max_val], in self's dtype; the gradient is zero at the bounds.
Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1, Loc loc = Loc::current());
/// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& self, const std::string& approximate = "none", Loc loc = Loc::current());

// Binary, with Tensor and Scalar right-hand sides.
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
/// rounding_mode: nullopt (true division), "trunc" or "floor".
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt,
           Loc loc = Loc::current());
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string> rounding_mode = std::nullopt,
           Loc loc = Loc::current());
Tensor pow(const Tensor& self, const Tensor& exponent, Loc loc = Loc::current());
Tensor pow(const Tensor& self, const Scalar& exponent, Loc loc = Loc::current());
/// A scalar base to a tensor of exponents (the result's dtype promotes as PyTorch's).
Tensor pow(const Scalar& self, const Tensor& exponent, Loc loc = Loc::current());
#define EMBER_DECLARE_BINARY(name)                                                   \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc = Loc::current());   \
  Tensor name(const Tensor& self, const Scalar& other, Loc loc = Loc::current());
EMBER_DECLARE_BINARY(mul)
EMBER_DECLARE_BINARY(remainder)
EMBER_DECLARE_BINARY(fmod)
EMBER_DECLARE_BINARY(eq)
EMBER_DECLARE_BINARY(ne)
EMBER_DECLARE_BINARY(lt)
EMBER_DECLARE_BINARY(le)
EMBER_DECLARE_BINARY(gt)
EMBER_DECLARE_BINARY(ge)
EMBER_DECLARE_BINARY(bitwise_and)
EMBER_DECLARE_BINARY(bitwise_or)
EMBER_DECLARE_BINARY(bitwise_xor)
#undef EMBER_DECLARE_BINARY
Tensor maximum(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor minimum(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor atan2(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
/// atan2 written into `out`, which must have the broadcast shape (Ember does not resize
/// tensors) and a dtype the result can be cast to; returns `out`.
Tensor& atan2_out(Tensor& out, const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor logical_and(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor logical_or(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor logical_xor(const Tensor& self, const Tensor& other, Loc loc = Loc::current());

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other, Loc loc = Loc::current());
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other, Loc loc = Loc::current());
Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
             Loc loc = Loc::current());
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max,
             Loc loc = Loc::current());
Tensor clamp_min(const Tensor& self, const Scalar& min, Loc loc = Loc::current());
Tensor clamp_max(const Tensor& self, const Scalar& max, Loc loc = Loc::current());
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, Loc loc = Loc::current());
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value, Loc loc = Loc::current());
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value, Loc loc = Loc::current());

// In-place binary forms.
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor& mul_(Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor& mul_(Tensor& self, const Scalar& other, Loc loc = Loc::current());
Tensor& div_(Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor& div_(Tensor& self, const Scalar& other, Loc loc = Loc::current());

}  // namespace ember
