// kernels/cpu/autotune.h — timing candidate implementations of one kernel call, for the
// per-shape choices of the float GEMM (gemm.cpp) and the convolution layout (conv.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

namespace ember::kernels::cpu {

/// The index of the fastest of `runs`: one warm-up round, then `rounds` rounds that each
/// run every candidate once in turn, so that a slow spell of a shared machine falls on all
/// of them alike; a candidate's best round is its time (`ms[i]`).
inline size_t fastest(const std::vector<std::function<void()>>& runs, std::vector<double>& ms, int rounds = 4) {
  ms.assign(runs.size(), std::numeric_limits<double>::infinity());
  for (const auto& run : runs) run();
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      runs[i]();
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (t < ms[i]) ms[i] = t;
    }
  }
  size_t best = 0;
  for (size_t i = 1; i < runs.size(); ++i)
    if (ms[i] < ms[best]) best = i;
  return best;
}

}  // namespace ember::kernels::cpu
