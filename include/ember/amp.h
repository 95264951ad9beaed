// ember/amp.h — automatic mixed precision, as torch.amp: `autocast` scopes, in which GEMMs
// and convolutions run in float16 or bfloat16 and precision-sensitive ops (losses,
// softmax, norms, sums) in float32. See Note [autocast] (docs/notes/autocast.md).
#pragma once

#include <optional>

#include "ember/tensor.h"

namespace ember {

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

}  // namespace amp
}  // namespace ember
