// autograd/gradcheck.cpp — see gradcheck.h. The perturbation loop writes input elements
// directly (it is a test utility, not a formula) under NoGradGuard.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"

namespace ember::autograd {
namespace {

/// Fixed, non-symmetric weights so that every output element matters differently.
Tensor weights_like(const Tensor& t, size_t k) {
  std::vector<double> w(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(1.3 * static_cast<double>(i) + 0.7 * static_cast<double>(k) + 0.5);
  return tensor(w, t.sizes()).to(t.dtype());
}

double weighted_sum(const std::vector<Tensor>& outs, const std::vector<Tensor>& weights) {
  double total = 0;
  for (size_t k = 0; k < outs.size(); ++k)
    if (weights[k].defined()) total += sum(outs[k].to(kDouble) * weights[k].to(kDouble)).item<double>();
  return total;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                          double rtol) {
  std::vector<Tensor> xs;
  std::vector<size_t> diff;  // indices of the differentiated inputs
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].is_floating_point()) {
      NoGradGuard no_grad;
      xs.push_back(inputs[i].to(kDouble).clone().contiguous().detach());
      xs.back().requires_grad_(true);
      diff.push_back(i);
    } else {
      xs.push_back(inputs[i]);
    }
  }

  std::vector<Tensor> outs = fn(xs);
  std::vector<Tensor> weights;
  Tensor loss;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined() || !outs[k].is_floating_point() || !outs[k].requires_grad()) {
      weights.emplace_back();
      continue;
    }
    weights.push_back(weights_like(outs[k], k));
    Tensor term = sum(outs[k] * weights.back());
    loss = loss.defined() ? loss + term : term;
  }
  GradcheckResult result;
  if (!loss.defined()) {
    result.ok = false;
    result.message = "no output requires grad";
    return result;
  }
  std::vector<Tensor> wrt;
  for (size_t i : diff) wrt.push_back(xs[i]);
  std::vector<Tensor> analytic = grad({loss}, wrt, {}, false, /*allow_unused=*/true);

  NoGradGuard no_grad;
  for (size_t j = 0; j < diff.size(); ++j) {
    Tensor& x = xs[diff[j]];
    double* data = x.data_ptr<double>();
    std::vector<double> a = analytic[j].defined() ? analytic[j].to(kDouble).to_vector<double>()
                                                  : std::vector<double>(static_cast<size_t>(x.numel()), 0.0);
    for (int64_t e = 0; e < x.numel(); ++e) {
      const double v = data[e];
      data[e] = v + eps;
      const double plus = weighted_sum(fn(xs), weights);
      data[e] = v - eps;
      const double minus = weighted_sum(fn(xs), weights);
      data[e] = v;
      const double numeric = (plus - minus) / (2 * eps);
      const double got = a[static_cast<size_t>(e)];
      if (!(std::abs(got - numeric) <= atol + rtol * std::abs(numeric))) {
        std::ostringstream msg;
        msg << "Jacobian mismatch for input " << diff[j] << " at element " << e << ": analytic " << got
            << ", numeric " << numeric;
        result.ok = false;
        result.message = msg.str();
        return result;
      }
    }
  }
  return result;
}

}  // namespace ember::autograd
