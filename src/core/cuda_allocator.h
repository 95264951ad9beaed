// core/cuda_allocator.h — the bookkeeping of the CUDA caching allocator: pools of blocks
// cut from device segments, size rounding, best-fit search, splitting and coalescing,
// stream-ordered reuse with events for blocks used on other streams, and statistics. It
// touches the device only through AllocatorBackend (cudaMalloc, cudaFree, events), so
// tests drive it with a fake device. See Note [cuda allocator] (docs/notes/cuda_allocator.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace ember::core::cuda {

/// A stream, as the allocator sees it: the cudaStream_t's value (0 is the null stream).
using StreamId = uintptr_t;

/// What the allocator needs of a device.
class AllocatorBackend {
 public:
  virtual ~AllocatorBackend() = default;
  /// A new segment of `bytes`; nullptr when the device is out of memory.
  virtual void* raw_malloc(size_t bytes) = 0;
  virtual void raw_free(void* p) = 0;
  /// Creates an event and records it on `stream` (what was queued there so far).
  virtual void* record_event(StreamId stream) = 0;
  virtual bool event_done(void* event) = 0;
  virtual void wait_event(void* event) = 0;
  virtual void destroy_event(void* event) = 0;
  virtual void mem_info(size_t* free_bytes, size_t* total_bytes) = 0;
};

// Sizes, as in PyTorch's CUDACachingAllocator.
inline constexpr size_t kMinBlockSize = 512;             ///< every size is rounded up to a multiple
inline constexpr size_t kSmallSize = size_t{1} << 20;     ///< requests up to 1 MiB use the small pool
inline constexpr size_t kSmallBuffer = size_t{2} << 20;   ///< small-pool segments are 2 MiB
inline constexpr size_t kLargeBuffer = size_t{20} << 20;  ///< segments for requests in (1, 10) MiB
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;
inline constexpr size_t kRoundLarge = size_t{2} << 20;    ///< larger segments round up to 2 MiB

/// A request's size once rounded (multiples of 512 bytes, at least 512).
size_t round_size(size_t bytes);
/// The size of the segment cudaMalloc'd for a rounded request that no cached block fits.
size_t segment_size(size_t rounded);
/// "2.00 GiB", "512.00 KiB", "300 bytes" (PyTorch's format_size).
std::string format_size(size_t bytes);

struct AllocatorStats {
  size_t allocated_bytes = 0;      ///< blocks handed out (rounded sizes)
  size_t reserved_bytes = 0;       ///< segments obtained from the device
  size_t peak_allocated_bytes = 0;
  size_t peak_reserved_bytes = 0;
  size_t requested_bytes = 0;      ///< what callers asked for (unrounded)
  int64_t segments = 0;            ///< live segments
  int64_t device_mallocs = 0;      ///< raw_malloc calls that succeeded, ever
  int64_t device_frees = 0;        ///< raw_free calls, ever
  int64_t cache_hits = 0;          ///< requests served from a cached block
  int64_t pending_frees = 0;       ///< freed blocks waiting for events of other streams
};

/// One device's caching allocator. Thread-safe.
class CachingAllocator {
 public:
  CachingAllocator(int device, std::unique_ptr<AllocatorBackend> backend);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least `bytes` for use on `stream` (nullptr for 0 bytes). Raises
  /// "CUDA out of memory. Tried to allocate …" when the device cannot provide it even
  /// after the cache is released.
  void* malloc(size_t bytes, StreamId stream);
  /// Returns a block from malloc. It is reused at once on its own stream; if
  /// record_stream named other streams, only once their work queued so far is done.
  void free(void* p);
  /// Marks `p` (from malloc) as used by `stream` too.
  void record_stream(void* p, StreamId stream);
  bool owns(void* p) const;
  /// Releases every free segment (waiting for pending events first).
  void empty_cache();

  AllocatorStats stats() const;
  void reset_peak_stats();
  /// The rounded size of a live block (for tests and diagnostics).
  size_t block_size(void* p) const;

 private:
  struct Block;
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockLess>;

  Pool& pool_for(size_t rounded) { return rounded <= kSmallSize ? small_ : large_; }
  Block* find_free(Pool& pool, size_t rounded, StreamId stream);
  void* split_and_hand_out(Block* block, size_t rounded, size_t requested);
  void free_block(Block* block);  // back into its pool, merged with free neighbours
  void process_events();
  void synchronize_and_free_events();
  void release_free_segments();
  [[noreturn]] void raise_oom(size_t rounded);

  const int device_;
  std::unique_ptr<AllocatorBackend> backend_;
  mutable std::mutex mu_;
  Pool small_, large_;
  std::unordered_map<void*, Block*> live_;
  std::deque<std::pair<void*, Block*>> pending_events_;  // (event, block) in record order
  AllocatorStats stats_;
};

}  // namespace ember::core::cuda
