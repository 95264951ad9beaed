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
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/allocator.h"

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

}  // namespace ember::kernels::cpu::onednn
