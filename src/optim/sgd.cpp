// SGD with momentum, dampening, Nesterov and weight decay: torch/optim/sgd.py's
// _single_tensor_sgd, op for op, so results match PyTorch's rounding.
#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops/pointwise.h"
#include "optim/optim_utils.h"

namespace ember::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params)), options_(options), state_(params_.size()) {
  EMBER_CHECK_VALUE(options.lr >= 0.0) << "Invalid learning rate: " << py_float(options.lr);
  EMBER_CHECK_VALUE(options.momentum >= 0.0) << "Invalid momentum value: " << py_float(options.momentum);
  EMBER_CHECK_VALUE(options.weight_decay >= 0.0) << "Invalid weight_decay value: " << py_float(options.weight_decay);
  EMBER_CHECK_VALUE(!options.nesterov || (options.momentum > 0 && options.dampening == 0))
      << "Nesterov momentum requires a momentum and zero dampening";
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& param = params_[i];
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    Tensor d_p = o.maximize ? grad.neg() : grad;
    if (o.weight_decay != 0) d_p = add(d_p, param, o.weight_decay);
    if (o.momentum != 0) {
      Tensor& buf = state_[i].momentum_buffer;
      if (!buf.defined()) {
        buf = d_p.clone().detach();
      } else {
        buf.mul_(o.momentum);
        buf.add_(d_p, 1 - o.dampening);
      }
      d_p = o.nesterov ? add(d_p, buf, o.momentum) : buf;
    }
    param.add_(d_p, -o.lr);
  }
}

}  // namespace ember::optim
