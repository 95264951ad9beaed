// core/cuda_allocator.cpp — see cuda_allocator.h and Note [cuda allocator].
#include "core/cuda_allocator.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <vector>

#include "ember/error.h"

namespace ember::core::cuda {

/// A piece of a segment. Blocks of one segment form a doubly linked list in address order;
/// a free block sits in its pool, an allocated one in live_.
struct CachingAllocator::Block {
  size_t size = 0;       // rounded
  size_t requested = 0;  // what the caller asked for (allocated blocks)
  char* ptr = nullptr;
  StreamId stream = 0;   // the stream it was allocated for; reused only there
  bool allocated = false;
  bool small = false;    // which pool it belongs to
  Block* prev = nullptr;
  Block* next = nullptr;
  int event_count = 0;   // events of other streams still outstanding after free
  std::unordered_set<StreamId> stream_uses;
};

bool CachingAllocator::BlockLess::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

size_t round_size(size_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

size_t segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

std::string format_size(size_t bytes) {
  char buf[64];
  if (bytes <= 1024) {
    std::snprintf(buf, sizeof buf, "%zu bytes", bytes);
  } else if (bytes <= 1048576) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes <= size_t{1073741824}) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return buf;
}

CachingAllocator::CachingAllocator(int device, std::unique_ptr<AllocatorBackend> backend)
    : device_(device), backend_(std::move(backend)) {}

CachingAllocator::~CachingAllocator() {
  // At exit the device may already be gone; blocks still live belong to tensors that
  // outlive the allocator and are left to the driver's teardown.
  try {
    empty_cache();
  } catch (...) {
  }
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t rounded, StreamId stream) {
  Block key;
  key.stream = stream;
  key.size = rounded;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

void* CachingAllocator::split_and_hand_out(Block* block, size_t rounded, size_t requested) {
  const size_t remaining = block->size - rounded;
  // The small pool keeps any remainder of at least one block; the large pool keeps only
  // remainders bigger than a small request (smaller ones would fragment it).
  const bool split = block->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    auto* rest = new Block;
    rest->ptr = block->ptr + rounded;
    rest->size = remaining;
    rest->stream = block->stream;
    rest->small = block->small;
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = rounded;
    (rest->small ? small_ : large_).insert(rest);
  }
  block->allocated = true;
  block->requested = requested;
  live_[block->ptr] = block;
  stats_.allocated_bytes += block->size;
  stats_.requested_bytes += requested;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return block->ptr;
}

void* CachingAllocator::malloc(size_t bytes, StreamId stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  process_events();
  const size_t rounded = round_size(bytes);
  Pool& pool = pool_for(rounded);
  if (Block* b = find_free(pool, rounded, stream)) {
    ++stats_.cache_hits;
    return split_and_hand_out(b, rounded, bytes);
  }
  const size_t seg = segment_size(rounded);
  void* p = backend_->raw_malloc(seg);
  if (!p) {
    // Give the cache back to the device and try once more, as PyTorch does.
    synchronize_and_free_events();
    release_free_segments();
    p = backend_->raw_malloc(seg);
    if (!p) raise_oom(rounded);
  }
  ++stats_.device_mallocs;
  ++stats_.segments;
  stats_.reserved_bytes += seg;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  auto* b = new Block;
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->stream = stream;
  b->small = &pool == &small_;
  return split_and_hand_out(b, rounded, bytes);
}

void CachingAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) {
    // A double free or a foreign pointer is a bug in Ember, never a user error.
    std::fprintf(stderr, "ember: CUDA caching allocator: free of unknown pointer %p\n", p);
    return;
  }
  Block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  stats_.allocated_bytes -= b->size;
  stats_.requested_bytes -= b->requested;
  if (!b->stream_uses.empty()) {
    for (StreamId s : b->stream_uses) {
      pending_events_.emplace_back(backend_->record_event(s), b);
      ++b->event_count;
    }
    b->stream_uses.clear();
    ++stats_.pending_frees;
    return;
  }
  free_block(b);
}

void CachingAllocator::free_block(Block* b) {
  Pool& pool = b->small ? small_ : large_;
  auto mergeable = [](Block* n) { return n && !n->allocated && n->event_count == 0; };
  // `right` joins its left neighbour `left`, both in one segment.
  auto absorb = [](Block* left, Block* right) {
    left->size += right->size;
    left->next = right->next;
    if (right->next) right->next->prev = left;
    delete right;
  };
  if (mergeable(b->prev)) {
    Block* prev = b->prev;
    pool.erase(prev);
    absorb(prev, b);
    b = prev;
  }
  if (mergeable(b->next)) {
    pool.erase(b->next);
    absorb(b, b->next);
  }
  pool.insert(b);
}

void CachingAllocator::process_events() {
  for (auto it = pending_events_.begin(); it != pending_events_.end();) {
    if (!backend_->event_done(it->first)) {
      ++it;
      continue;
    }
    backend_->destroy_event(it->first);
    Block* b = it->second;
    it = pending_events_.erase(it);
    if (--b->event_count == 0) {
      --stats_.pending_frees;
      free_block(b);
    }
  }
}

void CachingAllocator::synchronize_and_free_events() {
  for (auto& [event, block] : pending_events_) backend_->wait_event(event);
  process_events();
}

void CachingAllocator::release_free_segments() {
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {  // part of a segment still in use
        ++it;
        continue;
      }
      it = pool->erase(it);
      backend_->raw_free(b->ptr);
      stats_.reserved_bytes -= b->size;
      --stats_.segments;
      ++stats_.device_frees;
      delete b;
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  synchronize_and_free_events();
  release_free_segments();
}

void CachingAllocator::record_stream(void* p, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // 0-byte tensors and views into freed memory have no block
  if (stream != it->second->stream) it->second->stream_uses.insert(stream);
}

bool CachingAllocator::owns(void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.count(p) != 0;
}

size_t CachingAllocator::block_size(void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  return it == live_.end() ? 0 : it->second->size;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

void CachingAllocator::raise_oom(size_t rounded) {
  size_t free_bytes = 0, total_bytes = 0;
  backend_->mem_info(&free_bytes, &total_bytes);
  EMBER_FAIL() << "CUDA out of memory. Tried to allocate " << format_size(rounded) << ". GPU " << device_
               << " has a total capacity of " << format_size(total_bytes) << " of which " << format_size(free_bytes)
               << " is free. Of the allocated memory " << format_size(stats_.allocated_bytes)
               << " is allocated by Ember, and " << format_size(stats_.reserved_bytes - stats_.allocated_bytes)
               << " is reserved by Ember but unallocated. (See Note [cuda allocator]: memory_allocated(), "
                  "memory_reserved(), empty_cache().)";
}

}  // namespace ember::core::cuda
