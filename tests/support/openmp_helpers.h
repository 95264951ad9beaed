// tests/support/openmp_helpers.h — what the tests of OpenMP's thread pool share: a scoped
// thread count and the process's thread count (Note [full OpenMP teams]).
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include "support/process_threads.h"

namespace ember::testing {

/// Sets OpenMP's thread count for one test and restores it after.
struct ThreadCount {
  int saved = omp_get_max_threads();
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
};

/// The threads of this process (support::process_threads), failing the test where
/// /proc/self/task cannot be read.
inline int process_threads() {
  const int n = support::process_threads();
  EXPECT_GE(n, 0) << "/proc/self/task cannot be read";
  return n;
}

}  // namespace ember::testing
