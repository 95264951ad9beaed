// Printing matches PyTorch's repr exactly; expected strings were produced by
// str(tensor) in PyTorch 1.13.
#include <gtest/gtest.h>

#include <limits>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(Print, IntegralFloatsPrintWithATrailingDot) {
  EXPECT_EQ(arange(6, kFloat).view({2, 3}).str(), "tensor([[0., 1., 2.],\n        [3., 4., 5.]])");
}

TEST(Print, FractionsUseFourDecimalsAlignedRight) {
  EXPECT_EQ(tensor<float>({1.5f, -2.25f, 3.125f}).str(), "tensor([ 1.5000, -2.2500,  3.1250])");
}

TEST(Print, WideRangesSwitchToScientific) {
  EXPECT_EQ(tensor<float>({1e-5f, 1.0f, 123.0f}).str(), "tensor([1.0000e-05, 1.0000e+00, 1.2300e+02])");
  EXPECT_EQ(tensor<float>({1.0f, 1e9f}).str(), "tensor([1.0000e+00, 1.0000e+09])");
}

TEST(Print, IntegersBoolsAndDtypeSuffixes) {
  EXPECT_EQ(arange(5).str(), "tensor([0, 1, 2, 3, 4])");
  EXPECT_EQ(tensor<bool>({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(tensor<double>({0.1, 0.2}).str(), "tensor([0.1000, 0.2000], dtype=torch.float64)");
  EXPECT_EQ(tensor<int32_t>({1, -20, 300}).str(), "tensor([  1, -20, 300], dtype=torch.int32)");
  EXPECT_EQ(tensor<float>({0.5f, 1.25f}, {}, kHalf).str(), "tensor([0.5000, 1.2500], dtype=torch.float16)");
}

TEST(Print, EmptyAndZeroDimTensors) {
  EXPECT_EQ(zeros({0, 3}).str(), "tensor([], size=(0, 3))");
  EXPECT_EQ(zeros({0}, kInt32).str(), "tensor([], dtype=torch.int32)");
  EXPECT_EQ(scalar_tensor(3.5).str(), "tensor(3.5000)");
}

TEST(Print, ComplexPartsFormatApartAsPyTorch) {
  // Expected strings from str(tensor) in PyTorch 2.11.
  const Tensor z = view_as_complex(tensor<float>({1.5f, -2, 0, 1, -3.25f, 0}, {3, 2}));
  EXPECT_EQ(z.str(), "tensor([ 1.5000-2.j,  0.0000+1.j, -3.2500+0.j])");
  EXPECT_EQ(z.to(kComplexDouble).str(), "tensor([ 1.5000-2.j,  0.0000+1.j, -3.2500+0.j], dtype=torch.complex128)");
  EXPECT_EQ(view_as_complex(tensor<float>({2, 3})).str(), "tensor(2.+3.j)");
  const Tensor wide = view_as_complex(tensor<float>({1, 1e-5f, 100, -2, 0, 3, -1, 0}, {2, 2, 2}));
  EXPECT_EQ(wide.str(), "tensor([[  1.+1.0000e-05j, 100.-2.0000e+00j],\n        [  0.+3.0000e+00j,  -1.+0.0000e+00j]])");
  EXPECT_EQ(zeros({0}, kComplexFloat).str(), "tensor([], dtype=torch.complex64)");
}

TEST(Print, NanAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tensor<float>({std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1.0f}).str(),
            "tensor([nan, inf, -inf, 1.])");
}

TEST(Print, LongVectorsWrapAtEightyColumns) {
  EXPECT_EQ((arange(30, kFloat) / 7).str(),
            "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
            "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
            "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
            "        3.8571, 4.0000, 4.1429])");
}

TEST(Print, LargeTensorsAreSummarized) {
  EXPECT_EQ(arange(2000, kFloat).str(),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
  EXPECT_EQ(arange(4000, kFloat).view({40, 100}).str(),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n"
            "         9.9000e+01],\n"
            "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n"
            "         1.9900e+02],\n"
            "        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n"
            "         2.9900e+02],\n"
            "        ...,\n"
            "        [3.7000e+03, 3.7010e+03, 3.7020e+03,  ..., 3.7970e+03, 3.7980e+03,\n"
            "         3.7990e+03],\n"
            "        [3.8000e+03, 3.8010e+03, 3.8020e+03,  ..., 3.8970e+03, 3.8980e+03,\n"
            "         3.8990e+03],\n"
            "        [3.9000e+03, 3.9010e+03, 3.9020e+03,  ..., 3.9970e+03, 3.9980e+03,\n"
            "         3.9990e+03]])");
}

TEST(Print, ThreeDimensionalIntTensor) {
  EXPECT_EQ(arange(12).view({2, 2, 3}).str(),
            "tensor([[[ 0,  1,  2],\n         [ 3,  4,  5]],\n\n        [[ 6,  7,  8],\n         [ 9, 10, 11]]])");
}

TEST(Print, MetaTensorsShowSizeInsteadOfValues) {
  EXPECT_EQ(empty({2, 3}, kMeta).str(), "tensor(..., device='meta', size=(2, 3))");
}

TEST(Print, NonContiguousTensorsPrintLogicalOrder) {
  EXPECT_EQ(arange(6).view({2, 3}).t().str(), "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
}

}  // namespace
}  // namespace ember
