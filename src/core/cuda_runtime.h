// core/cuda_runtime.h — the CUDA runtime calls Ember makes, as plain functions over
// opaque handles: the one place that includes cuda_runtime.h (cuda_runtime.cpp). A build
// without CUDA links cuda_runtime_off.cpp instead, whose device_count() is 0 and whose
// other functions raise, so everything above this file compiles and behaves the same in
// both builds. Errors become ember::Error with the runtime's message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::core::cuda_rt {

/// Number of devices; 0 with `reason` set when none can be used.
int device_count(std::string* reason);
int current_device();
void set_device(int device);
std::string device_name(int device);
void device_capability(int device, int* major, int* minor);
int multiprocessor_count(int device);
/// The device's L2 cache size in bytes (cudaDevAttrL2CacheSize).
int64_t l2_cache_bytes(int device);
void device_synchronize(int device);
void mem_info(int device, size_t* free_bytes, size_t* total_bytes);

/// cudaMalloc on the current device; nullptr when the device is out of memory (the
/// sticky error is cleared), raises on other errors.
void* malloc(size_t bytes);
void free(void* p);
/// Page-locked host memory (cudaHostAlloc) and its release.
void* host_alloc(size_t bytes);
void host_free(void* p);

void* stream_create();
void stream_synchronize(void* stream);
bool stream_query(void* stream);

void* event_create(bool timing);
void event_destroy(void* event);
void event_record(void* event, void* stream);
bool event_query(void* event);
void event_synchronize(void* event);
float event_elapsed_ms(void* start, void* end);
void stream_wait_event(void* stream, void* event);

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };
/// Raises for a copy to or from host memory on a stream that is capturing a CUDA graph.
void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind, void* stream);
/// cudaMemsetAsync: `bytes` bytes of device memory at `dst` set to `value` on `stream`.
void memset_async(void* dst, int value, size_t bytes, void* stream);

/// CUDA graphs (cudaStreamBeginCapture … cudaGraphLaunch). Capture is in relaxed mode:
/// calls such as cudaMalloc stay legal on the capturing thread, and work queued on the
/// stream is recorded, not run. stream_end_capture never raises: it returns the graph, or
/// nullptr with `error` set when the capture failed (an illegal call invalidated it), so
/// that a caller unwinding from such a failure can always leave capture mode.
void stream_begin_capture(void* stream);
void* stream_end_capture(void* stream, std::string* error);
/// Whether `stream` is capturing now.
bool stream_is_capturing(void* stream);
/// An executable graph of `graph` (cudaGraphInstantiate), uploaded to the device.
void* graph_instantiate(void* graph);
void graph_launch(void* exec, void* stream);
/// The number of nodes in `graph` (kernels, copies, memsets, …).
size_t graph_node_count(void* graph);
void graph_destroy(void* graph);
void graph_exec_destroy(void* exec);

/// The driver entry point `name` (cuModuleLoadData, cuLaunchKernel, …) through the
/// runtime, so that Ember never links libcuda (absent on machines without a driver).
void* driver_entry_point(const char* name);

}  // namespace ember::core::cuda_rt
