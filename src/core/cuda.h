// core/cuda.h — what the rest of Ember needs of the cuda device below the public API
// (ember/cuda.h): device memory from the caching allocator on the current stream, pinned
// host memory, the current stream's handle, and host copies of a CUDA tensor's values
// (printing, item(), to_vector()). See Note [cuda].
#pragma once

#include <cstddef>
#include <map>
#include <unordered_set>

#include "core/cuda_allocator.h"
#include "ember/tensor.h"

namespace ember::core::cuda {

/// `cuda` without an index means the current device (cuda:N once a tensor lives there).
Device normalize_device(Device d);

/// `bytes` of memory on `device` for use on its current stream; release with device_free.
void* device_alloc(size_t bytes, int device);
void device_free(void* p);
/// The allocator of `device` (created on first use).
CachingAllocator& allocator(int device);

/// The memory of one CUDA graph (Note [cuda], "CUDA graphs"): while a GraphPoolScope of it
/// is alive on a thread, device_alloc for its device takes blocks through it, and
/// device_free of one of its blocks keeps the block in the pool (a later allocation in a
/// scope reuses it) instead of handing it back to the allocator. So every address a
/// captured graph reads or writes stays the graph's own between replays. The destructor
/// returns the blocks to the allocator: destroy a pool only when no replay of its graph can
/// still run.
class GraphPool {
 public:
  explicit GraphPool(int device) : device_(device) {}
  ~GraphPool();
  GraphPool(const GraphPool&) = delete;
  GraphPool& operator=(const GraphPool&) = delete;

  int device() const { return device_; }
  /// Bytes of the blocks the pool holds (live or kept), rounded as the allocator rounds.
  size_t bytes() const { return bytes_; }
  void* alloc(size_t bytes);
  /// Keeps `p` when it is one of the pool's live blocks (true); false otherwise.
  bool release(void* p);

 private:
  int device_;
  size_t bytes_ = 0;
  std::unordered_set<void*> live_;
  std::multimap<size_t, void*> kept_;  // by rounded size
};

/// Routes this thread's device memory on the pool's device through `pool` while alive.
class GraphPoolScope {
 public:
  explicit GraphPoolScope(GraphPool& pool);
  ~GraphPoolScope();
  GraphPoolScope(const GraphPoolScope&) = delete;
  GraphPoolScope& operator=(const GraphPoolScope&) = delete;

 private:
  GraphPool* saved_;
};

/// Page-locked host memory (a Storage deleter identifies it: is_pinned).
void* pinned_alloc(size_t bytes);
void pinned_free(void* p);
bool is_pinned(const Storage& s);

/// The cudaStream_t kernels and copies on `device` go to now.
void* current_stream_handle(int device);

/// A CPU tensor with `t`'s sizes, strides and values (t on a CUDA device; waits for it).
Tensor host_copy(const Tensor& t);

}  // namespace ember::core::cuda
