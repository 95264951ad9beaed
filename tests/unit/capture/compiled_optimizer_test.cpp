// A training step compiled with ember::compile (the whole step: forward, backward, the
// optimizer's update; or the optimizer's step alone) gives eager's parameters step after
// step, with SGD (momentum, whose buffer is a clone().detach() made in the first step) and
// AdamW (whose state is made in the first step and whose bias corrections change with the
// step count), with the eager and the inductor backends.
#include <gtest/gtest.h>

#include <memory>

#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;

class CompiledOptimizer : public testing::DiagnosticsTest, public ::testing::WithParamInterface<std::string> {};

/// A small model and its data, built the same way from `seed`.
struct TinyModel {
  std::shared_ptr<nn::Sequential> model = std::make_shared<nn::Sequential>();
  Tensor x, y;
  explicit TinyModel(uint64_t seed) {
    manual_seed(seed);
    model->push_back(std::make_shared<nn::Linear>(3, 8));
    model->push_back(std::make_shared<nn::ReLU>());
    model->push_back(std::make_shared<nn::Linear>(8, 2));
    x = randn({16, 3});
    y = randn({16, 2});
  }
  Tensor loss() {
    Tensor d = model->forward(x) - y;
    return (d * d).mean();
  }
};

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

std::unique_ptr<optim::Optimizer> sgd(std::vector<Tensor> p) {
  return std::make_unique<optim::SGD>(std::move(p),
                                      optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
}
std::unique_ptr<optim::Optimizer> adamw(std::vector<Tensor> p) {
  return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.05, .weight_decay = 0.1});
}

/// Trains `steps` steps eagerly and with `compiled_step` (given the setup and its
/// optimizer, it runs one step), checking every parameter after each step.
void expect_same_training(const MakeOptimizer& make, const std::string& backend, bool whole_step, int steps = 5) {
  TinyModel eager(7), comp(7);
  auto eager_opt = make(eager.model->parameters());
  auto comp_opt = make(comp.model->parameters());
  auto train_step = compile(
      [&]() {
        comp_opt->zero_grad();
        Tensor loss = comp.loss();
        loss.backward();
        comp_opt->step();
        return loss;
      },
      {.backend = backend, .name = "train_step"});
  auto opt_step = compile([&]() { comp_opt->step(); }, {.backend = backend, .name = "opt_step"});
  for (int step = 0; step < steps; ++step) {
    eager_opt->zero_grad();
    Tensor eager_loss = eager.loss();
    eager_loss.backward();
    eager_opt->step();
    if (whole_step) {
      expect_close(train_step(), eager_loss, 1e-5, 1e-6, "loss at step " + std::to_string(step));
    } else {
      comp_opt->zero_grad();
      comp.loss().backward();
      opt_step();
    }
    const auto ep = eager.model->named_parameters(), cp = comp.model->named_parameters();
    for (size_t i = 0; i < ep.size(); ++i) {
      ASSERT_FALSE(cp[i].second.is_fake()) << cp[i].first;
      expect_close(cp[i].second, ep[i].second, 1e-5, 1e-6, cp[i].first + " after step " + std::to_string(step));
    }
  }
}

TEST_P(CompiledOptimizer, SgdWithMomentumTrainingStepEqualsEager) { expect_same_training(sgd, GetParam(), true); }
TEST_P(CompiledOptimizer, SgdWithMomentumStepAloneEqualsEager) { expect_same_training(sgd, GetParam(), false); }
TEST_P(CompiledOptimizer, AdamWTrainingStepEqualsEager) { expect_same_training(adamw, GetParam(), true); }
TEST_P(CompiledOptimizer, AdamWStepAloneEqualsEager) { expect_same_training(adamw, GetParam(), false); }

class CompiledOptimizerGraphs : public testing::DiagnosticsTest {};

TEST_F(CompiledOptimizerGraphs, AdamWStepIsOneGraphWhateverTheStepCount) {
  // The bias corrections change at every step; they enter the graph as inputs, so the
  // graph compiled at the second step serves every later one.
  TinyModel s(3);
  optim::AdamW opt(s.model->parameters(), {.lr = 0.01});
  testing::RecordingBackend backend;
  auto step = compile([&]() { opt.step(); }, {.custom_backend = backend.fn(), .name = "adamw_step"});
  for (int i = 0; i < 6; ++i) {
    opt.zero_grad();
    s.loss().backward();
    step();
  }
  // The first step makes the state (a graph of its own), the others share one.
  EXPECT_EQ(backend.graphs->size(), 2u);
  EXPECT_EQ(opt.state(0).step.item<double>(), 6.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledOptimizer, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace ember
