// bench/compile_overhead.cpp — what ember::compile costs around the work itself: the time
// to trace and compile a function (cold: a new function; warm: another shape of it), and
// the per-call overhead of a replayed graph (guards + binding + interpreter) against eager,
// on a one-element `x + 1` (WORKLOADS.md quotes PyTorch's figures for the same).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "ember/compile.h"
#include "workloads.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_us(F&& f, int reps, int inner) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < inner; ++i) f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / inner);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  using namespace ember;
  manual_seed(0);
  Tensor one = randn({1});
  auto add_one = [](const Tensor& x) { return x + 1; };
  register_builtin_backends();
  auto compiled_add = compile(add_one, {.backend = "eager"});
  compiled_add(one);
  for (int i = 0; i < 1000; ++i) (void)add_one(one), (void)compiled_add(one);
  const double eager_us = median_us([&] { (void)add_one(one); }, 31, 2000);
  const double compiled_us = median_us([&] { (void)compiled_add(one); }, 31, 2000);
  std::printf("x + 1 per call: eager %.2f us, compiled (eager backend, replay) %.2f us, overhead %.2f us\n", eager_us,
              compiled_us, compiled_us - eager_us);
  // The inductor's wrapper on the same call: one generated kernel over one element, so
  // the time is the guards, the wrapper's walk of the graph (outputs from the allocator,
  // the kernel's argument pack) and the call; the CUDA wrapper does the same walk around
  // cuLaunchKernel (bench_cuda_inductor_workloads' L1 row).
  auto inductor_add = compile(add_one, {.backend = "inductor"});
  for (int i = 0; i < 1000; ++i) (void)inductor_add(one);
  const double inductor_us = median_us([&] { (void)inductor_add(one); }, 31, 2000);
  std::printf("x + 1 per call: compiled (inductor backend) %.2f us, overhead %.2f us\n", inductor_us,
              inductor_us - eager_us);

  // Trace + compile of W1's 9-op chain: cold (first call) and warm (a second shape).
  Tensor small = randn({64, 64}), other = randn({32, 64});
  std::vector<double> cold, warm;
  for (int r = 0; r < 21; ++r) {
    auto w1 = compile(bench::w1_pointwise, {.backend = "eager"});
    auto t0 = Clock::now();
    w1(small);
    auto t1 = Clock::now();
    w1(other);
    auto t2 = Clock::now();
    cold.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    warm.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  std::sort(cold.begin(), cold.end());
  std::sort(warm.begin(), warm.end());
  std::printf("W1 trace+compile+first run (eager backend, 64x64): cold %.3f ms, new shape %.3f ms (medians of 21)\n",
              cold[10], warm[10]);
}
