// bench/workloads.h — the workloads of shared/bench/WORKLOADS.md as Ember functions,
// shared by the demo and the benchmark programs so both run exactly the same code.
// W4–W7 run the blocks of ember/nn/blocks.h (bench/torch_blocks.py in PyTorch).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
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
  double min_bytes;  // each input read once, each output written once; 0: not memory-bound
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

/// W4–W7 on the blocks at their workload sizes, parameters from the default init. The
/// inference rows (W4–W6) run in eval mode under NoGradGuard, as PyTorch's under
/// torch.no_grad(); W7 is W4's training step: forward, then backward of a fixed
/// grad_output to every parameter and x, the gradients set to None before each step
/// (zero_grad(set_to_none)) so every step allocates them afresh, as PyTorch's does.
inline std::vector<Workload> block_workloads() {
  manual_seed(0);
  auto mlp = std::make_shared<nn::MLPBlock>();
  auto gpt = std::make_shared<nn::GPT2Block>();
  auto basic = std::make_shared<nn::BasicBlock>();
  auto mlp_train = std::make_shared<nn::MLPBlock>();
  mlp->eval();
  gpt->eval();
  basic->eval();
  Tensor x4 = randn({256, 1024});
  Tensor x5a = randn({8, 128, 768});
  Tensor x5b = randn({1, 512, 768});
  Tensor x6 = randn({8, 64, 56, 56});
  Tensor x7 = randn({256, 1024}).requires_grad_();
  Tensor g7 = randn({256, 1024});
  auto infer = [](std::shared_ptr<nn::UnaryModule> m, Tensor x) {
    return [m, x] {
      NoGradGuard no_grad;
      return m->forward(x);
    };
  };
  return {
      {"W4", "MLP block, x[256,1024]", infer(mlp, x4), 0},
      {"W5-8x128", "GPT-2 block, x[8,128,768]", infer(gpt, x5a), 0},
      {"W5-1x512", "GPT-2 block, x[1,512,768]", infer(gpt, x5b), 0},
      {"W6", "BasicBlock eval, x[8,64,56,56]", infer(basic, x6), 0},
      {"W7", "W4 train step (fwd+bwd), x[256,1024]",
       [mlp_train, x7, g7] {
         mlp_train->zero_grad();
         x7.mutable_grad() = Tensor();
         Tensor y = mlp_train->forward(x7);
         y.backward(g7);
         return y;
       },
       0},
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
