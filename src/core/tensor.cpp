// core/tensor.cpp — Storage, TensorImpl bookkeeping, Tensor metadata and element access.
#include "ember/tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/allocator.h"
#include "core/cuda.h"
#include "core/cuda_runtime.h"
#include "core/fake.h"
#include "core/shape.h"
#include "support/call_context.h"

namespace ember {

namespace core {
namespace {
std::atomic<FakeDataHook> g_fake_data_hook{nullptr};
std::atomic<FakeOffsetHook> g_fake_offset_hook{nullptr};
std::atomic<SymbolicReadHook> g_symbolic_read_hook{nullptr};
std::atomic<OutsideStateHook> g_outside_state_hook{nullptr};
std::atomic<GradReadHook> g_grad_read_hook{nullptr};
std::atomic<CompilingHook> g_compiling_hook{nullptr};
}  // namespace
void set_fake_data_hook(FakeDataHook hook) { g_fake_data_hook.store(hook); }
void set_fake_offset_hook(FakeOffsetHook hook) { g_fake_offset_hook.store(hook); }
void set_symbolic_read_hook(SymbolicReadHook hook) { g_symbolic_read_hook.store(hook); }
void set_outside_state_hook(OutsideStateHook hook) { g_outside_state_hook.store(hook); }
void note_outside_state(const char* what) {
  if (OutsideStateHook hook = g_outside_state_hook.load(std::memory_order_relaxed)) hook(what);
}
void set_grad_read_hook(GradReadHook hook) { g_grad_read_hook.store(hook); }
void note_grad_read(const Tensor& owner, const Tensor& grad) {
  if (GradReadHook hook = g_grad_read_hook.load(std::memory_order_relaxed)) hook(owner, grad);
}
void set_compiling_hook(CompilingHook hook) { g_compiling_hook.store(hook); }
bool compiling() {
  const CompilingHook hook = g_compiling_hook.load(std::memory_order_relaxed);
  return hook != nullptr && hook();
}
}  // namespace core

namespace {
/// The user's line for errors raised by a Tensor method (`loc` is empty for `if (t)`,
/// which has none: then the line of an enclosing API call, if any, stays).
class UserLine {
 public:
  explicit UserLine(const Loc& loc) {
    if (loc.line() != 0) scope_.emplace(loc);
  }

 private:
  std::optional<support::UserLocScope> scope_;
};
}  // namespace

void Tensor::note_symbolic_read() const {
  if (core::SymbolicReadHook hook = core::g_symbolic_read_hook.load(std::memory_order_relaxed)) hook(*this, {});
}

void Tensor::note_offset_read() const {
  if (core::FakeOffsetHook hook = core::g_fake_offset_hook.load(std::memory_order_relaxed)) hook(*this);
}

void Tensor::require_data(const char* what, Loc loc) const {
  if (!impl_) return;
  // Real tensors too: while tracing, one an op wrote in the graph is not written yet.
  if (core::FakeDataHook hook = core::g_fake_data_hook.load(std::memory_order_relaxed)) hook(*this, what, loc);
  EMBER_CHECK(!impl_->is_fake) << what << ": this tensor was made while tracing a compiled function and has no data; "
                               << "it cannot be read outside of the trace that made it";
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device), resizable_(true) {
  if (device.is_cpu()) {
    data_ = core::cpu_alloc(nbytes);
    deleter_ = core::cpu_free;
  } else if (device.is_cuda()) {
    EMBER_INTERNAL_ASSERT(device.index >= 0) << "a CUDA storage needs a device index (core::cuda::normalize_device)";
    data_ = core::cuda::device_alloc(nbytes, device.index);
    deleter_ = core::cuda::device_free;
  } else {
    EMBER_CHECK(device.is_meta()) << "device " << device << " is not available in this build";
  }
}

Storage::Storage(void* data, size_t nbytes, Device device, void (*deleter)(void*))
    : data_(data), nbytes_(nbytes), device_(device), deleter_(deleter), resizable_(deleter == core::cuda::pinned_free) {}

void Storage::resize_bytes(size_t nbytes) {
  EMBER_CHECK(resizable_) << "Trying to resize storage that is not resizable (its memory was not allocated by Ember, "
                          << "e.g. from_blob; resize a copy instead)";
  if (nbytes == nbytes_) return;
  if (device_.is_meta()) {
    nbytes_ = nbytes;
    return;
  }
  void* fresh = nullptr;
  const size_t kept = std::min(nbytes, nbytes_);
  if (device_.is_cuda()) {
    fresh = core::cuda::device_alloc(nbytes, device_.index);
    if (kept > 0) {
      core::cuda_rt::memcpy_async(fresh, data_, kept, core::cuda_rt::CopyKind::DeviceToDevice,
                                  core::cuda::current_stream_handle(device_.index));
    }
  } else {
    fresh = deleter_ == core::cuda::pinned_free ? core::cuda::pinned_alloc(nbytes) : core::cpu_alloc(nbytes);
    if (kept > 0) std::memcpy(fresh, data_, kept);
  }
  // The old block goes back after the copy is queued: the CUDA allocator hands it out
  // again only to work ordered after the copy on this stream.
  if (deleter_ && data_) deleter_(data_);
  data_ = fresh;
  nbytes_ = nbytes;
}

Storage::~Storage() {
  if (deleter_ && data_) deleter_(data_);
}

bool Tensor::is_pinned() const { return impl_ && is_cpu() && core::cuda::is_pinned(*impl_->storage); }

void TensorImpl::refresh() {
  numel = core::numel_of(sizes);
  is_contiguous = core::is_contiguous(sizes, strides);
}

namespace {
/// A read of one size or stride of a fake with symbolic geometry specializes only it.
void report_symbolic_read(const Tensor& t, core::SymbolicRead::Kind kind, int64_t dim) {
  if (core::SymbolicReadHook hook = core::g_symbolic_read_hook.load(std::memory_order_relaxed)) hook(t, {kind, dim});
}
}  // namespace

int64_t Tensor::size(int64_t d) const {
  const int64_t w = core::wrap_dim(d, dim());
  if (impl_->sym) [[unlikely]] report_symbolic_read(*this, core::SymbolicRead::Kind::Size, w);
  return impl_->sizes[w];
}
int64_t Tensor::stride(int64_t d) const {
  const int64_t w = core::wrap_dim(d, dim());
  if (impl_->sym) [[unlikely]] report_symbolic_read(*this, core::SymbolicRead::Kind::Stride, w);
  return impl_->strides[w];
}

void* Tensor::raw_data_ptr(Loc loc) const {
  const UserLine user_line(loc);
  EMBER_CHECK(defined()) << "data_ptr: tensor is undefined";
  require_data("data_ptr()", loc);
  EMBER_CHECK(!is_meta()) << "Cannot access data pointer of Tensor that doesn't have storage (a meta tensor)";
  return static_cast<char*>(impl_->storage->data()) + impl_->storage_offset * static_cast<int64_t>(element_size());
}

void* Tensor::typed_data_ptr(ScalarType expected, Loc loc) const {
  const UserLine user_line(loc);
  EMBER_CHECK(defined()) << "data_ptr: tensor is undefined";
  EMBER_CHECK(expected == dtype()) << "data_ptr: expected a tensor of dtype " << expected << ", got " << dtype();
  return raw_data_ptr(loc);
}

template <typename T>
std::vector<T> Tensor::to_vector(Loc loc) const {
  const UserLine user_line(loc);
  EMBER_CHECK(defined()) << "to_vector: tensor is undefined";
  require_data("to_vector()", loc);
  EMBER_CHECK(!is_meta()) << "to_vector: a meta tensor has no data";
  if (is_cuda()) return core::cuda::host_copy(*this).to_vector<T>(loc);
  std::vector<T> out;
  out.reserve(static_cast<size_t>(numel()));
  const char* base = static_cast<const char*>(raw_data_ptr(loc));
  const int64_t esize = static_cast<int64_t>(element_size());
  core::for_each_index(sizes(), [&](const int64_t* idx) {
    int64_t off = 0;
    for (int64_t d = 0; d < dim(); ++d) off += idx[d] * impl_->strides[d];
    const char* p = base + off * esize;
    EMBER_DISPATCH_ALL_TYPES(dtype(), "to_vector", [&] {
      scalar_t v;
      std::memcpy(&v, p, sizeof v);
      if constexpr (std::is_same_v<T, bool>) {
        out.push_back(static_cast<opmath_t<scalar_t>>(v) != 0);
      } else {
        out.push_back(static_cast<T>(static_cast<opmath_t<scalar_t>>(v)));
      }
    });
  });
  return out;
}

template std::vector<float> Tensor::to_vector<float>(Loc) const;
template std::vector<double> Tensor::to_vector<double>(Loc) const;
template std::vector<int64_t> Tensor::to_vector<int64_t>(Loc) const;
template std::vector<int32_t> Tensor::to_vector<int32_t>(Loc) const;
template std::vector<bool> Tensor::to_vector<bool>(Loc) const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>(Loc) const;

Scalar Tensor::item(Loc loc) const {
  const UserLine user_line(loc);
  EMBER_CHECK(defined()) << "item(): tensor is undefined";
  EMBER_CHECK(numel() == 1) << "a Tensor with " << numel() << " elements cannot be converted to Scalar";
  require_data("Tensor.item()", loc);
  EMBER_CHECK(!is_meta()) << "item(): cannot read the value of a meta tensor (it has no data)";
  if (is_cuda()) return core::cuda::host_copy(*this).item(loc);
  const char* p = static_cast<const char*>(raw_data_ptr(loc));
  return EMBER_DISPATCH_ALL_TYPES(dtype(), "item", [&]() -> Scalar {
    scalar_t v;
    std::memcpy(&v, p, sizeof v);
    return Scalar(v);
  });
}

bool Tensor::is_nonzero(Loc loc) const {
  const UserLine user_line(loc);
  EMBER_CHECK(defined()) << "bool(): tensor is undefined";
  EMBER_CHECK(numel() != 0) << "Boolean value of Tensor with no values is ambiguous";
  EMBER_CHECK(numel() == 1) << "Boolean value of Tensor with more than one value is ambiguous";
  require_data("a tensor used as a bool", loc);
  return item(loc).to_bool();
}

std::ostream& operator<<(std::ostream& os, IntArrayRef values) {
  os << "[";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  return os << "]";
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  if (s.is_integral()) return os << s.to_long();
  return os << s.to_double();
}

Device::Device(std::string_view spec) {
  std::string_view kind = spec;
  auto colon = spec.find(':');
  if (colon != std::string_view::npos) {
    kind = spec.substr(0, colon);
    index = static_cast<int8_t>(std::atoi(std::string(spec.substr(colon + 1)).c_str()));
  }
  if (kind == "cpu") {
    type = DeviceType::CPU;
  } else if (kind == "meta") {
    type = DeviceType::Meta;
  } else if (kind == "cuda") {
    type = DeviceType::CUDA;
  } else {
    EMBER_FAIL() << "Expected one of cpu, cuda, meta device type at start of device string: " << spec;
  }
}

std::string Device::str() const {
  std::string s = type == DeviceType::CPU ? "cpu" : type == DeviceType::Meta ? "meta" : "cuda";
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ember
