// In-place writes under autograd: into views of tensors that take part in autograd
// (PyTorch's CopySlices: the base's history is rebased, the view's regenerated, and views
// taken before the write regenerate theirs), and in-place ops whose gradient reads the
// value they overwrite. Expected gradients computed with torch 1.13.
#include <gtest/gtest.h>

#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::error_of;

void expect_values(const Tensor& t, const std::vector<float>& expected) {
  ASSERT_TRUE(t.defined());
  auto got = t.contiguous().to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], expected[i]) << i;
}

TEST(CopySlices, MulIntoARowOfAClone) {
  Tensor leaf = tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor x = leaf.clone();
  Tensor v = x.select(0, 0);
  v.mul_(Scalar(2));
  EXPECT_EQ(x.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward0");
  expect_values(x, {2, 4, 6, 4, 5, 6});
  sum(x * tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3})).backward();
  expect_values(leaf.grad(), {2, 4, 6, 4, 5, 6});
}

TEST(CopySlices, CopyIntoANarrowedViewOfATensorWithoutGrad) {
  Tensor a = tensor<float>({1, 2, 3, 4});
  Tensor b = tensor<float>({10, 20}).requires_grad_();
  Tensor y = a.clone();
  Tensor view = y.narrow(0, 1, 2);  // taken before anything about y required grad
  view.copy_(b);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  sum(y * tensor<float>({1, 2, 3, 4})).backward();
  expect_values(b.grad(), {2, 3});
}

TEST(CopySlices, AddAndMulIntoATransposedView) {
  Tensor leaf = tensor<float>({1, 2, 3, 4, 5, 6}, {3, 2}).requires_grad_();
  Tensor x = leaf * 1;
  Tensor t = x.t();
  t.add_(scalar_tensor(1.0));
  t.mul_(tensor<float>({1, 3}, {2, 1}));
  EXPECT_EQ(x.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(t.grad_fn()->name(), "AsStridedBackward0");
  sum(x * tensor<float>({1, 2, 3, 4, 5, 6}, {3, 2})).backward();
  expect_values(leaf.grad(), {1, 6, 3, 12, 5, 18});
}

TEST(CopySlices, AViewTakenBeforeTheWriteRegeneratesItsHistory) {
  Tensor leaf = tensor<float>({1, 2, 3, 4}).requires_grad_();
  Tensor x = leaf * 2;
  Tensor v1 = x.slice(0, 0, 3);
  Tensor v2 = x.slice(0, 2, 4);
  v2.mul_(tensor<float>({3, 5}));
  EXPECT_EQ(v1.grad_fn()->name(), "AsStridedBackward0");
  sum(v1 * tensor<float>({1, 10, 100})).backward();
  expect_values(leaf.grad(), {2, 20, 600, 0});
}

TEST(CopySlices, AViewOfABaseWithoutGradStartsRequiringIt) {
  Tensor z = zeros({4});
  Tensor w1 = z.slice(0, 0, 2);
  Tensor c = tensor<float>({7, 8}).requires_grad_();
  z.slice(0, 1, 3).copy_(c * c);
  EXPECT_TRUE(w1.requires_grad());
  EXPECT_EQ(w1.grad_fn()->name(), "AsStridedBackward0");
  sum(w1 * tensor<float>({2, 3})).backward();
  expect_values(c.grad(), {42, 0});
}

TEST(CopySlices, FillAndIndexPutIntoViewsOfViews) {
  Tensor leaf = arange(6, kFloat).reshape({2, 3}).requires_grad_();
  Tensor x = leaf * 1.5;
  Tensor r = x.select(0, 1);
  r.slice(0, 1).fill_(0.5);
  Tensor col = x.select(1, 0);
  index_put_(col, {tensor<int64_t>({0})}, tensor<float>({9}));
  EXPECT_EQ(r.grad_fn()->name(), "AsStridedBackward0");
  sum(x * x).backward();
  expect_values(leaf.grad(), {0, 4.5, 9, 13.5, 0, 0});
}

TEST(CopySlices, WrittenValuesAndTheBaseBothGetGradients) {
  Tensor a = tensor<float>({1, 2, 3, 4, 5, 6}).requires_grad_();
  Tensor b = tensor<float>({0.5, -1}).requires_grad_();
  Tensor y = a * 1.0;
  Tensor v = y.view({2, 3});
  Tensor col = v.select(1, 1);
  col.mul_(b);
  col.add_(b * b);
  Tensor out = sum(y * arange(6, kFloat)) + sum(sum(v, {0}) * tensor<float>({1, 10, 100}));
  std::vector<Tensor> g = autograd::grad({out}, {a, b});
  expect_values(g[0], {1, 5.5, 102, 4, -14, 105});
  expect_values(g[1], {33, 42});
}

TEST(CopySlices, StridedViewsAndBroadcastCopies) {
  Tensor c = tensor<float>({1, 2, 3, 4, 5, 6, 7, 8}).requires_grad_();
  Tensor s = scalar_tensor(3.0).requires_grad_();
  Tensor y = c.clone();
  y.slice(0, 0, std::nullopt, 3).copy_(scalar_tensor(2.0));
  y.slice(0, 1, std::nullopt, 3).copy_(s.expand({3}));
  sum(y * arange(1, 9, 1, kFloat)).backward();
  expect_values(c.grad(), {0, 0, 3, 0, 0, 6, 0, 0});
  expect_values(s.grad().reshape({1}), {15});
}

TEST(CopySlices, AViewTakenBeforeAWriteIntoTheBaseItself) {
  Tensor d = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor y = d * 2;
  Tensor v = y.slice(0, 1);
  y.mul_(tensor<float>({1, 10, 100}));
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward0");
  sum(v * v).backward();
  expect_values(d.grad(), {0, 1600, 240000});
}

TEST(CopySlices, InPlaceOpsKeepTheValueTheyOverwriteForTheirGradient) {
  // x.mul_(b) runs as copy_(x, mul(x, b)): mul's gradient for b needs x as it was.
  Tensor a = tensor<float>({1, 2}).requires_grad_();
  Tensor b = tensor<float>({3, 4}).requires_grad_();
  Tensor y = a * 1;
  y.mul_(b);
  log_(y);
  sum(y).backward();
  expect_values(a.grad(), {1, 0.5});
  expect_values(b.grad(), {1.0f / 3, 0.25});
}

TEST(CopySlices, AnIntegralViewWrittenFromAFloatingValueCarriesNoGradient) {
  Tensor z = zeros({4}, kLong);
  z.slice(0, 1, 3).copy_(tensor<float>({7, 8}).requires_grad_());
  EXPECT_FALSE(z.requires_grad());
  EXPECT_EQ(z.to_vector<int64_t>(), (std::vector<int64_t>{0, 7, 8, 0}));
}

TEST(CopySlices, AViewOfALeafRequiringGradCannotBeWritten) {
  Tensor leaf = ones({3}).requires_grad_();
  EXPECT_NE(error_of([&] { leaf.select(0, 0).mul_(Scalar(2)); })
                .find("a view of a leaf Variable that requires grad is being used in an in-place operation."),
            std::string::npos);
  // Without grad mode (an optimizer step) the write is allowed and records nothing.
  {
    NoGradGuard no_grad;
    leaf.select(0, 0).mul_(Scalar(2));
  }
  EXPECT_TRUE(leaf.is_leaf());
  expect_values(leaf.detach(), {2, 1, 1});
}

TEST(CopySlices, SavedValuesOfTheOverwrittenRegionAreChecked) {
  Tensor leaf = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor x = leaf * 1;
  Tensor e = exp(x);  // saves its output
  e.slice(0, 0, 1).mul_(Scalar(2));
  EXPECT_NE(error_of([&] { sum(e).backward(); }).find("modified by an inplace operation"), std::string::npos);
}

}  // namespace
}  // namespace ember
