// kernels/cpu/wide_sum.h — sums in double over long runs (a batch norm channel: N × H × W
// elements) with kWideLanes independent accumulators. One accumulator is a chain of
// dependent additions, one element per add latency (~4 cycles); independent lanes let the
// compiler keep them in vector registers, so a channel's statistics run at memory speed.
// The order is fixed (lane j sums elements j, j + kWideLanes, …; the lanes are added
// pairwise at the end), so results depend only on the data, never on threads.
// channel_sums does the same per channel of NHWC activations (channels fastest).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

// WideVec is 64 bytes: on a target without AVX-512 GCC warns that returning or passing one
// by value has a different ABI there. Every function here is inline and every translation
// unit is built with the same flags, so no call crosses the two ABIs.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ember::kernels::cpu {

inline constexpr int64_t kWideLanes = 8;

/// kWideLanes doubles, one per lane of a WideSums accumulator.
typedef double WideVec __attribute__((vector_size(kWideLanes * sizeof(double))));

/// The kWideLanes floats at p, as doubles.
inline WideVec wide_load(const float* p) {
  typedef float Floats __attribute__((vector_size(kWideLanes * sizeof(float))));
  Floats f;
  std::memcpy(&f, p, sizeof(f));
  return __builtin_convertvector(f, WideVec);
}

/// A WideVec of kWideLanes copies of v.
inline WideVec wide_splat(double v) { return WideVec{} + v; }

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

  /// add() with its main loop in explicit vectors, for terms that a vector loop can
  /// compute (GCC does not vectorize add() when K > 1): vterm(i, t) writes the K terms of
  /// elements i … i + kWideLanes - 1 as WideVecs, lane j element i + j; term(i, t) one
  /// element's, for the tail. Same lanes, same order, so the same sums as add(n, term).
  template <typename VecTerm, typename Term>
  void add_vectors(int64_t n, VecTerm vterm, Term term) {
    WideVec a[K];
    std::memcpy(a, acc, sizeof(a));
    int64_t i = 0;
    for (; i + kWideLanes <= n; i += kWideLanes) {
      WideVec t[K];
      vterm(i, t);
      for (int k = 0; k < K; ++k) a[k] += t[k];
    }
    std::memcpy(acc, a, sizeof(a));
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

/// K sums per channel of M rows of C channels, channels fastest (NHWC activations: M = N ×
/// H × W): term(m, c, t) writes the K terms of row m, channel c into t. Row m adds into
/// lane m % kWideLanes of each channel, the lanes folded as WideSums::total, so a channel
/// is read in rows of contiguous channels (no strided pass per channel) and the result
/// depends only on the data. Blocks of kChannelBlock channels are split across threads
/// when `parallel`. Returns the totals, sum k of channel c at [k * C + c].
inline constexpr int64_t kChannelBlock = 16;

template <int K, typename Term>
std::vector<double> channel_sums(int64_t M, int64_t C, bool parallel, Term term) {
  std::vector<double> totals(static_cast<size_t>(K * C));
  const int64_t blocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for if (parallel && blocks > 1) schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kChannelBlock, width = std::min(kChannelBlock, C - c0);
    double acc[K][kWideLanes][kChannelBlock] = {};
    for (int64_t m = 0; m < M; ++m) {
      const int64_t j = m % kWideLanes;
      for (int64_t c = 0; c < width; ++c) {
        double t[K];
        term(m, c0 + c, t);
        for (int k = 0; k < K; ++k) acc[k][j][c] += t[k];
      }
    }
    for (int k = 0; k < K; ++k)
      for (int64_t c = 0; c < width; ++c) {
        auto a = [&](int lane) { return acc[k][lane][c]; };
        totals[static_cast<size_t>(k * C + c0 + c)] = ((a(0) + a(4)) + (a(2) + a(6))) + ((a(1) + a(5)) + (a(3) + a(7)));
      }
  }
  return totals;
}

}  // namespace ember::kernels::cpu

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
