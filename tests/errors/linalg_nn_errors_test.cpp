// User mistakes in matrix products, softmax, normalization, embedding and padding raise
// ember::Error with PyTorch's wording.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::expect_error;

TEST(LinalgErrors, MmShapesCannotBeMultiplied) {
  expect_error([] { (void)mm(ones({2, 3}), ones({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  expect_error([] { (void)mm(ones({3}), ones({3, 5})); }, "self must be a matrix");
  expect_error([] { (void)mm(ones({3, 3}), ones({3})); }, "mat2 must be a matrix");
}

TEST(LinalgErrors, MmDtypeMismatch) {
  expect_error([] { (void)mm(ones({3, 3}), ones({3, 3}, kDouble)); },
               "expected m1 and m2 to have the same dtype, but got: float != double");
  expect_error([] { (void)mm(ones({3, 3}, kBool), ones({3, 3}, kBool)); },
               "\"addmm_impl_cpu_\" not implemented for 'Bool'", ErrorKind::NotImplementedError);
}

TEST(LinalgErrors, BmmChecksRankAndBatchSizes) {
  expect_error([] { (void)bmm(ones({2, 3}), ones({2, 3, 4})); }, "batch1 must be a 3D tensor");
  expect_error([] { (void)bmm(ones({2, 2, 3}), ones({2, 3})); }, "batch2 must be a 3D tensor");
  expect_error([] { (void)bmm(ones({2, 2, 3}), ones({3, 3, 4})); },
               "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
  expect_error([] { (void)bmm(ones({2, 2, 3}), ones({2, 3, 4}, kDouble)); },
               "expected scalar type Float but found Double");
}

TEST(LinalgErrors, AddmmSelfMustBroadcast) {
  expect_error([] { (void)addmm(ones({3, 3}), ones({2, 3}), ones({3, 5})); },
               "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  "
               "Target sizes: [2, 5].  Tensor sizes: [3, 3]");
  expect_error([] { (void)addmm(ones({5}, kDouble), ones({2, 3}), ones({3, 5})); },
               "self and mat2 must have the same dtype");
  expect_error([] { (void)addmm(ones({5}), ones({3}), ones({3, 5})); }, "mat1 must be a matrix, got 1-D tensor");
}

TEST(LinalgErrors, MatmulRankAndSizeMismatches) {
  expect_error([] { (void)matmul(scalar_tensor(1.0), ones({3})); },
               "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  expect_error([] { (void)matmul(ones({3}), ones({4})); },
               "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got "
               "3 and 4 elements respectively");
  expect_error([] { (void)matmul(ones({2, 3}), ones({4})); }, "size mismatch, got 2, 2x3,4");
  expect_error([] { (void)matmul(ones({3}), ones({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)");
  expect_error([] { (void)matmul(ones({2, 2, 3}), ones({3, 4, 5})); },
               "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
}

TEST(LinalgErrors, DotChecks) {
  expect_error([] { (void)dot(ones({2, 3}), ones({3})); }, "1D tensors expected, but got 2D and 1D tensors");
  expect_error([] { (void)dot(ones({3}), ones({3}, kDouble)); },
               "dot : expected both vectors to have same dtype, but found Float and Double");
}

TEST(LinalgErrors, LinearWeightShape) {
  expect_error([] { (void)linear(ones({2, 3}), ones({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)");
}

TEST(LinalgErrors, MessageNamesOpAndUserLine) {
  const int line = __LINE__ + 3;
  std::string msg;
  try {
    (void)matmul(ones({2, 3}), ones({4, 5}));
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("aten::mm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("linalg_nn_errors_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(NnErrors, SoftmaxDimAndDtype) {
  expect_error([] { (void)softmax(ones({2, 3}), 2); },
               "Dimension out of range (expected to be in range of [-2, 1], but got 2)", ErrorKind::IndexError);
  expect_error([] { (void)softmax(ones({2, 3}, kInt64), 1); },
               "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'", ErrorKind::NotImplementedError);
  expect_error([] { (void)log_softmax(ones({2, 3}, kInt64), 0); }, "\"softmax_kernel_impl\" not implemented for 'Long'",
               ErrorKind::NotImplementedError);
  expect_error([] { (void)_softmax(ones({2, 3}), 1, true); },
               "softmax with half to float conversion is not supported on CPU");
}

TEST(NnErrors, LayerNormShapes) {
  expect_error([] { (void)layer_norm(ones({2, 3}), {4}); },
               "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]");
  expect_error([] { (void)layer_norm(ones({2, 3}), {}); },
               "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got "
               "normalized_shape = []");
  expect_error([] { (void)layer_norm(ones({2, 3}), {3}, ones({4})); },
               "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
               "normalized_shape = [3]");
  expect_error([] { (void)layer_norm(ones({2, 3}), {3}, std::nullopt, ones({4})); },
               "Expected bias to be of same shape as normalized_shape, but got bias of shape [4] and normalized_shape "
               "= [3]");
  expect_error([] { (void)layer_norm(ones({2, 3}), {3}, ones({3}, kDouble)); },
               "expected scalar type Float but found Double");
}

TEST(NnErrors, BatchNormParameterSizes) {
  expect_error([] { (void)batch_norm(ones({2, 3}), std::nullopt, std::nullopt, ones({4}), ones({3}), true); },
               "running_mean should contain 3 elements not 4");
  expect_error([] { (void)batch_norm(ones({2, 3}), ones({4}), std::nullopt, std::nullopt, std::nullopt, true); },
               "weight should contain 3 elements not 4");
  expect_error([] { (void)batch_norm(ones({2, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, false); },
               "running_mean and running_var must be defined in evaluation mode");
  expect_error([] { (void)batch_norm(ones({2, 3}), std::nullopt, std::nullopt, ones({3}, kDouble), ones({3}, kDouble), true); },
               "mixed dtype (CPU): expect parameter to have scalar type of Float");
  expect_error([] { (void)batch_norm(ones({3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, true); },
               "Dimension out of range (expected to be in range of [-1, 0], but got 1)", ErrorKind::IndexError);
  expect_error([] { (void)batch_norm(ones({2, 3}, kInt64), std::nullopt, std::nullopt, std::nullopt, std::nullopt, true); },
               "\"batch_norm\" not implemented for 'Long'", ErrorKind::NotImplementedError);
}

TEST(NnErrors, EmbeddingIndexOutOfRangeIsIndexError) {
  expect_error([] { (void)embedding(ones({5, 3}), tensor<int64_t>({1, 5})); }, "index out of range in self",
               ErrorKind::IndexError);
  expect_error([] { (void)embedding(ones({5, 3}), tensor<int64_t>({-1})); }, "index out of range in self",
               ErrorKind::IndexError);
  expect_error([] { (void)embedding(ones({5, 3}), tensor<float>({1})); },
               "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
               "got torch.FloatTensor instead (while checking arguments for embedding)");
  expect_error([] { (void)embedding(ones({5}), tensor<int64_t>({1})); }, "'weight' must be 2-D");
}

TEST(NnErrors, EmbeddingBagOffsetsMustStartAtZeroAndEndWithinIndices) {
  const Tensor w = ones({10, 3}), idx = tensor<int64_t>({1, 2, 3, 4});
  // PyTorch's check_arguments, whatever include_last_offset says, with its message.
  for (bool include_last : {false, true}) {
    expect_error([&] { (void)_embedding_bag(w, idx, tensor<int64_t>({1, 2}), false, 0, false, std::nullopt, include_last); },
                 "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
                 "However, got 1");
  }
  expect_error([&] { (void)_embedding_bag(w, idx, tensor<int>({2, 3}), false, 1, false, std::nullopt, true); },
               "However, got 2");
  expect_error([&] { (void)_embedding_bag(w, idx, tensor<int64_t>({0, 2, 9}), false, 0, false, std::nullopt, true); },
               "offsets[-1] can not be greater than input's length 4 but got offsets[-1] of 9");
  // Offsets that start at 0 and end at the length are fine.
  EXPECT_NO_THROW((void)_embedding_bag(w, idx, tensor<int64_t>({0, 2, 4}), false, 0, false, std::nullopt, true));
}

TEST(NnErrors, ConstantPadLengthAndNegativeSize) {
  expect_error([] { (void)constant_pad_nd(ones({2, 3}), {1, 2, 3}); }, "Length of pad must be even but instead it equals 3");
  expect_error([] { (void)constant_pad_nd(ones({2, 3}), {1, 2, 3, 4, 5, 6}); },
               "Length of pad should be no more than twice the number of dimensions of the input. Pad length is 6 while "
               "the input has 2 dimensions.");
  expect_error([] { (void)constant_pad_nd(ones({2, 3}), {-2, -2}); },
               "The input size 3, plus negative padding -2 and -2 resulted in a negative output size, which is invalid. "
               "Check dimension 1 of your input.");
}

}  // namespace
}  // namespace ember
