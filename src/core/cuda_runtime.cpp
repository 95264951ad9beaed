// core/cuda_runtime.cpp — cuda_runtime.h over the CUDA runtime (libcudart). Built only
// with EMBER_CUDA; cuda_runtime_off.cpp stands in otherwise.
#include "core/cuda_runtime.h"

#include <cuda_runtime_api.h>

#include "ember/error.h"

namespace ember::core::cuda_rt {
namespace {

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so later calls do not report it again
  EMBER_FAIL() << "CUDA error: " << cudaGetErrorString(err) << " (" << cudaGetErrorName(err) << ") in " << what;
}

/// Whether queued work is done (cudaErrorNotReady: not yet); raises on other errors.
bool done(cudaError_t err, const char* what) {
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check(err, what);
  return true;
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }

}  // namespace

int device_count(std::string* reason) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (reason) *reason = std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ")";
    return 0;
  }
  if (n == 0 && reason) *reason = "the CUDA runtime reports no devices";
  return n;
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void set_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

std::string device_name(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return prop.name;
}

void device_capability(int device, int* major, int* minor) {
  check(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
}

int multiprocessor_count(int device) {
  int n = 0;
  check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return n;
}

int64_t l2_cache_bytes(int device) {
  int n = 0;
  check(cudaDeviceGetAttribute(&n, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
  return n;
}

void device_synchronize(int device) {
  int previous = current_device();
  if (previous != device) set_device(device);
  const cudaError_t err = cudaDeviceSynchronize();
  if (previous != device) set_device(previous);
  check(err, "cudaDeviceSynchronize");
}

void mem_info(int device, size_t* free_bytes, size_t* total_bytes) {
  int previous = current_device();
  if (previous != device) set_device(device);
  const cudaError_t err = cudaMemGetInfo(free_bytes, total_bytes);
  if (previous != device) set_device(previous);
  check(err, "cudaMemGetInfo");
}

void* malloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  check(err, "cudaMalloc");
  return p;
}

void free(void* p) { check(cudaFree(p), "cudaFree"); }

void* host_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  return p;
}

void host_free(void* p) { check(cudaFreeHost(p), "cudaFreeHost"); }

void* stream_create() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

void stream_synchronize(void* stream) { check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize"); }

bool stream_query(void* stream) { return done(cudaStreamQuery(as_stream(stream)), "cudaStreamQuery"); }

void* event_create(bool timing) {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

void event_destroy(void* event) { check(cudaEventDestroy(as_event(event)), "cudaEventDestroy"); }
void event_record(void* event, void* stream) { check(cudaEventRecord(as_event(event), as_stream(stream)), "cudaEventRecord"); }

bool event_query(void* event) { return done(cudaEventQuery(as_event(event)), "cudaEventQuery"); }

void event_synchronize(void* event) { check(cudaEventSynchronize(as_event(event)), "cudaEventSynchronize"); }

float event_elapsed_ms(void* start, void* end) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, as_event(start), as_event(end)), "cudaEventElapsedTime");
  return ms;
}

void stream_wait_event(void* stream, void* event) {
  check(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0), "cudaStreamWaitEvent");
}

void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind, void* stream) {
  if (kind != CopyKind::DeviceToDevice) {
    // Captured into a CUDA graph, a copy would read (or write) that host memory again at
    // each replay, long after the caller's buffer is gone: refuse, so the capture fails.
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(as_stream(stream), &status), "cudaStreamIsCapturing");
    EMBER_CHECK(status == cudaStreamCaptureStatusNone)
        << "a copy between host and device memory cannot be captured into a CUDA graph (the host buffer would be "
        << "read or written again at each replay)";
  }
  const cudaMemcpyKind k = kind == CopyKind::HostToDevice   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::DeviceToHost ? cudaMemcpyDeviceToHost
                                                            : cudaMemcpyDeviceToDevice;
  check(cudaMemcpyAsync(dst, src, bytes, k, as_stream(stream)), "cudaMemcpyAsync");
}

void memset_async(void* dst, int value, size_t bytes, void* stream) {
  check(cudaMemsetAsync(dst, value, bytes, as_stream(stream)), "cudaMemsetAsync");
}

void stream_begin_capture(void* stream) {
  check(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
}

void* stream_end_capture(void* stream, std::string* error) {
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(as_stream(stream), &graph);
  if (err == cudaSuccess && graph) return graph;
  cudaGetLastError();
  if (graph) cudaGraphDestroy(graph);
  if (error) *error = std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ") in cudaStreamEndCapture";
  return nullptr;
}

bool stream_is_capturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(as_stream(stream), &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

void* graph_instantiate(void* graph) {
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiateWithFlags(&exec, static_cast<cudaGraph_t>(graph), 0), "cudaGraphInstantiate");
  return exec;
}

void graph_launch(void* exec, void* stream) {
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), as_stream(stream)), "cudaGraphLaunch");
}

size_t graph_node_count(void* graph) {
  size_t n = 0;
  check(cudaGraphGetNodes(static_cast<cudaGraph_t>(graph), nullptr, &n), "cudaGraphGetNodes");
  return n;
}

void graph_destroy(void* graph) { check(cudaGraphDestroy(static_cast<cudaGraph_t>(graph)), "cudaGraphDestroy"); }
void graph_exec_destroy(void* exec) {
  check(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)), "cudaGraphExecDestroy");
}

void* driver_entry_point(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  check(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status), name);
  EMBER_CHECK(status == cudaDriverEntryPointSuccess && fn) << "the CUDA driver has no entry point " << name;
  return fn;
}

}  // namespace ember::core::cuda_rt
