// AdamW (decoupled weight decay, optional AMSGrad): torch/optim/adamw.py's
// _single_tensor_adamw. addcmul_/addcdiv_ are spelled as the products ATen's CPU kernels
// form (self + value * t1 * t2, self + value * t1 / t2) so float32 rounding matches.
// The factors that change with the step count enter the ops as 0-dim tensors, not
// numbers, so that a compiled step is the same graph at every step (Note [outside state]
// in docs/notes/capture.md).
#include <cmath>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ops/dispatch.h"
#include "optim/optim_utils.h"

namespace ember::optim {
namespace {

/// A 0-dim float64 tensor holding `v`, made from data rather than by an op: while a step
/// is traced it is a graph input, where a number would be a literal of the graph (a new
/// graph, and a new compile, at every step). Ops treat it as they treat the number itself:
/// a 0-dim tensor does not promote a dimensioned operand's dtype.
Tensor number(double v) {
  Tensor t = ops::empty_from_meta(TensorMeta{{}, {}, kDouble, kCPU});
  *t.data_ptr<double>() = v;
  return t;
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
  const AdamWOptions& o = options_;
  const double beta1 = o.betas.first, beta2 = o.betas.second;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& param = params_[i];
    Tensor g = param.grad();
    if (!g.defined()) continue;
    AdamWParamState& st = state_[i];
    if (st.step == 0) {
      st.exp_avg = zeros_like(param);
      st.exp_avg_sq = zeros_like(param);
      if (o.amsgrad) st.max_exp_avg_sq = zeros_like(param);
    }
    Tensor grad = o.maximize ? g.neg() : g;
    st.step += 1;
    param.mul_(1 - o.lr * o.weight_decay);
    st.exp_avg.mul_(beta1);
    st.exp_avg.add_(grad, 1 - beta1);
    st.exp_avg_sq.mul_(beta2);
    st.exp_avg_sq.add_(mul(mul(grad, 1 - beta2), grad));
    const auto step = static_cast<double>(st.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double step_size = o.lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    Tensor denom;
    if (o.amsgrad) {
      st.max_exp_avg_sq.copy_(maximum(st.max_exp_avg_sq, st.exp_avg_sq));
      denom = add(div(st.max_exp_avg_sq.sqrt(), number(bias_correction2_sqrt)), o.eps);
    } else {
      denom = add(div(st.exp_avg_sq.sqrt(), number(bias_correction2_sqrt)), o.eps);
    }
    param.add_(div(mul(st.exp_avg, number(-step_size)), denom));
  }
}

}  // namespace ember::optim
