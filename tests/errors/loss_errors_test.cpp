// User mistakes in the loss functions raise ember::Error with PyTorch's wording (and
// torch.nn.functional's error kinds: ValueError for what F checks in Python).
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::expect_error;

Tensor logits() { return ones({3, 5}); }

TEST(LossErrors, ClassIndexOutOfBounds) {
  expect_error(
      [] {
        (void)nll_loss(logits(), tensor<int64_t>({0, 5, 1}));
      },
      "Target 5 is out of bounds.", ErrorKind::IndexError);
  expect_error(
      [] {
        (void)cross_entropy(logits(), tensor<int64_t>({0, 7, 1}));
      },
      "Target 7 is out of bounds.", ErrorKind::IndexError);
  expect_error(
      [] {
        (void)nll_loss(logits(), tensor<int64_t>({0, -1, 1}));
      },
      "Target -1 is out of bounds.", ErrorKind::IndexError);
}

TEST(LossErrors, ClassIndicesMustBeInt64) {
  expect_error([] { (void)nll_loss(logits(), tensor<int32_t>({0, 1, 1})); }, "expected scalar type Long but found Int");
  expect_error(
      [] {
        (void)cross_entropy(logits(), tensor<float>({0, 1, 1}));
      },
      "expected scalar type Long but found Float");
}

TEST(LossErrors, TargetShapeMismatch) {
  expect_error(
      [] {
        (void)nll_loss(logits(), tensor<int64_t>({0, 1}));
      },
      "Expected input batch_size (3) to match target batch_size (2).", ErrorKind::ValueError);
  expect_error(
      [] {
        (void)nll_loss(ones({2, 3, 4}), zeros({2, 5}, kLong));
      },
      "Expected target size [2, 4], got [2, 5]");
  expect_error(
      [] {
        (void)cross_entropy(ones({2, 3, 4, 5}), zeros({2, 4, 4}, kLong));
      },
      "size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 4]");
  expect_error(
      [] {
        (void)binary_cross_entropy(full({3, 4}, 0.5), full({4}, 0.5));
      },
      "Using a target size (torch.Size([4])) that is different to the input size (torch.Size([3, 4])) is "
      "deprecated. Please ensure they have the same size.",
      ErrorKind::ValueError);
  expect_error(
      [] {
        (void)binary_cross_entropy_with_logits(ones({3, 4}), ones({4}));
      },
      "Target size (torch.Size([4])) must be the same as input size (torch.Size([3, 4]))", ErrorKind::ValueError);
  expect_error(
      [] {
        (void)mse_loss(ones({2, 3}), ones({2, 4}));
      },
      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
}

TEST(LossErrors, ClassWeightsMustCoverEveryClass) {
  expect_error(
      [] {
        (void)nll_loss(logits(), tensor<int64_t>({0, 1, 1}), ones({4}));
      },
      "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of "
      "shape: [4]");
  expect_error([] { (void)cross_entropy(logits(), softmax(logits(), 1), ones({4})); },
               "cross_entropy: weight tensor should be defined either for all 5 classes or no classes");
}

TEST(LossErrors, WrongDtypes) {
  expect_error([] { (void)mse_loss(ones({3}, kLong), ones({3}, kLong)); }, "\"mse_cpu\" not implemented for 'Long'",
               ErrorKind::NotImplementedError);
  expect_error([] { (void)binary_cross_entropy(full({3}, 0.5), full({3}, 0.5, kDouble)); },
               "Found dtype Double but expected Float");
  expect_error(
      [] {
        (void)nll_loss(ones({2, 3}, kLong), zeros({2}, kLong));
      },
      "\"nll_loss_out_frame\" not implemented for 'Long'", ErrorKind::NotImplementedError);
  expect_error([] { (void)cross_entropy(ones({}), full({}, 1, kLong)); },
               "Expected floating point type for target with class probabilities, got Long");
}

TEST(LossErrors, BinaryCrossEntropyInputOutsideZeroOne) {
  expect_error(
      [] {
        (void)binary_cross_entropy(tensor<float>({0.5f, 1.5f}), full({2}, 0.5));
      },
      "all elements of input should be between 0 and 1");
  expect_error(
      [] {
        (void)binary_cross_entropy(tensor<float>({NAN, 0.5f}), full({2}, 0.5));
      },
      "all elements of input should be between 0 and 1");
}

TEST(LossErrors, BadOptions) {
  expect_error([] { (void)mse_loss(ones({3}), ones({3}), "avg"); }, "avg is not a valid value for reduction",
               ErrorKind::ValueError);
  expect_error([] { (void)smooth_l1_loss(ones({3}), ones({3}), "mean", -1.0); },
               "smooth_l1_loss does not support negative values for beta.");
  expect_error(
      [] {
        (void)cross_entropy(logits(), tensor<int64_t>({0, 1, 1}), std::nullopt, -100, "mean", 1.5);
      },
      "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
  expect_error([] { (void)cross_entropy(logits(), softmax(logits(), 1), std::nullopt, 0); },
               "ignore_index is not supported for floating point target");
  expect_error([] { (void)nll_loss(ones({}), full({}, 1, kLong)); }, "Expected 1 or more dimensions (got 0)",
               ErrorKind::ValueError);
}

TEST(LossErrors, NllLossBackwardChecksItsGradient) {
  const Tensor x = ones({3, 4}), t = tensor<int64_t>({0, 1, 2}), tw = full({}, 3.0);
  expect_error([&] { (void)nll_loss_backward(ones({2}), x, t, std::nullopt, 0, -100, tw); },
               "Expected a tensor of dimension 1 and tensor.size[0] == 3 but got: dimension 1 and tensor.size[0] = 2");
  expect_error([&] { (void)nll_loss_backward(ones({2}), x, t, std::nullopt, 1, -100, tw); },
               "Expected a single element grad_output tensor, but got: [2]");
  expect_error([&] { (void)nll_loss_backward(ones({}), x, t, std::nullopt, 1, -100, ones({2})); },
               "expected total_weight to be a  single element tensor, got: [2] (2 elements)");
}

}  // namespace
}  // namespace ember
