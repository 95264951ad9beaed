// ops/dispatch.cpp — see dispatch.h.
#include "ops/dispatch.h"

#include <algorithm>
#include <array>
#include <atomic>

#include "core/cuda.h"
#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ops/autocast.h"
#include "support/call_context.h"

namespace ember::ops {
namespace {

// Atomic because a library may install its handler lazily (autograd does, on the first
// requires_grad_) while other threads dispatch; relaxed loads cost nothing on x86.
std::array<std::atomic<LayerHandler>, kNumLayers> g_handlers{};
thread_local uint8_t t_excluded = 0;
thread_local const Storage* t_inplace_target = nullptr;

bool any_cuda_tensor(const Stack& args) {
  for (const IValue& a : args)
    if (a.is_tensor() && a.to_tensor().defined() && a.to_tensor().is_cuda()) return true;
  return false;
}

Stack pack_outputs(const OpDef& op, std::vector<Tensor> outs) {
  if (!op.schema.returns.empty() && op.schema.returns[0].type.is_list) return {IValue(std::move(outs))};
  Stack result;
  result.reserve(outs.size());
  for (auto& t : outs) result.push_back(t.defined() ? IValue(std::move(t)) : IValue());
  return result;
}

Stack run_view(const OpDef& op, Stack& args) {
  const Tensor& base = args[0].to_tensor();
  std::vector<TensorMeta> metas = op.meta(args);
  std::vector<Tensor> outs;
  outs.reserve(metas.size());
  for (auto& m : metas) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = base.storage();
    impl->sizes = std::move(m.sizes);
    impl->strides = std::move(m.strides);
    impl->storage_offset = m.storage_offset;
    impl->dtype = m.dtype;  // base's, but for view_as_real and view_as_complex
    impl->device = base.device();
    impl->is_view = true;  // autograd meta is not copied: the autograd layer gives views their own
    // A view autograd does not track (detach) has no base to route in-place writes through.
    if (!op.not_differentiable) impl->view_base = base.impl()->view_base ? base.impl()->view_base : base.impl_ptr();
    impl->refresh();
    outs.emplace_back(std::move(impl));
  }
  return pack_outputs(op, std::move(outs));
}

/// PyTorch's error for an op without a kernel for the device its tensors are on.
[[noreturn]] void no_kernel(const OpDef& op, const char* backend) {
  EMBER_FAIL_KIND(ErrorKind::NotImplementedError)
      << "Could not run '" << op.name << "' with arguments from the '" << backend
      << "' backend. Ember has no " << backend << " kernel for this operator yet (it has: CPU"
      << (op.cuda ? ", CUDA" : "") << "). See Note [cuda] (docs/notes/cuda.md).";
}

/// Note [complex dtypes]: an op whose kernel does not take complex tensors raises a
/// NotImplementedError naming the op and the dtype (PyTorch's words) for a complex tensor
/// argument or a complex dtype argument (the only ways to a complex output), before its
/// meta function runs, on every device, meta tensors included. `on_cuda`: the call runs
/// on CUDA, where an op marked set_complex_on_cpu() refuses complex the same way.
void check_complex_args(const OpDef& op, const Stack& args, bool on_cuda = false) {
  if (on_cuda ? !op.complex_cpu_only : op.complex) return;
  auto reject = [&](ScalarType t) {
    EMBER_FAIL_KIND(ErrorKind::NotImplementedError)
        << "\"" << op.name << "\" not implemented for '" << scalar_type_name(t) << "'"
        << (on_cuda ? " on CUDA" : "")
        << ": Ember's complex dtypes reach only the ops of Note [complex dtypes] (docs/notes/registry.md)";
  };
  for (const IValue& v : args) {
    if (v.is_tensor()) {
      const Tensor& t = v.to_tensor();
      if (t.defined() && is_complex(t.dtype())) reject(t.dtype());
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list())
        if (t.defined() && is_complex(t.dtype())) reject(t.dtype());
    } else if (v.is_optional_tensor_list()) {
      for (const auto& t : v.to_optional_tensor_list())
        if (t && t->defined() && is_complex(t->dtype())) reject(t->dtype());
    } else if (v.is_scalar_type() && is_complex(v.to_scalar_type())) {
      reject(v.to_scalar_type());
    }
  }
}

Stack run_functional(const OpDef& op, Stack& args) {
  check_complex_args(op, args);
  std::vector<TensorMeta> metas = op.meta(args);
  const std::optional<Device> device = common_device(op, args);
  // The CUDA kernel runs when any argument or output is on a CUDA device (copies between
  // the host and a device included); an op without one raises before allocating.
  const bool cuda = (device && device->is_cuda()) || (!metas.empty() && metas[0].device.is_cuda()) ||
                    (op.cross_device && any_cuda_tensor(args));
  if (cuda && !op.cuda) no_kernel(op, "CUDA");
  if (cuda && op.complex_cpu_only) check_complex_args(op, args, /*on_cuda=*/true);
  std::vector<Tensor> outs;
  outs.reserve(metas.size());
  for (const auto& m : metas) outs.push_back(m.undefined ? Tensor() : empty_from_meta(m));

  std::vector<Tensor> written;
  for (size_t i = 0; i < op.schema.arguments.size(); ++i) {
    if (op.schema.arguments[i].is_write && args[i].is_tensor()) written.push_back(args[i].to_tensor());
  }
  // Outputs on the meta device (meta inputs, or a factory/copy asked for device=meta) have
  // no data to compute.
  const bool on_meta = !metas.empty() ? metas[0].device.is_meta() : (device && device->is_meta());
  if (!on_meta) {
    EMBER_CHECK(!(device && device->is_meta())) << "Cannot copy out of meta tensor; no data!";
    if (cuda) {
      op.cuda(args, outs);
    } else {
      op.cpu(args, outs);
    }
    for (auto& w : written) w.storage()->bump_version();
  }
  if (!written.empty() && outs.empty()) return pack_outputs(op, std::move(written));
  return pack_outputs(op, std::move(outs));
}

/// resize_ (Note [resize_]): checks, then changes its argument's geometry and storage
/// through its one kernel, which works on every device (a meta tensor's storage only
/// records its size), and counts the write as eager's in-place ops do.
Stack run_resize(const OpDef& op, Stack& args) {
  check_complex_args(op, args);
  op.meta(args);
  std::vector<Tensor> none;
  op.cpu(args, none);
  const Tensor& self = args[0].to_tensor();
  self.storage()->bump_version();
  return {self};
}

/// A data-dependent op (nonzero) on a CUDA device. The output's size needs the input's
/// values on the host, so the device is waited for anyway (as PyTorch's CUDA nonzero
/// does): the CPU kernel runs on host copies of the CUDA arguments and its outputs are
/// copied back to `device`.
Stack run_dynamic_on_host(const OpDef& op, const Stack& args, Device device) {
  Stack host = args;
  for (IValue& v : host)
    if (v.is_tensor() && v.to_tensor().is_cuda()) v = core::cuda::host_copy(v.to_tensor());
  Stack outs = op.cpu_dynamic(host);
  for (IValue& v : outs)
    if (v.is_tensor()) v = v.to_tensor().to(device);
  return outs;
}

Stack run_backend(const OpDef& op, Stack& args) {
  // Ops that a kernel calls internally (e.g. a cast or a contiguous copy of an input) are
  // implementation details of this op: layers above the backend must not see them.
  ExcludeLayerGuard no_autocast(DispatchLayer::Autocast);
  ExcludeLayerGuard no_capture(DispatchLayer::Capture);
  ExcludeLayerGuard no_autograd(DispatchLayer::Autograd);
  switch (op.kind) {
    case OpKind::View:
      return run_view(op, args);
    case OpKind::Functional:
      return op.resizes ? run_resize(op, args) : run_functional(op, args);
    case OpKind::Dynamic: {
      check_complex_args(op, args);
      const std::optional<Device> device = common_device(op, args);
      EMBER_CHECK_KIND(ErrorKind::NotImplementedError, !device || !device->is_meta())
          << "the output shape of this op depends on the input's data, which a meta tensor does not have";
      if (device && device->is_cuda()) return run_dynamic_on_host(op, args, *device);
      return op.cpu_dynamic(args);
    }
    case OpKind::InPlace:
    case OpKind::Composite:
      break;
  }
  EMBER_INTERNAL_ASSERT(false) << op.name << " reached the backend layer as a composite";
}

Stack dispatch_from(int first_layer, const OpDef& op, Stack& args) {
  // Autocast has no handler: call() applies it before composite ops expand.
  first_layer = std::max(first_layer, static_cast<int>(DispatchLayer::Capture));
  for (int l = first_layer; l < static_cast<int>(DispatchLayer::Backend); ++l) {
    if (t_excluded & (1u << l)) continue;
    if (LayerHandler h = g_handlers[l].load(std::memory_order_relaxed)) return h(op, args);
  }
  return run_backend(op, args);
}

Stack run_inplace(const OpDef& op, Stack& args) {
  Tensor self = args[0].to_tensor();
  Stack result;
  {
    const Storage* outer = t_inplace_target;
    t_inplace_target = self.storage().get();
    try {
      result = call(*op.functional, args);
    } catch (...) {
      t_inplace_target = outer;
      throw;
    }
    t_inplace_target = outer;
  }
  const Tensor& value = result[0].to_tensor();
  // Compared over SymInt when either has symbolic sizes (a guard, not a specialization).
  const bool same_sizes = core::over_geometry({&value, &self}, [&]<typename Int>() {
    const auto a = core::Geometry<Int>::sizes(value);
    const auto b = core::Geometry<Int>::sizes(self);
    return ArrayRef<Int>(a) == ArrayRef<Int>(b);
  });
  EMBER_CHECK(same_sizes)
      << "output with shape " << self.sizes() << " doesn't match the broadcast shape " << value.sizes();
  EMBER_CHECK(can_cast(value.dtype(), self.dtype()))
      << "result type " << scalar_type_name(value.dtype()) << " can't be cast to the desired output type "
      << scalar_type_name(self.dtype());
  static const OpDef& copy = registry().get("aten::copy_");
  return call(copy, {self, value});
}

}  // namespace

/// call() after normalizing and autocast: expands composite and in-place ops, else runs
/// the layers. Not in the anonymous namespace: verbose errors print the internal stack
/// by exported names, and its first frame should name Ember's dispatcher.
Stack call_normalized(const OpDef& op, Stack& args) {
  switch (op.kind) {
    case OpKind::Composite:
      return op.decomposition(args);
    case OpKind::InPlace:
      return run_inplace(op, args);
    default:
      return dispatch_from(0, op, args);
  }
}

LayerHandler set_layer_handler(DispatchLayer layer, LayerHandler handler) {
  return g_handlers[static_cast<int>(layer)].exchange(handler, std::memory_order_relaxed);
}

const Storage* inplace_target() { return t_inplace_target; }

bool layer_excluded(DispatchLayer layer) { return t_excluded & (1u << static_cast<int>(layer)); }

ExcludeLayerGuard::ExcludeLayerGuard(DispatchLayer layer) : layer_(layer), was_excluded_(layer_excluded(layer)) {
  t_excluded |= static_cast<uint8_t>(1u << static_cast<int>(layer));
}
ExcludeLayerGuard::~ExcludeLayerGuard() {
  if (!was_excluded_) t_excluded &= static_cast<uint8_t>(~(1u << static_cast<int>(layer_)));
}

Stack call(const OpDef& op, Stack args) {
  support::OpScope scope(op.name.c_str());
  normalize_args(op.schema, args);
  if (autocast_active() && !layer_excluded(DispatchLayer::Autocast)) [[unlikely]] {
    // In-place ops are on no list (PyTorch runs `x.addmm_(…)` in x's dtype): their
    // functional op must not be cast either.
    if (op.kind == OpKind::InPlace) {
      ExcludeLayerGuard no_autocast(DispatchLayer::Autocast);
      return call_normalized(op, args);
    }
    if (std::optional<Stack> cast = autocast_args(op, args)) {
      // A listed op runs with autocast off, so a composite's expansion is not cast again.
      ExcludeLayerGuard no_autocast(DispatchLayer::Autocast);
      return call_normalized(op, *cast);
    }
  }
  return call_normalized(op, args);
}

Stack redispatch(DispatchLayer layer, const OpDef& op, Stack& args) {
  return dispatch_from(static_cast<int>(layer) + 1, op, args);
}

Stack call_at(const OpDef& op, Stack args, const std::source_location& loc) {
  support::UserLocScope scope(loc);
  return call(op, std::move(args));
}

Tensor call_tensor(const OpDef& op, Stack args, const std::source_location& loc) {
  support::UserLocScope scope(loc);
  Stack out = call(op, std::move(args));
  return std::move(out.at(0).to_tensor());
}

Tensor empty_from_meta(const TensorMeta& m) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  impl->dtype = m.dtype;
  impl->device = core::cuda::normalize_device(m.device);  // `cuda` means the current CUDA device
  impl->refresh();
  int64_t extent = 0;
  if (impl->numel > 0) {
    extent = 1;
    for (size_t i = 0; i < m.sizes.size(); ++i) extent += (m.sizes[i] - 1) * m.strides[i];
  }
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(extent) * element_size(m.dtype), impl->device);
  return Tensor(std::move(impl));
}

std::optional<Device> common_device(const OpDef& op, const Stack& args) {
  // Copies move data between devices: their tensors may differ (the first one's wins).
  // Elsewhere a 0-dim CPU tensor may sit beside tensors of another device (PyTorch's CPU
  // scalars): it counts only when nothing else is there; so do the CPU index tensors of
  // index/index_put (op.host_indices).
  std::optional<Device> device, cpu_scalar;
  auto visit = [&](const Tensor& t) {
    if (!t.defined()) return;
    if (t.is_cpu() && t.dim() == 0 && !op.cross_device) {
      if (!cpu_scalar) cpu_scalar = t.device();
      return;
    }
    if (!device) {
      device = t.device();
    } else if (!(t.device() == *device) && !op.cross_device) {
      EMBER_FAIL() << "Expected all tensors to be on the same device, but found at least two devices, " << *device
                   << " and " << t.device() << "!";
    }
  };
  for (const IValue& a : args) {
    if (a.is_tensor()) {
      visit(a.to_tensor());
    } else if (a.is_tensor_list()) {
      for (const auto& t : a.to_tensor_list()) visit(t);
    } else if (std::holds_alternative<std::vector<std::optional<Tensor>>>(a.variant())) {
      for (const auto& t : a.to_optional_tensor_list()) {
        if (!t) continue;
        if (op.host_indices && t->is_cpu()) {
          if (!cpu_scalar) cpu_scalar = t->device();
          continue;
        }
        visit(*t);
      }
    }
  }
  if (device && cpu_scalar && !device->is_cuda() && !device->is_cpu()) {
    EMBER_FAIL() << "Expected all tensors to be on the same device, but found at least two devices, " << *device
                 << " and " << *cpu_scalar << "!";
  }
  return device ? device : cpu_scalar;
}

}  // namespace ember::ops
