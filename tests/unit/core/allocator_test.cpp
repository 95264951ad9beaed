// Tests of the CPU allocator (core/allocator.h): alignment, the cache of large blocks
// (a freed block serves the next request of a size that fits), emptying it, and the
// count of live bytes and their peak.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/allocator.h"
#include "ember/ember.h"

namespace ember {
namespace {

TEST(CpuAllocator, SmallAndLargeBlocksAre64ByteAligned) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{4096}, core::kLargeBlock, 3 * core::kLargeBlock + 5}) {
    void* p = core::cpu_alloc(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    static_cast<char*>(p)[n - 1] = 1;  // the whole block is writable
    core::cpu_free(p);
  }
}

TEST(CpuAllocator, AFreedLargeBlockServesTheNextRequestOfThatSize) {
  if (core::cpu_cache_stats().limit_bytes == 0) GTEST_SKIP() << "EMBER_CPU_CACHE_MB=0 (or a sanitizer build)";
  core::cpu_cache_empty();
  const auto before = core::cpu_cache_stats();
  const void* first = nullptr;
  {
    Tensor t = empty({4 << 20});  // 16 MiB of float
    first = t.raw_data_ptr();
  }
  EXPECT_GT(core::cpu_cache_stats().cached_bytes, size_t{16} << 20);
  Tensor again = empty({4 << 20});
  EXPECT_EQ(again.raw_data_ptr(), first);
  const auto after = core::cpu_cache_stats();
  EXPECT_EQ(after.hits - before.hits, 1);
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.cached_bytes, 0u);
}

TEST(CpuAllocator, ARequestMuchSmallerThanACachedBlockMapsAnewAndEmptyingReleasesAll) {
  if (core::cpu_cache_stats().limit_bytes == 0) GTEST_SKIP() << "EMBER_CPU_CACHE_MB=0 (or a sanitizer build)";
  core::cpu_cache_empty();
  { Tensor big = empty({16 << 20}); }  // 64 MiB cached
  const auto before = core::cpu_cache_stats();
  { Tensor small = empty({1 << 20}); }  // 4 MiB: a 64 MiB block would waste too much
  const auto after = core::cpu_cache_stats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses - before.misses, 1);
  core::cpu_cache_empty();
  EXPECT_EQ(core::cpu_cache_stats().cached_bytes, 0u);
}

TEST(CpuAllocator, LiveBytesCountEachBlockUntilItIsFreedAndThePeakKeepsTheMost) {
  const size_t base = core::cpu_memory_stats().live_bytes;
  core::cpu_reset_peak_memory();
  EXPECT_EQ(core::cpu_memory_stats().peak_live_bytes, base);
  void* small = core::cpu_alloc(1000);
  void* large = core::cpu_alloc(3 * core::kLargeBlock + 5);
  EXPECT_EQ(core::cpu_memory_stats().live_bytes, base + 1000 + 3 * core::kLargeBlock + 5);
  core::cpu_free(large);  // cached or unmapped, it is no longer live
  EXPECT_EQ(core::cpu_memory_stats().live_bytes, base + 1000);
  EXPECT_EQ(core::cpu_memory_stats().peak_live_bytes, base + 1000 + 3 * core::kLargeBlock + 5);
  core::cpu_reset_peak_memory();
  EXPECT_EQ(core::cpu_memory_stats().peak_live_bytes, base + 1000);
  core::cpu_free(small);
  EXPECT_EQ(core::cpu_memory_stats().live_bytes, base);
}

TEST(CpuAllocator, ATensorsStorageIsLiveWhileTheTensorIs) {
  const size_t base = core::cpu_memory_stats().live_bytes;
  {
    Tensor t = empty({1000, 3});
    EXPECT_EQ(core::cpu_memory_stats().live_bytes, base + 12000);
  }
  EXPECT_EQ(core::cpu_memory_stats().live_bytes, base);
}

}  // namespace
}  // namespace ember
