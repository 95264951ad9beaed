// Tests of compile_times() by phase: each phase of an inductor compile (capture, AOT,
// graph passes, lowering, scheduling, codegen, C++ compile with the compiler's CPU time,
// load, the first run and the autotuner's timing runs in it) recorded once per compile
// under the phase it is part of, parts adding up to at most their phase, a cache hit
// without a C++ compile, a training graph's backward compile, and reset.
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capture/events.h"
#include "ember/ember.h"
#include "inductor/inductor.h"
#include "inductor/pipeline.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

class CompileTimesTest : public testing::CompileDirTest {
 protected:
  void SetUp() override {
    CompileDirTest::SetUp();
    reset_compile_times();
  }
};

/// The row of `function`'s `phase`, or null.
const CompileTimeRow* row_of(const std::vector<CompileTimeRow>& rows, const std::string& function,
                             const std::string& phase) {
  for (const CompileTimeRow& r : rows)
    if (r.function == function && r.phase == phase) return &r;
  return nullptr;
}

/// Sum of the times of `function`'s rows that are parts of `parent`.
double parts_of(const std::vector<CompileTimeRow>& rows, const std::string& function, const std::string& parent) {
  double sum = 0;
  for (const CompileTimeRow& r : rows)
    if (r.function == function && r.parent == parent) sum += r.total_seconds;
  return sum;
}

const char* const kStep2 = "backend compile (Step 2)";

size_t inductor_min_unit_bytes() { return inductor::kMinUnitBytes; }

TEST_F(CompileTimesTest, ColdInductorCompileRecordsEveryPhaseUnderItsParent) {
  auto f = compile([](const Tensor& x, const Tensor& y) { return (x.exp() * y + 1).sum(1); },
                   {.backend = "inductor", .name = "phased"});
  f(randn({4, 8}), randn({4, 8}));
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  for (const char* top : {"capture (Step 1)", kStep2, "first run"}) {
    const CompileTimeRow* r = row_of(rows, "phased", top);
    ASSERT_NE(r, nullptr) << top << "\n" << compile_times();
    EXPECT_EQ(r->parent, "") << top;
    EXPECT_EQ(r->count, 1) << top;
  }
  for (const char* part :
       {"AOT autograd", "graph passes", "lowering", "scheduling (fusion)", "codegen", "C++ compile", "load"}) {
    const CompileTimeRow* r = row_of(rows, "phased", part);
    ASSERT_NE(r, nullptr) << part << "\n" << compile_times();
    EXPECT_EQ(r->parent, kStep2) << part;
    EXPECT_EQ(r->count, 1) << part;
    EXPECT_GE(r->total_seconds, 0.0) << part;
  }
  const CompileTimeRow* step2 = row_of(rows, "phased", kStep2);
  EXPECT_LE(parts_of(rows, "phased", kStep2), step2->total_seconds) << compile_times();
  // The compiler ran in processes of its own: their CPU time is the phase's, although the
  // compiling thread only waited.
  const CompileTimeRow* cxx = row_of(rows, "phased", "C++ compile");
  EXPECT_GT(cxx->cpu_seconds, 0.01) << compile_times();
  const std::string table = compile_times();
  EXPECT_NE(table.find("\nphased    backend compile (Step 2)"), std::string::npos) << table;
  EXPECT_NE(table.find("\nphased      C++ compile"), std::string::npos) << table;
  EXPECT_NE(table.find("  (rest)"), std::string::npos) << table;
}

TEST_F(CompileTimesTest, CacheHitLoadsWithoutACxxCompile) {
  auto fn = [](const Tensor& x) { return x.sigmoid() * 3; };
  auto f = compile(fn, {.backend = "inductor", .name = "cached"});
  f(randn({5, 3}));
  f.reset();
  reset_compile_times();
  f(randn({5, 3}));
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  EXPECT_EQ(row_of(rows, "cached", "C++ compile"), nullptr) << compile_times();
  const CompileTimeRow* load = row_of(rows, "cached", "load");
  ASSERT_NE(load, nullptr) << compile_times();
  EXPECT_EQ(load->parent, kStep2);
}

TEST_F(CompileTimesTest, FirstRunHasTheAutotunersTimingRunsAsAPart) {
  // A product large enough to be autotuned (Note [sgemm autotuning]), of a shape no other
  // test of this program multiplies: its first run times the candidates.
  auto f = compile([](const Tensor& a, const Tensor& b) { return matmul(a, b).relu(); },
                   {.backend = "inductor", .name = "tuned"});
  f(randn({173, 301}), randn({301, 97}));
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  const CompileTimeRow* tuning = row_of(rows, "tuned", "autotuning (timing runs)");
  ASSERT_NE(tuning, nullptr) << compile_times();
  EXPECT_EQ(tuning->parent, "first run");
  EXPECT_GT(tuning->total_seconds, 0.0);
  EXPECT_LE(parts_of(rows, "tuned", "first run"), row_of(rows, "tuned", "first run")->total_seconds);
}

TEST_F(CompileTimesTest, BackwardCompileAtTheFirstBackwardCallIsAPhaseOfTheFunction) {
  auto f = compile([](const Tensor& x, const Tensor& w) { return (matmul(x, w).tanh() * 2).sum(); },
                   {.backend = "inductor", .name = "trained"});
  Tensor x = randn({6, 4}), w = randn({4, 5}).requires_grad_();
  Tensor loss = f(x, w);
  loss.backward();
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  const CompileTimeRow* bw = row_of(rows, "trained", "backward compile (first backward call)");
  ASSERT_NE(bw, nullptr) << compile_times();
  EXPECT_EQ(bw->parent, "");
  EXPECT_NE(row_of(rows, "trained", "first backward run"), nullptr) << compile_times();
  double bw_parts = 0;
  int cxx = 0;
  for (const CompileTimeRow& r : rows) {
    if (r.function != "trained") continue;
    if (r.parent == bw->phase) bw_parts += r.total_seconds;
    if (r.phase == "C++ compile") ++cxx;
  }
  EXPECT_LE(bw_parts, bw->total_seconds);
  // The forward's and the backward's (started ahead, waited for at the backward call).
  EXPECT_EQ(cxx, 2) << compile_times();
}

TEST_F(CompileTimesTest, OwnTimePhaseLeavesOutThePhasesInsideIt) {
  {
    capture::PhaseTimer outer("nesting", "outer", capture::Nesting::OwnTime);
    {
      capture::PhaseTimer part("inside");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    {
      capture::PhaseTimer parts("with parts");
      capture::PhaseTimer inner("inner");
    }
  }
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  const CompileTimeRow* outer = row_of(rows, "nesting", "outer");
  const CompileTimeRow* inside = row_of(rows, "nesting", "inside");
  ASSERT_TRUE(outer && inside) << compile_times();
  EXPECT_EQ(inside->parent, "");
  EXPECT_LT(outer->total_seconds, inside->total_seconds);
  ASSERT_NE(row_of(rows, "nesting", "inner"), nullptr);
  EXPECT_EQ(row_of(rows, "nesting", "inner")->parent, "with parts");
  // Rows in the order their phases started.
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].phase, "outer");
  EXPECT_EQ(rows[1].phase, "inside");
}

TEST_F(CompileTimesTest, KernelsSplitIntoUnitsCompiledSideBySideEqualEagerAndHitTheCache) {
  const int64_t saved = config().inductor.compile_threads;
  config().inductor.compile_threads = 2;
  auto fn = [](const Tensor& x) {
    return softmax(x, 1).sum(0) + x.exp().mean(1).sum() + amax(log_softmax(x, 0), {1}).sum() + (x * x).sigmoid().sum(0);
  };
  auto f = compile(fn, {.backend = "inductor", .name = "split"});
  Tensor x = randn({33, 40});
  const int64_t before = inductor::compiler_invocations();
  testing::expect_close(f(x), fn(x));
  const inductor::CompileReport report = inductor::last_compile_report();
  ASSERT_GE(report.kernels.size(), 2u);
  ASSERT_GE(report.source.size(), 2 * inductor_min_unit_bytes() + 4000) << "too little code to split";
  EXPECT_EQ(inductor::compiler_invocations() - before, 2);
  const CompileTimeRow* cxx = row_of(compile_times_rows(), "split", "C++ compile");
  ASSERT_NE(cxx, nullptr);
  EXPECT_EQ(cxx->count, 2) << compile_times();
  // Compiled again: both units' libraries come from the cache.
  f.reset();
  const int64_t after_first = inductor::compiler_invocations();
  testing::expect_close(f(x), fn(x));
  EXPECT_EQ(inductor::compiler_invocations(), after_first);
  EXPECT_TRUE(inductor::last_compile_report().cache_hit);
  config().inductor.compile_threads = saved;
}

TEST_F(CompileTimesTest, TheAutomaticUnitCountIsTheCoresThisThreadMayRunOnFromFourCoresOn) {
  EXPECT_EQ(config().inductor.compile_threads, 0) << "the default is automatic";
  for (const auto& [cores, units] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {2, 1}, {3, 1}, {4, 4}, {16, 16}, {32, 32}, {128, 32}})
    EXPECT_EQ(inductor::automatic_compile_units(cores), units) << cores << " cores";
  // The count follows this thread's CPU affinity: one CPU allowed, one unit.
  cpu_set_t saved_cpus, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved_cpus, &saved_cpus), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved_cpus)) ++first;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int64_t with_one_cpu = inductor::compile_units_allowed();
  const int64_t saved = config().inductor.compile_threads;
  config().inductor.compile_threads = 3;
  const int64_t asked_for_three = inductor::compile_units_allowed();
  config().inductor.compile_threads = saved;
  ASSERT_EQ(sched_setaffinity(0, sizeof saved_cpus, &saved_cpus), 0);
  EXPECT_EQ(with_one_cpu, 1);
  EXPECT_EQ(asked_for_three, 3);
}

TEST_F(CompileTimesTest, ResetClearsEveryRow) {
  auto f = compile([](const Tensor& x) { return x * 2; }, {.backend = "inductor", .name = "cleared"});
  f(randn({3}));
  EXPECT_FALSE(compile_times_rows().empty());
  reset_compile_times();
  EXPECT_TRUE(compile_times_rows().empty());
  EXPECT_EQ(compile_times().find("cleared"), std::string::npos);
}

}  // namespace
}  // namespace ember
