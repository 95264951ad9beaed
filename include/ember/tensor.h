// ember/tensor.h — Tensor: a reference-counted handle to a strided view of a Storage.
//
// A Tensor is cheap to copy (it shares its TensorImpl). Views share their base's
// Storage and differ in sizes, strides and storage offset. Ops are free functions in
// ember/ops/*.h; the methods here forward to them, as in libtorch.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <source_location>
#include <string>
#include <vector>

#include "ember/array_ref.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/scalar.h"
#include "ember/sym_int.h"

namespace ember {

/// The caller's source location, captured by default arguments of the public API so
/// that errors (and, later, captured graphs) can name the user's line.
using Loc = std::source_location;

/// A block of memory on a device. Meta storages have a size but no memory.
class Storage {
 public:
  Storage(size_t nbytes, Device device);
  /// Wraps memory owned elsewhere; `deleter` (may be empty) releases it.
  Storage(void* data, size_t nbytes, Device device, void (*deleter)(void*));
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  /// The function that releases data() (identifies how it was obtained, e.g. pinned).
  void (*deleter() const)(void*) { return deleter_; }
  /// Bumped by every in-place write; autograd compares it to detect stale saved tensors.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  /// Whether resize_bytes may grow this storage: memory Ember allocated (CPU, CUDA, pinned
  /// host) or a meta storage; not memory wrapped from elsewhere (from_blob), as PyTorch.
  bool resizable() const { return resizable_; }
  /// Grows or shrinks the memory to `nbytes` in place, keeping the first min(old, new)
  /// bytes (on CUDA the copy is queued on the current stream). Every tensor sharing this
  /// storage sees the new memory. Raises PyTorch's "Trying to resize storage that is not
  /// resizable" unless resizable(). See Note [resize_] (docs/notes/registry.md).
  void resize_bytes(size_t nbytes);

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  void (*deleter_)(void*) = nullptr;
  bool resizable_ = false;
  std::atomic<uint64_t> version_{0};
};

/// Autograd's per-tensor state (requires_grad, grad, grad_fn, …). Core only holds it:
/// the autograd library defines the one implementation (see Note [autograd]).
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};

namespace autograd {
class Node;
}
namespace core {
/// The symbolic sizes, strides and offset of a value traced with dynamic shapes
/// (core/sym_geometry.h; Note [dynamic shapes]).
struct SymGeometry;
}  // namespace core

/// A tensor's geometry without its data: what a meta function computes for an output and
/// what a graph records about each value.
struct TensorMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  ScalarType dtype = kFloat;
  Device device;
  int64_t storage_offset = 0;  // views only
  /// An output the call does not compute (e.g. masked out by a backward op's
  /// output_mask): the kernel gets an undefined Tensor and the op returns None.
  bool undefined = false;
  /// While tracing with dynamic shapes: the same geometry over size symbols, when any of
  /// it is symbolic (the fields above hold the example values). Not part of equality.
  std::shared_ptr<const core::SymGeometry> sym;
  bool operator==(const TensorMeta& o) const {
    return sizes == o.sizes && strides == o.strides && dtype == o.dtype && device == o.device &&
           storage_offset == o.storage_offset && undefined == o.undefined;
  }
};

/// The state behind a Tensor handle.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  ScalarType dtype = kFloat;
  Device device;
  int64_t numel = 0;
  bool is_contiguous = true;
  /// Set by the dispatcher on outputs of view ops: this tensor aliases another's storage.
  bool is_view = false;
  /// A stand-in made by capture: sizes, strides, dtype and device of a value that does not
  /// exist yet (its storage holds no memory). Reading its data asks capture to break the
  /// graph and materialize it (Note [fake tensors], docs/notes/capture.md).
  bool is_fake = false;
  /// For outputs of view ops: the tensor the chain of views started from (PyTorch's
  /// `_base`, kept alive as there). Autograd routes in-place writes into the view through
  /// it (CopySlices). Null for other tensors, including detach()'s aliases.
  std::shared_ptr<TensorImpl> view_base;
  /// Null until autograd needs it; views and detach() start without one.
  std::shared_ptr<AutogradMetaInterface> autograd_meta;
  /// A fake traced with dynamic shapes: its geometry over size symbols (sizes/strides
  /// above hold the example values). Reading sizes or strides through Tensor outside a
  /// meta function that reads them symbolically specializes them (Note [dynamic shapes]).
  std::shared_ptr<const core::SymGeometry> sym;

  /// Recomputes numel and is_contiguous after sizes/strides change.
  void refresh();
};

/// How a tensor's strides order its dims (PyTorch's torch.memory_format): row-major,
/// channels last for 4-D (N, H, W, C in memory) and 5-D (N, D, H, W, C), or the input's own
/// order (ops that copy).
enum class MemoryFormat { Contiguous, ChannelsLast, ChannelsLast3d, Preserve };
/// PyTorch's name of a memory format ("contiguous_format", "channels_last", …), as op
/// arguments carry it.
const char* memory_format_name(MemoryFormat f);

/// Options for factory functions: `zeros({2, 3}, kDouble)`, `ones({2}, kMeta)`,
/// `empty({4}, TensorOptions().dtype(kHalf).device("meta"))`.
struct TensorOptions {
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}     // NOLINT
  TensorOptions(const char* d) : device_(Device(d)) {}  // NOLINT
  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  ScalarType dtype_or(ScalarType fallback) const { return dtype_.value_or(fallback); }
  Device device_or(Device fallback) const { return device_.value_or(fallback); }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// Whether two handles name the same TensorImpl (not merely equal values).
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // --- metadata -------------------------------------------------------------
  IntArrayRef sizes() const {
    if (impl_->sym) [[unlikely]] note_symbolic_read();
    return impl_->sizes;
  }
  IntArrayRef strides() const {
    if (impl_->sym) [[unlikely]] note_symbolic_read();
    return impl_->strides;
  }
  /// Size of `dim` (negative counts from the end).
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const {
    if (impl_->sym) [[unlikely]] note_symbolic_read();
    return impl_->numel;
  }
  /// Reading a fake's offset while tracing guards it (Note [capture], "Guards").
  int64_t storage_offset() const {
    if (impl_->is_fake) [[unlikely]] note_offset_read();
    return impl_->storage_offset;
  }
  ScalarType dtype() const { return impl_->dtype; }
  ScalarType scalar_type() const { return impl_->dtype; }
  Device device() const { return impl_->device; }
  bool is_meta() const { return impl_->device.is_meta(); }
  bool is_cpu() const { return impl_->device.is_cpu(); }
  bool is_cuda() const { return impl_->device.is_cuda(); }
  /// Whether the tensor's (CPU) memory is page-locked, so copies to a GPU can be async.
  bool is_pinned() const;
  bool is_contiguous() const { return impl_->is_contiguous; }
  bool is_floating_point() const { return ember::is_floating_point(dtype()); }
  size_t element_size() const { return ember::element_size(dtype()); }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  /// Number of in-place writes to this tensor's storage so far.
  uint64_t _version() const { return impl_->storage->version(); }

  // --- data -----------------------------------------------------------------
  /// Pointer to element [0, 0, …]; raises for meta tensors and dtype mismatches.
  template <typename T> T* data_ptr(Loc loc = Loc::current()) const;
  void* raw_data_ptr(Loc loc = Loc::current()) const;
  /// Makes sure the data exists before `what` reads it: a fake tensor is materialized by
  /// capture (a graph break) or, outside a trace, raises.
  void require_data(const char* what, Loc loc = Loc::current()) const;
  /// The value of a one-element tensor (PyTorch's `item()`).
  Scalar item(Loc loc = Loc::current()) const;
  template <typename T> T item(Loc loc = Loc::current()) const { return item(loc).template to<T>(); }
  /// Copies all elements, in logical (row-major) order, converted to T.
  template <typename T> std::vector<T> to_vector(Loc loc = Loc::current()) const;
  /// The truth value of a one-element tensor (Python's `bool(t)`); raises for more elements.
  bool is_nonzero(Loc loc = Loc::current()) const;
  /// `if (t)`: C++ gives a conversion no source line, so errors and graph breaks name the
  /// nearest line known (is_nonzero() names its own).
  explicit operator bool() const { return is_nonzero(Loc()); }
  /// Whether this is a capture stand-in without data (see TensorImpl::is_fake).
  bool is_fake() const { return impl_ && impl_->is_fake; }

  // --- views (share storage) ------------------------------------------------
  Tensor view(IntArrayRef size, Loc loc = Loc::current()) const;
  Tensor reshape(IntArrayRef shape, Loc loc = Loc::current()) const;
  // Size lists whose entries may be SymInts (ember::sym_size): a braced list takes these
  // overloads, and one with a symbolic entry keeps it symbolic in a trace (Note [dynamic shapes]).
  Tensor view(std::initializer_list<SymInt> size, Loc loc = Loc::current()) const;
  Tensor view(SymIntArrayRef size, Loc loc = Loc::current()) const;
  Tensor reshape(std::initializer_list<SymInt> shape, Loc loc = Loc::current()) const;
  Tensor reshape(SymIntArrayRef shape, Loc loc = Loc::current()) const;
  Tensor permute(IntArrayRef dims, Loc loc = Loc::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, Loc loc = Loc::current()) const;
  Tensor t(Loc loc = Loc::current()) const;
  Tensor expand(IntArrayRef size, Loc loc = Loc::current()) const;
  Tensor expand(std::initializer_list<SymInt> size, Loc loc = Loc::current()) const;
  Tensor expand(SymIntArrayRef size, Loc loc = Loc::current()) const;
  Tensor expand_as(const Tensor& other, Loc loc = Loc::current()) const;
  // start, end, length and index are sizes (SymInt): one read with ember::sym_size stays
  // symbolic in a trace (Note [dynamic shapes]).
  Tensor slice(int64_t dim = 0, std::optional<SymInt> start = std::nullopt, std::optional<SymInt> end = std::nullopt,
               int64_t step = 1, Loc loc = Loc::current()) const;
  Tensor narrow(int64_t dim, SymInt start, SymInt length, Loc loc = Loc::current()) const;
  Tensor select(int64_t dim, SymInt index, Loc loc = Loc::current()) const;
  Tensor squeeze(Loc loc = Loc::current()) const;
  Tensor squeeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor unsqueeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset = std::nullopt,
                    Loc loc = Loc::current()) const;
  // Sizes, strides and offset as SymInts (ember::sym_size): symbolic in a trace.
  Tensor as_strided(std::initializer_list<SymInt> size, std::initializer_list<SymInt> stride,
                    std::optional<SymInt> storage_offset = std::nullopt, Loc loc = Loc::current()) const;
  Tensor as_strided(SymIntArrayRef size, SymIntArrayRef stride, std::optional<SymInt> storage_offset = std::nullopt,
                    Loc loc = Loc::current()) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current()) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes, Loc loc = Loc::current()) const;
  Tensor unflatten(int64_t dim, std::initializer_list<SymInt> sizes, Loc loc = Loc::current()) const;
  Tensor unflatten(int64_t dim, SymIntArrayRef sizes, Loc loc = Loc::current()) const;
  Tensor contiguous(Loc loc = Loc::current()) const;
  Tensor clone(Loc loc = Loc::current()) const;
  Tensor to(ScalarType dtype, Loc loc = Loc::current()) const;
  Tensor to(Device device, Loc loc = Loc::current()) const;
  /// `non_blocking`: a copy between pinned host memory and a GPU returns before it is done
  /// (it is ordered on the current stream).
  Tensor to(Device device, bool non_blocking, Loc loc = Loc::current()) const;
  /// to(cuda:device) (-1: the current device) and to(cpu), as in PyTorch.
  Tensor cuda(int device = -1, bool non_blocking = false, Loc loc = Loc::current()) const;
  Tensor cpu(Loc loc = Loc::current()) const;
  /// A copy of this CPU tensor in page-locked memory (this tensor if it already is).
  Tensor pin_memory(Loc loc = Loc::current()) const;
  Tensor operator[](int64_t index) const;

  // --- common ops, as methods ----------------------------------------------
  // Pointwise ops: one row of ember/tensor_methods.def each.
#define EMBER_TENSOR_UNARY(name)               \
  Tensor name(Loc loc = Loc::current()) const; \
  Tensor& name##_(Loc loc = Loc::current());
#define EMBER_TENSOR_UNARY_FUNCTIONAL(name) Tensor name(Loc loc = Loc::current()) const;
#define EMBER_TENSOR_BINARY(name)                                   \
  Tensor name(const Tensor& other, Loc loc = Loc::current()) const; \
  Tensor name(const Scalar& other, Loc loc = Loc::current()) const; \
  Tensor& name##_(const Tensor& other, Loc loc = Loc::current());   \
  Tensor& name##_(const Scalar& other, Loc loc = Loc::current());
#define EMBER_TENSOR_BINARY_ALPHA(name)                                                      \
  Tensor name(const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current()) const; \
  Tensor name(const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current()) const; \
  Tensor& name##_(const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());   \
  Tensor& name##_(const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
#define EMBER_TENSOR_BINARY_TENSOR(name)                            \
  Tensor name(const Tensor& other, Loc loc = Loc::current()) const; \
  Tensor& name##_(const Tensor& other, Loc loc = Loc::current());
#define EMBER_TENSOR_BINARY_TENSOR_FUNCTIONAL(name) Tensor name(const Tensor& other, Loc loc = Loc::current()) const;
#include "ember/tensor_methods.def"
#undef EMBER_TENSOR_UNARY
#undef EMBER_TENSOR_UNARY_FUNCTIONAL
#undef EMBER_TENSOR_BINARY
#undef EMBER_TENSOR_BINARY_ALPHA
#undef EMBER_TENSOR_BINARY_TENSOR
#undef EMBER_TENSOR_BINARY_TENSOR_FUNCTIONAL
  // Pointwise ops whose arguments fit no row of the table.
  Tensor pow(const Scalar& exponent, Loc loc = Loc::current()) const;
  Tensor pow(const Tensor& exponent, Loc loc = Loc::current()) const;
  Tensor& pow_(const Scalar& exponent, Loc loc = Loc::current());
  Tensor& pow_(const Tensor& exponent, Loc loc = Loc::current());
  /// This tensor where `condition` holds, `other` elsewhere (PyTorch's `x.where(condition, y)`).
  Tensor where(const Tensor& condition, const Tensor& other, Loc loc = Loc::current()) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt, Loc loc = Loc::current()) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt, Loc loc = Loc::current());
  // Reductions and products.
  Tensor sum(Loc loc = Loc::current()) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor mean(Loc loc = Loc::current()) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor matmul(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor& copy_(const Tensor& src, Loc loc = Loc::current());
  /// `non_blocking`: between pinned host memory and a GPU, returns before the copy is done.
  Tensor& copy_(const Tensor& src, bool non_blocking, Loc loc = Loc::current());
  Tensor& fill_(const Scalar& value, Loc loc = Loc::current());
  Tensor& zero_(Loc loc = Loc::current());
  /// Gives this tensor `size` with contiguous strides (or `memory_format`'s) at its storage
  /// offset, growing the shared storage when it is too small (new elements are
  /// uninitialized); views of it keep their geometry. PyTorch's Tensor.resize_: raises for
  /// a tensor that requires grad and for memory wrapped from elsewhere; a graph break
  /// inside a compiled function (Note [resize_]).
  Tensor& resize_(IntArrayRef size, std::optional<MemoryFormat> memory_format = std::nullopt,
                  Loc loc = Loc::current());

  // --- autograd (defined by the autograd library; see ember/autograd.h) -----
  /// Makes this leaf require (or stop requiring) gradients; floating-point dtypes only.
  /// Inside a compiled function, changing the flag of a traced tensor is a graph break.
  const Tensor& requires_grad_(bool requires_grad = true, Loc loc = Loc::current()) const;
  bool requires_grad() const;
  /// The accumulated gradient of a leaf (or of a tensor that retains its grad); undefined if none.
  Tensor grad() const;
  /// The gradient slot itself, for optimizers (`p.mutable_grad() = Tensor()`).
  Tensor& mutable_grad() const;
  /// The node that computes this tensor's gradient; null for leaves.
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// Which output of grad_fn this tensor is.
  uint32_t output_nr() const;
  /// True for tensors not produced by a differentiable op (user-created, or with no grad_fn).
  bool is_leaf() const;
  /// Keeps the gradient of this non-leaf in grad() after backward.
  void retain_grad(Loc loc = Loc::current()) const;
  bool retains_grad() const;
  /// A tensor sharing this one's data and version counter, outside the graph (aten::detach).
  Tensor detach(Loc loc = Loc::current()) const;
  /// Computes the gradient of this tensor w.r.t. the graph leaves (accumulated into their grad()).
  void backward(const Tensor& gradient = {}, bool retain_graph = false, Loc loc = Loc::current()) const;
  /// Runs `hook(grad)` when this tensor's gradient is computed; a defined result replaces the gradient.
  /// Returns the hook's handle for remove_hook.
  unsigned register_hook(std::function<Tensor(const Tensor&)> hook, Loc loc = Loc::current()) const;
  void remove_hook(unsigned handle) const;

  /// PyTorch's repr: "tensor([[1., 2.],\n        [3., 4.]])".
  std::string str(Loc loc = Loc::current()) const;

 private:
  void note_offset_read() const;
  /// A read of a symbolic size or stride (TensorImpl::sym) by code that sees only the
  /// example values: capture specializes the symbols (core::set_symbolic_read_hook).
  void note_symbolic_read() const;
  void* typed_data_ptr(ScalarType expected, Loc loc) const;
  std::shared_ptr<TensorImpl> impl_;
};

/// A Tensor argument that remembers where the expression using it was written;
/// lets operators (`a + b`) report the user's line.
struct TensorArg {
  const Tensor& t;
  Loc loc;
  TensorArg(const Tensor& tensor, Loc l = Loc::current()) : t(tensor), loc(l) {}  // NOLINT
};

/// Prints str(); `os << t` in a compiled function is a graph break at the user's line.
std::ostream& operator<<(std::ostream& os, TensorArg t);

Tensor operator+(TensorArg a, const Tensor& b);
Tensor operator-(TensorArg a, const Tensor& b);
Tensor operator*(TensorArg a, const Tensor& b);
Tensor operator/(TensorArg a, const Tensor& b);
Tensor operator+(TensorArg a, const Scalar& b);
Tensor operator-(TensorArg a, const Scalar& b);
Tensor operator*(TensorArg a, const Scalar& b);
Tensor operator/(TensorArg a, const Scalar& b);
Tensor operator+(const Scalar& a, TensorArg b);
Tensor operator-(const Scalar& a, TensorArg b);
Tensor operator*(const Scalar& a, TensorArg b);
Tensor operator/(const Scalar& a, TensorArg b);
Tensor operator-(TensorArg a);
Tensor operator==(TensorArg a, const Tensor& b);
Tensor operator!=(TensorArg a, const Tensor& b);
Tensor operator<(TensorArg a, const Tensor& b);
Tensor operator<=(TensorArg a, const Tensor& b);
Tensor operator>(TensorArg a, const Tensor& b);
Tensor operator>=(TensorArg a, const Tensor& b);
Tensor operator==(TensorArg a, const Scalar& b);
Tensor operator!=(TensorArg a, const Scalar& b);
Tensor operator<(TensorArg a, const Scalar& b);
Tensor operator<=(TensorArg a, const Scalar& b);
Tensor operator>(TensorArg a, const Scalar& b);
Tensor operator>=(TensorArg a, const Scalar& b);
Tensor operator&(TensorArg a, const Tensor& b);
Tensor operator|(TensorArg a, const Tensor& b);
Tensor operator^(TensorArg a, const Tensor& b);
Tensor operator~(TensorArg a);

// --- template definitions ------------------------------------------------------

template <typename T>
T* Tensor::data_ptr(Loc loc) const {
  return static_cast<T*>(typed_data_ptr(scalar_type_of<T>(), loc));
}

}  // namespace ember
