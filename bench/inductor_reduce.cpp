// bench/inductor_reduce.cpp — x.sum(0) (a column kernel: the bias-gradient shape) and
// x.sum(-1) (a row kernel) on x[8192,1024] f32, in Ember eager and compiled with the
// inductor backend: median ms of 11 runs after 3 warm-up runs, the first call (compile or
// cache load), and the max difference from eager relative to eager's largest value. Threads: OMP_NUM_THREADS.
#include <cstdio>

#include "ember/ember.h"
#include "workloads.h"

namespace {

template <typename F>
void run(const char* id, F fn, const ember::Tensor& x) {
  using namespace ember;
  auto compiled = compile(fn, {.backend = "inductor"});
  const auto t0 = std::chrono::steady_clock::now();
  Tensor y = compiled(x);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Tensor e = fn(x);
  const double diff = max((y - e).abs()).item<double>() / max(e.abs()).item<double>();
  const double eager_ms = bench::median_ms([&] { (void)fn(x); }, 3, 11);
  const double inductor_ms = bench::median_ms([&] { (void)compiled(x); }, 3, 11);
  const double gb = 8192.0 * 1024 * 4 / 1e9;
  std::printf("%s x[8192,1024] f32: eager %.2f ms (%.1f GB/s), inductor %.2f ms (%.1f GB/s), speedup %.2fx; "
              "first call %.2f s; max |diff| / max |eager| %.3g\n",
              id, eager_ms, gb / (eager_ms / 1e3), inductor_ms, gb / (inductor_ms / 1e3), eager_ms / inductor_ms,
              compile_s, diff);
}

}  // namespace

int main() {
  using namespace ember;
  manual_seed(0);
  Tensor x = randn({8192, 1024});
  run("sum(0)", [](const Tensor& t) { return sum(t, {0}); }, x);
  run("sum(-1)", [](const Tensor& t) { return sum(t, {-1}); }, x);
}
