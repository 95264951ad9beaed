// ops/norm.cpp — the normalization ops that PyTorch's Core ATen decomposes, as composites
// of Ember ops: the `_native_batch_norm_legit` family (what an exported graph's batch
// norm calls; each is native_batch_norm under another signature), group norm
// (native_group_norm, its backward, and the group_norm entry point) and layer norm's
// backward op. Their gradients come from the ops they expand into, and the inductor
// lowers and fuses those. native_layer_norm and native_batch_norm themselves, which have
// kernels, are in nn.cpp. See Note [nn].
#include <sstream>

#include "core/shape.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

std::optional<Tensor> optional_tensor(const IValue& v) { return v.to_optional_tensor(); }

/// An optional output of a backward op: None where the mask left it out.
IValue masked(bool wanted, const Tensor& t) { return wanted ? IValue(t) : IValue(); }

/// The dtype a decomposition computes in (ATen's opmath type): float for half and
/// bfloat16, the input's own otherwise.
ScalarType compute_type(ScalarType t) { return is_reduced_float(t) ? kFloat : t; }

// --- _native_batch_norm_legit -------------------------------------------------------------

/// The three legit variants are native_batch_norm with the running statistics required
/// (written in place in training), absent, or used for evaluation.
Stack batch_norm_legit(const Stack& a) {
  return call_op("aten::native_batch_norm", {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]});
}

Stack batch_norm_legit_no_stats(const Stack& a) {
  return call_op("aten::native_batch_norm", {a[0], a[1], a[2], IValue(), IValue(), a[3], a[4], a[5]});
}

Stack batch_norm_legit_no_training(const Stack& a) {
  return call_op("aten::native_batch_norm", {a[0], a[1], a[2], a[3], a[4], false, a[5], a[6]});
}

// --- layer norm backward ------------------------------------------------------------------

/// PyTorch's decomposition (torch/_decomp): in opmath, with the statistics broadcast
/// over the normalized dims.
Stack layer_norm_backward(const Stack& a) {
  const Tensor& grad_out = a[0].to_tensor();
  const Tensor& input = a[1].to_tensor();
  // Over SymInt (the schema's SymInt[]): sizes of the input and of the normalized shape are
  // compared and multiplied, never read as integers, so a symbolic batch, sequence or hidden
  // size stays symbolic (Note [dynamic shapes]).
  const std::vector<SymInt> shape = a[2].to_sym_int_list();
  const std::optional<Tensor> weight = optional_tensor(a[5]), bias = optional_tensor(a[6]);
  const auto& mask = a[7].to_bool_list();
  EMBER_CHECK(mask.size() == 3) << "output_mask must have 3 values, got " << mask.size();
  const int64_t nd = static_cast<int64_t>(shape.size()), axis = input.dim() - nd;
  const std::vector<SymInt> sizes = sym_sizes(input);
  if (nd < 1 || axis < 0 || std::vector<SymInt>(sizes.begin() + axis, sizes.end()) != shape) {
    std::ostringstream expected, given, got;
    for (const SymInt& s : shape) expected << ", " << s;
    for (size_t i = 0; i < shape.size(); ++i) given << (i ? ", " : "") << shape[i];
    for (size_t i = 0; i < sizes.size(); ++i) got << (i ? ", " : "") << sizes[i];
    EMBER_FAIL() << "Given normalized_shape=[" << given.str() << "], expected input with shape [*" << expected.str()
                 << "], but got input of size[" << got.str() << "]";
  }
  EMBER_CHECK(same_sizes(grad_out, input))
      << "native_layer_norm_backward: expected grad_out of the input's size " << input.sizes() << ", got "
      << grad_out.sizes();
  // ATen's kernel cannot make a gradient for a parameter that is not there.
  EMBER_CHECK(!mask[1] || weight) << "native_layer_norm_backward: output_mask asks for the weight's gradient, but "
                                     "weight is None";
  EMBER_CHECK(!mask[2] || bias) << "native_layer_norm_backward: output_mask asks for the bias's gradient, but bias "
                                   "is None";
  if (!is_floating_point(input.dtype())) not_implemented("LayerNormBackwardKernelImpl", input.dtype());
  std::vector<int64_t> inner, outer;
  SymInt M = 1, N = 1;
  for (int64_t d = 0; d < input.dim(); ++d) {
    (d < axis ? outer : inner).push_back(d);
    (d < axis ? M : N) = (d < axis ? M : N) * sizes[static_cast<size_t>(d)];
  }
  const ScalarType dt = input.dtype();
  if (M <= 0 || N <= 0) {
    const TensorOptions o = TensorOptions(dt).device(input.device());
    return {masked(mask[0], zeros(sizes, o)), masked(mask[1], zeros(shape, o)), masked(mask[2], zeros(shape, o))};
  }
  const ScalarType ct = compute_type(dt);
  std::vector<SymInt> stat_shape(sizes.begin(), sizes.begin() + axis);
  stat_shape.resize(static_cast<size_t>(input.dim()), SymInt(1));
  const Tensor g = cast(grad_out, ct), x = cast(input, ct);
  const Tensor mean = cast(a[3].to_tensor(), ct).reshape(stat_shape);
  const Tensor rstd = cast(a[4].to_tensor(), ct).reshape(stat_shape);
  const Tensor x_hat = (x - mean) * rstd;
  const Tensor g_hat = weight ? g * cast(*weight, ct) : g;
  Stack out(3);
  if (mask[0]) {
    const Tensor inner_sum = sum(g_hat, inner, /*keepdim=*/true);
    const Tensor proj = x_hat * sum(g_hat * x_hat, inner, /*keepdim=*/true);
    // N as a Scalar, or for a symbolic N as a size tensor (int64, 0-dim: it converts to the
    // compute dtype as the Scalar would).
    if (N.is_symbolic()) {
      const Tensor n = size_tensor(N, input.device());
      out[0] = cast(rstd / n * (g_hat * n - inner_sum - proj), dt);
    } else {
      const auto n = static_cast<double>(N.hint());
      out[0] = cast(rstd / n * (g_hat * n - inner_sum - proj), dt);
    }
  }
  const auto over_outer = [&](const Tensor& t) { return outer.empty() ? clone(t) : sum(t, outer); };
  if (mask[1]) out[1] = cast(over_outer(g * x_hat), dt);
  if (mask[2]) out[2] = cast(over_outer(g), dt);
  return out;
}

// --- group norm -----------------------------------------------------------------------------

// N, C and HxW are SymInts, as in native_group_norm's schema: a symbolic size is compared
// (a guard where its range does not decide: `Mod(C, group) == 0` for symbolic channels, as
// PyTorch's check) and computed with, never read as an integer, so the batch and the
// spatial sizes stay symbolic.

/// native_group_norm's checks (ATen's group_norm checks and the kernel's).
void check_group_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                      const SymInt& C, int64_t group) {
  EMBER_CHECK(group > 0) << "Expected num groups to be greater than 0, got " << group;
  EMBER_CHECK(C % group == 0) << "Expected number of channels in input to be divisible by num_groups, but got input "
                                 "of shape "
                              << input.sizes() << " and num_groups=" << group;
  const char* names[] = {"weight", "bias"};
  int i = 0;
  for (const auto& p : {weight, bias}) {
    EMBER_CHECK(!p || (p->dim() == 1 && sym_numel(*p) == C))
        << "Expected " << names[i] << " to be a vector of size equal to the number of channels in input, but got "
        << names[i] << " of shape " << p->sizes() << " and input of shape " << input.sizes();
    EMBER_CHECK(!p || p->dtype() == input.dtype()) << "expected scalar type " << scalar_type_name(input.dtype())
                                                   << " but found " << scalar_type_name(p->dtype());
    ++i;
  }
}

/// A per-channel parameter shaped to broadcast against (N, C, HxW).
Tensor per_channel(const Tensor& p, const SymInt& C) { return p.reshape({1, C, 1}); }

/// `t * (1 / count)`: by a Scalar when the count is plain; a symbolic count is a 0-dim
/// tensor (size_tensor; a Scalar holds no symbol), divided in `t`'s dtype.
Tensor times_reciprocal(const Tensor& t, const SymInt& count) {
  if (!count.is_symbolic()) return t * (1.0 / static_cast<double>(count.hint()));
  return t * (1.0 / size_tensor(count, t.device(), t.dtype()));
}

Stack group_norm_forward(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const std::optional<Tensor> weight = optional_tensor(a[1]), bias = optional_tensor(a[2]);
  const SymInt N = a[3].to_sym_int(), C = a[4].to_sym_int(), HxW = a[5].to_sym_int();
  const int64_t group = a[6].to_int();
  const double eps = a[7].to_double();
  check_group_norm(input, weight, bias, C, group);
  EMBER_CHECK(sym_numel(input) == N * C * HxW) << "Expected X.numel() == N * C * HxW to be true, but got false.";
  if (!is_floating_point(input.dtype())) not_implemented("GroupNormKernelImpl", input.dtype());
  const ScalarType dt = input.dtype(), ct = compute_type(dt);
  const Tensor x = cast(input, ct).reshape({N, group, (C / group) * HxW});
  const Tensor mean = ember::mean(x, {2}, /*keepdim=*/true);
  const Tensor rstd = rsqrt(var(x, std::vector<int64_t>{2}, Scalar(0), /*keepdim=*/true) + eps);
  Tensor y = ((x - mean) * rstd).reshape({N, C, HxW});
  if (weight) y = y * per_channel(cast(*weight, ct), C);
  if (bias) y = y + per_channel(cast(*bias, ct), C);
  return {cast(y.reshape(sym_sizes(input)), dt), cast(mean.reshape({N, group}), dt),
          cast(rstd.reshape({N, group}), dt)};
}

/// PyTorch's decomposition (torch/_decomp), in opmath.
Stack group_norm_backward(const Stack& a) {
  const Tensor& grad_out = a[0].to_tensor();
  const Tensor& input = a[1].to_tensor();
  const std::optional<Tensor> weight = optional_tensor(a[4]);
  const SymInt N = a[5].to_sym_int(), C = a[6].to_sym_int(), HxW = a[7].to_sym_int();
  const int64_t group = a[8].to_int();
  const auto& mask = a[9].to_bool_list();
  EMBER_CHECK(mask.size() == 3) << "output_mask must have 3 values, got " << mask.size();
  check_group_norm(input, weight, std::nullopt, C, group);
  EMBER_CHECK(sym_numel(input) == N * C * HxW) << "Expected X.numel() == N * C * HxW to be true, but got false.";
  EMBER_CHECK(same_sizes(grad_out, input))
      << "native_group_norm_backward: expected grad_out of the input's size " << input.sizes() << ", got "
      << grad_out.sizes();
  // ATen's kernel makes the parameter gradients like the weight, which must be there.
  EMBER_CHECK(!(mask[1] || mask[2]) || weight)
      << "native_group_norm_backward: output_mask asks for the weight's or the bias's gradient, but weight is None";
  if (!is_floating_point(input.dtype())) not_implemented("GroupNormBackwardKernelImpl", input.dtype());
  const ScalarType dt = input.dtype(), ct = compute_type(dt);
  const SymInt cpg = C / group;
  const Tensor g = cast(grad_out, ct).reshape({N, C, HxW}), x = cast(input, ct).reshape({N, C, HxW});
  const Tensor mean = cast(a[2].to_tensor(), ct).reshape({N, group, 1});
  const Tensor rstd = cast(a[3].to_tensor(), ct).reshape({N, group, 1});
  const Tensor ds = sum(g * x, {2}), db = sum(g, {2});  // (N, C)
  Stack out(3);
  if (mask[0]) {
    const Tensor w = weight ? cast(*weight, ct).reshape({1, group, cpg}) : Tensor();
    const auto per_group = [&](const Tensor& t) {  // (N, C) -> (N, G, 1), weighted by gamma
      const Tensor v = t.reshape({N, group, cpg});
      return sum(weight ? v * w : v, {2}, /*keepdim=*/true);
    };
    const Tensor ds_val = per_group(ds), db_val = per_group(db);
    const Tensor c1 = weight ? rstd * w : rstd.expand({N, group, cpg});                            // (N, G, cpg)
    const Tensor c2 = times_reciprocal((db_val * mean - ds_val) * rstd * rstd * rstd, HxW * cpg);  // (N, G, 1)
    const Tensor c3 = -c2 * mean - times_reciprocal(db_val * rstd, HxW * cpg);                     // (N, G, 1)
    const Tensor gi = g.reshape({N, group, cpg, HxW}) * c1.unsqueeze(3) +
                      x.reshape({N, group, cpg, HxW}) * c2.unsqueeze(3) + c3.unsqueeze(3);
    out[0] = cast(gi.reshape(sym_sizes(input)), dt);
  }
  if (mask[1]) {
    const Tensor d = (ds.reshape({N, group, cpg}) - db.reshape({N, group, cpg}) * mean) * rstd;
    out[1] = cast(sum(d, {0}).reshape({C}), dt);
  }
  if (mask[2]) out[2] = cast(sum(db, {0}), dt);
  return out;
}

/// torch.nn.functional.group_norm's entry point: N, C and HxW from the input's shape
/// (HxW the product of the sizes after C, as ATen's multiply_integers).
Stack group_norm(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const int64_t group = a[1].to_int();
  core::wrap_dim(1, input.dim());  // the channel dim must exist (PyTorch's IndexError)
  const SymInt N = sym_size(input, 0), C = sym_size(input, 1);
  check_group_norm(input, optional_tensor(a[2]), optional_tensor(a[3]), C, group);
  SymInt HxW = 1;
  for (int64_t d = 2; d < input.dim(); ++d) HxW = HxW * sym_size(input, d);
  Stack outs = call_op("aten::native_group_norm", {input, a[2], a[3], N, C, HxW, group, a[4]});
  return {outs[0]};
}

}  // namespace

void register_norm_ops(Registry& r) {
  // The running statistics are written in place in training (native_batch_norm's (a!)/(b!)).
  r.def("_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, "
        "Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
      .set_decomposition(batch_norm_legit);
  r.def("_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, "
        "float momentum, float eps) -> (Tensor, Tensor, Tensor)")
      .set_decomposition(batch_norm_legit_no_stats);
  r.def("_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
      .set_decomposition(batch_norm_legit_no_training);

  r.def("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, "
        "Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
      .set_decomposition(layer_norm_backward);

  r.def("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, "
        "float eps) -> (Tensor, Tensor, Tensor)")
      .set_decomposition(group_norm_forward);
  r.def("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
        "SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
      .set_decomposition(group_norm_backward);
  r.def("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor")
      .set_decomposition(group_norm);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_at;
using ops::call_tensor;

namespace {
std::vector<bool> mask_list(std::array<bool, 3> m) { return {m[0], m[1], m[2]}; }
}  // namespace

std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias, const Tensor& running_mean,
                                                            const Tensor& running_var, bool training, double momentum,
                                                            double eps, Loc loc) {
  return ops::tuple3(call_at(EMBER_OP("aten::_native_batch_norm_legit"),
                             {input, weight, bias, running_mean, running_var, training, momentum, eps}, loc));
}
std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias, bool training,
                                                            double momentum, double eps, Loc loc) {
  return ops::tuple3(call_at(EMBER_OP("aten::_native_batch_norm_legit.no_stats"),
                             {input, weight, bias, training, momentum, eps}, loc));
}
std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit_no_training(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const Tensor& running_mean, const Tensor& running_var, double momentum, double eps, Loc loc) {
  return ops::tuple3(call_at(EMBER_OP("aten::_native_batch_norm_legit_no_training"),
                             {input, weight, bias, running_mean, running_var, momentum, eps}, loc));
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              IntArrayRef normalized_shape, const Tensor& mean,
                                                              const Tensor& rstd, const std::optional<Tensor>& weight,
                                                              const std::optional<Tensor>& bias,
                                                              std::array<bool, 3> output_mask, Loc loc) {
  return ops::masked3(call_at(EMBER_OP("aten::native_layer_norm_backward"),
                           {grad_out, input, normalized_shape, mean, rstd, weight, bias, mask_list(output_mask)},
                           loc));
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, int64_t N, int64_t C,
                                                     int64_t HxW, int64_t group, double eps, Loc loc) {
  return ops::tuple3(
      call_at(EMBER_OP("aten::native_group_norm"), {input, weight, bias, N, C, HxW, group, eps}, loc));
}
std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              const Tensor& mean, const Tensor& rstd,
                                                              const std::optional<Tensor>& weight, int64_t N,
                                                              int64_t C, int64_t HxW, int64_t group,
                                                              std::array<bool, 3> output_mask, Loc loc) {
  return ops::masked3(call_at(EMBER_OP("aten::native_group_norm_backward"),
                           {grad_out, input, mean, rstd, weight, N, C, HxW, group, mask_list(output_mask)}, loc));
}
Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, Loc loc) {
  return call_tensor(EMBER_OP("aten::group_norm"), {input, num_groups, weight, bias, eps, true}, loc);
}

}  // namespace ember
