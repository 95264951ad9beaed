// Eager CPU kernels split small work into parts on OpenMP's full team, so they never shrink
// libgomp's thread pool (Note [full OpenMP teams], kernels/cpu/loops.h): a team smaller
// than the pool ends its surplus workers, and the next full-size region (a GEMM, a
// compiled kernel) has to create them again.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <vector>

#include "ember/ember.h"
#include "kernels/cpu/loops.h"
#include "support/openmp_helpers.h"

namespace {

using namespace ember;

using ember::testing::process_threads;
using ember::testing::ThreadCount;

/// Fills libgomp's pool to the thread count (a full team), then returns the process's
/// threads.
int threads_after_full_team() {
  std::atomic<int> ran{0};
#pragma omp parallel
  ran.fetch_add(1);
  EXPECT_EQ(ran.load(), omp_get_max_threads());
  return process_threads();
}

TEST(OpenmpTeams, ForPartsRunsEachPartOnceWhateverTheTeam) {
  ThreadCount threads(4);
  for (int64_t parts : {1, 2, 3, 4, 10}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
    std::atomic<int64_t> seen_parts{-1};
    kernels::cpu::for_parts(parts, [&](int64_t p, int64_t n) {
      runs[static_cast<size_t>(p)].fetch_add(1);
      seen_parts = n;
    });
    for (int64_t p = 0; p < parts; ++p) EXPECT_EQ(runs[static_cast<size_t>(p)].load(), 1) << parts << " parts, part " << p;
    EXPECT_EQ(seen_parts.load(), parts);
  }
}

TEST(OpenmpTeams, PointwiseKernelOnTwoGrainsKeepsThePool) {
  ThreadCount threads(4);
  // 2 * kGrainSize elements: the loop splits in 2 parts while 4 threads are pooled.
  const Tensor x = arange(2 * kernels::cpu::kGrainSize, TensorOptions().dtype(kFloat));
  const int before = threads_after_full_team();
  const Tensor y = x + 1.0;
  EXPECT_EQ(process_threads(), before);
  EXPECT_EQ(y[0].item<float>(), 1.0f);
  EXPECT_EQ(y[2 * kernels::cpu::kGrainSize - 1].item<float>(), static_cast<float>(2 * kernels::cpu::kGrainSize));
}

TEST(OpenmpTeams, ReductionsOnTwoGrainsKeepThePool) {
  ThreadCount threads(4);
  const int64_t n = kernels::cpu::kGrainSize;
  const Tensor x = ones({2, n});
  int before = threads_after_full_team();
  const Tensor rows = sum(x, {1});  // 2 rows of n: 2 parts
  EXPECT_EQ(process_threads(), before);
  EXPECT_EQ(rows[0].item<float>(), static_cast<float>(n));
  EXPECT_EQ(rows[1].item<float>(), static_cast<float>(n));
  before = threads_after_full_team();
  const Tensor whole = sum(ones({2 * n}));  // one long row split in 2 parts
  EXPECT_EQ(process_threads(), before);
  EXPECT_EQ(whole.item<float>(), static_cast<float>(2 * n));
  before = threads_after_full_team();
  const Tensor running = cumsum(ones({2, n}), 1);  // 2 * n elements: 2 parts
  EXPECT_EQ(process_threads(), before);
  EXPECT_EQ(running[1][n - 1].item<float>(), static_cast<float>(n));
}

}  // namespace
