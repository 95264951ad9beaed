// ops/autocast.cpp — see autocast.h and Note [autocast]. Owns the per-thread autocast
// state, the op → policy table (kPolicies, PyTorch's lists restricted to the ops Ember
// registers) and the cast rules (eligibility, the weight cache, promotion).
#include "ops/autocast.h"

#include <atomic>
#include <sstream>
#include <unordered_map>

#include "ember/amp.h"
#include "ops/dispatch.h"
#include "support/call_context.h"

namespace ember::ops {
namespace {

constexpr CastPolicy kLow = CastPolicy::LowerPrecisionFp;
constexpr CastPolicy kFp32 = CastPolicy::Fp32;
constexpr CastPolicy kSetDtype = CastPolicy::Fp32SetOptDtype;
constexpr CastPolicy kPromote = CastPolicy::Promote;
constexpr CastPolicy kBanned = CastPolicy::Banned;
constexpr CastPolicy kNone = CastPolicy::None;

// One row per op: its policy for CUDA tensors (PyTorch's Autocast key: the lists
// AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
// AT_FORALL_PROMOTE and the banned binary_cross_entropy) and for CPU tensors (the
// AutocastCPU key's list, which differs: no softmax, sum or layer_norm; prod in fp32; cat
// and stack promote). Only ops Ember registers appear; tests/unit/ops/autocast_test.cpp
// checks the rows against PyTorch's lists, so an op added later that PyTorch lists fails
// there until it has its row. Composite ops on a list cast once and run their expansion
// without autocast; ops off the lists (nll_loss_nd, cross_entropy_loss on CUDA) expand
// and their inner ops meet the table.
constexpr AutocastRow kPolicies[] = {
    // GEMMs and convolutions in the autocast dtype.
    {"aten::mm", kLow, kLow},
    {"aten::bmm", kLow, kLow},
    {"aten::addmm", kLow, kLow},
    {"aten::matmul", kLow, kLow},
    {"aten::linear", kLow, kLow},
    {"aten::scaled_dot_product_attention", kLow, kLow},
    {"aten::mv", kLow, kNone},
    {"aten::conv1d", kLow, kLow},
    {"aten::conv2d", kLow, kLow},
    {"aten::convolution", kLow, kNone},
    // Ops whose range or accuracy needs float32.
    {"aten::exp", kFp32, kNone},
    {"aten::expm1", kFp32, kNone},
    {"aten::log", kFp32, kNone},
    {"aten::log2", kFp32, kNone},
    {"aten::log1p", kFp32, kNone},
    {"aten::reciprocal", kFp32, kNone},
    {"aten::rsqrt", kFp32, kNone},
    {"aten::pow.Tensor_Scalar", kFp32, kNone},
    {"aten::pow.Tensor_Tensor", kFp32, kNone},
    {"aten::pow.Scalar", kFp32, kNone},
    {"aten::acos", kFp32, kNone},
    {"aten::asin", kFp32, kNone},
    {"aten::cosh", kFp32, kNone},
    {"aten::sinh", kFp32, kNone},
    {"aten::tan", kFp32, kNone},
    {"aten::log10", kFp32, kNone},
    {"aten::layer_norm", kFp32, kNone},
    {"aten::native_layer_norm", kFp32, kNone},
    {"aten::logsumexp", kFp32, kNone},
    {"aten::nll_loss", kFp32, kFp32},
    {"aten::l1_loss", kFp32, kFp32},
    {"aten::smooth_l1_loss", kFp32, kFp32},
    {"aten::mse_loss", kFp32, kFp32},
    {"aten::binary_cross_entropy_with_logits", kFp32, kFp32},
    {"aten::cross_entropy_loss", kNone, kFp32},
    // AutocastCPU's fp32 list has view_as_complex (there is no complex32 to take a half view).
    {"aten::view_as_complex", kNone, kFp32},
    {"aten::binary_cross_entropy", kBanned, kFp32},
    {"aten::group_norm", kFp32, kNone},
    {"aten::reflection_pad1d", kNone, kFp32},
    {"aten::reflection_pad2d", kNone, kFp32},
    {"aten::replication_pad2d", kNone, kFp32},
    {"aten::replication_pad3d", kNone, kFp32},
    {"aten::avg_pool3d", kNone, kFp32},
    {"aten::grid_sampler_2d", kNone, kFp32},
    // Reductions and softmax with a `dtype` argument: float32 output unless one is given
    // (CPU casts prod's inputs instead).
    {"aten::softmax.int", kSetDtype, kNone},
    {"aten::log_softmax.int", kSetDtype, kNone},
    {"aten::sum", kSetDtype, kNone},
    {"aten::sum.dim_IntList", kSetDtype, kNone},
    {"aten::prod", kSetDtype, kFp32},
    {"aten::prod.dim_int", kSetDtype, kFp32},
    {"aten::cumsum", kSetDtype, kNone},
    {"aten::linalg_vector_norm", kSetDtype, kNone},
    // Ops of several floating inputs: the widest of them.
    {"aten::atan2", kPromote, kNone},
    {"aten::dot", kPromote, kNone},
    {"aten::index_put", kPromote, kNone},
    {"aten::scatter_add", kPromote, kNone},
    {"aten::cat", kNone, kPromote},
    {"aten::stack", kNone, kPromote},
};

/// The slot of a device type in the per-device state: 0 CPU, 1 CUDA, -1 no autocast.
int slot_of(DeviceType d) {
  switch (d) {
    case DeviceType::CPU: return 0;
    case DeviceType::CUDA: return 1;
    case DeviceType::Meta: return -1;
  }
  return -1;
}

struct CachedCast {
  std::weak_ptr<TensorImpl> source;  // the key's owner: a dead one is never matched
  Tensor cast;
};

struct ThreadState {
  bool enabled[2] = {false, false};
  ScalarType dtype[2] = {ScalarType::BFloat16, ScalarType::Half};  // PyTorch's defaults: CPU, CUDA
  bool cache_enabled = true;
  int nesting = 0;
  // Per thread, unlike PyTorch's process-wide cache: the scopes that fill it and the end
  // of the outermost one that clears it are per thread, so one thread's scope never drops
  // another's casts.
  std::unordered_map<const TensorImpl*, CachedCast> cache;
};
thread_local ThreadState t_state;
thread_local bool t_active = false;  // any device enabled

void refresh_active() { t_active = t_state.enabled[0] || t_state.enabled[1]; }

std::atomic<AutocastLeafTest> g_leaf_test{nullptr};

const std::unordered_map<const OpDef*, const AutocastRow*>& policy_index() {
  static const auto* index = [] {
    auto* m = new std::unordered_map<const OpDef*, const AutocastRow*>;
    for (const AutocastRow& row : kPolicies) {
      const OpDef* op = registry().find(row.op);
      EMBER_INTERNAL_ASSERT(op) << "the autocast table names " << row.op << ", which is not registered";
      m->emplace(op, &row);
    }
    return m;
  }();
  return *index;
}

/// PyTorch's is_autocast_eligible (a floating tensor on the device) without float64,
/// which autocast leaves alone.
bool is_eligible(const Tensor& t, DeviceType device) {
  return t.defined() && t.device().type == device && is_floating_point(t.dtype()) && t.dtype() != ScalarType::Double;
}

Tensor to_dtype(const Tensor& t, ScalarType dtype) {
  static const OpDef& to_copy = registry().get("aten::_to_copy");
  return std::move(call(to_copy, {t, IValue(dtype)}).at(0).to_tensor());
}

/// PyTorch's cached_cast: eligible tensors become `to`; a float32 leaf that requires grad
/// (a weight) cast to the autocast dtype is cast once per outermost scope.
Tensor cached_cast(ScalarType to, const Tensor& t, DeviceType device) {
  if (!is_eligible(t, device) || t.dtype() == to) return t;
  const AutocastLeafTest leaf = g_leaf_test.load(std::memory_order_relaxed);
  const bool can_cache = to == t_state.dtype[slot_of(device)] && t.dtype() == ScalarType::Float &&
                         t_state.cache_enabled && !t.impl()->is_view && !t.is_fake() && leaf && leaf(t);
  if (!can_cache) return to_dtype(t, to);
  auto it = t_state.cache.find(t.impl());
  if (it != t_state.cache.end() && !it->second.source.expired()) return it->second.cast;
  Tensor cast = to_dtype(t, to);
  t_state.cache.insert_or_assign(t.impl(), CachedCast{t.impl_ptr(), cast});
  return cast;
}

/// Calls `visit` on every tensor of `args`, in lists too.
template <typename F>
void for_each_tensor(const Stack& args, F&& visit) {
  for (const IValue& a : args) {
    if (a.is_tensor()) {
      visit(a.to_tensor());
    } else if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) visit(t);
    } else if (a.is_optional_tensor_list()) {
      for (const auto& t : a.to_optional_tensor_list())
        if (t) visit(*t);
    }
  }
}

IValue cast_value(ScalarType to, const IValue& a, DeviceType device) {
  if (a.is_tensor()) return IValue(cached_cast(to, a.to_tensor(), device));
  if (a.is_tensor_list()) {
    std::vector<Tensor> out;
    for (const Tensor& t : a.to_tensor_list()) out.push_back(cached_cast(to, t, device));
    return IValue(std::move(out));
  }
  if (a.is_optional_tensor_list()) {
    std::vector<std::optional<Tensor>> out;
    for (const auto& t : a.to_optional_tensor_list()) {
      out.push_back(t ? std::optional<Tensor>(cached_cast(to, *t, device)) : std::nullopt);
    }
    return IValue(std::move(out));
  }
  return a;
}

Stack cast_all(ScalarType to, const Stack& args, DeviceType device) {
  Stack out;
  out.reserve(args.size());
  for (const IValue& a : args) out.push_back(cast_value(to, a, device));
  return out;
}

/// PyTorch's promote_type: float32 wins over the autocast dtype, float64 tensors are
/// ignored (and left alone), tensors on other devices and non-floating ones do not count.
ScalarType promote_type(const Stack& args, DeviceType device) {
  const ScalarType lower = t_state.dtype[slot_of(device)];
  ScalarType current = lower;
  auto visit = [&](const Tensor& t) {
    if (!t.defined() || t.device().type != device || !is_floating_point(t.dtype())) return;
    const ScalarType next = t.dtype();
    if (next == ScalarType::Double) return;
    if (current == ScalarType::Float || next == ScalarType::Float) {
      current = ScalarType::Float;
      return;
    }
    EMBER_CHECK(current == lower && next == lower)
        << "autocast cannot choose a dtype for this op: it runs in float32 or the autocast dtype ("
        << scalar_type_name(lower) << "), and an argument is " << scalar_type_name(next)
        << "; cast it to one of them first";
  };
  for_each_tensor(args, visit);
  return current;
}

/// The device type autocast looks up: CUDA when a tensor argument is on a CUDA device (a
/// CPU scalar beside it is not cast), else CPU when one is on the CPU.
std::optional<DeviceType> device_type_of(const Stack& args) {
  std::optional<DeviceType> found;
  auto visit = [&](const Tensor& t) {
    if (!t.defined()) return;
    if (t.is_cuda()) found = DeviceType::CUDA;
    if (t.is_cpu() && !found) found = DeviceType::CPU;
  };
  for_each_tensor(args, visit);
  return found;
}

const char* device_type_name(DeviceType d) { return d == DeviceType::CUDA ? "cuda" : "cpu"; }

int checked_slot(const Device& device_type) {
  EMBER_CHECK(device_type.is_cpu() || device_type.is_cuda())
      << "autocast supports the device types kCPU and kCUDA, got " << device_type;
  EMBER_CHECK(device_type.index < 0) << "autocast takes a device type without an index (kCUDA or kCPU), got "
                                     << device_type;
  return slot_of(device_type.type);
}

}  // namespace

const char* cast_policy_name(CastPolicy p) {
  switch (p) {
    case CastPolicy::None: return "none";
    case CastPolicy::LowerPrecisionFp: return "lower_precision_fp";
    case CastPolicy::Fp32: return "fp32";
    case CastPolicy::Fp32SetOptDtype: return "fp32_set_opt_dtype";
    case CastPolicy::Promote: return "promote";
    case CastPolicy::Banned: return "banned";
  }
  return "?";
}

CastPolicy autocast_policy(const OpDef& op, DeviceType device) {
  const auto& index = policy_index();
  auto it = index.find(&op);
  if (it == index.end()) return CastPolicy::None;
  switch (device) {
    case DeviceType::CUDA: return it->second->cuda;
    case DeviceType::CPU: return it->second->cpu;
    case DeviceType::Meta: return CastPolicy::None;
  }
  return CastPolicy::None;
}

std::vector<AutocastRow> autocast_rows() { return {std::begin(kPolicies), std::end(kPolicies)}; }

std::string AutocastState::str() const {
  std::ostringstream os;
  auto one = [&](const char* device, bool on, ScalarType dtype) {
    os << "autocast(" << device;
    if (on) os << ", " << dtype_name(dtype);
    os << ") " << (on ? "enabled" : "disabled");
  };
  one("cpu", cpu_enabled, cpu_dtype);
  os << ", ";
  one("cuda", cuda_enabled, cuda_dtype);
  os << ", cast cache " << (cache_enabled ? "enabled" : "disabled");
  return os.str();
}

AutocastState autocast_state() {
  return AutocastState{t_state.enabled[0], t_state.enabled[1], t_state.dtype[0], t_state.dtype[1],
                       t_state.cache_enabled};
}

bool autocast_active() { return t_active; }

Stack apply_cast_policy(CastPolicy policy, DeviceType device, const OpDef& op, const Stack& args) {
  // The casts themselves are not autocast (PyTorch excludes the key before casting).
  ExcludeLayerGuard no_autocast(DispatchLayer::Autocast);
  switch (policy) {
    case CastPolicy::None:
      return args;
    case CastPolicy::LowerPrecisionFp:
      return cast_all(t_state.dtype[slot_of(device)], args, device);
    case CastPolicy::Fp32:
      return cast_all(ScalarType::Float, args, device);
    case CastPolicy::Fp32SetOptDtype: {
      // Only when the first argument is eligible: setting a dtype otherwise could change
      // the op's own promotion.
      const int dtype = op.schema.index_of("dtype");
      EMBER_INTERNAL_ASSERT(dtype >= 0) << op.name << " has the autocast policy fp32_set_opt_dtype but no dtype argument";
      if (args.empty() || !args[0].is_tensor() || !is_eligible(args[0].to_tensor(), device)) return args;
      Stack out = args;
      if (out[static_cast<size_t>(dtype)].is_none()) out[static_cast<size_t>(dtype)] = IValue(ScalarType::Float);
      return out;
    }
    case CastPolicy::Promote:
      return cast_all(promote_type(args, device), args, device);
    case CastPolicy::Banned:
      EMBER_FAIL() << "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
                      "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
                      "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
                      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
                      "safe to autocast.";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown cast policy";
}

std::optional<Stack> autocast_args(const OpDef& op, const Stack& args) {
  if (!policy_index().contains(&op)) return std::nullopt;  // most ops: one lookup
  const std::optional<DeviceType> device = device_type_of(args);
  if (!device) return std::nullopt;
  const int slot = slot_of(*device);
  if (slot < 0 || !t_state.enabled[slot]) return std::nullopt;
  const CastPolicy policy = autocast_policy(op, *device);
  if (policy == CastPolicy::None) return std::nullopt;
  return apply_cast_policy(policy, *device, op, args);
}

void set_autocast_leaf_test(AutocastLeafTest test) { g_leaf_test.store(test, std::memory_order_relaxed); }

AutocastCacheDisabled::AutocastCacheDisabled() : was_enabled_(t_state.cache_enabled) { t_state.cache_enabled = false; }
AutocastCacheDisabled::~AutocastCacheDisabled() { t_state.cache_enabled = was_enabled_; }

size_t autocast_cache_size() { return t_state.cache.size(); }

}  // namespace ember::ops

namespace ember {

using ops::t_state;

autocast::autocast(Device device_type, std::optional<ScalarType> dtype, bool enabled,
                   std::optional<bool> cache_enabled, Loc loc) {
  support::UserLocScope scope(loc);
  const int slot = ops::checked_slot(device_type);
  const ScalarType fast = dtype.value_or(t_state.dtype[slot]);
  EMBER_CHECK(fast == ScalarType::Half || fast == ScalarType::BFloat16)
      << "autocast(" << ops::device_type_name(device_type.type) << ") runs ops in float16 or bfloat16, got "
      << scalar_type_name(fast);
  device_type_ = device_type.type;
  prev_enabled_ = t_state.enabled[slot];
  prev_dtype_ = t_state.dtype[slot];
  prev_cache_enabled_ = t_state.cache_enabled;
  t_state.enabled[slot] = enabled;
  t_state.dtype[slot] = fast;
  if (cache_enabled) t_state.cache_enabled = *cache_enabled;
  ++t_state.nesting;
  ops::refresh_active();
}

autocast::~autocast() {
  const int slot = ops::slot_of(device_type_);
  // Leaving the outermost scope drops the cached casts (the end of a forward pass).
  if (--t_state.nesting == 0) t_state.cache.clear();
  t_state.enabled[slot] = prev_enabled_;
  t_state.dtype[slot] = prev_dtype_;
  t_state.cache_enabled = prev_cache_enabled_;
  ops::refresh_active();
}

namespace amp {

bool is_autocast_enabled(Device device_type) { return t_state.enabled[ops::checked_slot(device_type)]; }
ScalarType get_autocast_dtype(Device device_type) { return t_state.dtype[ops::checked_slot(device_type)]; }
bool is_autocast_cache_enabled() { return t_state.cache_enabled; }
void clear_autocast_cache() { t_state.cache.clear(); }

}  // namespace amp
}  // namespace ember
