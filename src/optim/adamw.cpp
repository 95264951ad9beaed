// AdamW (decoupled weight decay, optional AMSGrad): torch/optim/adamw.py's
// _single_tensor_adamw. addcmul_/addcdiv_ are spelled as the products ATen's CPU kernels
// form (self + value * t1 * t2, self + value * t1 / t2) so float32 rounding matches.
// The step count is a 0-dim tensor and the factors that change with it (the bias
// corrections) are computed from it by ops, in float64 as PyTorch computes them in Python
// floats: a compiled step reads the count as graph state, advances it in place and is one
// graph at every step (Note [outside state] in docs/notes/capture.md). Capturable, the
// count and the corrections stay on the parameters' device (Note [capturable] in
// docs/notes/optim.md).
#include <cmath>

#include "core/fake.h"
#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ops/dispatch.h"
#include "optim/optim_utils.h"

namespace ember::optim {
namespace {

/// `1 - beta ** step` for the 0-dim float64 step count.
Tensor bias_correction(double beta, const Tensor& step) {
  return 1.0 - pow(scalar_tensor(beta, TensorOptions().dtype(kDouble)), step);
}

/// Whether a step traced now should be made capturable, as torch.compile makes it
/// (dynamo's OptimizerVariable): being compiled, before any parameter has state, with
/// every parameter on CUDA. Once the step counts exist on the host they stay there.
bool compiles_a_first_cuda_step(const std::vector<Tensor>& params, const std::vector<AdamWParamState>& state) {
  if (!core::compiling()) return false;
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i].is_cuda() || state[i].step.defined()) return false;
  return true;
}

/// The end of a capturable step, after the moments: PyTorch 1.13's capturable branch op for
/// op, every factor a 0-dim float32 tensor on the device. `lr / t` and `eps / t` are
/// `t.reciprocal() * lr`, as Python's reflected division of a tensor computes them.
void capturable_update(Tensor& param, const Tensor& decayed, AdamWParamState& st, const AdamWOptions& o) {
  const Tensor bias_correction1 = 1.0 - pow(o.betas.first, st.step);
  const Tensor bias_correction2 = 1.0 - pow(o.betas.second, st.step);
  const Tensor step_size_neg = neg(o.lr / bias_correction1);
  const Tensor bias_correction2_sqrt = sqrt(bias_correction2);
  if (o.amsgrad) st.max_exp_avg_sq.copy_(maximum(st.max_exp_avg_sq, st.exp_avg_sq));
  const Tensor& second_moment = o.amsgrad ? st.max_exp_avg_sq : st.exp_avg_sq;
  const Tensor denom = add(div(second_moment.sqrt(), mul(bias_correction2_sqrt, step_size_neg)), o.eps / step_size_neg);
  param.copy_(add(decayed, div(st.exp_avg, denom)));
}

}  // namespace

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : Optimizer(std::move(params)), options_(options), state_(params_.size()) {
  EMBER_CHECK_VALUE(options.lr >= 0.0) << "Invalid learning rate: " << py_float(options.lr);
  EMBER_CHECK_VALUE(options.eps >= 0.0) << "Invalid epsilon value: " << py_float(options.eps);
  EMBER_CHECK_VALUE(options.betas.first >= 0.0 && options.betas.first < 1.0)
      << "Invalid beta parameter at index 0: " << py_float(options.betas.first);
  EMBER_CHECK_VALUE(options.betas.second >= 0.0 && options.betas.second < 1.0)
      << "Invalid beta parameter at index 1: " << py_float(options.betas.second);
  EMBER_CHECK_VALUE(options.weight_decay >= 0.0)
      << "Invalid weight_decay value: " << py_float(options.weight_decay);
}

void AdamW::step() {
  NoGradGuard no_grad;
  if (!options_.capturable && compiles_a_first_cuda_step(params_, state_)) options_.capturable = true;
  const AdamWOptions& o = options_;
  const double beta1 = o.betas.first, beta2 = o.betas.second;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& param = params_[i];
    Tensor g = param.grad();
    if (!g.defined()) continue;
    AdamWParamState& st = state_[i];
    if (!st.exp_avg.defined()) {
      st.step = zeros({}, TensorOptions().dtype(kFloat).device(o.capturable ? param.device() : Device(kCPU)));
      st.exp_avg = zeros_like(param);
      st.exp_avg_sq = zeros_like(param);
      if (o.amsgrad) st.max_exp_avg_sq = zeros_like(param);
    }
    // A gradient laid out unlike its parameter (a weight's, through a transposed product)
    // is copied once into the parameter's layout: every pass below then reads and writes
    // all of its tensors in the same order. The values are unchanged.
    Tensor grad = o.maximize ? g.neg() : g;
    if (grad.strides() != param.strides() && param.is_contiguous()) grad = grad.contiguous();
    EMBER_CHECK(!o.capturable || (param.is_cuda() && st.step.is_cuda()))
        << "If capturable=True, params and state_steps must be CUDA tensors.";
    st.step.add_(1);
    // Each of param, exp_avg and exp_avg_sq is written once: the chain of PyTorch's in-place
    // ops (p.mul_(...); p.add_(...)) is the same chain of float32 roundings as functional
    // ops whose result is copied back at the end, without an in-place op's copy per link.
    const Tensor decayed = mul(param, 1 - o.lr * o.weight_decay);
    st.exp_avg.copy_(add(mul(st.exp_avg, beta1), grad, 1 - beta1));
    st.exp_avg_sq.copy_(add(mul(st.exp_avg_sq, beta2), mul(mul(grad, 1 - beta2), grad)));
    if (o.capturable) {
      capturable_update(param, decayed, st, o);
      continue;
    }
    const Tensor step = st.step.to(kDouble);
    // -step_size = -lr / bias_correction1 (negating lr is exact); both enter the float32
    // ops as 0-dim float64 tensors, which do not promote.
    const Tensor neg_step_size = scalar_tensor(-o.lr, TensorOptions().dtype(kDouble)) / bias_correction(beta1, step);
    const Tensor bias_correction2_sqrt = sqrt(bias_correction(beta2, step));
    Tensor denom;
    if (o.amsgrad) {
      st.max_exp_avg_sq.copy_(maximum(st.max_exp_avg_sq, st.exp_avg_sq));
      denom = add(div(st.max_exp_avg_sq.sqrt(), bias_correction2_sqrt), o.eps);
    } else {
      denom = add(div(st.exp_avg_sq.sqrt(), bias_correction2_sqrt), o.eps);
    }
    param.copy_(add(decayed, div(mul(st.exp_avg, neg_step_size), denom)));
  }
}

}  // namespace ember::optim
