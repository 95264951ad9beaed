// ops/dispatch.h — the single path every op call takes.
//
// call(op, args) normalizes the arguments against the schema, applies autocast, expands
// composite and in-place ops, and then passes the call down a fixed stack of layers:
//
//     Autocast  (built in, ops/autocast.h: inside an autocast scope, casts the arguments of
//                the ops on its lists; runs before composite ops expand, as PyTorch's
//                Autocast key sits above its Autograd keys)
//     Capture   (registered by the capture library: records ops into graphs)
//     Autograd  (registered by the autograd library: builds grad_fn nodes)
//     Backend   (built in: meta functions, allocation, CPU kernels)
//
// A layer that is not registered, or is excluded on this thread (ExcludeLayerGuard), is
// skipped. A layer handler does its work and continues with redispatch(layer, …).
// While a backend kernel runs, the layers above it are excluded: ops a kernel calls
// internally are not recorded or differentiated.
#pragma once

#include <source_location>

#include "ops/registry.h"

namespace ember::ops {

enum class DispatchLayer : uint8_t { Autocast = 0, Capture = 1, Autograd = 2, Backend = 3 };
inline constexpr int kNumLayers = 4;

using LayerHandler = Stack (*)(const OpDef& op, Stack& args);

/// Installs the handler of a layer (Capture or Autograd; Autocast is built in) and returns the one it
/// replaces, so that a scope that installs its own can put it back. The slot is atomic, so a library may
/// install its handler lazily while other threads dispatch.
LayerHandler set_layer_handler(DispatchLayer layer, LayerHandler handler);

/// Runs `op` from the top of the stack.
Stack call(const OpDef& op, Stack args);
/// Continues a call below `layer`.
Stack redispatch(DispatchLayer layer, const OpDef& op, Stack& args);
/// Convenience for the public API: sets the user location, calls, returns output 0.
Tensor call_tensor(const OpDef& op, Stack args, const std::source_location& loc);
Stack call_at(const OpDef& op, Stack args, const std::source_location& loc);

/// Skips a layer on this thread while alive (e.g. autograd below no_grad).
class ExcludeLayerGuard {
 public:
  explicit ExcludeLayerGuard(DispatchLayer layer);
  ~ExcludeLayerGuard();
  ExcludeLayerGuard(const ExcludeLayerGuard&) = delete;
  ExcludeLayerGuard& operator=(const ExcludeLayerGuard&) = delete;

 private:
  DispatchLayer layer_;
  bool was_excluded_;
};
bool layer_excluded(DispatchLayer layer);

/// While the functional op of an in-place op runs (x.mul_(y) runs mul(x, y), then
/// copy_(x, …)): the storage of x, which the copy_ will overwrite; null otherwise. The
/// autograd layer saves a copy of arguments living there, whose old values the
/// functional op's derivative may read after the write.
const Storage* inplace_target();

/// Allocates an uninitialized tensor as a meta function describes it.
Tensor empty_from_meta(const TensorMeta& m);

/// The device the tensor arguments agree on (raises on a mix), or nullopt when none.
std::optional<Device> common_device(const OpDef& op, const Stack& args);

}  // namespace ember::ops
