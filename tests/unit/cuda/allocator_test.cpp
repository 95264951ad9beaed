// The CUDA caching allocator's bookkeeping, driven by a fake device (no GPU needed):
// rounding, the small and large pools, splitting, coalescing, stream-ordered reuse,
// record_stream's deferred reuse, statistics, empty_cache and the out-of-memory message.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "core/cuda_allocator.h"
#include "ember/error.h"

namespace ember::core::cuda {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

/// A device of `capacity` bytes whose memory is never touched: pointers are addresses in
/// a fake range. Events complete when the test says so.
struct FakeDevice {
  size_t capacity = 0;
  size_t used = 0;
  uintptr_t next = 0x100000000;
  std::map<void*, size_t> segments;
  int mallocs = 0, frees = 0;
  std::map<int*, bool> events;  // event -> done
  std::map<int*, StreamId> event_stream;
};

class FakeBackend final : public AllocatorBackend {
 public:
  explicit FakeBackend(FakeDevice* d) : d_(d) {}
  void* raw_malloc(size_t bytes) override {
    if (d_->used + bytes > d_->capacity) return nullptr;
    void* p = reinterpret_cast<void*>(d_->next);
    d_->next += bytes + kMiB * 2;
    d_->used += bytes;
    d_->segments[p] = bytes;
    ++d_->mallocs;
    return p;
  }
  void raw_free(void* p) override {
    d_->used -= d_->segments.at(p);
    d_->segments.erase(p);
    ++d_->frees;
  }
  void* record_event(StreamId stream) override {
    int* e = new int(0);
    d_->events[e] = false;
    d_->event_stream[e] = stream;
    return e;
  }
  bool event_done(void* e) override { return d_->events.at(static_cast<int*>(e)); }
  void wait_event(void* e) override { d_->events.at(static_cast<int*>(e)) = true; }
  void destroy_event(void* e) override {
    d_->events.erase(static_cast<int*>(e));
    d_->event_stream.erase(static_cast<int*>(e));
    delete static_cast<int*>(e);
  }
  void mem_info(size_t* free_bytes, size_t* total_bytes) override {
    *free_bytes = d_->capacity - d_->used;
    *total_bytes = d_->capacity;
  }

 private:
  FakeDevice* d_;
};

class CudaAllocator : public ::testing::Test {
 protected:
  void make(size_t capacity) {
    dev.capacity = capacity;
    alloc = std::make_unique<CachingAllocator>(0, std::make_unique<FakeBackend>(&dev));
  }
  FakeDevice dev;
  std::unique_ptr<CachingAllocator> alloc;
};

char* as_bytes(void* p) { return static_cast<char*>(p); }

TEST(CudaAllocatorSizes, RequestsRoundUpTo512Bytes) {
  EXPECT_EQ(round_size(1), 512u);
  EXPECT_EQ(round_size(512), 512u);
  EXPECT_EQ(round_size(513), 1024u);
  EXPECT_EQ(round_size(1000000), 1000448u);
}

TEST(CudaAllocatorSizes, SegmentsAre2MiBSmall20MiBMediumAndRounded2MiBLarge) {
  EXPECT_EQ(segment_size(512), 2 * kMiB);
  EXPECT_EQ(segment_size(kMiB), 2 * kMiB);
  EXPECT_EQ(segment_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(segment_size(11 * kMiB + 1), 12 * kMiB);
}

TEST(CudaAllocatorSizes, FormatSizeFollowsPyTorch) {
  EXPECT_EQ(format_size(300), "300 bytes");
  EXPECT_EQ(format_size(2048), "2.00 KiB");
  EXPECT_EQ(format_size(3 * kMiB), "3.00 MiB");
  EXPECT_EQ(format_size(size_t{5} << 30), "5.00 GiB");
}

TEST_F(CudaAllocator, SmallRequestsShareOneTwoMiBSegment) {
  make(64 * kMiB);
  void* a = alloc->malloc(1000, 0);
  void* b = alloc->malloc(1000, 0);
  EXPECT_EQ(dev.mallocs, 1);
  EXPECT_EQ(as_bytes(b) - as_bytes(a), 1024);  // the rest of the segment was split off
  EXPECT_EQ(alloc->stats().allocated_bytes, 2048u);
  EXPECT_EQ(alloc->stats().reserved_bytes, 2 * kMiB);
  EXPECT_EQ(alloc->stats().requested_bytes, 2000u);
  alloc->free(a);
  alloc->free(b);
}

TEST_F(CudaAllocator, ZeroBytesGiveNullAndNoSegment) {
  make(64 * kMiB);
  EXPECT_EQ(alloc->malloc(0, 0), nullptr);
  EXPECT_EQ(dev.mallocs, 0);
}

TEST_F(CudaAllocator, FreedBlockIsReusedOnItsStreamWithoutANewSegment) {
  make(64 * kMiB);
  void* a = alloc->malloc(4 * kMiB, 7);
  alloc->free(a);
  void* b = alloc->malloc(4 * kMiB, 7);
  EXPECT_EQ(a, b);
  EXPECT_EQ(dev.mallocs, 1);
  EXPECT_EQ(alloc->stats().cache_hits, 1);
  alloc->free(b);
}

TEST_F(CudaAllocator, FreedBlockIsNotReusedOnAnotherStream) {
  make(64 * kMiB);
  void* a = alloc->malloc(4 * kMiB, 1);
  alloc->free(a);
  void* b = alloc->malloc(4 * kMiB, 2);
  EXPECT_NE(a, b);
  EXPECT_EQ(dev.mallocs, 2);
  alloc->free(b);
}

TEST_F(CudaAllocator, FreeNeighboursCoalesceBackIntoTheWholeSegment) {
  make(64 * kMiB);
  void* a = alloc->malloc(512, 0);
  void* b = alloc->malloc(512, 0);
  void* c = alloc->malloc(512, 0);
  alloc->free(a);
  alloc->free(c);
  alloc->free(b);  // merges with both neighbours and the segment's tail
  // The whole segment is one free block again: a 1 MiB request starts at its beginning
  // (without coalescing it would go to the segment's free tail, after c).
  void* big = alloc->malloc(kMiB, 0);
  EXPECT_EQ(big, a);
  EXPECT_EQ(dev.mallocs, 1);
  alloc->free(big);
  alloc->empty_cache();
  EXPECT_EQ(dev.frees, 1);  // one segment, released whole
  EXPECT_EQ(alloc->stats().reserved_bytes, 0u);
}

TEST_F(CudaAllocator, LargeBlocksSplitOnlyWhenTheRestExceedsOneMiB) {
  make(256 * kMiB);
  void* a = alloc->malloc(12 * kMiB, 0);  // a 12 MiB segment
  alloc->free(a);
  void* b = alloc->malloc(11 * kMiB + 512, 0);  // remainder < 1 MiB: the whole block
  EXPECT_EQ(alloc->block_size(b), 12 * kMiB);
  alloc->free(b);
  void* c = alloc->malloc(4 * kMiB, 0);  // remainder 8 MiB: split
  EXPECT_EQ(alloc->block_size(c), 4 * kMiB);
  void* d = alloc->malloc(8 * kMiB, 0);
  EXPECT_EQ(as_bytes(d) - as_bytes(c), static_cast<ptrdiff_t>(4 * kMiB));
  EXPECT_EQ(dev.mallocs, 1);
  alloc->free(c);
  alloc->free(d);
}

TEST_F(CudaAllocator, SmallAndLargePoolsDoNotServeEachOther) {
  make(256 * kMiB);
  void* large = alloc->malloc(30 * kMiB, 0);
  alloc->free(large);
  void* small = alloc->malloc(4096, 0);
  EXPECT_EQ(dev.mallocs, 2);  // the cached 30 MiB block is not cut for a small request
  alloc->free(small);
}

TEST_F(CudaAllocator, RecordStreamDefersReuseUntilTheOtherStreamsWorkIsDone) {
  make(64 * kMiB);
  void* a = alloc->malloc(4 * kMiB, 1);
  alloc->record_stream(a, 2);
  alloc->free(a);
  EXPECT_EQ(alloc->stats().pending_frees, 1);
  ASSERT_EQ(dev.events.size(), 1u);
  EXPECT_EQ(dev.event_stream.begin()->second, 2u);  // the event is on the stream that used it
  void* b = alloc->malloc(4 * kMiB, 1);
  EXPECT_NE(a, b);  // not reusable yet
  dev.events.begin()->second = true;  // stream 2 finished
  alloc->free(b);
  void* c = alloc->malloc(4 * kMiB, 1);
  EXPECT_TRUE(c == a || c == b);
  EXPECT_EQ(alloc->stats().pending_frees, 0);
  EXPECT_TRUE(dev.events.empty());
  alloc->free(c);
}

TEST_F(CudaAllocator, RecordStreamOnTheAllocationStreamRecordsNoEvent) {
  make(64 * kMiB);
  void* a = alloc->malloc(4096, 3);
  alloc->record_stream(a, 3);
  alloc->free(a);
  EXPECT_TRUE(dev.events.empty());
  EXPECT_EQ(alloc->malloc(4096, 3), a);
}

TEST_F(CudaAllocator, PeakStatsTrackTheMaximumUntilReset) {
  make(256 * kMiB);
  void* a = alloc->malloc(30 * kMiB, 0);
  void* b = alloc->malloc(40 * kMiB, 0);
  alloc->free(a);
  alloc->free(b);
  AllocatorStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.peak_allocated_bytes, 70 * kMiB);
  EXPECT_EQ(s.reserved_bytes, 70 * kMiB);  // cached, not returned
  alloc->reset_peak_stats();
  EXPECT_EQ(alloc->stats().peak_allocated_bytes, 0u);
  alloc->empty_cache();
  EXPECT_EQ(alloc->stats().reserved_bytes, 0u);
  EXPECT_EQ(alloc->stats().peak_reserved_bytes, 70 * kMiB);
}

TEST_F(CudaAllocator, EmptyCacheKeepsSegmentsWithLiveBlocks) {
  make(64 * kMiB);
  void* a = alloc->malloc(512, 0);
  void* b = alloc->malloc(512, 0);
  alloc->free(b);
  alloc->empty_cache();
  EXPECT_EQ(dev.frees, 0);
  EXPECT_EQ(alloc->stats().reserved_bytes, 2 * kMiB);
  alloc->free(a);
  alloc->empty_cache();
  EXPECT_EQ(dev.frees, 1);
}

TEST_F(CudaAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  make(40 * kMiB);
  void* a = alloc->malloc(30 * kMiB, 0);
  alloc->free(a);  // cached on stream 0
  void* b = alloc->malloc(30 * kMiB, 5);  // another stream: needs the cached segment released
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(dev.frees, 1);
  alloc->free(b);
}

TEST_F(CudaAllocator, OutOfMemoryErrorSaysWhatWasAskedAllocatedReservedAndFree) {
  make(64 * kMiB);
  void* a = alloc->malloc(30 * kMiB, 0);
  void* s = alloc->malloc(4096, 0);
  try {
    alloc->malloc(size_t{3} << 30, 0);
    ADD_FAILURE() << "expected an out-of-memory error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 64.00 MiB of "
                       "which 32.00 MiB is free. Of the allocated memory 30.00 MiB is allocated by Ember, and 2.00 MiB "
                       "is reserved by Ember but unallocated."),
              std::string::npos)
        << msg;
  }
  // The failed request left the allocator usable.
  alloc->free(s);
  alloc->free(a);
  EXPECT_EQ(alloc->stats().allocated_bytes, 0u);
}

}  // namespace
}  // namespace ember::core::cuda
