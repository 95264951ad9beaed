// bench/inductor_rows.cpp — W2 (softmax over the last dim) and W3 (layer_norm with weight
// and bias) of WORKLOADS.md, x[8192,1024] f32, in Ember eager and compiled with the
// inductor backend (row kernels): median ms of 11 runs after 3 warm-up runs, the first
// call (compile or cache load), and the max difference from eager.
#include <cstdio>

#include "ember/ember.h"
#include "workloads.h"

namespace {

template <typename F, typename... Args>
void run(const char* id, F fn, const Args&... args) {
  using namespace ember;
  auto compiled = compile(fn, {.backend = "inductor"});
  const auto t0 = std::chrono::steady_clock::now();
  Tensor y = compiled(args...);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Tensor d = max((y - fn(args...)).abs());
  const double diff = d.item<double>();
  const double eager_ms = bench::median_ms([&] { (void)fn(args...); }, 3, 11);
  const double inductor_ms = bench::median_ms([&] { (void)compiled(args...); }, 3, 11);
  const double gb = 2.0 * 8192 * 1024 * 4 / 1e9;
  std::printf("%s x[8192,1024] f32: eager %.2f ms (%.1f GB/s), inductor %.2f ms (%.1f GB/s), speedup %.2fx; "
              "first call %.2f s; max |diff| %.3g\n",
              id, eager_ms, gb / (eager_ms / 1e3), inductor_ms, gb / (inductor_ms / 1e3), eager_ms / inductor_ms,
              compile_s, diff);
}

}  // namespace

int main() {
  using namespace ember;
  manual_seed(0);
  Tensor x = randn({8192, 1024}), w = randn({1024}), b = randn({1024});
  run("W2", [](const Tensor& t) { return softmax(t, -1); }, x);
  run("W3", [](const Tensor& t, const Tensor& g, const Tensor& c) { return layer_norm(t, {1024}, g, c, 1e-5); }, x, w,
      b);
}
