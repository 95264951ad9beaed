// core/fake.h — the hooks through which reading a fake tensor's data, and reading state
// kept outside any graph, reach capture.
// Core cannot depend on capture, so capture installs a function here; see Note [fake
// tensors] in docs/notes/capture.md.
#pragma once

#include "ember/tensor.h"

namespace ember::core {

/// Called when `what` ("Tensor.item()", "printing a tensor", …) needs the data of `t` at
/// the user's `loc`. For a fake tensor it must either turn `t` into a real tensor
/// (TensorImpl::is_fake false afterwards) or raise; for a real one it may flush pending
/// writes to it.
using FakeDataHook = void (*)(const Tensor& t, const char* what, const std::source_location& loc);

void set_fake_data_hook(FakeDataHook hook);

/// Called when code reads a fake tensor's storage offset (Tensor::storage_offset): while
/// tracing, a read by the user's code makes the traced entry guard that offset.
using FakeOffsetHook = void (*)(const Tensor& t);

void set_fake_offset_hook(FakeOffsetHook hook);

/// What code read of a fake with symbolic geometry: everything (sizes(), strides(),
/// numel()), or one size or stride (size(dim), stride(dim); dim non-negative).
struct SymbolicRead {
  enum class Kind { All, Size, Stride };
  Kind kind = Kind::All;
  int64_t dim = 0;
};

/// Called when code reads the geometry of `t`, a fake with symbolic geometry
/// (TensorImpl::sym), through the Tensor accessors that give example values: while
/// tracing, capture specializes the symbols read (Note [dynamic shapes]).
using SymbolicReadHook = void (*)(const Tensor& t, SymbolicRead what);

void set_symbolic_read_hook(SymbolicReadHook hook);
/// Called by code below capture that reads or writes state kept outside any graph, such
/// as a gradient slot (Tensor::grad(), mutable_grad()), which a replay of a traced graph
/// would not read again: while a function is traced, capture then runs it again on every
/// call (segment mode) instead of replaying its graph. `what` names the access for logs.
using OutsideStateHook = void (*)(const char* what);

void set_outside_state_hook(OutsideStateHook hook);
/// Reports an access to state outside the graph (a no-op unless capture installed a hook).
void note_outside_state(const char* what);

/// Called by Tensor::grad() with the tensor whose gradient slot is read and the gradient it
/// holds (undefined when none). While a function is traced, capture turns a gradient read
/// from a tensor reached outside the arguments (a parameter) into a graph input that each
/// replay reads from that slot again, guarded on whether it is defined and its geometry
/// (Note [outside state]); other reads count as outside state.
using GradReadHook = void (*)(const Tensor& owner, const Tensor& grad);

void set_grad_read_hook(GradReadHook hook);
void note_grad_read(const Tensor& owner, const Tensor& grad);

/// Answers whether the calling thread is tracing a compiled function (ember::is_compiling),
/// for code below capture that behaves as PyTorch's does under torch.compile (an optimizer
/// made capturable: Note [capturable] in docs/notes/optim.md).
using CompilingHook = bool (*)();

void set_compiling_hook(CompilingHook hook);
/// Whether the calling thread is tracing a compiled function (false unless capture installed a hook).
bool compiling();

}  // namespace ember::core
