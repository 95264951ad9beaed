// ember/amp.h — automatic mixed precision, as torch.amp: `autocast` scopes, in which GEMMs
// and convolutions run in float16 or bfloat16 and precision-sensitive ops (losses,
// softmax, norms, sums) in float32, and `amp::GradScaler`, which scales a float16 loss so
// that small gradients do not flush to zero and skips optimizer steps whose gradients
// overflowed. See Note [autocast] (docs/notes/autocast.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember {

namespace optim {
class Optimizer;
}

/// A scope of mixed precision for one device type on this thread (torch.autocast):
///
///     {
///       ember::autocast scope(kCUDA, kBFloat16);
///       Tensor logits = model.forward(x);        // linear layers run in bfloat16
///       Tensor loss = nn::cross_entropy(logits, y);  // the loss in float32
///     }
///     loss.backward();                           // outside the scope
///
/// `device_type` is kCPU or kCUDA (no index). `dtype` is float16 or bfloat16; unset, it is
/// the thread's current autocast dtype of the device (bfloat16 for CPU, float16 for CUDA
/// unless an enclosing scope chose another). `enabled=false` turns autocast off for the
/// device inside the scope (a float32 region inside a mixed one). `cache_enabled` (unset:
/// unchanged) keeps one cast of each float32 leaf that requires grad (a weight) per
/// outermost scope. Scopes nest and restore the previous state when they end; the cache is
/// dropped when the outermost one ends. Destroy scopes on the thread that made them, in
/// reverse order (RAII does).
class autocast {
 public:
  explicit autocast(Device device_type, std::optional<ScalarType> dtype = std::nullopt, bool enabled = true,
                    std::optional<bool> cache_enabled = std::nullopt, Loc loc = Loc::current());
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType device_type_;
  bool prev_enabled_;
  ScalarType prev_dtype_;
  bool prev_cache_enabled_;
};

namespace amp {

/// Whether autocast is on for `device_type` (kCPU or kCUDA) on this thread.
bool is_autocast_enabled(Device device_type);
/// The dtype autocast uses for `device_type` on this thread (also when disabled).
ScalarType get_autocast_dtype(Device device_type);
bool is_autocast_cache_enabled();
/// Drops this thread's cached casts (the outermost scope's end does this).
void clear_autocast_cache();

/// GradScaler's constructor arguments (PyTorch's defaults).
struct GradScalerOptions {
  double init_scale = 65536.0;  // 2**16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

/// GradScaler's state (torch's `state_dict()` keys: scale, growth_factor, backoff_factor,
/// growth_interval, _growth_tracker).
struct GradScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;
};

/// Dynamic loss scaling for float16 training (torch.amp.GradScaler):
///
///     amp::GradScaler scaler(kCUDA);
///     for (...) {
///       opt.zero_grad();
///       Tensor loss;
///       { autocast scope(kCUDA); loss = loss_fn(model.forward(x), y); }
///       scaler.scale(loss).backward();
///       scaler.step(opt);     // unscales; skips the step if a gradient is inf or NaN
///       scaler.update();      // backs the scale off after a skip, grows it after
///     }                       // growth_interval clean steps
///
/// The scale is a 0-dim float32 tensor on the device of the first scaled output, the
/// growth tracker a 0-dim int32 one; the inf check and the update are ops on the device
/// (no host round trip), and step() reads one value to decide whether to step.
class GradScaler {
 public:
  /// `device` is the device type the scaler is for (kCUDA, as PyTorch's default, or kCPU).
  /// A CUDA scaler without a CUDA device disables itself with a warning, as PyTorch's.
  /// Raises ValueError for growth_factor <= 1 or backoff_factor >= 1.
  explicit GradScaler(Device device = kCUDA, GradScalerOptions options = {}, Loc loc = Loc::current());

  /// `outputs` multiplied by the current scale (unchanged when disabled).
  Tensor scale(const Tensor& outputs, Loc loc = Loc::current());
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs, Loc loc = Loc::current());

  /// Divides the optimizer's gradients by the scale in place and records whether any was
  /// inf or NaN. Optional: step() does it when it was not called. At most once per
  /// optimizer between update()s, and not after step().
  void unscale_(optim::Optimizer& optimizer, Loc loc = Loc::current());

  /// Unscales (unless unscale_ did) and runs optimizer.step() when every gradient is
  /// finite. Returns whether the optimizer stepped (false: the step was skipped).
  bool step(optim::Optimizer& optimizer, Loc loc = Loc::current());

  /// Multiplies the scale by backoff_factor if any step since the last update found an inf
  /// or NaN, by growth_factor after growth_interval clean steps in a row (unless that
  /// overflows float32); with `new_scale`, sets the scale to it instead.
  void update(std::optional<double> new_scale = std::nullopt, Loc loc = Loc::current());

  /// The current scale (init_scale before the first scale(); 1 when disabled).
  double get_scale() const;
  double get_growth_factor() const { return options_.growth_factor; }
  void set_growth_factor(double f) { options_.growth_factor = f; }
  double get_backoff_factor() const { return options_.backoff_factor; }
  void set_backoff_factor(double f) { options_.backoff_factor = f; }
  int64_t get_growth_interval() const { return options_.growth_interval; }
  void set_growth_interval(int64_t n) { options_.growth_interval = n; }
  /// Clean steps in a row since the scale last changed.
  int64_t growth_tracker() const;
  bool is_enabled() const { return options_.enabled; }

  /// The 0-dim scale tensor (undefined before the first scale()).
  const Tensor& scale_tensor() const { return scale_; }

  GradScalerState state_dict() const;
  void load_state_dict(const GradScalerState& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    std::vector<std::pair<Device, Tensor>> found_inf_per_device;
  };
  void check_initialized(const char* what) const;
  PerOptimizer& state_of(const optim::Optimizer& optimizer);

  Device device_;
  GradScalerOptions options_;
  int64_t init_growth_tracker_ = 0;
  Tensor scale_;           // float32, 0-dim; made by the first scale()
  Tensor growth_tracker_;  // int32, 0-dim
  std::map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace amp
}  // namespace ember
