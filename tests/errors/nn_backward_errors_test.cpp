// Mistakes in calls to the backward ops (convolution_backward, the pooling backwards,
// native_batch_norm_backward, embedding_dense_backward) raise ember::Error before any
// memory is touched — where torch 1.13 reads out of bounds or crashes (a grad_out of the
// wrong size for batch norm, pooling indices out of range, missing statistics).
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::error_of;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(NnBackwardErrors, ConvolutionBackwardRejectsAGradOfTheWrongSize) {
  Tensor x = ones({2, 3, 6, 5}), w = ones({4, 3, 3, 2});
  const std::string e = error_of([&] {
    convolution_backward(ones({2, 4, 4, 5}), x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1,
                         {true, true, true});
  });
  EXPECT_TRUE(has(e, "expected grad_output of size [2, 4, 4, 4] (the convolution's output), but got [2, 4, 4, 5]"))
      << e;
  EXPECT_TRUE(has(e, "aten::convolution_backward")) << e;
}

TEST(NnBackwardErrors, ConvolutionBackwardChecksTheForwardArguments) {
  // The same checks (and messages) as convolution itself.
  const std::string e = error_of([&] {
    convolution_backward(ones({1, 2, 3, 3}), ones({1, 2, 5, 5}), ones({2, 3, 3, 3}), std::nullopt, {1, 1}, {0, 0},
                         {1, 1}, false, {0, 0}, 1, {true, true, true});
  });
  EXPECT_TRUE(has(e, "Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels"))
      << e;
}

TEST(NnBackwardErrors, ConvolutionBackwardRejectsIntegersAndMixedDtypes) {
  Tensor x = ones({1, 2, 4, 4}, kLong), w = ones({2, 2, 3, 3}, kLong);
  EXPECT_TRUE(has(error_of([&] {
                    convolution_backward(ones({1, 2, 2, 2}, kLong), x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, false,
                                         {0, 0}, 1, {true, true, true});
                  }, ErrorKind::NotImplementedError),
                  "\"slow_conv2d_cpu_grad_input\" not implemented for 'Long'"));
  EXPECT_TRUE(has(error_of([&] {
                    convolution_backward(ones({1, 2, 2, 2}, kDouble), ones({1, 2, 4, 4}), ones({2, 2, 3, 3}),
                                         std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1, {true, true, true});
                  }),
                  "expected scalar type Float but found Double"));
}

TEST(NnBackwardErrors, MaxPoolBackwardChecksIndicesBeforeWriting) {
  Tensor x = ones({1, 1, 4, 4});
  auto [out, idx] = max_pool2d_with_indices(x, {2, 2});
  Tensor bad = idx * 100;  // torch 1.13 writes out of bounds here
  const std::string e = error_of(
      [&] { max_pool2d_with_indices_backward(out, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, bad); },
      ErrorKind::IndexError);
  EXPECT_TRUE(has(e, "index 200 is out of range for an input plane of 16 elements")) << e;
  EXPECT_TRUE(has(error_of([&] {
                    max_pool2d_with_indices_backward(out, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, idx.to(kInt));
                  }),
                  "expected scalar type Long but found Int"));
}

TEST(NnBackwardErrors, PoolingBackwardsCheckTheGradShape) {
  Tensor x = ones({2, 3, 6, 6});
  EXPECT_TRUE(has(error_of([&] { avg_pool2d_backward(ones({2, 3, 3, 4}), x, {2, 2}, {}, {0, 0}, false, true, {}); }),
                  "Expected a tensor of dimension 4 and tensor.size[3] == 3 but got: dimension 4 and tensor.size[3] = 4"));
  EXPECT_TRUE(has(error_of([&] { _adaptive_avg_pool2d_backward(ones({2, 3, 3}), x); }),
                  "Expected grad_output to have 4 dimensions"));
  EXPECT_TRUE(has(error_of([&] { _adaptive_avg_pool2d_backward(ones({2, 3, 3, 3}, kDouble), x); }),
                  "expected dtype float for `grad_output` but got dtype double"));
}

TEST(NnBackwardErrors, BatchNormBackwardChecksShapesAndStatistics) {
  Tensor x = ones({4, 3, 2, 2}), w = ones({3}), m = zeros({3}), v = ones({3});
  // torch 1.13 reads past grad_out here.
  EXPECT_TRUE(has(error_of([&] {
                    native_batch_norm_backward(ones({4, 3, 2, 3}), x, w, m, v, m, v, true, 1e-5, {true, true, true});
                  }),
                  "expected grad_out of size [4, 3, 2, 2] (the input's), but got [4, 3, 2, 3]"));
  // torch 1.13 crashes on these two.
  EXPECT_TRUE(has(error_of([&] {
                    native_batch_norm_backward(ones({4, 3, 2, 2}), x, w, m, v, std::nullopt, std::nullopt, true, 1e-5,
                                               {true, true, true});
                  }),
                  "save_mean and save_invstd must be defined in training mode"));
  EXPECT_TRUE(has(error_of([&] {
                    native_batch_norm_backward(ones({4, 3, 2, 2}), x, w, std::nullopt, std::nullopt, std::nullopt,
                                               std::nullopt, false, 1e-5, {true, true, true});
                  }),
                  "running_mean and running_var must be defined in evaluation mode"));
  EXPECT_TRUE(has(error_of([&] {
                    native_batch_norm_backward(ones({4, 3, 2, 2}), x, ones({3}, kDouble), m, v, m, v, true, 1e-5,
                                               {true, true, true});
                  }),
                  "mixed dtype (CPU): expect parameter to have scalar type of Float"));
  EXPECT_TRUE(has(error_of([&] {
                    native_batch_norm_backward(ones({4, 3, 2, 2}), x, w, m, v, zeros({2}), v, true, 1e-5,
                                               {true, true, true});
                  }),
                  "save_mean should contain 3 elements not 2"));
}

TEST(NnBackwardErrors, EmbeddingDenseBackwardNeedsIntegerIndices) {
  EXPECT_TRUE(has(error_of([&] { embedding_dense_backward(ones({2, 3}), ones({2}), 4, -1, false); }),
                  "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int"));
}

}  // namespace
}  // namespace ember
