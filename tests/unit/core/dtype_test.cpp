// Type promotion and the 16-bit float types.
#include <gtest/gtest.h>

#include <limits>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(Dtype, PromoteTypesFollowsPyTorchsTable) {
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kBool, kInt32), kInt32);
  EXPECT_EQ(promote_types(kInt64, kHalf), kHalf);
  EXPECT_EQ(promote_types(kHalf, kBFloat16), kFloat);
  EXPECT_EQ(promote_types(kFloat, kDouble), kDouble);
  for (int a = 0; a < kNumScalarTypes; ++a)
    for (int b = 0; b < kNumScalarTypes; ++b)
      EXPECT_EQ(promote_types(ScalarType(a), ScalarType(b)), promote_types(ScalarType(b), ScalarType(a)));
}

TEST(Dtype, ComplexTypesPromoteToTheComplexOfTheWiderPartsAsPyTorch) {
  EXPECT_EQ(promote_types(kComplexFloat, kFloat), kComplexFloat);
  EXPECT_EQ(promote_types(kComplexFloat, kDouble), kComplexDouble);
  EXPECT_EQ(promote_types(kComplexFloat, kInt64), kComplexFloat);
  EXPECT_EQ(promote_types(kBool, kComplexDouble), kComplexDouble);
  EXPECT_EQ(promote_types(kHalf, kComplexFloat), kComplexFloat);
  EXPECT_EQ(promote_types(kComplexFloat, kComplexDouble), kComplexDouble);
  EXPECT_FALSE(can_cast(kComplexFloat, kDouble));
  EXPECT_TRUE(can_cast(kDouble, kComplexFloat));
}

TEST(Dtype, ComplexTypesHaveTheirPartsAndNamesAsPyTorch) {
  EXPECT_EQ(element_size(kComplexFloat), 8u);
  EXPECT_EQ(element_size(kComplexDouble), 16u);
  EXPECT_TRUE(is_complex(kComplex64) && is_complex(kCDouble) && !is_complex(kDouble));
  EXPECT_FALSE(is_floating_point(kComplexFloat));
  EXPECT_EQ(to_real_value_type(kComplexFloat), kFloat);
  EXPECT_EQ(to_real_value_type(kComplexDouble), kDouble);
  EXPECT_EQ(to_real_value_type(kInt32), kInt32);
  EXPECT_EQ(to_complex_type(kFloat), kComplexFloat);
  EXPECT_EQ(to_complex_type(kBFloat16), kComplexFloat);
  EXPECT_EQ(to_complex_type(kDouble), kComplexDouble);
  EXPECT_EQ(to_complex_type(kInt64), std::nullopt);
  EXPECT_EQ(dtype_name(kComplexFloat), "complex64");
  EXPECT_EQ(scalar_type_name(kComplexDouble), "ComplexDouble");
  EXPECT_EQ(parse_dtype("torch.complex128"), kComplexDouble);
  EXPECT_EQ(parse_dtype("cfloat"), kComplexFloat);
  EXPECT_EQ(parse_dtype("ComplexFloat"), kComplexFloat);
}

TEST(Dtype, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h = Half::from_bits(static_cast<uint16_t>(bits));
    float f = h;
    if (f != f) continue;  // NaN payloads need not round-trip
    EXPECT_EQ(Half(f).bits, h.bits) << "bits " << bits;
  }
}

TEST(Dtype, HalfRoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 2048)), 1.0f);         // tie -> even
  EXPECT_EQ(static_cast<float>(Half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(static_cast<float>(Half(65520.0f)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(Half(5.960464477539063e-08f)), 5.960464477539063e-08f);  // smallest subnormal
}

TEST(Dtype, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16(1.00390625f).bits, BFloat16(1.0f).bits);  // tie -> even
  EXPECT_NE(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN())), static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Dtype, ResultTypeRanksDimTensorsOverZeroDimOverScalars) {
  Tensor i32 = ones({2}, kInt32);
  EXPECT_EQ((i32 + 2).dtype(), kInt32);                 // int scalar does not widen
  EXPECT_EQ((i32 + 2.5).dtype(), kFloat);               // float scalar lifts the category
  EXPECT_EQ((i32 + ones({}, kDouble)).dtype(), kDouble);  // 0-dim of higher category
  EXPECT_EQ((ones({2}, kHalf) + ones({}, kDouble)).dtype(), kHalf);
  EXPECT_EQ((ones({2}, kBool) + 1).dtype(), kInt64);
  EXPECT_EQ((ones({2}, kUInt8) + ones({2}, kInt8)).dtype(), kInt16);
}

}  // namespace
}  // namespace ember
