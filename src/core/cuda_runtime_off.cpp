// core/cuda_runtime_off.cpp — cuda_runtime.h in a build without CUDA (EMBER_CUDA=OFF):
// no devices, and every call that needs one raises.
#include "core/cuda_runtime.h"

#include "ember/error.h"

namespace ember::core::cuda_rt {
namespace {
[[noreturn]] void not_built() {
  EMBER_FAIL() << "Ember was not compiled with CUDA enabled (configure with -DEMBER_CUDA=ON and the CUDA toolkit)";
}
}  // namespace

int device_count(std::string* reason) {
  if (reason) *reason = "Ember was built without CUDA (EMBER_CUDA=OFF)";
  return 0;
}
int current_device() { not_built(); }
void set_device(int) { not_built(); }
std::string device_name(int) { not_built(); }
void device_capability(int, int*, int*) { not_built(); }
int multiprocessor_count(int) { not_built(); }
int64_t l2_cache_bytes(int) { not_built(); }
void device_synchronize(int) { not_built(); }
void mem_info(int, size_t*, size_t*) { not_built(); }
void* malloc(size_t) { not_built(); }
void free(void*) { not_built(); }
void* host_alloc(size_t) { not_built(); }
void host_free(void*) { not_built(); }
void* stream_create() { not_built(); }
void stream_synchronize(void*) { not_built(); }
bool stream_query(void*) { not_built(); }
void* event_create(bool) { not_built(); }
void event_destroy(void*) { not_built(); }
void event_record(void*, void*) { not_built(); }
bool event_query(void*) { not_built(); }
void event_synchronize(void*) { not_built(); }
float event_elapsed_ms(void*, void*) { not_built(); }
void stream_wait_event(void*, void*) { not_built(); }
void memcpy_async(void*, const void*, size_t, CopyKind, void*) { not_built(); }
void memset_async(void*, int, size_t, void*) { not_built(); }
void stream_begin_capture(void*) { not_built(); }
void* stream_end_capture(void*, std::string* error) {
  if (error) *error = "Ember was built without CUDA (EMBER_CUDA=OFF)";
  return nullptr;
}
bool stream_is_capturing(void*) { not_built(); }
void* graph_instantiate(void*) { not_built(); }
void graph_launch(void*, void*) { not_built(); }
size_t graph_node_count(void*) { not_built(); }
void graph_destroy(void*) { not_built(); }
void graph_exec_destroy(void*) { not_built(); }
void* driver_entry_point(const char*) { not_built(); }

}  // namespace ember::core::cuda_rt
