// kernels/cpu/loops.h — the iteration engine of eager pointwise kernels.
//
// PointwiseLoop views an output and its inputs (already broadcast to the output's
// shape) as operands over one iteration space, reorders dims so the fastest-moving dim
// of the output is innermost, merges dims that are contiguous for every operand, and
// then walks the space in rows, split across OpenMP threads. pointwise_kernel() runs a
// scalar/vector function over the rows, using the SIMD path when each operand is
// either dense or a broadcast scalar along the row.
#pragma once

#include <omp.h>

#include <array>
#include <cstdint>
#include <vector>

#include "ember/tensor.h"
#include "kernels/cpu/vec.h"

namespace ember::kernels::cpu {

/// Minimum elements per thread before a loop is split across threads.
inline constexpr int64_t kGrainSize = 32768;

// Note [full OpenMP teams]
// libgomp keeps one pool of worker threads, sized by the last team: a parallel region
// asking for fewer threads than the pool holds (`num_threads(k)`, 1 < k < the pool) ends
// the surplus workers, and the next full-size region creates them again (a clone and a
// fresh stack each, some 25 minor page faults a thread on this machine) on the calling
// thread. A kernel sizing its team to its work therefore made the next full-team region (a
// GEMM, a compiled kernel) pay for re-creating up to 15 threads at 16 threads: in
// bench_inductor_dynamic, W11 at batch 64, the function called right after eager took
// twice the time of the same graph called after a compiled one (Note [dynamic shapes], "At
// 16 threads"). Kernels split their work into `parts` and run them on the full team
// instead (for_parts); threads past the parts wait at the region's end. PyTorch's
// ParallelOpenMP.h avoids the clause for the same reason. A team of one (an `if` clause
// that is false) leaves the pool alone.

/// f(part, parts) for each part in [0, parts): on this thread when parts <= 1 or inside a
/// parallel region, else across a full OpenMP team (Note [full OpenMP teams]), thread t
/// running parts t, t + team size, … (each part once, whatever the team's size).
template <typename F>
inline void for_parts(int64_t parts, F&& f) {
  if (parts <= 1 || omp_in_parallel()) {
    for (int64_t p = 0; p < parts; ++p) f(p, parts);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads();
    for (int64_t p = omp_get_thread_num(); p < parts; p += nt) f(p, parts);
  }
}

class PointwiseLoop {
 public:
  /// Operand 0 is `out`; inputs must have out's shape or broadcast to it.
  PointwiseLoop(const Tensor& out, const std::vector<Tensor>& inputs);

  int64_t numel() const { return numel_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int noperands() const { return static_cast<int>(data_.size()); }

  /// Calls row(char** ptrs, const int64_t* byte_strides, int64_t n) for contiguous
  /// runs of the innermost dim, covering every element once, in parallel.
  template <typename Row>
  void for_each_row(Row&& row) const {
    if (numel_ == 0) return;
    const int64_t nthreads = std::min<int64_t>(omp_get_max_threads(), std::max<int64_t>(1, numel_ / kGrainSize));
    if (nthreads <= 1 || omp_in_parallel()) {
      run_range(0, numel_, row);
      return;
    }
    for_parts(nthreads, [&](int64_t t, int64_t nt) {
      const int64_t chunk = (numel_ + nt - 1) / nt;
      const int64_t begin = std::min(numel_, t * chunk);
      const int64_t end = std::min(numel_, begin + chunk);
      if (begin < end) run_range(begin, end, row);
    });
  }

 private:
  template <typename Row>
  void run_range(int64_t begin, int64_t end, Row& row) const {
    const int nops = noperands();
    const int nd = ndim();
    std::array<int64_t, 16> idx{};
    std::vector<char*> ptrs(static_cast<size_t>(nops));
    std::vector<int64_t> inner(static_cast<size_t>(nops));
    for (int k = 0; k < nops; ++k) inner[k] = strides_[k][0];
    // Multi-index of `begin` (dim 0 innermost).
    int64_t rem = begin;
    for (int d = 0; d < nd; ++d) {
      idx[d] = rem % shape_[d];
      rem /= shape_[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      for (int k = 0; k < nops; ++k) {
        int64_t off = 0;
        for (int d = 0; d < nd; ++d) off += idx[d] * strides_[k][d];
        ptrs[k] = data_[k] + off;
      }
      const int64_t n = std::min(shape_[0] - idx[0], end - pos);
      row(ptrs.data(), inner.data(), n);
      pos += n;
      idx[0] += n;
      for (int d = 0; d < nd - 1 && idx[d] >= shape_[d]; ++d) {
        idx[d] = 0;
        ++idx[d + 1];
      }
    }
  }

  std::vector<int64_t> shape_;                 // dim 0 innermost
  std::vector<char*> data_;                    // per operand
  std::vector<std::vector<int64_t>> strides_;  // per operand, bytes, dim 0 innermost
  int64_t numel_ = 0;
};

/// Runs `scalar_fn` (and `vector_fn` on the SIMD path) elementwise: out = f(in...).
/// in_t is the storage type of every input; compute happens in opmath_t<in_t>.
template <typename out_t, typename in_t, int N, typename ScalarFn, typename VectorFn>
void pointwise_kernel(const PointwiseLoop& loop, ScalarFn scalar_fn, VectorFn vector_fn) {
  using math_t = opmath_t<in_t>;
  constexpr bool kSimd = [] {
    if constexpr ((std::is_same_v<in_t, float> || std::is_same_v<in_t, double>) && std::is_same_v<out_t, in_t> &&
                  !std::is_same_v<VectorFn, std::nullptr_t>) {
      using V = vec::Vectorized<in_t>;
      if constexpr (N == 1) return std::is_invocable_r_v<V, VectorFn, V>;
      else if constexpr (N == 2) return std::is_invocable_r_v<V, VectorFn, V, V>;
      else return std::is_invocable_r_v<V, VectorFn, V, V, V>;
    }
    return false;
  }();
  loop.for_each_row([&](char** ptrs, const int64_t* strides, int64_t n) {
    if constexpr (kSimd) {
      using V = vec::Vectorized<in_t>;
      bool dense = strides[0] == sizeof(out_t);
      for (int k = 1; k <= N; ++k) dense = dense && (strides[k] == sizeof(in_t) || strides[k] == 0);
      if (dense) {
        out_t* out = reinterpret_cast<out_t*>(ptrs[0]);
        int64_t i = 0;
        for (; i + V::size() <= n; i += V::size()) {
          auto load = [&](int k) {
            const in_t* p = reinterpret_cast<const in_t*>(ptrs[k]);
            return strides[k] == 0 ? V(*p) : V::load(p + i);
          };
          if constexpr (N == 1) vector_fn(load(1)).store(out + i);
          else if constexpr (N == 2) vector_fn(load(1), load(2)).store(out + i);
          else vector_fn(load(1), load(2), load(3)).store(out + i);
        }
        for (; i < n; ++i) {
          auto at = [&](int k) { return reinterpret_cast<const in_t*>(ptrs[k])[strides[k] == 0 ? 0 : i]; };
          if constexpr (N == 1) out[i] = scalar_fn(at(1));
          else if constexpr (N == 2) out[i] = scalar_fn(at(1), at(2));
          else out[i] = scalar_fn(at(1), at(2), at(3));
        }
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      auto at = [&](int k) -> math_t { return *reinterpret_cast<const in_t*>(ptrs[k] + i * strides[k]); };
      out_t* o = reinterpret_cast<out_t*>(ptrs[0] + i * strides[0]);
      if constexpr (N == 1) *o = static_cast<out_t>(scalar_fn(at(1)));
      else if constexpr (N == 2) *o = static_cast<out_t>(scalar_fn(at(1), at(2)));
      else *o = static_cast<out_t>(scalar_fn(at(1), at(2), at(3)));
    }
  });
}

}  // namespace ember::kernels::cpu
