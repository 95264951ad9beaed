// kernels/cpu/onednn.h — the process's oneDNN CPU engine, layout reorders and the memory of
// one primitive call, shared by the convolution primitives (dnnl_conv.h) and the float
// GEMM's matmul primitive (gemm.cpp).
//
// A call's temporaries (an operand reordered into the primitive's layout, a result before it
// is reordered back, the primitive's scratchpad) come from Ember's CPU allocator
// (core/allocator.h), not from oneDNN's own malloc: freed, a large block waits in the
// allocator's cache and the next call of the same shape reuses its resident pages. Through
// malloc each temporary of a W9 convolution (6.4 MB) was new memory on most calls, about
// 7,800 page faults per training step (Note [allocator]).
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "ember/tensor.h"

namespace ember::kernels::cpu::onednn {

inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// A reorder between two layouts of one tensor, or nothing when they agree.
inline std::unique_ptr<dnnl::reorder> reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return nullptr;
  return std::make_unique<dnnl::reorder>(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
}

/// A memory desc's layout as oneDNN's tags name it: the dims by decreasing stride,
/// blocked ones in capitals, then the inner blocks ("BA16a64b", "ABcd16b16a"; "ab" for row-major).
inline std::string format_name(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return "non-blocked";
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  std::vector<int> order(static_cast<size_t>(d.ndims));
  for (int i = 0; i < d.ndims; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string name;
  for (int i : order) {
    bool blocked = false;
    for (int j = 0; j < b.inner_nblks; ++j) blocked = blocked || b.inner_idxs[j] == i;
    name += static_cast<char>((blocked ? 'A' : 'a') + i);
  }
  for (int j = 0; j < b.inner_nblks; ++j)
    name += std::to_string(b.inner_blks[j]) + static_cast<char>('a' + b.inner_idxs[j]);
  return name;
}

/// Attributes that leave a primitive's scratchpad to the caller (a CallMemory of its
/// scratchpad_desc()).
inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// oneDNN memory for the length of one primitive call: either the caller's own memory, or
/// a temporary of a given layout whose buffer comes from core::cpu_alloc. (oneDNN's CPU
/// runtime here is OpenMP, whose execute() returns after the primitive ran, so a temporary
/// may be freed as soon as the last execute() reading it returned.)
class CallMemory {
 public:
  /// A temporary of layout `desc` (no buffer for an empty desc, e.g. a scratchpad of 0 bytes).
  explicit CallMemory(const dnnl::memory::desc& desc)
      : buffer_(desc.get_size() ? core::cpu_alloc(desc.get_size()) : nullptr, core::cpu_free),
        memory_(desc, engine(), buffer_.get()) {}
  /// The caller's memory itself.
  explicit CallMemory(dnnl::memory user) : buffer_(nullptr, core::cpu_free), memory_(std::move(user)) {}
  dnnl::memory& memory() { return memory_; }

 private:
  std::unique_ptr<void, void (*)(void*)> buffer_;
  dnnl::memory memory_;
};

/// An operand in the primitive's layout `want`: `user` itself when `r` is null, otherwise a
/// temporary that `r` reorders `user` into.
inline CallMemory in_layout(dnnl::stream& s, dnnl::memory& user, const dnnl::memory::desc& want,
                            const std::unique_ptr<dnnl::reorder>& r) {
  if (!r) return CallMemory(user);
  CallMemory m(want);
  r->execute(s, user, m.memory());
  return m;
}

/// Where a primitive writes a result of layout `have`: `user` itself when no reorder `r`
/// follows, otherwise a temporary (which the caller reorders into `user` after the call).
inline CallMemory out_layout(dnnl::memory& user, const dnnl::memory::desc& have,
                             const std::unique_ptr<dnnl::reorder>& r) {
  return r ? CallMemory(have) : CallMemory(user);
}

/// Copies of operands in the layouts primitives asked for, kept while the operand's
/// storage lives at the same version: the GEMM's packed right operands (Note [packed right
/// operands], gemm.cpp) and the convolution's reordered weights (Note [kept convolution
/// weights], conv.cpp). An entry is keyed by where the operand starts and its geometry
/// (`Key`), holds its storage weakly (a storage freed and another allocated at the same
/// address is not taken for it) and the version it saw: a write (every in-place op bumps
/// the version) or another storage starts it over. A copy is made only on the second
/// sight at one version, so an operand that changes between reads (a weight in training)
/// never gets one. The copies are at most `max_bytes` in all and are dropped with their
/// storage. Thread-safe.
template <typename Key>
class KeptLayouts {
 public:
  using key_type = Key;
  explicit KeptLayouts(size_t max_bytes) : max_bytes_(max_bytes) {}

  /// Records one read of `key` from `storage`; true when the same storage at the same
  /// version was read there before (a copy of it is worth keeping).
  bool sighted(const Key& key, const std::shared_ptr<Storage>& storage) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= 256) prune();
      it = entries_.emplace(key, Entry{}).first;
    }
    Entry& e = it->second;
    const bool same = !e.storage.owner_before(storage) && !storage.owner_before(e.storage) && !e.storage.expired();
    if (!same || e.version != storage->version()) {
      drop(e);
      e.storage = storage;
      e.version = storage->version();
      e.sightings = 0;
    }
    return ++e.sightings >= 2;
  }

  /// The copy of `key` in `layout`: a kept one, or `make()`'s now when there is room (else
  /// nothing). Only after sighted() returned true for the same storage.
  std::optional<dnnl::memory> get(const Key& key, const dnnl::memory::desc& layout,
                                  const std::function<dnnl::memory()>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    Entry& e = it->second;
    for (const dnnl::memory& m : e.copies)
      if (m.get_desc() == layout) return m;
    const size_t bytes = layout.get_size();
    if (bytes_ + bytes > max_bytes_) prune();
    if (bytes_ + bytes > max_bytes_) return std::nullopt;
    e.copies.push_back(make());
    bytes_ += bytes;
    made_.fetch_add(1, std::memory_order_relaxed);
    return e.copies.back();
  }

  /// How many copies were made so far.
  int64_t made() const { return made_.load(std::memory_order_relaxed); }
  /// The bytes of the copies kept now (those of freed storages dropped first).
  int64_t bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    prune();
    return static_cast<int64_t>(bytes_);
  }

 private:
  struct Entry {
    std::weak_ptr<Storage> storage;
    uint64_t version = 0;
    int sightings = 0;
    std::vector<dnnl::memory> copies;  // one per layout a primitive asked for
  };

  void drop(Entry& e) {
    for (const dnnl::memory& m : e.copies) bytes_ -= m.get_desc().get_size();
    e.copies.clear();
  }
  /// Forgets the operands whose storage is gone.
  void prune() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.storage.expired()) {
        drop(it->second);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const size_t max_bytes_;
  std::mutex mu_;
  std::map<Key, Entry> entries_;
  size_t bytes_ = 0;
  std::atomic<int64_t> made_{0};
};

}  // namespace ember::kernels::cpu::onednn
