// A compiled call after an eager call finds OpenMP's pool full, dynamic or static: eager
// kernels and generated kernels all run on the full team, so neither ends pool threads that
// the other then re-creates (Note [full OpenMP teams], kernels/cpu/loops.h; Note [dynamic
// shapes], "At 16 threads": W11's dynamic function paid for that on every call).
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>

#include "ember/ember.h"
#include "support/openmp_helpers.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;

class InductorOpenmpPool : public testing::CompileDirTest {};

using ember::testing::process_threads;
using ember::testing::ThreadCount;

TEST_F(InductorOpenmpPool, CompiledCallsAfterEagerCallsKeepThePoolsThreads) {
  ThreadCount threads(4);
  // W11's tail in small: a pointwise kernel and a row kernel over [B, 1024], B symbolic.
  auto f = [](const Tensor& x) { return std::make_tuple((x * 2.0 + 1.0).relu(), x.sum({1})); };
  auto dynamic = compile(f, {.backend = "inductor", .name = "pool_dynamic", .arg_names = {"x"}, .dynamic = true});
  auto fixed = compile(f, {.backend = "inductor", .name = "pool_static", .arg_names = {"x"}, .dynamic = false});
  (void)dynamic(randn({7, 1024}));  // the symbolic entry
  const Tensor x = randn({64, 1024});  // 65536 elements: two grains, eager splits in 2 parts
  std::atomic<int> ran{0};
#pragma omp parallel
  ran.fetch_add(1);
  ASSERT_EQ(ran.load(), 4);
  const int full = process_threads();
  for (int round = 0; round < 3; ++round) {
    const auto [ea, eb] = f(x);
    EXPECT_EQ(process_threads(), full) << "after the eager call, round " << round;
    const auto [da, db] = dynamic(x);
    EXPECT_EQ(process_threads(), full) << "after the dynamic call, round " << round;
    const auto [sa, sb] = fixed(x);
    EXPECT_EQ(process_threads(), full) << "after the static call, round " << round;
    expect_close(da, ea, 1e-5, 1e-5, "dynamic relu");
    expect_close(db, eb, 1e-4, 1e-5, "dynamic sum");
    expect_close(sa, ea, 1e-5, 1e-5, "static relu");
    expect_close(sb, eb, 1e-4, 1e-5, "static sum");
  }
  EXPECT_EQ(dynamic.cache_size(), 1u);
}

}  // namespace
}  // namespace ember
