// optim/grad_scaler.cpp — amp::GradScaler (include/ember/amp.h), torch.amp.GradScaler's
// behaviour op for op. PyTorch's two fused kernels are written with Ember's ops, so they
// run on any device without a host round trip and compile like any other ops:
//
//   _amp_foreach_non_finite_check_and_unscale_  found_inf = 1 if any gradient holds an inf
//                                                or NaN; every gradient *= inv_scale
//   _amp_update_scale_                           found_inf: scale *= backoff, tracker = 0;
//                                                else tracker + 1 == growth_interval: scale
//                                                *= growth (if still finite), tracker = 0;
//                                                else tracker += 1
//
// See Note [autocast], "GradScaler".
#include <algorithm>
#include <iostream>

#include "ember/amp.h"
#include "ember/autograd.h"
#include "ember/cuda.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/optim.h"
#include "optim/optim_utils.h"
#include "support/call_context.h"

namespace ember::amp {
namespace {

/// A tensor holding an inf or NaN has a NaN in `g * 0` (finite values give zeros), so
/// the float32 sum of `g * 0` is NaN exactly then. One reduction per gradient, and the
/// sum of zeros cannot overflow.
Tensor non_finite_probe(const Tensor& grad) { return sum(grad * 0, ScalarType::Float); }

/// _amp_foreach_non_finite_check_and_unscale_ for the gradients of one device: sets
/// `found_inf` (0-dim float32) to 1 when any gradient is not finite, else leaves it, and
/// multiplies each gradient by `inv_scale` in place (also when one is not finite: the
/// step is skipped then).
void non_finite_check_and_unscale(const std::vector<Tensor>& grads, Tensor& found_inf, const Tensor& inv_scale) {
  Tensor probe;
  for (const Tensor& g : grads) {
    Tensor p = non_finite_probe(g);
    probe = probe.defined() ? probe + p : p;
  }
  if (!probe.defined()) return;
  found_inf.copy_(logical_or(found_inf.ne(0), isnan(probe)));
  for (Tensor g : grads) g.mul_(inv_scale);
}

/// _amp_update_scale_: the new scale and growth tracker from `found_inf`, computed on the
/// scale's device. The products are taken in float64 and rounded to float32 once, as
/// PyTorch's kernel multiplies a float by a double.
void update_scale(Tensor& scale, Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                  double backoff_factor, int64_t growth_interval) {
  const Tensor found = found_inf.ne(0);
  const Tensor scale64 = scale.to(ScalarType::Double);
  const Tensor grown = (scale64 * growth_factor).to(ScalarType::Float);
  const Tensor backed_off = (scale64 * backoff_factor).to(ScalarType::Float);
  const Tensor successful = growth_tracker + 1;
  const Tensor grow = successful.eq(growth_interval);
  // Not past float32's range to inf.
  const Tensor grown_finite = logical_not(isnan(grown * 0));
  const Tensor new_scale = where(found, backed_off, where(logical_and(grow, grown_finite), grown, scale));
  const Tensor zero = zeros_like(growth_tracker);
  const Tensor new_tracker = where(logical_or(found, grow), zero, successful);
  scale.copy_(new_scale);
  growth_tracker.copy_(new_tracker);
}

}  // namespace

GradScaler::GradScaler(Device device, GradScalerOptions options, Loc loc)
    : device_(device), options_(options), init_growth_tracker_(0) {
  support::UserLocScope scope(loc);
  EMBER_CHECK_VALUE((device.is_cpu() || device.is_cuda()) && device.index < 0)
      << "GradScaler takes the device type kCUDA or kCPU, got " << device;
  if (options_.enabled && device.is_cuda() && !cuda::is_available()) {
    std::cerr << "UserWarning: GradScaler is enabled, but CUDA is not available.  Disabling. ("
              << cuda::unavailable_reason() << ")" << std::endl;
    options_.enabled = false;
  }
  if (options_.enabled) {
    EMBER_CHECK_VALUE(options_.growth_factor > 1.0)
        << "The growth factor must be > 1.0, got " << optim::py_float(options_.growth_factor);
    EMBER_CHECK_VALUE(options_.backoff_factor < 1.0)
        << "The backoff factor must be < 1.0, got " << optim::py_float(options_.backoff_factor);
  }
}

void GradScaler::check_initialized(const char* what) const {
  EMBER_CHECK(scale_.defined()) << "Attempted " << what
                                << " but _scale is None.  This may indicate your script did not use "
                                   "scaler.scale(loss or outputs) earlier in the iteration.";
}

GradScaler::PerOptimizer& GradScaler::state_of(const optim::Optimizer& optimizer) {
  return per_optimizer_[&optimizer];
}

Tensor GradScaler::scale(const Tensor& outputs, Loc loc) {
  if (!options_.enabled) return outputs;
  support::UserLocScope scope(loc);
  EMBER_CHECK(outputs.defined()) << "GradScaler.scale: expected a tensor, got an undefined one";
  if (!scale_.defined()) {
    scale_ = full({}, options_.init_scale, TensorOptions(ScalarType::Float).device(outputs.device()));
    growth_tracker_ = full({}, static_cast<double>(init_growth_tracker_),
                           TensorOptions(ScalarType::Int32).device(outputs.device()));
  }
  return outputs * scale_.to(outputs.device());
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs, Loc loc) {
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (const Tensor& t : outputs) out.push_back(scale(t, loc));
  return out;
}

void GradScaler::unscale_(optim::Optimizer& optimizer, Loc loc) {
  if (!options_.enabled) return;
  support::UserLocScope scope(loc);
  check_initialized("unscale_");
  PerOptimizer& state = state_of(optimizer);
  EMBER_CHECK(state.stage != Stage::Unscaled)
      << "unscale_() has already been called on this optimizer since the last update().";
  EMBER_CHECK(state.stage != Stage::Stepped) << "unscale_() is being called after step().";

  NoGradGuard no_grad;
  // The reciprocal in float64: a float32 division can be off by an ulp under some flags.
  const Tensor inv_scale = scale_.to(ScalarType::Double).reciprocal().to(ScalarType::Float);
  // Gradients per device (PyTorch also splits by dtype for its fused kernel; these ops
  // take any dtype).
  std::vector<std::pair<Device, std::vector<Tensor>>> per_device;
  for (const Tensor& p : optimizer.params()) {
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    EMBER_CHECK_VALUE(g.dtype() != ScalarType::Half) << "Attempting to unscale FP16 gradients.";
    auto it = std::find_if(per_device.begin(), per_device.end(), [&](const auto& e) { return e.first == g.device(); });
    if (it == per_device.end()) it = per_device.insert(per_device.end(), {g.device(), {}});
    it->second.push_back(g);
  }
  state.found_inf_per_device.clear();
  for (auto& [device, grads] : per_device) {
    Tensor found_inf = zeros({}, TensorOptions(ScalarType::Float).device(device));
    non_finite_check_and_unscale(grads, found_inf, inv_scale.to(device));
    state.found_inf_per_device.emplace_back(device, found_inf);
  }
  state.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer, Loc loc) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  support::UserLocScope scope(loc);
  check_initialized("step");
  PerOptimizer& state = state_of(optimizer);
  EMBER_CHECK(state.stage != Stage::Stepped) << "step() has already been called since the last update().";
  if (state.stage == Stage::Ready) unscale_(optimizer, loc);
  EMBER_CHECK(!state.found_inf_per_device.empty()) << "No inf checks were recorded for this optimizer.";
  bool found_inf = false;
  for (const auto& [device, f] : state.found_inf_per_device) found_inf = found_inf || f.item<float>() != 0.0f;
  if (!found_inf) optimizer.step();
  state.stage = Stage::Stepped;
  return !found_inf;
}

void GradScaler::update(std::optional<double> new_scale, Loc loc) {
  if (!options_.enabled) return;
  support::UserLocScope scope(loc);
  check_initialized("update");
  NoGradGuard no_grad;
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    std::vector<Tensor> found_infs;
    for (const auto& [opt, state] : per_optimizer_)
      for (const auto& [device, f] : state.found_inf_per_device) found_infs.push_back(f.to(scale_.device()));
    EMBER_CHECK(!found_infs.empty()) << "No inf checks were recorded prior to update.";
    Tensor combined = found_infs[0];
    for (size_t i = 1; i < found_infs.size(); ++i) combined = combined + found_infs[i];
    update_scale(scale_, growth_tracker_, combined, options_.growth_factor, options_.backoff_factor,
                 options_.growth_interval);
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled) return 1.0;
  return scale_.defined() ? static_cast<double>(scale_.item<float>()) : options_.init_scale;
}

int64_t GradScaler::growth_tracker() const {
  if (!options_.enabled) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int32_t>() : init_growth_tracker_;
}

GradScalerState GradScaler::state_dict() const {
  if (!options_.enabled) return {};
  return {get_scale(), options_.growth_factor, options_.backoff_factor, options_.growth_interval, growth_tracker()};
}

void GradScaler::load_state_dict(const GradScalerState& s) {
  if (!options_.enabled) return;
  NoGradGuard no_grad;
  options_.init_scale = s.scale;
  if (scale_.defined()) scale_.fill_(s.scale);
  options_.growth_factor = s.growth_factor;
  options_.backoff_factor = s.backoff_factor;
  options_.growth_interval = s.growth_interval;
  init_growth_tracker_ = s.growth_tracker;
  if (growth_tracker_.defined()) growth_tracker_.fill_(static_cast<double>(s.growth_tracker));
}

}  // namespace ember::amp
