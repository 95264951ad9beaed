// core/allocator.cpp — CPU memory for Storage. See Note [allocator] (docs/notes/allocator.md).
//
// Every block starts with a 64-byte header (so user memory stays 64-byte aligned) saying
// how it was obtained. Large blocks are whole mappings rounded up to 2 MiB and aligned to
// 2 MiB, advised for transparent huge pages; freed, they wait in a cache keyed by mapping
// length until a request of a size that fits reuses them, up to a limit of cached bytes
// (oldest evicted first).
#include "core/allocator.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "ember/error.h"

namespace ember::core {
namespace {

constexpr size_t kHeader = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr uint64_t kSmallMagic = 0x656d626572536d6cull;  // "emberSml"
constexpr uint64_t kLargeMagic = 0x656d6265724c7267ull;  // "emberLrg"

struct Header {
  uint64_t magic;
  size_t length;  // large: the mapping's length (header included)
  size_t nbytes;  // what the caller asked for (live-bytes accounting)
};
static_assert(sizeof(Header) <= kHeader);

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/// The cache limit: EMBER_CPU_CACHE_MB, default 1 GiB (0 under AddressSanitizer, whose
/// use-after-free checks a cache would hide).
size_t limit_from_env() {
  if (const char* v = std::getenv("EMBER_CPU_CACHE_MB")) {
    char* end = nullptr;
    const long long mb = std::strtoll(v, &end, 10);
    EMBER_CHECK_VALUE(end != v && *end == '\0' && mb >= 0)
        << "EMBER_CPU_CACHE_MB: expected a number of MiB (0 turns the cache off), got '" << v << "'";
    return static_cast<size_t>(mb) << 20;
  }
#if defined(__SANITIZE_ADDRESS__)
  return 0;
#else
  return size_t{1} << 30;
#endif
}

class LargeBlockCache {
 public:
  static LargeBlockCache& get() {
    static LargeBlockCache* cache = new LargeBlockCache();  // never destroyed: frees may run at exit
    return *cache;
  }

  /// A cached mapping of at least `length` bytes (its length in `*got`), or null.
  void* take(size_t length, size_t* got) {
    std::lock_guard lock(mu_);
    // The smallest cached mapping that fits, unless it wastes more than a quarter.
    auto it = blocks_.lower_bound(length);
    if (it != blocks_.end() && it->first <= length + length / 4) {
      void* base = it->second.base;
      *got = it->first;
      cached_ -= it->first;
      blocks_.erase(it);
      ++hits_;
      return base;
    }
    ++misses_;
    return nullptr;
  }

  /// Keeps the mapping, evicting the oldest ones to stay under the limit; false when it
  /// cannot be kept (the caller unmaps it).
  bool give(void* base, size_t length) {
    std::lock_guard lock(mu_);
    if (length > limit_) return false;
    while (cached_ + length > limit_) {
      auto oldest = blocks_.begin();
      for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
        if (it->second.age < oldest->second.age) oldest = it;
      munmap(oldest->second.base, oldest->first);
      cached_ -= oldest->first;
      blocks_.erase(oldest);
    }
    blocks_.emplace(length, Block{base, clock_++});
    cached_ += length;
    return true;
  }

  void empty() {
    std::lock_guard lock(mu_);
    for (auto& [length, block] : blocks_) munmap(block.base, length);
    blocks_.clear();
    cached_ = 0;
  }

  CpuCacheStats stats() {
    std::lock_guard lock(mu_);
    return {hits_, misses_, cached_, limit_};
  }

 private:
  LargeBlockCache() : limit_(limit_from_env()) {}
  struct Block {
    void* base;
    uint64_t age;
  };
  std::mutex mu_;
  std::multimap<size_t, Block> blocks_;
  size_t cached_ = 0;
  size_t limit_;
  uint64_t clock_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

/// A fresh mapping of `length` bytes (a multiple of 2 MiB) aligned to 2 MiB.
void* map_large(size_t length) {
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePage);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + length + kHugePage;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
  void* base = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(base, length, MADV_HUGEPAGE);  // advice only: fewer page faults where THP is on
#endif
  return base;
}

std::atomic<size_t> live_bytes{0};
std::atomic<size_t> peak_live_bytes{0};

void count_alloc(size_t nbytes) {
  const size_t now = live_bytes.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  size_t peak = peak_live_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_live_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* cpu_alloc(size_t nbytes) {
  if (nbytes + kHeader < kLargeBlock) {
    void* base = std::aligned_alloc(kHeader, round_up(nbytes + kHeader, kHeader));
    EMBER_CHECK(base != nullptr) << "out of memory: could not allocate " << nbytes << " bytes";
    *static_cast<Header*>(base) = {kSmallMagic, 0, nbytes};
    count_alloc(nbytes);
    return static_cast<char*>(base) + kHeader;
  }
  const size_t length = round_up(nbytes + kHeader, kHugePage);
  size_t got = length;
  void* base = LargeBlockCache::get().take(length, &got);
  if (!base) {
    base = map_large(length);
    EMBER_CHECK(base != nullptr) << "out of memory: could not allocate " << nbytes << " bytes";
  }
  *static_cast<Header*>(base) = {kLargeMagic, got, nbytes};
  count_alloc(nbytes);
  return static_cast<char*>(base) + kHeader;
}

void cpu_free(void* p) {
  if (!p) return;
  void* base = static_cast<char*>(p) - kHeader;
  const Header h = *static_cast<Header*>(base);
  live_bytes.fetch_sub(h.nbytes, std::memory_order_relaxed);
  if (h.magic == kSmallMagic) {
    std::free(base);
    return;
  }
  EMBER_INTERNAL_ASSERT(h.magic == kLargeMagic) << "cpu_free: " << p << " did not come from cpu_alloc";
  if (!LargeBlockCache::get().give(base, h.length)) munmap(base, h.length);
}

CpuCacheStats cpu_cache_stats() { return LargeBlockCache::get().stats(); }

void cpu_cache_empty() { LargeBlockCache::get().empty(); }

CpuMemoryStats cpu_memory_stats() {
  return {live_bytes.load(std::memory_order_relaxed), peak_live_bytes.load(std::memory_order_relaxed)};
}

void cpu_reset_peak_memory() { peak_live_bytes.store(live_bytes.load(std::memory_order_relaxed)); }

}  // namespace ember::core
