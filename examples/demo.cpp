// examples/demo.cpp — the README's demo: a tour of Ember's eager tensor library, then
// the memory-bound workloads W1–W3 of docs/workloads.md run eagerly with their timings,
// W1 captured by ember::compile and compiled by the inductor backend, and a training run.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "../bench/workloads.h"
#include "train_mlp.h"
#include "ember/ember.h"

using namespace ember;

int main() {
  std::cout << "== Tensors, printed as PyTorch prints them\n";
  Tensor a = arange(6, kFloat).view({2, 3});
  std::cout << "a = " << a << "\n";
  std::cout << "a.t() (a view: same storage, strides " << a.t().strides() << ") =\n" << a.t() << "\n";
  Tensor b = tensor<int32_t>({10, 20, 30});
  std::cout << "a + b (int32 row broadcast, promoted to float32) =\n" << (a + b) << "\n";
  std::cout << "softmax(a, -1) =\n" << softmax(a, -1) << "\n";
  std::cout << "a.sum(1) = " << a.sum({1}) << ", mean = " << a.mean() << "\n";

  std::cout << "\n== Meta tensors: shapes and dtypes without data (what capture traces with)\n";
  Tensor m = empty({8, 1024}, kMeta);
  std::cout << "layer_norm(meta [8, 1024]) -> " << layer_norm(m, {1024}) << "\n";

  std::cout << "\n== Errors name the op, what was expected, and your line\n";
  try {
    (void)mm(ones({2, 3}), ones({4, 5}));
  } catch (const Error& e) {
    std::cout << e.what() << "\n";
  }

  std::cout << "\n== W1-W3 of docs/workloads.md, eager, " << omp_get_max_threads() << " threads\n";
  for (const auto& w : bench::memory_bound_workloads()) {
    Tensor y = w.run();
    const double ms = bench::median_ms([&] { (void)w.run(); }, 1, 5);
    std::printf("%s %-32s -> mean %+.6f, %.2f ms (%.1f GB/s)\n", w.id.c_str(), w.what.c_str(),
                mean(y).item<double>(), ms, w.min_bytes / (ms * 1e-3) / 1e9);
    std::cout << "   y[0, :4] = " << y.select(0, 0).slice(0, 0, 4) << "\n";
  }
  std::cout << "\n== ember::compile: W1 captured into one graph and compiled to fused C++ (backend \"inductor\")\n";
  {
    manual_seed(0);
    Tensor x = randn({4096, 4096});
    std::cout << explain(bench::w1_pointwise)(x).str();
    auto compiled = compile(bench::w1_pointwise, {.backend = "inductor", .name = "w1"});
    const auto t0 = std::chrono::steady_clock::now();
    Tensor y = compiled(x);  // first call: trace, lower, generate C++, build (or load from cache)
    const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double max_diff = max((y - bench::w1_pointwise(x)).abs()).item<double>();
    const double eager_ms = bench::median_ms([&] { (void)bench::w1_pointwise(x); }, 1, 5);
    const double compiled_ms = bench::median_ms([&] { (void)compiled(x); }, 1, 5);
    std::printf("first call (compile) %.2f s; eager %.2f ms, compiled %.2f ms (%.1fx); max |compiled - eager| %.2e\n",
                compile_s, eager_ms, compiled_ms, eager_ms / compiled_ms, max_diff);
  }

  std::cout << "\n== Training: a 2-layer MLP fits sin(3x) + x^2/2 with AdamW (autograd + nn + optim)\n";
  const std::vector<double> losses = examples::train_mlp(/*seed=*/0, /*steps=*/200);
  for (size_t step : {size_t{0}, size_t{49}, size_t{99}, size_t{149}, size_t{199}})
    std::printf("step %3zu  loss %.5f\n", step + 1, losses[step]);
  return 0;
}
