// User mistakes in convolution, pooling and shape ops raise ember::Error with PyTorch's
// message, the op's name and the user's line.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

struct Caught {
  std::string what;
  ErrorKind kind = ErrorKind::RuntimeError;
};

template <typename F>
Caught error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.what(), e.kind()};
  }
  ADD_FAILURE() << "expected an ember::Error";
  return {};
}

#define EXPECT_ERROR(stmt, text)                                                  \
  do {                                                                            \
    const Caught c_ = error_of([&] { (void)(stmt); });                            \
    EXPECT_NE(c_.what.find(text), std::string::npos) << c_.what;                  \
  } while (0)

TEST(ConvErrors, ChannelMismatchNamesGroupsWeightAndInput) {
  Tensor x = empty({8, 4, 56, 56}), w = empty({64, 3, 3, 3});
  const int line = __LINE__ + 1;
  const Caught c = error_of([&] { (void)conv2d(x, w); });
  EXPECT_NE(c.what.find("Given groups=1, weight of size [64, 3, 3, 3], expected input[8, 4, 56, 56] to have 3 "
                        "channels, but got 4 channels instead"),
            std::string::npos)
      << c.what;
  EXPECT_NE(c.what.find("aten::convolution"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("conv_shape_errors_test.cpp:" + std::to_string(line)), std::string::npos) << c.what;
}

TEST(ConvErrors, WrongInputRank) {
  EXPECT_ERROR(conv2d(empty({4, 4}), empty({64, 3, 3, 3})),
               "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 4]");
  EXPECT_ERROR(conv1d(empty({1, 3, 5, 5}), empty({4, 3, 7})),
               "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [1, 3, 5, 5]");
  EXPECT_ERROR(convolution(empty({2, 3, 4}), empty({4, 3, 3, 3}), std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1),
               "Expected 4-dimensional input for 4-dimensional weight [4, 3, 3, 3], but got 3-dimensional input of "
               "size [2, 3, 4] instead");
  EXPECT_ERROR(conv2d(empty({1, 3, 5, 5}), empty({4, 3})), "weight should have at least three dimensions");
}

TEST(ConvErrors, KernelLargerThanPaddedInput) {
  EXPECT_ERROR(conv2d(empty({1, 3, 2, 2}), empty({64, 3, 3, 3})),
               "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater "
               "than actual input size");
  EXPECT_ERROR(conv1d(empty({1, 3, 5}), empty({4, 3, 7})),
               "Calculated padded input size per channel: (5). Kernel size: (7). Kernel size can't be greater than "
               "actual input size");
}

TEST(ConvErrors, BadStridePaddingDilationGroups) {
  Tensor x = empty({1, 3, 5, 5}), w = empty({4, 3, 3, 3});
  EXPECT_ERROR(conv2d(x, w, std::nullopt, {0, 1}), "non-positive stride is not supported");
  EXPECT_ERROR(conv2d(x, w, std::nullopt, {1, 1}, {-1, 0}), "negative padding is not supported");
  EXPECT_ERROR(conv2d(x, w, std::nullopt, {1, 1}, {0, 0}, {0, 0}), "dilation should be greater than zero, but got [0, 0]");
  EXPECT_ERROR(conv2d(x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, 0), "non-positive groups is not supported");
  EXPECT_ERROR(conv2d(x, w, std::nullopt, {1, 1, 1}),
               "expected stride to be a single integer value or a list of 2 values to match the convolution "
               "dimensions, but got stride=[1, 1, 1]");
  EXPECT_ERROR(conv2d(empty({1, 4, 5, 5}), empty({5, 2, 3, 3}), std::nullopt, {1, 1}, {0, 0}, {1, 1}, 2),
               "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[5, 2, 3, "
               "3]] instead");
  EXPECT_ERROR(conv2d(x, empty({2, 3, 3, 3}), std::nullopt, {1, 1}, {0, 0}, {1, 1}, 3),
               "Given groups=3, expected weight to be at least 3 at dimension 0, but got weight of size [2, 3, 3, 3] "
               "instead");
}

TEST(ConvErrors, BiasOfWrongSize) {
  EXPECT_ERROR(conv2d(empty({1, 3, 5, 5}), empty({64, 3, 3, 3}), empty({3})),
               "Given weight of size [64, 3, 3, 3], expected bias to be 1-dimensional with 64 elements, but got bias "
               "of size [3] instead");
}

TEST(ConvErrors, DtypeMismatchAndBool) {
  EXPECT_ERROR(conv2d(empty({1, 3, 5, 5}), empty({4, 3, 3, 3}, kDouble)), "expected scalar type Float but found Double");
  EXPECT_ERROR(conv2d(empty({1, 3, 5, 5}, kBool), empty({4, 3, 3, 3}, kBool)),
               "\"slow_conv2d_cpu\" not implemented for 'Bool'");
}

TEST(ConvErrors, TransposedConvolutionShapeChecks) {
  auto tconv = [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef output_padding) {
    return convolution(x, w, b, stride, padding, {1, 1}, true, output_padding, 1);
  };
  EXPECT_ERROR(tconv(empty({1, 3, 5, 5}), empty({64, 3, 3, 3}), std::nullopt, {1, 1}, {0, 0}, {0, 0}),
               "Given transposed=1, weight of size [64, 3, 3, 3], expected input[1, 3, 5, 5] to have 64 channels, but "
               "got 3 channels instead");
  EXPECT_ERROR(tconv(empty({1, 4, 5, 5}), empty({4, 3, 3, 3}), empty({4}), {1, 1}, {0, 0}, {0, 0}),
               "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 3 elements, "
               "but got bias of size [4] instead");
  EXPECT_ERROR(tconv(empty({1, 4, 5, 5}), empty({4, 3, 3, 3}), std::nullopt, {2, 2}, {0, 0}, {2, 0}),
               "output padding must be smaller than either stride or dilation, but got output_padding_height: 2 "
               "output_padding_width: 0 stride_height: 2 stride_width: 2 dilation_height: 1 dilation_width: 1");
  EXPECT_ERROR(tconv(empty({1, 4, 1, 1}), empty({4, 3, 1, 1}), std::nullopt, {1, 1}, {1, 1}, {0, 0}),
               "Given input size per channel: (1 x 1). Calculated output size per channel: (-1 x -1). Output size is "
               "too small");
}

TEST(ConvErrors, FourDimensionalConvolutionIsNotImplemented) {
  const Caught c = error_of([] {
    (void)convolution(empty({1, 3, 5, 5, 5, 5}), empty({4, 3, 3, 3, 3, 3}), std::nullopt, {1}, {0}, {1}, false, {0},
                      1);
  });
  EXPECT_EQ(c.kind, ErrorKind::NotImplementedError);
  EXPECT_NE(c.what.find("only 1-D, 2-D and 3-D convolutions are implemented, got a 4-D convolution"),
            std::string::npos)
      << c.what;
}

TEST(ConvErrors, ThreeDimensionalTransposedOutputPaddingAndSize) {
  // Note [3-D convolution]: the checks of ATen's slow_conv_transpose3d.
  EXPECT_ERROR(convolution(empty({1, 4, 3, 3, 3}), empty({4, 2, 2, 2, 2}), std::nullopt, {2, 2, 2}, {0, 0, 0},
                           {1, 1, 1}, true, {0, 2, 0}, 1),
               "output padding must be smaller than either stride or dilation, but got output_padding [0, 2, 0], "
               "stride [2, 2, 2] and dilation [1, 1, 1]");
  EXPECT_ERROR(convolution(empty({1, 4, 1, 2, 2}), empty({4, 2, 1, 1, 1}), std::nullopt, {1}, {1}, {1}, true, {0}, 1),
               "Given input size per channel: (1 x 2 x 2). Calculated output size per channel: (-1 x 0 x 0). Output "
               "size is too small");
}

TEST(PoolErrors, PaddingLargerThanHalfTheKernel) {
  EXPECT_ERROR(max_pool2d(empty({1, 3, 5, 5}), {3, 3}, {}, {2, 2}),
               "pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  EXPECT_ERROR(avg_pool2d(empty({1, 3, 5, 5}), {3, 3}, {}, {2, 2}),
               "pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  EXPECT_ERROR(max_pool2d(empty({1, 3, 5, 5}), {2, 2}, {}, {-1, -1}), "pad must be non-negative, but got pad: -1");
}

TEST(PoolErrors, NonPositiveKernelStrideDilation) {
  Tensor x = empty({1, 3, 5, 5});
  EXPECT_ERROR(max_pool2d(x, {3, 3}, {0, 0}), "stride should not be zero");
  EXPECT_ERROR(max_pool2d(x, {0, 0}, {1, 1}), "kernel size should be greater than zero, but got kH: 0 kW: 0");
  EXPECT_ERROR(max_pool2d(x, {2, 2}, {-1, -1}), "stride should be greater than zero, but got dH: -1 dW: -1");
  EXPECT_ERROR(max_pool2d(x, {3, 3}, {}, {0, 0}, {0, 0}),
               "dilation should be greater than zero, but got dilationH: 0 dilationW: 0");
  EXPECT_ERROR(avg_pool2d(x, {3, 3}, {}, {0, 0}, false, true, 0), "divisor must be not zero");
}

TEST(PoolErrors, ArgumentListsOfWrongLength) {
  Tensor x = empty({1, 3, 5, 5});
  EXPECT_ERROR(max_pool2d(x, {2, 2, 2}), "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EXPECT_ERROR(max_pool2d(x, {2}, {3, 3, 3}),
               "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EXPECT_ERROR(avg_pool2d(x, {2}, {1}, {1, 1, 1}), "avg_pool2d: padding must either be a single int, or a tuple of two ints");
  EXPECT_ERROR(adaptive_avg_pool2d(x, {2, 2, 2}), "adaptive_avg_pool2d: output_size must be 2");
  EXPECT_ERROR(adaptive_avg_pool2d(x, {-1, 2}),
               "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}");
}

TEST(PoolErrors, WrongRankEmptyPlanesAndTooSmallInput) {
  EXPECT_ERROR(max_pool2d(empty({3, 5}), {3, 3}), "non-empty 3D or 4D (batch mode) tensor expected for input");
  EXPECT_ERROR(max_pool2d(empty({1, 0, 5, 5}), {2, 2}),
               "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 5, 5]");
  EXPECT_ERROR(max_pool2d(empty({1, 3, 2, 2}), {3, 3}),
               "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small");
  const Caught c = error_of([] { (void)avg_pool2d(empty({3, 5}), {3, 3}); });
  EXPECT_EQ(c.kind, ErrorKind::IndexError);
  EXPECT_NE(c.what.find("Dimension out of range (expected to be in range of [-2, 1], but got -3)"), std::string::npos)
      << c.what;
  EXPECT_ERROR(adaptive_avg_pool2d(empty({3, 5}), {2, 2}), "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [3, 5]");
  EXPECT_ERROR(adaptive_avg_pool2d(empty({1, 3, 0, 5}), {2, 2}),
               "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes [1, 3, 0, 5] with dimension 2 being empty");
}

TEST(PoolErrors, UnsupportedDtypes) {
  EXPECT_ERROR(max_pool2d(empty({1, 3, 5, 5}, kInt64), {2, 2}), "\"max_pool2d\" not implemented for 'Long'");
  EXPECT_ERROR(avg_pool2d(empty({1, 3, 5, 5}, kInt32), {2, 2}), "\"avg_pool2d\" not implemented for 'Int'");
  EXPECT_ERROR(adaptive_avg_pool2d(empty({1, 3, 5, 5}, kInt64), {2, 2}),
               "\"adaptive_avg_pool2d\" not implemented for 'Long'");
}

TEST(ShapeErrors, CatSizesMustMatchExceptInDim) {
  EXPECT_ERROR(cat({empty({2, 3}), empty({2, 4})}, 0),
               "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 "
               "in the list.");
  EXPECT_ERROR(cat({empty({2, 3}), empty({2, 3, 1})}, 1), "Tensors must have same number of dimensions: got 2 and 3");
  EXPECT_ERROR(cat({empty({2, 3}), scalar_tensor(1.0)}, 1),
               "zero-dimensional tensor (at position 1) cannot be concatenated");
  EXPECT_ERROR(cat({}, 0), "torch.cat(): expected a non-empty list of Tensors");
}

TEST(ShapeErrors, CatDimOutOfRangeIsAnIndexError) {
  const Caught c = error_of([] { (void)cat({empty({2, 3}), empty({2, 3})}, 2); });
  EXPECT_EQ(c.kind, ErrorKind::IndexError);
  EXPECT_NE(c.what.find("Dimension out of range (expected to be in range of [-2, 1], but got 2)"), std::string::npos)
      << c.what;
}

TEST(ShapeErrors, StackNeedsEqualSizes) {
  EXPECT_ERROR(stack({empty({2, 3}), empty({3, 3})}),
               "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 3] at entry 1");
  EXPECT_ERROR(stack({}), "stack expects a non-empty TensorList");
  EXPECT_ERROR(stack({empty({2, 3}), empty({2, 3})}, 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
}

TEST(ShapeErrors, RepeatDims) {
  EXPECT_ERROR(repeat(empty({2, 3}), {2}),
               "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  EXPECT_ERROR(repeat(empty({2, 3}), {2, -1}), "Trying to create tensor with negative dimension -3: [4, -3]");
}

TEST(ShapeErrors, FlipAndTriDims) {
  EXPECT_ERROR(flip(empty({2, 3}), {2}), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_ERROR(flip(empty({2, 3}), {0, -2}), "dim 0 appears multiple times in the list of dims");
  EXPECT_ERROR(tril(empty({3})), "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
  EXPECT_ERROR(triu(scalar_tensor(1.0)), "Dimension specified as -2 but tensor has no dimensions");
}

}  // namespace
}  // namespace ember
