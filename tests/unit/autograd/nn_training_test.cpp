// Training through nn layers whose derivatives call backward ops (convolution_backward,
// native_batch_norm_backward, embedding_dense_backward): the gradients of parameters and
// inputs against values computed with torch 1.13 on the same weights
// (/usr/bin/python3, torch.nn.Conv2d / BatchNorm2d / F.embedding).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/modules.h"

namespace ember {
namespace {

/// f(arange(n) * step) * scale in float32, as the reference script builds its inputs.
Tensor seq(int64_t n, double step, double scale = 1.0, bool use_cos = false) {
  Tensor a = arange(n, kFloat) * step;
  return (use_cos ? cos(a) : sin(a)) * scale;
}

void expect_close(const Tensor& t, const std::vector<float>& expected) {
  ASSERT_TRUE(t.defined());
  auto got = t.contiguous().to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5 + 1e-5 * std::abs(expected[i])) << i;
}

struct ConvBn {
  nn::Conv2d conv{2, 3, {3, 3}, {1, 1}, {1, 1}};
  nn::BatchNorm2d bn{3};
  Tensor x = seq(2 * 2 * 4 * 4, 0.37).reshape({2, 2, 4, 4}).requires_grad_();

  ConvBn() {
    NoGradGuard no_grad;
    conv.weight().copy_(seq(54, 0.21, 0.3, /*use_cos=*/true).reshape({3, 2, 3, 3}));
    conv.tensor("bias").copy_(tensor<float>({0.1f, -0.2f, 0.05f}));
    bn.tensor("weight").copy_(tensor<float>({1.0f, 0.5f, 1.5f}));
    bn.tensor("bias").copy_(tensor<float>({0.0f, 0.1f, -0.1f}));
  }
  /// sum(bn(conv(x)) * w) for fixed w, so that the gradients through batch norm are not zero.
  Tensor loss() {
    Tensor y = bn.forward(conv.forward(x));
    return sum(y * seq(y.numel(), 0.13).reshape(y.sizes()));
  }
};

TEST(NnTraining, Conv2dBatchNorm2dTrainingGradientsMatchPyTorch) {
  ConvBn m;
  Tensor loss = m.loss();
  expect_close(loss.reshape({1}), {27.09374f});
  loss.backward();
  expect_close(m.conv.weight().grad().reshape({-1}).slice(0, 0, 18),
               {-1.10634f, -1.615807f, -1.815927f, -2.429039f, -2.867453f, -2.709965f, -0.8667896f, -3.278417f,
                -3.313376f, 0.03106981f, -0.2894977f, -1.010232f, -1.622119f, -1.369567f, -1.489093f, -0.3309261f,
                -2.267864f, -2.649626f});
  expect_close(m.conv.weight().grad().reshape({-1}).slice(0, 36, 54),
               {-0.7663014f, -1.165646f, -0.4627248f, -1.230687f, -1.366208f, -0.07373951f, 1.663546f, 1.346432f,
                0.8009741f, -0.1403593f, -0.3433577f, -0.1217968f, -1.520771f, -1.642795f, -0.1606185f, 1.668861f,
                1.426561f, 1.057835f});
  // Batch norm subtracts the batch mean: the conv bias gets (almost exactly) nothing.
  expect_close(m.conv.tensor("bias").grad(), {-3.099442e-06f, -2.384186e-07f, -5.960464e-08f});
  expect_close(m.bn.tensor("weight").grad(), {6.994546f, 13.78513f, 6.983866f});
  expect_close(m.bn.tensor("bias").grad(), {21.64706f, 2.866512f, -24.44181f});
  expect_close(m.x.grad().select(0, 0).select(0, 0).reshape({-1}),
               {-0.4756046f, -0.5222737f, -0.476395f, -0.3057734f, -0.5122571f, -0.7459571f, -0.7362042f, -0.3409286f,
                0.4684014f, 0.7468328f, 0.993732f, 0.8023805f, 0.6048436f, 0.9586365f, 0.974653f, 0.5465378f});
  // The running statistics move without a gradient of their own.
  expect_close(m.bn.tensor("running_mean"), {0.01154699f, -0.008081166f, -0.01568974f});
  expect_close(m.bn.tensor("running_var"), {0.9193385f, 0.928943f, 0.9334378f});
  EXPECT_FALSE(m.bn.tensor("running_mean").requires_grad());
  EXPECT_EQ(m.bn.tensor("num_batches_tracked").item<int64_t>(), 1);
  EXPECT_EQ(loss.grad_fn()->name(), "SumBackward0");
}

TEST(NnTraining, BatchNorm2dEvalGradientsUseRunningStatistics) {
  ConvBn m;
  m.loss();  // one training step moves the running statistics
  m.conv.zero_grad();
  m.bn.zero_grad();
  m.bn.eval();
  m.x = m.x.detach().requires_grad_();
  m.loss().backward();
  expect_close(m.conv.weight().grad().select(0, 0).reshape({-1}),
               {6.489687f, 7.83173f, 5.157347f, -0.2965436f, -2.018365f, -3.062521f, -3.323133f, -5.891575f,
                -5.331625f, 6.464393f, 8.550639f, 6.234405f, 1.58938f, 0.6032022f, -1.078838f, -1.246651f, -3.555374f,
                -3.941586f});
  expect_close(m.bn.tensor("weight").grad(), {5.503767f, 7.357236f, 7.686459f});
  expect_close(m.bn.tensor("bias").grad(), {21.64706f, 2.866512f, -24.44181f});
  expect_close(m.x.grad().select(0, 1).select(0, 1).reshape({-1}),
               {1.757633f, 2.36762f, 2.146023f, 1.204618f, 1.451078f, 1.548372f, 1.072542f, 0.2815505f, 0.1529678f,
                -0.4300418f, -0.9277439f, -1.008711f, -0.7497416f, -1.463847f, -1.693807f, -1.278746f});
}

TEST(NnTraining, ConvolutionAndBatchNormNodesCallTheBackwardOps) {
  ConvBn m;
  Tensor c = m.conv.forward(m.x);
  EXPECT_EQ(c.grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_EQ(m.bn.forward(c).grad_fn()->name(), "NativeBatchNormBackward0");
}

TEST(NnTraining, EmbeddingScaleGradByFreqDividesByTheCount) {
  Tensor w = seq(12, 0.5).reshape({4, 3}).requires_grad_();
  Tensor idx = tensor<int64_t>({0, 2, 3, 0, 0, 3}, {2, 3});
  Tensor e = embedding(w, idx, /*padding_idx=*/2, /*scale_grad_by_freq=*/true);
  sum(e * seq(18, 0.3).reshape({2, 3, 3})).backward();
  expect_close(w.grad().reshape({-1}), {-0.005046908f, -0.08370867f, -0.1548931f, 0, 0, 0, 0, 0, 0, -0.001841247f,
                                        -0.06647763f, -0.1251757f});
}

}  // namespace
}  // namespace ember
