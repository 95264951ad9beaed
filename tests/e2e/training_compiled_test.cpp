// Training through the compiler (Note [aot], "Training"): the W4–W6 blocks at small sizes,
// trained for 20 AdamW steps with their loss computed by a compiled function, give eager's
// losses and parameters, with the "inductor" backend (forward and backward graphs as
// generated code) and with "aot_eager" (the same graphs interpreted); W6's batch norms
// also leave eager's running statistics.
//
// Tolerance: the compiled graphs round some sums differently in the last bit (fused
// kernels, another order of a reduction), and 20 AdamW steps carry such differences on:
// an update is lr * m / sqrt(v), so a gradient element near zero may move its parameter by
// up to lr per step whatever its rounding. The losses are checked at rtol 1e-4 and the
// parameters at atol 1e-3 (lr is 1e-3): a wrong gradient formula or a saved value of the
// wrong step moves the losses by far more within a few steps.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/blocks.h"
#include "ember/optim.h"

namespace ember {
namespace {

class TrainingCompiledTest : public ::testing::TestWithParam<std::string> {};

using MakeBlock = std::function<std::shared_ptr<nn::UnaryModule>()>;

Tensor loss_of(nn::Module& m, const Tensor& x, const Tensor& target) {
  Tensor y = static_cast<nn::UnaryModule&>(m).forward(x);
  return (y - target).pow(2).mean();
}

/// 20 AdamW steps; returns the losses and leaves `m` trained.
std::vector<double> train(nn::UnaryModule& m, const Tensor& x, const Tensor& target,
                          const std::function<Tensor(nn::Module&, const Tensor&, const Tensor&)>& loss) {
  optim::AdamW opt(m.parameters(), {.lr = 1e-3});
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    Tensor l = loss(m, x, target);
    l.backward();
    opt.step();
    losses.push_back(l.item<double>());
  }
  return losses;
}

void expect_trains_as_eager(const MakeBlock& make, const std::vector<int64_t>& x_sizes, const std::string& backend) {
  manual_seed(1);
  std::shared_ptr<nn::UnaryModule> eager = make();
  manual_seed(1);
  std::shared_ptr<nn::UnaryModule> compiled_block = make();
  manual_seed(2);
  Tensor x = randn(x_sizes);
  Tensor target = randn(x_sizes);
  const std::vector<double> expected = train(*eager, x, target, loss_of);
  auto compiled = compile(loss_of, {.backend = backend, .name = "train_" + eager->name()});
  size_t compiled_steps = 0;
  const std::vector<double> got =
      train(*compiled_block, x, target, [&](nn::Module& m, const Tensor& x, const Tensor& t) {
        Tensor l = compiled(m, x, t);
        // Compiled, not run in the interpreter: the loss's history is one compiled node.
        compiled_steps += l.grad_fn() && l.grad_fn()->name() == "CompiledFunctionBackward";
        return l;
      });
  EXPECT_EQ(compiled_steps, 20u);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-4 * std::abs(expected[i]) + 1e-6) << "loss of step " << i;
  EXPECT_LT(got.back(), got.front()) << "the loss falls";
  const auto ep = eager->named_parameters(), cp = compiled_block->named_parameters();
  ASSERT_EQ(ep.size(), cp.size());
  for (size_t i = 0; i < ep.size(); ++i) {
    NoGradGuard no_grad;
    const double diff = max((cp[i].second - ep[i].second).abs()).item<double>();
    EXPECT_LE(diff, 1e-3) << "parameter " << cp[i].first;
  }
  const auto eb = eager->named_buffers(), cb = compiled_block->named_buffers();
  ASSERT_EQ(eb.size(), cb.size());
  for (size_t i = 0; i < eb.size(); ++i) {
    NoGradGuard no_grad;
    const double diff = max((cb[i].second.to(kDouble) - eb[i].second.to(kDouble)).abs()).item<double>();
    EXPECT_LE(diff, 1e-4) << "buffer " << cb[i].first;
  }
}

TEST_P(TrainingCompiledTest, W4MlpBlockTrainsAsEagerFor20AdamWSteps) {
  expect_trains_as_eager([] { return std::make_shared<nn::MLPBlock>(64, 256); }, {16, 64}, GetParam());
}

TEST_P(TrainingCompiledTest, W5Gpt2BlockTrainsAsEagerFor20AdamWSteps) {
  expect_trains_as_eager([] { return std::make_shared<nn::GPT2Block>(64, 4, 256); }, {2, 16, 64}, GetParam());
}

TEST_P(TrainingCompiledTest, W6BasicBlockTrainsAsEagerFor20AdamWStepsAndKeepsItsRunningStats) {
  expect_trains_as_eager([] { return std::make_shared<nn::BasicBlock>(8); }, {2, 8, 8, 8}, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Backends, TrainingCompiledTest, ::testing::Values("inductor", "aot_eager"));

}  // namespace
}  // namespace ember
