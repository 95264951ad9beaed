// bench/workloads.h — the workloads of docs/workloads.md as Ember functions,
// shared by the demo and the benchmark programs so both run exactly the same code.
// W4–W7 run the blocks of ember/nn/blocks.h (bench/torch_blocks.py in PyTorch). Each
// workload also makes a compiled form of itself (ember::compile with a backend named by
// the caller) on the same inputs, for bench/inductor_workloads.cpp and the e2e tests.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"

namespace ember::bench {

/// W1: y = sigmoid(relu(x*2+1)*x - 0.5) * tanh(x) + clamp(exp(x), max=10).
inline Tensor w1_pointwise(const Tensor& x) {
  return sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), std::nullopt, Scalar(10));
}
/// W1 in eager mode runs 11 kernels over tensors of x's size: x*2, +1, relu, *x, -0.5,
/// sigmoid, tanh(x), the product, exp(x), clamp, the sum. They read 14 such tensors and write
/// 11 (a Scalar operand is a kernel argument, not a tensor read): 25 passes over x's bytes.
inline constexpr int kW1EagerPasses = 25;
/// W2: softmax over the last dim.
inline Tensor w2_softmax(const Tensor& x) { return softmax(x, -1); }
/// W3: layer_norm over the last dim, with weight and bias.
inline Tensor w3_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  return layer_norm(x, {x.size(-1)}, w, b, 1e-5);
}

/// A workload's function compiled once: `call` runs it (under the same guards as the eager
/// row: NoGradGuard for W4–W6), `reset` drops its compiled entries so the next call traces
/// and compiles again (torch._dynamo.reset() for this function).
struct CompiledCall;

/// Tensors a training step leaves, compared compiled against eager as one group: `what`
/// names the group in MISMATCH notes; an element's tolerance is atol + of_max × the
/// largest |eager| element of its tensor (+ rtol × its own |eager|, the row's rtol).
struct CheckedTensors {
  std::string what;
  std::vector<Tensor> tensors;
  double atol;
  double of_max = 0;

  /// The absolute tolerance of `expected`, one of `tensors` of the eager side.
  double atol_for(const Tensor& expected) const;
};
using StepState = std::function<std::vector<CheckedTensors>()>;

/// Wall-clock ms of each part of a training step (zero_grad, forward and loss, backward,
/// optimizer step), one entry per step, for the eager and the compiled step.
struct StepPhases {
  static constexpr const char* kNames[4] = {"zero_grad", "forward", "backward", "optimizer"};
  using Step = std::array<double, 4>;
  std::vector<Step> eager, compiled;

  /// Times one step's parts in order: lap() after each.
  class Clock {
   public:
    void lap() {
      const auto now = std::chrono::steady_clock::now();
      ms_.at(next_++) = std::chrono::duration<double, std::milli>(now - last_).count();
      last_ = now;
    }
    const Step& ms() const { return ms_; }

   private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
    Step ms_{};
    size_t next_ = 0;
  };
};

/// What a training row (W7–W9) offers besides its whole step, so that the benchmark can
/// measure the memory its forward leaves for backward and compare the compile time of the
/// training graphs with that of the forward alone.
struct TrainingParts {
  /// The eager forward and loss of one step, recording the graph (no backward).
  std::function<Tensor()> forward;
  /// A new compiled function of that forward (the compiled row's model and inputs): its
  /// call records the graph through AOT autograd, or under NoGradGuard compiles the
  /// inference graph alone.
  std::function<CompiledCall(const std::string& backend)> compile_forward;
  /// Backward of what `forward` returned (W7: its fixed grad_output; W8, W9: the loss).
  std::function<void(const Tensor&)> backward;
  /// W8, W9: the wall-clock ms of each part of every whole step run (eager and compiled
  /// alike), so a benchmark can say where a step's time goes outside its graphs.
  std::shared_ptr<StepPhases> phases;
};

struct CompiledCall {
  std::function<Tensor()> call;
  std::function<void()> reset;
  /// A training step's state after the last call (W8, W9: the compiled row's own model
  /// and optimizer); empty otherwise.
  StepState state = {};
};

struct Workload {
  std::string id;
  std::string what;
  std::function<Tensor()> run;
  double min_bytes;  // each input read once, each output written once; 0: not memory-bound
  /// A new compiled function of the same work, with the backend named (`ember::compile`
  /// with `.backend`), on the same inputs and modules as `run`.
  std::function<CompiledCall(const std::string& backend)> compile;
  /// For a training step: the gradients the last step left (x's, then the parameters'),
  /// so a compiled step can be compared with an eager one; empty otherwise.
  std::function<std::vector<Tensor>()> grads;
  /// For a step that updates its model (W8, W9, which keep an eager and a compiled copy of
  /// it): the eager copy's state after the last step, to compare with CompiledCall::state.
  StepState state = {};
  /// W7–W9: the parts of the step measured on their own; null otherwise.
  std::shared_ptr<const TrainingParts> training = {};
  /// Bytes the eager kernels read and write in one call, when they move more than
  /// min_bytes (W1's chain: see kW1EagerPasses); 0: min_bytes.
  double eager_bytes = 0;
};

inline double CheckedTensors::atol_for(const Tensor& expected) const {
  if (of_max == 0 || !expected.defined() || expected.numel() == 0) return atol;
  NoGradGuard no_grad;
  return atol + of_max * max(expected.abs()).item<double>();
}

namespace detail {

/// `fn(args...)` compiled with `backend`, named `name` in logs and traces.
template <typename F, typename... Args>
CompiledCall compiled_call(F fn, const std::string& backend, const std::string& name, Args... args) {
  auto c = ember::compile(fn, {.backend = backend, .name = name});
  return {[c, args...] { return c(args...); }, [c] { c.reset(); }};
}

/// A module's forward as a function of the module, so that its parameters become graph inputs.
inline Tensor unary_forward(nn::UnaryModule& m, const Tensor& x) { return m.forward(x); }

/// `fn(*module, x)` compiled with `backend`, called as is (recording the graph when an
/// input or parameter requires grad).
template <typename F>
CompiledCall compiled_module_call(F fn, const std::string& backend, const std::string& name,
                                  std::shared_ptr<nn::UnaryModule> module, Tensor x) {
  auto c = ember::compile(fn, {.backend = backend, .name = name});
  return {[c, module, x] { return c(*module, x); }, [c] { c.reset(); }};
}

/// A block's forward compiled with the module as an argument (its parameters become graph
/// inputs), called in eval mode under NoGradGuard like the eager row.
inline CompiledCall compiled_infer(std::shared_ptr<nn::UnaryModule> m, Tensor x, const std::string& backend,
                                   const std::string& name) {
  auto c = ember::compile(unary_forward, {.backend = backend, .name = name});
  return {[c, m, x] {
            NoGradGuard no_grad;
            return c(*m, x);
          },
          [c] { c.reset(); }};
}

inline std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string s = "x[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
  return s + "]";
}

}  // namespace detail

/// Input shapes of W1–W3; the defaults are docs/workloads.md's (tests also run smaller ones).
struct MemoryBoundShapes {
  int64_t w1_rows = 4096, w1_cols = 4096;  ///< W1: x[w1_rows, w1_cols]
  int64_t rows = 8192, cols = 1024;        ///< W2, W3: x[rows, cols], W3's weight and bias [cols]
};

/// Inputs drawn from a normal distribution with a fixed seed, as docs/workloads.md requires,
/// on the CPU and then moved to `device` (the GPU rows get the CPU rows' values).
/// min_bytes: each input read once and each output written once (W1: 128 MiB, W2: 64 MiB,
/// W3: 64 MiB + 8 KiB at the workload shapes).
inline std::vector<Workload> memory_bound_workloads(const MemoryBoundShapes& shapes = {}, Device device = kCPU) {
  manual_seed(0);
  Tensor x1 = randn({shapes.w1_rows, shapes.w1_cols}).to(device);
  Tensor x2 = randn({shapes.rows, shapes.cols}).to(device);
  Tensor x3 = randn({shapes.rows, shapes.cols}).to(device);
  Tensor w3 = randn({shapes.cols}).to(device);
  Tensor b3 = randn({shapes.cols}).to(device);
  auto bytes = [](const Tensor& t) { return 4.0 * static_cast<double>(t.numel()); };
  const std::string x1_text = detail::shape_text(x1.sizes().vec()), x2_text = detail::shape_text(x2.sizes().vec());
  return {
      {"W1",
       "pointwise chain, " + x1_text,
       [=] { return w1_pointwise(x1); },
       2 * bytes(x1),
       [=](const std::string& backend) { return detail::compiled_call(w1_pointwise, backend, "W1", x1); },
       {},
       {},
       {},
       kW1EagerPasses * bytes(x1)},
      {"W2",
       "softmax(dim=-1), " + x2_text,
       [=] { return w2_softmax(x2); },
       2 * bytes(x2),
       [=](const std::string& backend) { return detail::compiled_call(w2_softmax, backend, "W2", x2); },
       {}},
      {"W3",
       "layer_norm(" + std::to_string(shapes.cols) + "), " + x2_text,
       [=] { return w3_layer_norm(x3, w3, b3); },
       2 * bytes(x3) + bytes(w3) + bytes(b3),
       [=](const std::string& backend) { return detail::compiled_call(w3_layer_norm, backend, "W3", x3, w3, b3); },
       {}},
  };
}

/// Input shapes of the block workloads; the defaults are docs/workloads.md's. Tests run
/// smaller ones (the modules keep their sizes; only batch and sequence shrink).
struct BlockShapes {
  int64_t mlp_rows = 256;                                               ///< W4, W7: x[mlp_rows, 1024]
  std::vector<std::pair<int64_t, int64_t>> gpt = {{8, 128}, {1, 512}};  ///< W5: x[B, T, 768] per (B, T)
  int64_t conv_batch = 8, conv_hw = 56;                                 ///< W6: x[batch, 64, hw, hw]
};

/// W4–W7 on the blocks, parameters from the default init. The inference rows (W4–W6) run
/// in eval mode under NoGradGuard, as PyTorch's under torch.no_grad(); W7 is W4's training
/// step: forward, then backward of a fixed grad_output to every parameter and x, the
/// gradients set to None before each step (zero_grad(set_to_none)) so every step
/// allocates them afresh, as PyTorch's does. W7's compiled form compiles the forward, which
/// AOT autograd turns into a compiled forward and backward: backward() on its output runs
/// the compiled backward. Parameters and inputs are made on the CPU and moved to `device`.
inline std::vector<Workload> block_workloads(const BlockShapes& shapes = {}, Device device = kCPU) {
  manual_seed(0);
  auto mlp = std::make_shared<nn::MLPBlock>();
  auto gpt = std::make_shared<nn::GPT2Block>();
  auto basic = std::make_shared<nn::BasicBlock>();
  auto mlp_train = std::make_shared<nn::MLPBlock>();
  for (nn::Module* m : std::initializer_list<nn::Module*>{mlp.get(), gpt.get(), basic.get(), mlp_train.get()})
    m->to(device);
  mlp->eval();
  gpt->eval();
  basic->eval();
  auto infer = [](std::shared_ptr<nn::UnaryModule> m, Tensor x) {
    return [m, x] {
      NoGradGuard no_grad;
      return m->forward(x);
    };
  };
  auto compiled_infer = [](std::shared_ptr<nn::UnaryModule> m, Tensor x, std::string name) {
    return [m, x, name](const std::string& backend) { return detail::compiled_infer(m, x, backend, name); };
  };
  std::vector<Workload> out;
  Tensor x4 = randn({shapes.mlp_rows, 1024}).to(device);
  out.push_back({"W4",
                 "MLP block, " + detail::shape_text(x4.sizes().vec()),
                 infer(mlp, x4),
                 0,
                 compiled_infer(mlp, x4, "W4"),
                 {}});
  for (const auto& [b, t] : shapes.gpt) {
    Tensor x5 = randn({b, t, 768}).to(device);
    const std::string id = "W5-" + std::to_string(b) + "x" + std::to_string(t);
    out.push_back({id,
                   "GPT-2 block, " + detail::shape_text(x5.sizes().vec()),
                   infer(gpt, x5),
                   0,
                   compiled_infer(gpt, x5, id),
                   {}});
  }
  Tensor x6 = randn({shapes.conv_batch, 64, shapes.conv_hw, shapes.conv_hw}).to(device);
  out.push_back({"W6",
                 "BasicBlock eval, " + detail::shape_text(x6.sizes().vec()),
                 infer(basic, x6),
                 0,
                 compiled_infer(basic, x6, "W6"),
                 {}});
  Tensor x7 = randn({shapes.mlp_rows, 1024}).to(device).requires_grad_();
  Tensor g7 = randn({shapes.mlp_rows, 1024}).to(device);
  // One training step around `forward` (the block's own, or its compiled form).
  auto step = [mlp_train, x7, g7](const std::function<Tensor()>& forward) {
    mlp_train->zero_grad();
    x7.mutable_grad() = Tensor();
    Tensor y = forward();
    y.backward(g7);
    return y;
  };
  auto parts = std::make_shared<TrainingParts>();
  parts->forward = [mlp_train, x7] { return mlp_train->forward(x7); };
  parts->compile_forward = [mlp_train, x7](const std::string& backend) {
    return detail::compiled_module_call(detail::unary_forward, backend, "W7", mlp_train, x7);
  };
  parts->backward = [g7](const Tensor& y) { y.backward(g7); };
  out.push_back({"W7",
                 "W4 train step (fwd+bwd), " + detail::shape_text(x7.sizes().vec()),
                 [step, parts] { return step(parts->forward); },
                 0,
                 [step, parts](const std::string& backend) {
                   const CompiledCall forward = parts->compile_forward(backend);
                   return CompiledCall{[step, forward] { return step(forward.call); }, forward.reset};
                 },
                 [mlp_train, x7] {
                   std::vector<Tensor> g{x7.grad()};
                   for (const Tensor& p : mlp_train->parameters()) g.push_back(p.grad());
                   return g;
                 },
                 {},
                 parts});
  return out;
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
