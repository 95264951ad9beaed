// bench/training_workloads.h — W8 and W9 of docs/workloads.md: a whole training step
// (forward, sum() loss, backward, optimizer step) of the W5 GPT-2 block with AdamW and of
// the W6 BasicBlock in training mode with SGD. Each row keeps two copies of its block and
// optimizer built from the same seed, one for the eager step and one for the compiled
// step, so that both start from the same parameters and the compiled copy's loss,
// gradients, parameters and buffers after a step can be compared with the eager copy's.
//
// The compiled step: the forward and loss compiled with ember::compile (AOT autograd makes
// a forward and a backward graph; loss.backward() runs the compiled backward), then the
// optimizer's step() compiled with ember::compile as a function of its own (a function that
// reads gradient slots is traced on every call and its graphs found by their text: Note
// [outside state]). bench/torch_workloads.py compiles the same two parts.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/optim.h"
#include "workloads.h"

namespace ember::bench {

/// Input shapes of W8 and W9; the defaults are docs/workloads.md's (tests may shrink them).
struct TrainingShapes {
  int64_t gpt_batch = 8, gpt_seq = 128;  ///< W8: x[gpt_batch, gpt_seq, 768]
  int64_t conv_batch = 8, conv_hw = 56;  ///< W9: x[conv_batch, 64, conv_hw, conv_hw]
};

/// The loss of W8 and W9: the block's output summed.
inline Tensor sum_loss(nn::UnaryModule& m, const Tensor& x) { return m.forward(x).sum(); }

namespace detail {

/// One copy of a training row's model: the block (in training mode) and its optimizer.
struct TrainCopy {
  std::shared_ptr<nn::UnaryModule> block;
  std::shared_ptr<optim::Optimizer> opt;
};

/// Each tensor's tolerance adds this much of its largest |element|: the sum loss makes
/// gradients large (W9's reach 1e4, sums over the 25,088 positions of a channel) and batch
/// norm's backward subtracts means of them, so an element near zero carries the rounding of
/// its large neighbours (about 1e-6 of the largest); the parameters after an SGD step
/// inherit lr times that.
inline constexpr double kOfMax = 1e-4;

/// Gradients, parameters and buffers of `copy` (clones, so later steps leave them alone).
/// Parameters get `param_atol` (see W8), the rest 1e-4, each plus kOfMax of its largest.
inline std::vector<CheckedTensors> state_of(const TrainCopy& copy, double param_atol) {
  NoGradGuard no_grad;
  CheckedTensors grads{"gradients", {}, 1e-4, kOfMax}, params{"parameters after the step", {}, param_atol, kOfMax},
      buffers{"buffers (running stats)", {}, 1e-4, kOfMax};
  for (const Tensor& p : copy.block->parameters()) {
    grads.tensors.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    params.tensors.push_back(p.detach().clone());
  }
  for (const Tensor& b : copy.block->buffers()) buffers.tensors.push_back(b.to(kDouble));
  return {grads, params, buffers};
}

/// A training row: `make_block` and `make_opt` build each copy from `seed` (the block made
/// on the CPU, then moved to x's device); the step is zero_grad (set to none),
/// loss = sum_loss(block, x), loss.backward(), opt.step().
template <typename MakeBlock, typename MakeOpt>
Workload training_row(const std::string& id, const std::string& what, MakeBlock make_block, MakeOpt make_opt,
                      const Tensor& x, double param_atol, uint64_t seed) {
  auto make_copy = [&] {
    manual_seed(seed);
    std::shared_ptr<nn::UnaryModule> block = make_block();
    block->to(x.device());
    block->train();
    return TrainCopy{block, make_opt(block->parameters())};
  };
  const TrainCopy eager = make_copy(), compiled = make_copy();
  auto parts = std::make_shared<TrainingParts>();
  parts->forward = [eager, x] { return sum_loss(*eager.block, x); };
  parts->compile_forward = [compiled, x, id](const std::string& backend) {
    return compiled_module_call(sum_loss, backend, id, compiled.block, x);
  };
  parts->backward = [](const Tensor& loss) { loss.backward(); };
  parts->phases = std::make_shared<StepPhases>();
  auto run = [eager, parts] {
    StepPhases::Clock clock;
    eager.opt->zero_grad();
    clock.lap();
    Tensor loss = parts->forward();
    clock.lap();
    loss.backward();
    clock.lap();
    eager.opt->step();
    clock.lap();
    parts->phases->eager.push_back(clock.ms());
    return loss;
  };
  auto compile_step = [compiled, parts, id, param_atol](const std::string& backend) {
    const CompiledCall forward = parts->compile_forward(backend);
    auto opt = compiled.opt;
    auto step = ember::compile([opt] { opt->step(); }, {.backend = backend, .name = id + "_optimizer_step"});
    return CompiledCall{[compiled, forward, step, phases = parts->phases] {
                          StepPhases::Clock clock;
                          compiled.opt->zero_grad();
                          clock.lap();
                          Tensor loss = forward.call();
                          clock.lap();
                          loss.backward();
                          clock.lap();
                          step();
                          clock.lap();
                          phases->compiled.push_back(clock.ms());
                          return loss;
                        },
                        [forward, step] {
                          forward.reset();
                          step.reset();
                        },
                        [compiled, param_atol] { return state_of(compiled, param_atol); }};
  };
  return {id, what, run, 0, compile_step, {}, [eager, param_atol] { return state_of(eager, param_atol); }, parts};
}

}  // namespace detail

/// W8 and W9 at `shapes`, parameters from the default init (seeded); inputs and blocks are
/// made on the CPU and moved to `device` (the same values on every device).
inline std::vector<Workload> training_workloads(const TrainingShapes& shapes = {}, Device device = kCPU) {
  manual_seed(0);
  Tensor x8 = randn({shapes.gpt_batch, shapes.gpt_seq, 768}).to(device);
  Tensor x9 = randn({shapes.conv_batch, 64, shapes.conv_hw, shapes.conv_hw}).to(device);
  // AdamW's first update is lr * g / (|g| + eps): about ±lr for every gradient element
  // well above eps, whatever its size, so an element whose eager value is within rounding
  // of zero may step the other way when compiled: its parameter then differs by up to
  // 2 * lr. The gradients themselves are compared at the usual tolerance.
  constexpr double kLr8 = 1e-4;
  return {
      detail::training_row(
          "W8", "W5 train step + AdamW, " + detail::shape_text(x8.sizes().vec()),
          [] { return std::make_shared<nn::GPT2Block>(); },
          [](std::vector<Tensor> p) {
            return std::make_shared<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = kLr8, .weight_decay = 0.01});
          },
          x8, 2 * kLr8 + 1e-4, 8),
      detail::training_row(
          "W9", "W6 train step + SGD, " + detail::shape_text(x9.sizes().vec()),
          [] { return std::make_shared<nn::BasicBlock>(); },
          [](std::vector<Tensor> p) {
            return std::make_shared<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
          },
          x9, 1e-4, 9),
  };
}

}  // namespace ember::bench
