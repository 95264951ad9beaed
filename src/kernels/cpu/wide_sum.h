// kernels/cpu/wide_sum.h — sums in double over long runs (a batch norm channel: N × H × W
// elements) with kWideLanes independent accumulators. One accumulator is a chain of
// dependent additions, one element per add latency (~4 cycles); independent lanes let the
// compiler keep them in vector registers, so a channel's statistics run at memory speed.
// The order is fixed (lane j sums elements j, j + kWideLanes, …; the lanes are added
// pairwise at the end), so results depend only on the data, never on threads.
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

inline constexpr int64_t kWideLanes = 8;

/// K sums of double terms, each over kWideLanes lanes. add() takes a run of n elements
/// (runs may follow one another: a channel's N planes); total(k) folds sum k's lanes
/// pairwise, ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
template <int K>
struct WideSums {
  double acc[K][kWideLanes] = {};

  /// term(i, t) writes the K terms of element i of the run into t.
  template <typename Term>
  void add(int64_t n, Term term) {
    int64_t i = 0;
    for (; i + kWideLanes <= n; i += kWideLanes) {
      for (int64_t j = 0; j < kWideLanes; ++j) {
        double t[K];
        term(i + j, t);
        for (int k = 0; k < K; ++k) acc[k][j] += t[k];
      }
    }
    for (int64_t j = 0; i < n; ++i, ++j) {
      double t[K];
      term(i, t);
      for (int k = 0; k < K; ++k) acc[k][j] += t[k];
    }
  }

  double total(int k) const {
    const double* a = acc[k];
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
  }
};

}  // namespace ember::kernels::cpu
