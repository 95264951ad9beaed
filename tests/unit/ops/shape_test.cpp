// cat, stack, repeat, flip, tril, triu against values printed by PyTorch 1.13.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }
std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }

TEST(Cat, PromotesAcrossInputsAlongDim1) {
  // torch.cat([arange(6).reshape(2,3), arange(4.).reshape(2,2)*0.5], 1)
  Tensor y = cat({arange(6).reshape({2, 3}), tensor<float>({0, 0.5f, 1, 1.5f}, {2, 2})}, 1);
  EXPECT_EQ(y.dtype(), kFloat);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 0.5f, 3, 4, 5, 1, 1.5f}));
}

TEST(Cat, NonContiguousInputsAndNegativeDim) {
  // torch.cat([arange(6.).reshape(2,3).t(), arange(6.).reshape(3,2)], -1)
  Tensor y = cat({arange(6, kFloat).reshape({2, 3}).t(), arange(6, kFloat).reshape({3, 2})}, -1);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 0, 1, 1, 4, 2, 3, 2, 5, 4, 5}));
}

TEST(Cat, SkipsOneDimensionalEmptyTensorsAsLegacyPyTorchDoes) {
  Tensor a = arange(6, kFloat).reshape({2, 3});
  Tensor y = cat({empty({0}, kDouble), a, empty({0}, kInt64)}, 1);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y.dtype(), kDouble);  // skipped tensors still take part in type promotion
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  // Only 1-D empties: the result is 1-D empty, even for a dim that does not exist.
  Tensor z = cat({empty({0}, kInt64), empty({0}, kDouble)}, 5);
  EXPECT_EQ(sizes_of(z), (std::vector<int64_t>{0}));
  EXPECT_EQ(z.dtype(), kDouble);
}

TEST(Cat, EmptyInputsAlongDimAreAllowed) {
  Tensor y = cat({empty({0, 3}, kInt64), tensor<int64_t>({1, 2, 3}, {1, 3})}, 0);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(Cat, KeepsChannelsLastLayoutOfItsInputs) {
  Tensor a = arange(120, kFloat).reshape({2, 4, 5, 3}).permute({0, 3, 1, 2});  // [2,3,4,5] channels-last
  Tensor y = cat({a, a}, 1);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 6, 4, 5}));
  EXPECT_EQ(strides_of(y), (std::vector<int64_t>{120, 1, 30, 6}));  // torch: (120, 1, 30, 6)
  EXPECT_EQ(y.narrow(1, 3, 3).contiguous().to_vector<float>(), a.contiguous().to_vector<float>());
}

TEST(Cat, LargeInputsCopyInParallel) {
  Tensor a = arange(300000, kFloat).reshape({3, 100000});
  Tensor b = full({3, 7}, -1.0);
  Tensor y = cat({a, b}, 1);
  std::vector<float> v = y.to_vector<float>();
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[100000], -1.0f);
  EXPECT_EQ(v[100007], 100000.0f);
  EXPECT_EQ(v.back(), -1.0f);
  EXPECT_EQ(v[2 * 100007 + 99999], 299999.0f);
}

TEST(Cat, MetaInputsGiveShapeAndDtype) {
  Tensor y = cat({empty({2, 3}, TensorOptions(kHalf).device(kMeta)), empty({2, 4}, TensorOptions(kFloat).device(kMeta))}, 1);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(y.dtype(), kFloat);
}

TEST(Stack, InsertsANewDimAtEveryPosition) {
  // torch.stack([arange(3.), arange(3.)+10], -1)
  Tensor a = arange(3, kFloat), b = arange(10, 13, 1, kFloat);
  Tensor y = stack({a, b}, -1);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 10, 1, 11, 2, 12}));
  Tensor z = stack({a, b}, 0);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 1, 2, 10, 11, 12}));
}

TEST(Stack, ZeroDimAndEmptyTensors) {
  Tensor y = stack({scalar_tensor(1.5), scalar_tensor(2.5)});
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
  EXPECT_EQ(sizes_of(stack({empty({0}), empty({0})}, 1)), (std::vector<int64_t>{0, 2}));
}

TEST(Repeat, TilesANonContiguousTensorWithNewLeadingDims) {
  // torch.arange(6).reshape(2,3).t().repeat(2,1,2)
  Tensor y = repeat(arange(6).reshape({2, 3}).t(), {2, 1, 2});
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5,
                                                          0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5}));
}

TEST(Repeat, ZeroRepeatsAndZeroDimInput) {
  EXPECT_EQ(sizes_of(repeat(ones({2, 3}), {2, 0})), (std::vector<int64_t>{4, 0}));
  Tensor s = repeat(scalar_tensor(7, kInt64), {});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<int64_t>(), 7);
  EXPECT_EQ(repeat(tensor<bool>({true, false}), {3}).to_vector<bool>(),
            (std::vector<bool>{true, false, true, false, true, false}));
}

TEST(Flip, ReversesSeveralDims) {
  // torch.arange(24).reshape(2,3,4).flip(0,2)
  Tensor y = flip(arange(24).reshape({2, 3, 4}), {0, 2});
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20,
                                                          3,  2,  1,  0,  7,  6,  5,  4,  11, 10, 9,  8}));
}

TEST(Flip, PreservesTheLayoutOfADenseInput) {
  // torch: x.transpose(1,2).flip(-1) has strides (12, 1, 4)
  Tensor y = flip(arange(24).reshape({2, 3, 4}).transpose(1, 2), {-1});
  EXPECT_EQ(strides_of(y), (std::vector<int64_t>{12, 1, 4}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{8,  4,  0,  9,  5,  1,  10, 6,  2,  11, 7,  3,
                                                          20, 16, 12, 21, 17, 13, 22, 18, 14, 23, 19, 15}));
}

TEST(Flip, ZeroDimAndEmptyDims) {
  EXPECT_EQ(flip(scalar_tensor(3.0), {0}).item<double>(), 3.0);
  EXPECT_EQ(flip(scalar_tensor(3.0), {}).item<double>(), 3.0);
  EXPECT_EQ(flip(tensor<double>({1, 2, 3}), {}).to_vector<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(sizes_of(flip(empty({0, 3}), {0, 1})), (std::vector<int64_t>{0, 3}));
}

TEST(TrilTriu, PositiveAndNegativeDiagonals) {
  Tensor x = arange(1, 13, 1, kFloat).reshape({3, 4});
  EXPECT_EQ(tril(x, 1).to_vector<float>(), (std::vector<float>{1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12}));
  EXPECT_EQ(triu(x, -1).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}));
  EXPECT_EQ(tril(x, -5).to_vector<float>(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(triu(x, -5).to_vector<float>(), x.to_vector<float>());
}

TEST(TrilTriu, BatchedAndNonContiguous) {
  Tensor x = arange(1, 13).reshape({2, 3, 2});
  EXPECT_EQ(tril(x).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12}));
  EXPECT_EQ(triu(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0}));
  // torch.arange(1,13.).reshape(3,4).t().triu(): output is contiguous
  Tensor t = triu(arange(1, 13, 1, kFloat).reshape({3, 4}).t());
  EXPECT_EQ(strides_of(t), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 5, 9, 0, 6, 10, 0, 0, 11, 0, 0, 0}));
}

TEST(TrilTriu, BoolHalfAndMeta) {
  Tensor b = tril(ones({2, 2}, kBool));
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  Tensor h = triu(ones({2, 3}, kHalf), 1);
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 0, 1}));
  Tensor m = tril(empty({4, 5, 6}, kMeta));
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(sizes_of(m), (std::vector<int64_t>{4, 5, 6}));
}

}  // namespace
}  // namespace ember
