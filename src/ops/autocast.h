// ops/autocast.h — automatic mixed precision at dispatch (Note [autocast]): each thread's
// autocast state (enabled and dtype per device type, the cast cache, the nesting of
// scopes), the table of ops and their cast policies per device (PyTorch's lists), and the
// rule that rewrites an op's arguments. ops::call applies it before an op expands or
// reaches any layer, so capture records the casts as `_to_copy` nodes and autograd
// differentiates through them. The public side is include/ember/amp.h.
#pragma once

#include <optional>
#include <string>

#include "ops/registry.h"

namespace ember::ops {

/// How autocast treats an op's arguments (PyTorch's CastPolicy).
enum class CastPolicy : uint8_t {
  None,              // not on a list: runs as called (composite ops' inner ops still see autocast)
  LowerPrecisionFp,  // eligible tensors cast to the autocast dtype (GEMMs, convolutions)
  Fp32,              // eligible tensors cast to float32 (losses, norms, exp/log/pow)
  Fp32SetOptDtype,   // `dtype=None` becomes float32 when the first argument is eligible (softmax, sum)
  Promote,           // eligible tensors cast to the widest of float32 and the autocast dtype they hold
  Banned,            // raises: unsafe to autocast (binary_cross_entropy on CUDA)
};
const char* cast_policy_name(CastPolicy p);

/// The policy of `op` for tensors on `device` (CPU or CUDA; None for other devices).
CastPolicy autocast_policy(const OpDef& op, DeviceType device);

/// Every op with a policy on some device, for tests and docs: (name, CUDA policy, CPU policy).
struct AutocastRow {
  const char* op;
  CastPolicy cuda;
  CastPolicy cpu;
};
std::vector<AutocastRow> autocast_rows();

/// What a graph traced on this thread depends on: the per-device switches and dtypes and
/// whether casts are cached (capture guards on it, as dynamo's global state guard does).
struct AutocastState {
  bool cpu_enabled = false;
  bool cuda_enabled = false;
  ScalarType cpu_dtype = ScalarType::BFloat16;
  ScalarType cuda_dtype = ScalarType::Half;
  bool cache_enabled = true;
  bool operator==(const AutocastState&) const = default;
  bool any_enabled() const { return cpu_enabled || cuda_enabled; }
  /// "autocast(cpu, bfloat16) enabled, autocast(cuda) disabled, cache enabled".
  std::string str() const;
};
AutocastState autocast_state();

/// Whether autocast is enabled for any device on this thread (one thread-local read).
bool autocast_active();

/// The arguments `op` runs with under this thread's autocast state, or nullopt when the
/// op has no policy for its tensors' device (it then runs as called). Casts go through
/// `_to_copy`, so the layers below see and record them. Raises for a banned op.
std::optional<Stack> autocast_args(const OpDef& op, const Stack& args);

/// Applies `policy` for `device` to `args` whatever the op's table row says (for tests
/// that check a policy on the CPU that only CUDA's list uses).
Stack apply_cast_policy(CastPolicy policy, DeviceType device, const OpDef& op, const Stack& args);

/// Installed by the autograd library: whether `t` is a leaf that requires grad (a model
/// weight). Only such float32 tensors have their casts to the autocast dtype cached.
using AutocastLeafTest = bool (*)(const Tensor& t);
void set_autocast_leaf_test(AutocastLeafTest test);

/// Turns the cast cache off on this thread while alive. Capture traces under it, as
/// PyTorch's make_fx does (a cached cast is a tensor of the trace, or a stale real one).
class AutocastCacheDisabled {
 public:
  AutocastCacheDisabled();
  ~AutocastCacheDisabled();
  AutocastCacheDisabled(const AutocastCacheDisabled&) = delete;
  AutocastCacheDisabled& operator=(const AutocastCacheDisabled&) = delete;

 private:
  bool was_enabled_;
};

/// Number of casts in this thread's cache (tests).
size_t autocast_cache_size();

}  // namespace ember::ops
