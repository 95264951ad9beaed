// ops/pointwise_composite.cpp — elementwise Core ATen ops written as compositions of the
// scalar_ops.def ops: the activations with scalar parameters (elu, leaky_relu, hardtanh),
// pow with a scalar base (pow.Scalar) and atan2's out= form. Each expands before any
// dispatch layer sees it, so its gradient comes from the ops it expands into (chosen so
// that it equals PyTorch's elu_backward, leaky_relu_backward and hardtanh_backward,
// boundaries included), the inductor fuses it, and CUDA runs it. See Note [registry],
// "Decomposition or kernel".
#include <algorithm>

#include "ember/ops/pointwise.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

/// Raises PyTorch's "\"<kernel>\" not implemented for 'Long'" unless `t` is floating.
const Tensor& floating(const Tensor& t, const char* kernel) {
  if (!is_floating_point(t.dtype())) not_implemented(kernel, t.dtype());
  return t;
}

/// elu(x) = scale·x for x > 0, else scale·alpha·expm1(input_scale·x). The negative branch
/// reads min(x, 0), so that its (masked) gradient stays finite where exp would overflow;
/// x == 0 takes it, as ATen's `x <= 0` does, which gives elu_backward's value there.
Stack elu_decomposition(const Stack& a) {
  const Tensor& x = floating(a[0].to_tensor(), "elu");
  const double alpha = a[1].to_scalar().to_double(), scale = a[2].to_scalar().to_double();
  const Scalar input_scale = a[3].to_scalar();
  Tensor negative = expm1(clamp_max(x, 0) * input_scale) * Scalar(alpha * scale);
  return {where(x <= 0, negative, x * a[2].to_scalar())};
}

/// leaky_relu(x) = x for x > 0, else negative_slope·x (x == 0 and NaN take the slope, as ATen).
Stack leaky_relu_decomposition(const Stack& a) {
  const Tensor& x = floating(a[0].to_tensor(), "leaky_relu");
  return {where(x > 0, x, x * a[1].to_scalar())};
}

/// hardtanh(x) = clamp(x, min_val, max_val) in x's dtype, written with two selects so that
/// the gradient is zero at and beyond the bounds (hardtanh_backward's `x <= min || x >=
/// max`). min_val > max_val gives max_val everywhere, as clamp does.
Stack hardtanh_decomposition(const Stack& a) {
  const Tensor& x = a[0].to_tensor();
  const Scalar min_val = a[1].to_scalar(), max_val = a[2].to_scalar();
  EMBER_CHECK(x.dtype() != kBool) << "Bool inputs not supported for hardtanh";
  EMBER_CHECK(!(x.dtype() == kUInt8 && (min_val.to_double() < 0 || max_val.to_double() < 0)))
      << "cannot do hardtanh on an unsigned type with negative limits";
  const Scalar lo = min_val.to_double() > max_val.to_double() ? max_val : min_val;
  Tensor upper = where(x >= max_val, max_val, x);
  return {cast(where(x <= lo, lo, upper), x.dtype())};
}

/// pow(Scalar base, Tensor exponent): the base as a 0-dim tensor of the promoted dtype
/// (PyTorch's wrapped number), so pow.Tensor_Tensor gives the result and its gradient.
Stack pow_scalar_decomposition(const Stack& a) {
  const Tensor& exponent = a[1].to_tensor();
  Tensor base = scalar_tensor(a[0].to_scalar(), result_type({&a[0], &a[1]}), exponent.device());
  return call_op("aten::pow.Tensor_Tensor", {base, exponent});
}

/// atan2.out: the functional op, then copy_ into `out` (as in-place ops are computed). Ember
/// tensors are never resized, so `out` must already have the broadcast shape.
Stack atan2_out_decomposition(const Stack& a) {
  Tensor out = a[2].to_tensor();
  Tensor value = atan2(a[0].to_tensor(), a[1].to_tensor());
  EMBER_CHECK(same_sizes(out, value))
      << "atan2.out: expected out to have the result's shape " << value.sizes() << ", got " << out.sizes()
      << " (Ember does not resize out= tensors)";
  EMBER_CHECK(can_cast(value.dtype(), out.dtype()))
      << "result type " << scalar_type_name(value.dtype()) << " can't be cast to the desired output type "
      << scalar_type_name(out.dtype());
  copy_(out, value);
  return {out};
}

}  // namespace

void register_pointwise_composite_ops(Registry& r) {
  r.def("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor")
      .set_decomposition(elu_decomposition);
  r.def("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor").set_decomposition(leaky_relu_decomposition);
  r.def("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor")
      .set_decomposition(hardtanh_decomposition);
  r.def("pow.Scalar(Scalar self, Tensor exponent) -> Tensor").set_decomposition(pow_scalar_decomposition);
  r.def("atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)")
      .set_decomposition(atan2_out_decomposition);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_inplace;
using ops::call_tensor;

Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale, Loc loc) {
  return call_tensor(EMBER_OP("aten::elu"), {self, alpha, scale, input_scale}, loc);
}
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope, Loc loc) {
  return call_tensor(EMBER_OP("aten::leaky_relu"), {self, negative_slope}, loc);
}
Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val, Loc loc) {
  return call_tensor(EMBER_OP("aten::hardtanh"), {self, min_val, max_val}, loc);
}
Tensor pow(const Scalar& self, const Tensor& exponent, Loc loc) {
  return call_tensor(EMBER_OP("aten::pow.Scalar"), {self, exponent}, loc);
}
Tensor& atan2_out(Tensor& out, const Tensor& self, const Tensor& other, Loc loc) {
  return call_inplace(EMBER_OP("aten::atan2.out"), out, {self, other, out}, loc);
}

}  // namespace ember
