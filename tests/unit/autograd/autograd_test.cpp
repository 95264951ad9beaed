// Autograd behaviour: gradients against values printed by PyTorch 1.13 for the same
// inputs, grad mode, hooks, retain_graph, autograd::grad, and the errors PyTorch raises.
// Inputs are patterns ((i*a) % m - s) / d so both sides build them without pasting data.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

Tensor pattern(std::vector<int64_t> sizes, int a, int m, int s, double d, ScalarType dtype = kFloat) {
  int64_t n = 1;
  for (int64_t v : sizes) n *= v;
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<double>((i * a) % m - s) / d);
  return tensor(values, sizes).to(dtype);
}

void expect_close(const Tensor& t, const std::vector<double>& expected, double atol = 1e-5, double rtol = 1.3e-6) {
  ASSERT_TRUE(t.defined());
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i])) << i;
}

using ember::testing::error_of;

TEST(Autograd, LinearReluLayerNormSoftmaxMatchesPyTorch) {
  Tensor x = pattern({2, 3}, 7, 11, 5, 4).requires_grad_();
  Tensor w = pattern({3, 4}, 5, 13, 6, 5).requires_grad_();
  Tensor b = pattern({4}, 3, 7, 3, 2).requires_grad_();
  // Composite ops (linear, layer_norm, softmax.int) decompose into primitives with formulas.
  Tensor h = relu(linear(x, w.t(), b));
  Tensor y = softmax(layer_norm(h, {4}), -1);
  Tensor loss = sum(y * pattern({2, 4}, 3, 5, 2, 3));
  loss.backward();
  expect_close(x.grad(), {0.24442344903945923, -0.011294132098555565, 0.20789235830307007, 0.010003618896007538,
                          -0.054060548543930054, 0.0013548098504543304});
  expect_close(w.grad(), {0.4535512626171112, 0.04182912036776543, 0.001693512313067913, -0.3228096663951874,
                          -0.18142050504684448, -0.05018078535795212, 0.0003387024626135826, 0.12912386655807495,
                          0.18142050504684448, 0.072480209171772, -0.0010161073878407478, -0.12912386655807495});
  expect_close(b.grad(), {-0.36284101009368896, -0.12266099452972412, 0.0013548098504543304, 0.2582477331161499});
}

TEST(Autograd, LinearWeightGradientHasTheWeightsLayout) {
  // linear multiplies by weight.t(), a column-major operand: its gradient is computed
  // transposed (as PyTorch's mm_mat2_backward does), so weight.grad is row-major like the
  // weight, and equals g.t() @ x.
  Tensor x = pattern({5, 3}, 7, 11, 5, 4).requires_grad_();
  Tensor w = pattern({4, 3}, 5, 13, 6, 5).requires_grad_();
  Tensor b = pattern({4}, 3, 7, 3, 2).requires_grad_();
  Tensor g = pattern({5, 4}, 3, 5, 2, 3);
  sum(linear(x, w, b) * g).backward();
  EXPECT_EQ(w.grad().strides().vec(), (std::vector<int64_t>{3, 1}));
  expect_close(w.grad(), mm(g.t(), x.detach()).to_vector<double>());
  EXPECT_EQ(x.grad().strides().vec(), (std::vector<int64_t>{3, 1}));
  expect_close(x.grad(), mm(g, w.detach()).to_vector<double>());
}

TEST(Autograd, BroadcastGradientIsSummedAndKeepsTheInputDtype) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor y = pattern({2, 3}, 5, 7, 3, 2, kDouble).requires_grad_();
  pow(x * y + x, Scalar(2)).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat);
  EXPECT_EQ(x.grad().sizes().vec(), (std::vector<int64_t>{3}));
  expect_close(x.grad(), {0.5, 41.0, 19.5});
  EXPECT_EQ(y.grad().dtype(), kDouble);
  expect_close(y.grad(), {-1.0, 16.0, 18.0, 0.0, 20.0, 27.0});
}

TEST(Autograd, BatchedMatmulMatchesPyTorch) {
  Tensor a = pattern({2, 2, 3}, 7, 11, 5, 4).requires_grad_();
  Tensor m = pattern({3, 2}, 5, 13, 6, 5).requires_grad_();
  sum(matmul(a, m) * pattern({2, 2, 2}, 3, 5, 2, 3)).backward();
  expect_close(a.grad(), {0.73333340883255, -0.800000011920929, 0.2666666805744171, 0.2666667103767395,
                          -0.800000011920929, 0.73333340883255, 0.13333334028720856, 0.5333333611488342,
                          -0.8000000715255737, -0.3333333730697632, 0.5333333611488342, -0.3333333432674408});
  expect_close(m.grad(), {0.6666666865348816, -0.5, -0.5, 0.4166666865348816, 0.1666666865348816, 0.4166666865348816});
}

TEST(Autograd, EmbeddingPaddingRowGetsNoGradient) {
  Tensor w = pattern({4, 2}, 3, 7, 3, 2).requires_grad_();
  Tensor e = embedding(w, tensor<int64_t>({0, 2, 3, 2}, {2, 2}), 2);
  sum(e * pattern({2, 2, 2}, 5, 7, 3, 2)).backward();
  expect_close(w.grad(), {-1.5, 1.0, 0.0, 0.0, 0.0, 0.0, 1.5, 0.5});
}

TEST(Autograd, InPlaceOnANonLeafRebasesItsHistory) {
  Tensor x = tensor<float>({0.5, 1, 1.5}).requires_grad_();
  Tensor y = x * x;
  y.mul_(Scalar(3));
  EXPECT_EQ(y.grad_fn()->name(), "CopyBackwards");
  sin(y).sum().backward();
  expect_close(x.grad(), {2.195066452026367, -5.93995475769043, 8.037056922912598});
}

TEST(Autograd, CopyIntoATensorNotRequiringGradMakesItRequireGrad) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor buf = zeros({2, 3});
  buf.copy_(x);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_EQ(buf.grad_fn()->name(), "CopyBackwards");
  (buf * buf).sum().backward();
  expect_close(x.grad(), {4, 8, 12});
}

TEST(Autograd, GradAccumulatesAcrossBackwardCalls) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  expect_close(x.grad(), {2, 4});
  Tensor first = x.grad();
  y.backward();
  expect_close(x.grad(), {4, 8});
  EXPECT_TRUE(x.grad().is_same(first));  // accumulated in place, as PyTorch does
}

TEST(Autograd, ALeafTakesAFirstGradientNothingElseHoldsWithoutACopy) {
  Tensor x = pattern({4, 5}, 3, 7, 3, 2).requires_grad_();
  const void* seen = nullptr;  // the buffer the gradient arrives in (the hook keeps no handle)
  x.register_hook([&seen](const Tensor& g) {
    seen = g.raw_data_ptr();
    return Tensor();
  });
  exp(x).sum().backward();
  expect_close(x.grad(), exp(x.detach()).to_vector<double>());
  EXPECT_EQ(x.grad().raw_data_ptr(), seen);
}

TEST(Autograd, ALeafTakesAViewGradientWhoseBaseNothingElseHoldsWithoutACopy) {
  // reshape's backward hands the leaf a view of mul's gradient, a buffer nothing else
  // holds once the engine lets go of it: taken as it is (PyTorch steals it too), and no
  // longer a view (the copy it replaces would not be one).
  Tensor x = pattern({4, 5}, 3, 7, 3, 2).requires_grad_();
  Tensor w = pattern({20}, 5, 3, 1, 2);
  const void* seen = nullptr;
  x.register_hook([&seen](const Tensor& g) {
    EXPECT_TRUE(g.impl()->is_view);
    seen = g.raw_data_ptr();
    return Tensor();
  });
  (x.reshape({20}) * w).sum().backward();
  expect_close(x.grad(), w.to_vector<double>());
  EXPECT_EQ(x.grad().raw_data_ptr(), seen);
  EXPECT_FALSE(x.grad().impl()->is_view);
  EXPECT_EQ(x.grad().impl()->view_base, nullptr);
}

TEST(Autograd, ALeafCopiesAViewGradientWhoseBaseTheCallerStillHolds) {
  Tensor x = tensor<float>({1, 2, 3, 4}).reshape({2, 2}).detach().requires_grad_();
  Tensor g = tensor<float>({4, 5, 6, 7});
  x.backward(g.view({2, 2}));
  EXPECT_NE(x.grad().raw_data_ptr(), g.raw_data_ptr());
  g.add_(1);  // the caller's base changes; the gradient does not
  expect_close(x.grad(), {4, 5, 6, 7});
}

TEST(Autograd, ALeafCopiesAFirstGradientTheCallerStillHolds) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor g = tensor<float>({4, 5, 6});
  x.backward(g);
  EXPECT_NE(x.grad().raw_data_ptr(), g.raw_data_ptr());
  g.add_(1);  // the caller's tensor changes; the gradient does not
  expect_close(x.grad(), {4, 5, 6});
  // An expanded gradient (stride 0) becomes a dense tensor of its own.
  Tensor y = tensor<float>({1, 2, 3}).requires_grad_();
  y.sum().backward();
  EXPECT_EQ(y.grad().strides().vec(), std::vector<int64_t>{1});
  expect_close(y.grad(), {1, 1, 1});
}

TEST(Autograd, SecondBackwardThroughAFreedGraphRaises) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor s = exp(x).sum();
  s.backward();
  const std::string msg = error_of([&] { s.backward(); });
  EXPECT_NE(msg.find("Trying to backward through the graph a second time (or directly access saved tensors after "
                     "they have already been freed)"),
            std::string::npos)
      << msg;
}

TEST(Autograd, NodesThatSaveNothingCanRunTwice) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor y = x + x;
  y.sum().backward();
  y.sum().backward();  // AddBackward0 reads no saved tensor, as in PyTorch
  expect_close(x.grad(), {4, 4});
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  EXPECT_NE(error_of([&] { (x * 2).backward(); }).find("grad can be implicitly created only for scalar outputs"),
            std::string::npos);
  (x * 2).backward(tensor<float>({1, 10, 100}));
  expect_close(x.grad(), {2, 20, 200});
  EXPECT_NE(error_of([&] { (x * 2).backward(tensor<float>({1, 2})); })
                .find("Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape of "
                      "torch.Size([3])."),
            std::string::npos);
}

TEST(Autograd, BackwardOfATensorNotRequiringGradRaises) {
  Tensor x = tensor<float>({1, 2});
  EXPECT_NE(error_of([&] { x.sum().backward(); })
                .find("element 0 of tensors does not require grad and does not have a grad_fn"),
            std::string::npos);
}

TEST(Autograd, NoGradGuardStopsRecordingAndEnableGradGuardRestartsIt) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  EXPECT_TRUE(is_grad_enabled());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE(is_grad_enabled());
    x.add_(tensor<float>({1, 1}));  // an optimizer step: in-place on a leaf is allowed here
  }
  EXPECT_TRUE(is_grad_enabled());
  expect_close(x, {2, 3});
  EXPECT_TRUE(x.is_leaf());
}

TEST(Autograd, DetachSharesDataButNotHistory) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor y = x * 3;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.raw_data_ptr(), y.raw_data_ptr());
  Tensor z = (y * d).sum();  // d is a constant: dz/dx = 3 * d
  z.backward();
  expect_close(x.grad(), {9, 18});
}

TEST(Autograd, HooksCanReplaceGradients) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor y = x * x;
  y.register_hook([](const Tensor& g) { return g * 10; });
  x.register_hook([](const Tensor& g) { return g + 1; });
  y.sum().backward();
  expect_close(x.grad(), {21, 41});
}

TEST(Autograd, RemovedHookDoesNotRun) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  int calls = 0;
  unsigned h = x.register_hook([&](const Tensor&) {
    ++calls;
    return Tensor();
  });
  x.remove_hook(h);
  (x * 2).sum().backward();
  EXPECT_EQ(calls, 0);
  expect_close(x.grad(), {2, 2});
}

TEST(Autograd, RetainGradKeepsANonLeafGradient) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor y = exp(x);
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  (y * y).sum().backward();
  expect_close(y.grad(), {5.436563491821289, 14.778112411499023, 40.17107391357422});
  expect_close(x.grad(), {14.778111457824707, 109.19630432128906, 806.8576049804688}, 1e-4);
}

TEST(Autograd, GradReturnsGradientsWithoutTouchingLeaves) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor w = tensor<float>({3, 4}).requires_grad_();
  Tensor y = (x * w * x).sum();
  std::vector<Tensor> g = autograd::grad({y}, {x, w});
  expect_close(g[0], {6, 16});
  expect_close(g[1], {1, 4});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(Autograd, GradOfAnIntermediate) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor h = x * 3;
  Tensor y = (h * h).sum();
  expect_close(autograd::grad({y}, {h})[0], {6, 12});
}

TEST(Autograd, GradOfAnUnusedInputRaisesUnlessAllowed) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  Tensor unused = tensor<float>({1}).requires_grad_();
  Tensor y = (x * 2).sum();
  EXPECT_NE(error_of([&] { autograd::grad({y}, {unused}, {}, true); })
                .find("One of the differentiated Tensors appears to not have been used in the graph."),
            std::string::npos);
  std::vector<Tensor> g = autograd::grad({y}, {x, unused}, {}, false, /*allow_unused=*/true);
  expect_close(g[0], {2, 2});
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, GradOfATensorNotRequiringGradRaises) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  EXPECT_NE(error_of([&] { autograd::grad({ones({2}).sum()}, {x}); })
                .find("element 0 of tensors does not require grad and does not have a grad_fn"),
            std::string::npos);
}

TEST(Autograd, ModifiedSavedTensorRaisesWithItsVersions) {
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor y = exp(x);
  y.add_(ones({3}));
  const std::string msg = error_of([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("one of the variables needed for gradient computation has been modified by an inplace "
                     "operation: [torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; "
                     "expected version 0 instead."),
            std::string::npos)
      << msg;
}

TEST(Autograd, ModifiedSavedLeafRaisesWithItsVersions) {
  Tensor w = tensor<double>({1, 2, 3}).requires_grad_();
  Tensor z = w * w;
  {
    NoGradGuard no_grad;
    w.add_(ones({3}, kDouble));
  }
  const std::string msg = error_of([&] { z.sum().backward(); });
  EXPECT_NE(msg.find("[torch.DoubleTensor [3]] is at version 1; expected version 0 instead."), std::string::npos)
      << msg;
}

TEST(Autograd, InPlaceOnALeafRequiringGradRaises) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  EXPECT_NE(error_of([&] { x.add_(tensor<float>({1, 1})); })
                .find("a leaf Variable that requires grad is being used in an in-place operation."),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.zero_(); }).find("a leaf Variable that requires grad"), std::string::npos);
}

TEST(Autograd, OpWithoutAFormulaRaisesNamingIt) {
  // Backward ops have no formula of their own (no double backward).
  Tensor g = ones({1, 1, 1, 1}).requires_grad_();
  try {
    _adaptive_avg_pool2d_backward(g, ones({1, 1, 2, 2}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplementedError);
    EXPECT_NE(std::string(e.what()).find("the derivative for 'aten::_adaptive_avg_pool2d_backward' is not implemented"),
              std::string::npos)
        << e.what();
  }
  Tensor x = ones({1, 1, 2, 2}).requires_grad_();
  auto [out, idx] = max_pool2d_with_indices(x, {2, 2});
  EXPECT_NE(error_of([&] { max_pool2d_with_indices_backward(out, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, idx); })
                .find("the derivative for 'aten::max_pool2d_with_indices_backward' is not implemented"),
            std::string::npos);
}

TEST(Autograd, NonDifferentiableOutputsNeedNoFormula) {
  Tensor x = tensor<float>({-1, 2}).requires_grad_();
  Tensor m = x > 0;
  EXPECT_FALSE(m.requires_grad());
  Tensor i = argmax(x);
  EXPECT_FALSE(i.requires_grad());
  // Floating outputs PyTorch never differentiates: fresh values that borrow x's shape.
  EXPECT_FALSE(empty_like(x).requires_grad());
  EXPECT_FALSE(full_like(x, 2.0).requires_grad());
  EXPECT_FALSE(rand_like(x).requires_grad());
  EXPECT_FALSE(randn_like(x).requires_grad());
  EXPECT_FALSE(bernoulli(x, 0.5).requires_grad());
  EXPECT_TRUE(bernoulli(sigmoid(x)).requires_grad());  // BernoulliBackward0: a zero gradient
}

TEST(Autograd, GradFnNamesFollowPyTorch) {
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  EXPECT_EQ((x * x).grad_fn()->name(), "MulBackward0");
  EXPECT_EQ((x + 1).grad_fn()->name(), "AddBackward1");
  EXPECT_EQ(x.to(kDouble).grad_fn()->name(), "ToCopyBackward0");
  EXPECT_EQ(x.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(clamp(x, std::optional<Scalar>(0), std::nullopt).grad_fn()->name(), "ClampBackward1");
  EXPECT_EQ(x.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
  Tensor y = x * x;
  EXPECT_FALSE(y.is_leaf());
  ASSERT_EQ(y.grad_fn()->next_edges().size(), 2u);
  EXPECT_EQ(y.grad_fn()->next_edges()[0].function->name(), "AccumulateGrad");
  EXPECT_EQ(y.grad_fn()->next_edges()[0].function, y.grad_fn()->next_edges()[1].function);
}

TEST(Autograd, RequiresGradOnlyForFloatingPointAndComplexLeaves) {
  EXPECT_NE(error_of([] { tensor<int64_t>({1, 2}).requires_grad_(); })
                .find("only Tensors of floating point and complex dtype can require gradients"),
            std::string::npos);
  EXPECT_TRUE(view_as_complex(tensor<double>({1, 2}, {1, 2})).clone().requires_grad_().requires_grad());
  Tensor x = tensor<float>({1, 2}).requires_grad_();
  EXPECT_NE(error_of([&] { (x * 2).requires_grad_(false); })
                .find("you can only change requires_grad flags of leaf variables."),
            std::string::npos);
  x.requires_grad_(false);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_FALSE((x * 2).requires_grad());
}

TEST(Autograd, DiamondGraphSumsBothPaths) {
  Tensor x = tensor<double>({0.5, -1.5}).requires_grad_();
  Tensor a = sin(x);
  Tensor y = (a * cos(x) + a * a).sum();  // shared `a` gets both contributions before SinBackward0 runs
  y.backward();
  std::vector<double> v = x.to_vector<double>(), want;
  for (double t : v) want.push_back(std::cos(2 * t) + std::sin(2 * t));
  expect_close(x.grad(), want, 1e-12, 1e-12);
}

TEST(Autograd, MetaTensorsBuildTheGraphToo) {
  Tensor x = empty({2, 3}, kMeta).requires_grad_();
  Tensor y = (x * 2).sum(1);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward1");
}

}  // namespace
}  // namespace ember
