// User mistakes in the norm ops of src/ops/norm.cpp raise ember::Error where PyTorch 2.11's
// CPU kernels crash or read past a tensor (no conformance case can record those).
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::expect_error;

TEST(NormErrors, BatchNormLegitNoStatsInEvaluationRaises) {
  // PyTorch 2.11 ends the process with a segmentation fault here.
  expect_error([] { (void)_native_batch_norm_legit(ones({4, 3, 2}), std::nullopt, std::nullopt, false, 0.1, 1e-5); },
               "running_mean and running_var must be defined in evaluation mode");
}

TEST(NormErrors, BatchNormLegitParametersOfTheWrongSizeRaise) {
  // PyTorch 2.11's CPU kernel accepts them and reads past the end.
  expect_error(
      [] { (void)_native_batch_norm_legit(ones({4, 3, 2}), ones({4}), std::nullopt, zeros({3}), ones({3}), true, 0.1,
                                          1e-5); },
      "weight should contain 3 elements not 4");
  expect_error(
      [] { (void)_native_batch_norm_legit(ones({4, 3, 2}), std::nullopt, std::nullopt, zeros({2}), ones({3}), true,
                                          0.1, 1e-5); },
      "running_mean should contain 3 elements not 2");
  expect_error(
      [] { (void)_native_batch_norm_legit(ones({4, 3, 2}), std::nullopt, ones({2}), true, 0.1, 1e-5); },
      "bias should contain 3 elements not 2");
  expect_error([] { (void)_native_batch_norm_legit_no_training(ones({4, 3, 2}), std::nullopt, std::nullopt, zeros({3}),
                                                               ones({5}), 0.1, 1e-5); },
               "running_var should contain 3 elements not 5");
}

TEST(NormErrors, NormBackwardsCheckWhatPyTorchsKernelsDoNot) {
  // PyTorch's kernels read a grad_out of the wrong size unchecked, and fail with "tensor
  // does not have a device" for a parameter gradient without the parameter.
  const Tensor x = ones({3, 4});
  auto [y, mean, rstd] = native_layer_norm(x, {4}, std::nullopt, std::nullopt, 1e-5);
  expect_error([&] { (void)native_layer_norm_backward(x, x, {4}, mean, rstd, std::nullopt, std::nullopt,
                                                      {true, true, false}); },
               "output_mask asks for the weight's gradient, but weight is None");
  expect_error([&] { (void)native_layer_norm_backward(ones({1, 4}), x, {4}, mean, rstd, std::nullopt, std::nullopt,
                                                      {true, false, false}); },
               "expected grad_out of the input's size [3, 4], got [1, 4]");
  const Tensor g = ones({2, 6, 3});
  auto [gy, gmean, grstd] = native_group_norm(g, std::nullopt, std::nullopt, 2, 6, 3, 3, 1e-5);
  expect_error([&] { (void)native_group_norm_backward(g, g, gmean, grstd, std::nullopt, 2, 6, 3, 3,
                                                      {true, false, true}); },
               "output_mask asks for the weight's or the bias's gradient, but weight is None");
}

}  // namespace
}  // namespace ember
