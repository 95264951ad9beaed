// kernels/cpu/autotune.h — timing candidate implementations of one kernel call, for the
// per-shape choices of the float GEMM (gemm.cpp) and the convolution layout (conv.cpp).
#pragma once

#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

namespace ember::kernels::cpu {

/// Milliseconds on the clock a candidate is timed with: with one OpenMP thread every
/// candidate runs on the calling thread, so that thread's CPU time, which time spent
/// descheduled by other programs does not inflate; with more, the wall clock (the CPU time
/// of a team would leave out the work a candidate fails to spread over it).
inline double autotune_clock_ms(bool one_thread) {
  if (one_thread) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Time the calling thread has spent in fastest() (timing runs and their warm-up), wall and
/// CPU seconds, for compile_times()' "autotuning (timing runs)" (Note [sgemm autotuning]).
struct TuningTime {
  double seconds = 0, cpu_seconds = 0;
};
inline TuningTime& tuning_time_this_thread() {
  thread_local TuningTime t;
  return t;
}

/// How many times the fastest candidate's time a candidate's best of two runs may be and
/// still be timed in later rounds (fastest()).
inline constexpr double kDropRatio = 2.0;

/// The index of the fastest of `runs`: one warm-up round, then up to `rounds` rounds that
/// each run every candidate once in turn, so that a slow spell of a shared machine falls on
/// all of them alike; a candidate's best round is its time (`ms[i]`, autotune_clock_ms).
/// The warm-up round is timed too and counts as a round when its time is the best (its
/// one-time costs can only make a candidate look slower). With a `budget_ms`, no further
/// round starts once the rounds, warm-up included, have taken that long: a product of
/// tens of milliseconds is told apart by its warm-up alone, and four more rounds would
/// cost its first call more than a second (Note [sgemm autotuning] in gemm.cpp). Unless
/// the candidates are small: while the rounds so far and the next one, each counted as
/// every candidate at the fastest time seen, fit in the budget, the next round runs (up
/// to ten budgets of wall time in all), so that a candidate descheduled in the warm-up on
/// a shared machine (wall clock at several threads) is timed again rather than judged by
/// that one run. A candidate whose best of two runs (the warm-up and one round) is more
/// than kDropRatio times the fastest's is left out of later rounds: it cannot win, and on
/// some CPUs a library's path for a shape is several times slower than the others (OpenBLAS
/// at M=128 on the GPU machine's Xeon: 11–14 ms against 2.3–2.5), so its runs would be most
/// of the first call's timing.
inline size_t fastest(const std::vector<std::function<void()>>& runs, std::vector<double>& ms, int rounds = 4,
                      double budget_ms = std::numeric_limits<double>::infinity()) {
  const double wall0 = autotune_clock_ms(false), cpu0 = autotune_clock_ms(true);
  ms.assign(runs.size(), std::numeric_limits<double>::infinity());
  std::vector<char> live(runs.size(), 1);
  const bool one_thread = omp_get_max_threads() == 1;
  auto time_round = [&] {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (!live[i]) continue;
      const double t0 = autotune_clock_ms(one_thread);
      runs[i]();
      const double t = autotune_clock_ms(one_thread) - t0;
      if (t < ms[i]) ms[i] = t;
    }
  };
  time_round();  // the warm-up
  auto another_round = [&](int done) {  // `done` rounds after the warm-up so far
    const double elapsed = autotune_clock_ms(false) - wall0;
    if (elapsed < budget_ms) return true;
    const double quickest = *std::min_element(ms.begin(), ms.end());
    const auto timed = static_cast<double>(std::count(live.begin(), live.end(), 1));
    return elapsed < 10 * budget_ms && quickest * timed * (done + 2) < budget_ms;
  };
  for (int r = 0; r < rounds && another_round(r); ++r) {
    time_round();
    const double quickest = *std::min_element(ms.begin(), ms.end());
    for (size_t i = 0; i < runs.size(); ++i)
      if (ms[i] > kDropRatio * quickest) live[i] = 0;
  }
  size_t best = 0;
  for (size_t i = 1; i < runs.size(); ++i)
    if (ms[i] < ms[best]) best = i;
  TuningTime& spent = tuning_time_this_thread();
  spent.seconds += (autotune_clock_ms(false) - wall0) * 1e-3;
  spent.cpu_seconds += (autotune_clock_ms(true) - cpu0) * 1e-3;
  return best;
}

}  // namespace ember::kernels::cpu
