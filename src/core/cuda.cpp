// core/cuda.cpp — the cuda device's state on the host: per-device caching allocators over
// the runtime, the current device and stream of each thread, streams, events and guards
// (ember/cuda.h), and Storage's device memory (core/cuda.h). Everything here goes through
// core/cuda_runtime.h, so it is the same code with and without CUDA in the build.
#include "core/cuda.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/cuda_runtime.h"
#include "ember/cuda.h"

namespace ember {
namespace core::cuda {
namespace {

/// The allocator's view of a real device.
class RuntimeBackend final : public AllocatorBackend {
 public:
  explicit RuntimeBackend(int device) : device_(device) {}
  void* raw_malloc(size_t bytes) override {
    ember::cuda::DeviceGuard g(device_);
    return cuda_rt::malloc(bytes);
  }
  void raw_free(void* p) override {
    ember::cuda::DeviceGuard g(device_);
    cuda_rt::free(p);
  }
  void* record_event(StreamId stream) override {
    ember::cuda::DeviceGuard g(device_);
    void* e = cuda_rt::event_create(false);
    cuda_rt::event_record(e, reinterpret_cast<void*>(stream));
    return e;
  }
  bool event_done(void* event) override { return cuda_rt::event_query(event); }
  void wait_event(void* event) override { cuda_rt::event_synchronize(event); }
  void destroy_event(void* event) override { cuda_rt::event_destroy(event); }
  void mem_info(size_t* free_bytes, size_t* total_bytes) override { cuda_rt::mem_info(device_, free_bytes, total_bytes); }

 private:
  int device_;
};

struct DeviceState {
  std::mutex mu;
  // Never destroyed: tensors with static lifetime may free into them at exit.
  std::vector<CachingAllocator*> allocators;
};
DeviceState& state() {
  static auto* s = new DeviceState;
  return *s;
}

thread_local std::unordered_map<int, void*> t_current_stream;
thread_local GraphPool* t_graph_pool = nullptr;

int resolve(int device) { return device < 0 ? ember::cuda::current_device() : device; }

}  // namespace

Device normalize_device(Device d) {
  if (d.type == DeviceType::CUDA && d.index < 0) return Device(DeviceType::CUDA, static_cast<int8_t>(ember::cuda::current_device()));
  return d;
}

CachingAllocator& allocator(int device) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.allocators.empty()) {
    std::string reason;
    const int n = cuda_rt::device_count(&reason);
    EMBER_CHECK(n > 0) << "cannot use a CUDA device: " << reason;
    s.allocators.resize(static_cast<size_t>(n), nullptr);
  }
  EMBER_CHECK(device >= 0 && device < static_cast<int>(s.allocators.size()))
      << "CUDA error: invalid device ordinal: cuda:" << device << " (" << s.allocators.size() << " device(s) visible)";
  auto& a = s.allocators[static_cast<size_t>(device)];
  if (!a) a = new CachingAllocator(device, std::make_unique<RuntimeBackend>(device));
  return *a;
}

void* device_alloc(size_t bytes, int device) {
  if (t_graph_pool && t_graph_pool->device() == device) [[unlikely]]
    return t_graph_pool->alloc(bytes);
  return allocator(device).malloc(bytes, reinterpret_cast<StreamId>(current_stream_handle(device)));
}

// Both deleters run inside Storage's destructor, which must not throw: at process exit the
// driver may already be shutting down, and its errors then mean nothing to anyone.
void device_free(void* p) {
  if (t_graph_pool && t_graph_pool->release(p)) [[unlikely]]
    return;
  DeviceState& s = state();
  // The allocators, read under the lock into an array on the stack (a free is on every
  // compiled call's path: no heap allocation here); an entry, once set, never changes.
  CachingAllocator* on_stack[16];
  std::vector<CachingAllocator*> on_heap;  // more than 16 devices
  CachingAllocator** all = on_stack;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    n = s.allocators.size();
    if (n > std::size(on_stack)) {
      on_heap = s.allocators;
      all = on_heap.data();
    } else {
      std::copy_n(s.allocators.begin(), n, on_stack);
    }
  }
  try {
    for (size_t i = 0; i < n; ++i) {
      if (all[i] && all[i]->owns(p)) return all[i]->free(p);
    }
  } catch (const Error&) {
  }
}

void* GraphPool::alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  auto it = kept_.lower_bound(round_size(bytes));
  void* p = nullptr;
  if (it != kept_.end()) {
    p = it->second;
    kept_.erase(it);
  } else {
    CachingAllocator& a = allocator(device_);
    p = a.malloc(bytes, reinterpret_cast<StreamId>(current_stream_handle(device_)));
    bytes_ += a.block_size(p);
  }
  live_.insert(p);
  return p;
}

bool GraphPool::release(void* p) {
  if (!live_.erase(p)) return false;
  kept_.emplace(allocator(device_).block_size(p), p);
  return true;
}

GraphPool::~GraphPool() {
  // Blocks still live belong to tensors that outlive the pool (their Storage frees them).
  try {
    CachingAllocator& a = allocator(device_);
    for (const auto& [size, p] : kept_) a.free(p);
  } catch (const Error&) {
  }
}

GraphPoolScope::GraphPoolScope(GraphPool& pool) : saved_(t_graph_pool) { t_graph_pool = &pool; }
GraphPoolScope::~GraphPoolScope() { t_graph_pool = saved_; }

void* pinned_alloc(size_t bytes) { return bytes ? cuda_rt::host_alloc(bytes) : nullptr; }
void pinned_free(void* p) {
  try {
    cuda_rt::host_free(p);
  } catch (const Error&) {
  }
}
bool is_pinned(const Storage& s) { return s.deleter() == &pinned_free; }

void* current_stream_handle(int device) {
  auto it = t_current_stream.find(device);
  return it == t_current_stream.end() ? nullptr : it->second;
}

Tensor host_copy(const Tensor& t) {
  const int device = t.device().index;
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->device = kCPU;
  impl->autograd_meta = nullptr;
  impl->view_base = nullptr;
  impl->is_view = false;
  const size_t n = t.storage()->nbytes();
  impl->storage = std::make_shared<Storage>(n, kCPU);
  if (n) {
    void* stream = current_stream_handle(device);
    ember::cuda::DeviceGuard g(device);
    cuda_rt::memcpy_async(impl->storage->data(), t.storage()->data(), n, cuda_rt::CopyKind::DeviceToHost, stream);
    cuda_rt::stream_synchronize(stream);
  }
  return Tensor(std::move(impl));
}

}  // namespace core::cuda

namespace cuda {
using core::cuda::current_stream_handle;

bool is_available() { return device_count() > 0; }
int device_count() {
  static const int n = core::cuda_rt::device_count(nullptr);
  return n;
}
std::string unavailable_reason() {
  std::string reason;
  return core::cuda_rt::device_count(&reason) > 0 ? std::string() : reason;
}

int current_device() { return core::cuda_rt::current_device(); }
void set_device(int index) { core::cuda_rt::set_device(index); }
std::string get_device_name(int device) { return core::cuda_rt::device_name(core::cuda::resolve(device)); }
std::pair<int, int> get_device_capability(int device) {
  int major = 0, minor = 0;
  core::cuda_rt::device_capability(core::cuda::resolve(device), &major, &minor);
  return {major, minor};
}

Stream Stream::create(int device) {
  const int d = core::cuda::resolve(device);
  DeviceGuard g(d);
  return Stream(d, core::cuda_rt::stream_create());
}
void Stream::synchronize() const { core::cuda_rt::stream_synchronize(handle_); }
bool Stream::query() const { return core::cuda_rt::stream_query(handle_); }

Stream current_stream(int device) {
  const int d = core::cuda::resolve(device);
  return Stream(d, current_stream_handle(d));
}
Stream default_stream(int device) { return Stream(core::cuda::resolve(device), nullptr); }
void set_current_stream(const Stream& stream) { core::cuda::t_current_stream[stream.device_index()] = stream.handle(); }

Event::Event(bool enable_timing) : timing_(enable_timing) {}
Event::~Event() {
  if (handle_) {
    try {
      core::cuda_rt::event_destroy(handle_);
    } catch (...) {
    }
  }
}
void Event::record(const Stream& stream) {
  if (!handle_) {
    DeviceGuard g(stream.device_index());
    handle_ = core::cuda_rt::event_create(timing_);
    device_ = stream.device_index();
  }
  EMBER_CHECK(device_ == stream.device_index())
      << "Event device " << device_ << " does not match recording stream's device " << stream.device_index() << ".";
  core::cuda_rt::event_record(handle_, stream.handle());
}
void Event::record() { record(current_stream()); }
void Event::wait(const Stream& stream) const {
  if (handle_) core::cuda_rt::stream_wait_event(stream.handle(), handle_);
}
bool Event::query() const { return !handle_ || core::cuda_rt::event_query(handle_); }
void Event::synchronize() const {
  if (handle_) core::cuda_rt::event_synchronize(handle_);
}
float Event::elapsed_time(const Event& end) const {
  EMBER_CHECK(timing_ && end.timing_) << "Both events must be created with argument 'enable_timing=True'.";
  EMBER_CHECK(handle_ && end.handle_) << "Both events must be recorded before calculating elapsed time.";
  return core::cuda_rt::event_elapsed_ms(handle_, end.handle_);
}

void synchronize(int device) { core::cuda_rt::device_synchronize(core::cuda::resolve(device)); }

DeviceGuard::DeviceGuard(int device) : previous_(core::cuda_rt::current_device()) {
  if (device != previous_) core::cuda_rt::set_device(device);
}
DeviceGuard::~DeviceGuard() {
  try {
    if (core::cuda_rt::current_device() != previous_) core::cuda_rt::set_device(previous_);
  } catch (...) {
  }
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device_index())) {
  set_current_stream(stream);
}
StreamGuard::~StreamGuard() { set_current_stream(previous_); }

size_t memory_allocated(int device) { return core::cuda::allocator(core::cuda::resolve(device)).stats().allocated_bytes; }
size_t memory_reserved(int device) { return core::cuda::allocator(core::cuda::resolve(device)).stats().reserved_bytes; }
size_t max_memory_allocated(int device) {
  return core::cuda::allocator(core::cuda::resolve(device)).stats().peak_allocated_bytes;
}
size_t max_memory_reserved(int device) {
  return core::cuda::allocator(core::cuda::resolve(device)).stats().peak_reserved_bytes;
}
void reset_peak_memory_stats(int device) { core::cuda::allocator(core::cuda::resolve(device)).reset_peak_stats(); }
void empty_cache() {
  for (int d = 0; d < device_count(); ++d) core::cuda::allocator(d).empty_cache();
}
void record_stream(const Tensor& tensor, const Stream& stream) {
  EMBER_CHECK(tensor.device().type == DeviceType::CUDA) << "record_stream: expected a CUDA tensor, got one on "
                                                         << tensor.device();
  core::cuda::allocator(tensor.device().index)
      .record_stream(tensor.storage()->data(), reinterpret_cast<core::cuda::StreamId>(stream.handle()));
}

}  // namespace cuda
}  // namespace ember
