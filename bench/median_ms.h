// bench/median_ms.h — the median wall time of a callable, for the standalone library probes
// (gemm_probe.cpp, gemm_library_probe.cpp), which build against a library alone and so
// include nothing of Ember's.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace bench {

/// The median of `calls` timed calls of f, in milliseconds, after `warmup` untimed ones.
inline double median_call_ms(const std::function<void()>& f, int calls = 11, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[calls / 2];
}

}  // namespace bench
