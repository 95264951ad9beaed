// core/allocator.h — CPU memory for Storage: small blocks from the C heap, large blocks
// (≥ kLargeBlock) mapped with transparent huge pages and kept in a bounded cache when
// freed, so that a workload that frees and reallocates a 64 MiB output every call does
// not unmap, remap and page-fault it every call. See Note [allocator] (docs/notes/allocator.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::core {

/// Blocks at least this large are mapped (not taken from the C heap) and cached.
inline constexpr size_t kLargeBlock = size_t{1} << 20;

/// `nbytes` of CPU memory, 64-byte aligned (never null: raises ember::Error when out of
/// memory). Release it with cpu_free.
void* cpu_alloc(size_t nbytes);
/// Releases memory from cpu_alloc; a large block goes to the cache while it holds less than
/// its limit, otherwise it is unmapped.
void cpu_free(void* p);

struct CpuCacheStats {
  int64_t hits = 0;          ///< large allocations served from the cache
  int64_t misses = 0;        ///< large allocations that mapped new memory
  size_t cached_bytes = 0;   ///< bytes in the cache now
  size_t limit_bytes = 0;    ///< the cache's limit (EMBER_CPU_CACHE_MB; 0 turns caching off)
};
CpuCacheStats cpu_cache_stats();
/// Unmaps every cached block.
void cpu_cache_empty();

/// Tensor memory in use: the bytes asked of cpu_alloc and not yet given back to cpu_free
/// (headers, rounding and the cache left out), and the most there were at once since the
/// last cpu_reset_peak_memory() (torch.cuda.max_memory_allocated for the CPU). The
/// benchmarks read it to measure what a forward pass leaves alive for backward.
struct CpuMemoryStats {
  size_t live_bytes = 0;
  size_t peak_live_bytes = 0;
};
CpuMemoryStats cpu_memory_stats();
/// Starts a new peak at the bytes live now.
void cpu_reset_peak_memory();

}  // namespace ember::core
