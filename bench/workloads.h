// bench/workloads.h — the workloads of shared/bench/WORKLOADS.md as Ember functions,
// shared by the demo and the benchmark programs so both run exactly the same code.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::bench {

/// W1: y = sigmoid(relu(x*2+1)*x - 0.5) * tanh(x) + clamp(exp(x), max=10).
inline Tensor w1_pointwise(const Tensor& x) {
  return sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), std::nullopt, Scalar(10));
}
/// W2: softmax over the last dim.
inline Tensor w2_softmax(const Tensor& x) { return softmax(x, -1); }
/// W3: layer_norm over the last dim, with weight and bias.
inline Tensor w3_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  return layer_norm(x, {x.size(-1)}, w, b, 1e-5);
}

struct Workload {
  std::string id;
  std::string what;
  std::function<Tensor()> run;
  double min_bytes;  // each input read once, each output written once
};

/// Inputs drawn from a normal distribution with a fixed seed, as WORKLOADS.md requires.
inline std::vector<Workload> memory_bound_workloads() {
  manual_seed(0);
  Tensor x1 = randn({4096, 4096});
  Tensor x2 = randn({8192, 1024});
  Tensor x3 = randn({8192, 1024});
  Tensor w3 = randn({1024});
  Tensor b3 = randn({1024});
  const double mib = 1024.0 * 1024.0;
  return {
      {"W1", "pointwise chain, x[4096,4096]", [=] { return w1_pointwise(x1); }, 128 * mib},
      {"W2", "softmax(dim=-1), x[8192,1024]", [=] { return w2_softmax(x2); }, 64 * mib},
      {"W3", "layer_norm(1024), x[8192,1024]", [=] { return w3_layer_norm(x3, w3, b3); }, 64 * mib + 8 * 1024},
  };
}

/// Median wall time in milliseconds of `iters` calls after `warmup` calls.
inline double median_ms(const std::function<void()>& f, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace ember::bench
