// core/cuda.h — what the rest of Ember needs of the cuda device below the public API
// (ember/cuda.h): device memory from the caching allocator on the current stream, pinned
// host memory, the current stream's handle, and host copies of a CUDA tensor's values
// (printing, item(), to_vector()). See Note [cuda].
#pragma once

#include <cstddef>

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

/// Page-locked host memory (a Storage deleter identifies it: is_pinned).
void* pinned_alloc(size_t bytes);
void pinned_free(void* p);
bool is_pinned(const Storage& s);

/// The cudaStream_t kernels and copies on `device` go to now.
void* current_stream_handle(int device);

/// A CPU tensor with `t`'s sizes, strides and values (t on a CUDA device; waits for it).
Tensor host_copy(const Tensor& t);

}  // namespace ember::core::cuda
