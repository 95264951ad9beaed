// ember/cuda.h — the cuda device, as torch.cuda: availability, the current device and
// stream, streams and events, a device guard, and the caching allocator's statistics.
// Tensors reach the device through Tensor::to / .cuda() and the factories' device
// option. See Note [cuda] (docs/notes/cuda.md) and Note [cuda allocator].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ember/tensor.h"

namespace ember::cuda {

/// Whether a CUDA device can be used (the build has CUDA and the driver reports a GPU).
bool is_available();
/// Number of visible CUDA devices (0 without a GPU, a driver, or a CUDA build).
int device_count();
/// Why device_count() is 0, in the runtime's words ("CUDA driver version is insufficient…",
/// "no CUDA-capable device is detected", "Ember was built without CUDA"); empty otherwise.
std::string unavailable_reason();

int current_device();
void set_device(int index);
/// The device's name ("NVIDIA H100 80GB HBM3") and compute capability (major, minor).
std::string get_device_name(int device = -1);
std::pair<int, int> get_device_capability(int device = -1);

/// A CUDA stream of one device. The default stream of a device is the legacy null stream.
class Stream {
 public:
  /// A new stream on `device` (-1: the current one).
  static Stream create(int device = -1);
  Stream(int device, void* handle) : device_(device), handle_(handle) {}
  int device_index() const { return device_; }
  /// The cudaStream_t.
  void* handle() const { return handle_; }
  /// Waits for all work queued on the stream.
  void synchronize() const;
  /// Whether all work queued on the stream is done.
  bool query() const;
  bool operator==(const Stream& o) const { return device_ == o.device_ && handle_ == o.handle_; }

 private:
  int device_ = 0;
  void* handle_ = nullptr;
};

/// The stream kernels and copies on `device` go to (-1: the current device).
Stream current_stream(int device = -1);
Stream default_stream(int device = -1);
void set_current_stream(const Stream& stream);

/// A CUDA event; created lazily on the first record().
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Records the event on `stream` (the current stream by default).
  void record(const Stream& stream);
  void record();
  /// Makes `stream` wait for the work recorded before this event.
  void wait(const Stream& stream) const;
  bool query() const;
  void synchronize() const;
  /// Milliseconds between this event and `end` (both recorded, timing enabled).
  float elapsed_time(const Event& end) const;

 private:
  bool timing_;
  int device_ = -1;
  void* handle_ = nullptr;
};

/// Waits for all work on the device (-1: the current one).
void synchronize(int device = -1);

/// Makes `device` current while alive (torch.cuda.device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

/// Makes `stream` current for its device while alive (torch.cuda.stream).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// --- the caching allocator (Note [cuda allocator]) -----------------------------------
/// Bytes in blocks handed out to tensors (rounded sizes), as torch.cuda.memory_allocated.
size_t memory_allocated(int device = -1);
/// Bytes obtained from cudaMalloc and not yet returned, as torch.cuda.memory_reserved.
size_t memory_reserved(int device = -1);
size_t max_memory_allocated(int device = -1);
size_t max_memory_reserved(int device = -1);
void reset_peak_memory_stats(int device = -1);
/// Returns every cached block that is not part of a live allocation to the driver.
void empty_cache();
/// Marks `tensor`'s memory as used by work on `stream`: when the tensor is freed, its
/// block is not reused until that work is done (Tensor.record_stream).
void record_stream(const Tensor& tensor, const Stream& stream);

}  // namespace ember::cuda
