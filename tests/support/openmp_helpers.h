// tests/support/openmp_helpers.h — what the tests of OpenMP's thread pool share: a scoped
// thread count and the process's thread count (Note [full OpenMP teams]).
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <omp.h>

namespace ember::testing {

/// Sets OpenMP's thread count for one test and restores it after.
struct ThreadCount {
  int saved = omp_get_max_threads();
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
};

/// The threads of this process, from /proc/self/task (-1, and a failure, where it cannot
/// be read).
inline int process_threads() {
  DIR* dir = opendir("/proc/self/task");
  EXPECT_NE(dir, nullptr);
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

}  // namespace ember::testing
