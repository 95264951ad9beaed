// bench/inductor_w1.cpp — W1 (the pointwise chain of WORKLOADS.md) in Ember eager and
// compiled with the inductor backend: median ms of 11 runs after 3 warm-up runs, the
// compile time (cold: empty cache, as run first), and the max difference from eager.
#include <cstdio>

#include "ember/ember.h"
#include "workloads.h"

int main() {
  using namespace ember;
  manual_seed(0);
  Tensor x = randn({4096, 4096});
  auto compiled = compile(bench::w1_pointwise, {.backend = "inductor"});
  const auto t0 = std::chrono::steady_clock::now();
  Tensor y = compiled(x);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double diff = max((y - bench::w1_pointwise(x)).abs()).item<double>();
  const double eager_ms = bench::median_ms([&] { (void)bench::w1_pointwise(x); }, 3, 11);
  const double inductor_ms = bench::median_ms([&] { (void)compiled(x); }, 3, 11);
  const double gb = 2.0 * 4096 * 4096 * 4 / 1e9;
  std::printf("W1 x[4096,4096] f32: eager %.2f ms (%.1f GB/s), inductor %.2f ms (%.1f GB/s), speedup %.2fx; "
              "first call (compile) %.2f s; max |diff| %.3g\n",
              eager_ms, gb / (eager_ms / 1e3), inductor_ms, gb / (inductor_ms / 1e3), eager_ms / inductor_ms, compile_s,
              diff);
}
