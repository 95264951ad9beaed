// The loss modules of ember/nn/loss.h: values and input gradients against torch.nn's
// (PyTorch 1.13, computed on the same inputs: x = sin(0.7·i), y = cos(1.3·i) as 3×4), the
// buffers they register, and the clamp of binary_cross_entropy's logs at -100.
#include "ember/nn/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/loss.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"

using namespace ember;
using namespace ember::nn;

namespace {

using Floats = std::vector<float>;

Tensor x_values() { return (arange(12, kFloat) * 0.7).sin().reshape({3, 4}); }
Tensor y_values() { return (arange(12, kFloat) * 1.3).cos().reshape({3, 4}); }
Tensor w4() { return tensor<float>({0.5f, 1.0f, 2.0f, 1.5f}); }
Tensor targets() { return tensor<int64_t>({1, -100, 3}); }

void expect_close(const Tensor& t, const Floats& expected) {
  const std::vector<float> got = t.contiguous().to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5 + 1e-5 * std::abs(expected[i])) << i;
}

/// The module's loss on (input, target) and the gradient of its sum w.r.t. input.
void check(LossModule& loss, const Tensor& input, const Tensor& target, const Floats& value, const Floats& grad) {
  Tensor x = input.detach().clone();
  x.requires_grad_();
  Tensor l = loss(x, target);
  expect_close(l, value);
  (l.dim() == 0 ? l : l.sum()).backward();
  ASSERT_TRUE(x.grad().defined());
  expect_close(x.grad(), grad);
}

TEST(LossModules, MSELossMeanAndSumMatchPyTorch) {
  MSELoss mean;
  check(mean, x_values(), y_values(), {0.95731354f},
        {-0.16666667f, 0.062786467f, 0.30705643f, 0.26485699f, -0.022254717f, -0.22122848f, -0.15425524f,
         -0.0057885251f, -0.011713694f, -0.10513043f, -0.041743368f, 0.19171366f});
  MSELoss sum("sum");
  check(sum, x_values(), y_values(), {11.487762f},
        {-2.0f, 0.75343758f, 3.6846769f, 3.1782837f, -0.26705658f, -2.6547418f, -1.8510628f, -0.069462299f,
         -0.14056432f, -1.2615651f, -0.50092041f, 2.3005638f});
}

TEST(LossModules, L1LossMatchesPyTorch) {
  L1Loss loss;
  const float g = 0.083333336f;
  check(loss, x_values(), y_values(), {0.77759725f}, {-g, g, g, g, -g, -g, -g, -g, -g, -g, -g, g});
}

TEST(LossModules, SmoothL1LossWithBetaMatchesPyTorch) {
  SmoothL1Loss loss("none", 0.5);
  check(loss, x_values(), y_values(),
        {0.75f, 0.14191705f, 1.5923384f, 1.3391418f, 0.017829806f, 1.0773709f, 0.67553139f, 0.0012062527f,
         0.0049395822f, 0.38078254f, 0.062730312f, 0.90028191f},
        {-1.0f, 0.75343758f, 1.0f, 1.0f, -0.26705658f, -1.0f, -1.0f, -0.069462299f, -0.14056432f, -1.0f, -0.50092041f,
         1.0f});
}

TEST(LossModules, BCELossWithWeightMatchesPyTorch) {
  BCELoss loss(w4());
  check(loss, sigmoid(x_values()), sigmoid(y_values()), {0.96488053f},
        {-0.038509768f, 0.032936595f, 0.36224771f, 0.22599506f, -0.0054946486f, -0.10765773f, -0.17517392f,
         -0.0043755276f, -0.0029589739f, -0.050758671f, -0.039948076f, 0.1701992f});
}

TEST(LossModules, BCEWithLogitsLossWithPosWeightMatchesPyTorch) {
  BCEWithLogitsLoss loss(std::nullopt, "mean", w4());
  check(loss, x_values(), sigmoid(y_values()), {0.80882138f},
        {-0.0040244958f, 0.0074356147f, 0.029100111f, 0.027406061f, 0.0080152275f, -0.026103174f, -0.048383683f,
         -0.0090468498f, 0.0085405847f, -0.012688771f, -0.024762174f, 0.017236039f});
}

TEST(LossModules, NLLLossWithWeightAndIgnoredTargetMatchesPyTorch) {
  NLLLoss loss(w4());
  check(loss, log_softmax(x_values(), 1), targets(), {1.070146f},
        {0, -0.40000001f, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.60000002f});
}

TEST(LossModules, CrossEntropyLossWithLabelSmoothingMatchesPyTorch) {
  CrossEntropyLoss loss(w4(), -100, "mean", 0.1);
  check(loss, x_values(), targets(), {1.093681f},
        {0.046544645f, -0.27183339f, 0.11808895f, 0.10719984f, 0, 0, 0, 0, 0.045912325f, 0.087337606f, 0.16463083f,
         -0.29788074f});
}

TEST(LossModules, CrossEntropyLossWithProbabilityTargetsMatchesPyTorch) {
  CrossEntropyLoss loss;
  check(loss, x_values(), softmax(y_values(), 1), {1.5149404f},
        {-0.14176169f, -0.0084798727f, 0.083586276f, 0.066655286f, 0.067479879f, -0.074310504f, -0.013597338f,
         0.020427981f, -0.0039757742f, -0.054643713f, -0.037858691f, 0.096478172f});
}

TEST(LossModules, WeightsAreBuffersUnderPyTorchsNames) {
  BCEWithLogitsLoss both(w4(), "mean", w4() * 2);
  const auto state = both.state_dict();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_TRUE(state.count("weight") && state.count("pos_weight"));
  EXPECT_TRUE(CrossEntropyLoss().state_dict().empty());  // no weight: PyTorch's None buffer
  EXPECT_TRUE(both.named_parameters().empty());
}

TEST(LossModules, ConfigurationIsReadAtEachCall) {
  MSELoss loss;
  const Tensor x = x_values(), y = y_values();
  loss.reduction = "sum";
  expect_close(loss(x, y), {11.487762f});
  loss.reduction = "none";
  EXPECT_EQ(loss(x, y).sizes(), IntArrayRef({3, 4}));
}

TEST(LossModules, UnknownReductionIsAValueError) {
  try {
    MSELoss loss("avg");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ValueError);
    EXPECT_NE(std::string(e.what()).find("avg is not a valid value for reduction"), std::string::npos) << e.what();
  }
}

TEST(LossFunctions, BinaryCrossEntropyClampsItsLogsAtMinus100) {
  // PyTorch: an input of exactly 0 or 1 against the opposite target costs 100, not inf.
  expect_close(
      binary_cross_entropy(tensor<float>({0.0f, 1.0f, 0.5f}), tensor<float>({1.0f, 0.0f, 1.0f}), std::nullopt, "none"),
      {100.0f, 100.0f, 0.69314718f});
}

}  // namespace
