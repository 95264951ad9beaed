// Indexing ops against values computed with PyTorch 1.13: index_select, gather, scatter,
// scatter_add, index.Tensor, index_put, sort, topk, nonzero.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "ops/dispatch.h"

namespace ember {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Idx = std::vector<std::optional<Tensor>>;

Tensor longs(std::vector<int64_t> v, IntArrayRef sizes = {}) { return tensor<int64_t>(v, sizes); }
Tensor x34() { return arange(12, kFloat).reshape({3, 4}); }
Tensor y234() { return arange(24, kFloat).reshape({2, 3, 4}); }

/// Sizes and values (NaN equal to NaN) of `t` against PyTorch's.
void expect_tensor(const Tensor& t, std::vector<int64_t> sizes, std::vector<double> values) {
  EXPECT_EQ(t.sizes().vec(), sizes);
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      EXPECT_EQ(got[i], values[i]) << "at " << i;
    }
  }
}

TEST(IndexSelect, SelectsAlongADim) {
  expect_tensor(index_select(x34(), 1, longs({2, 0, 2})), {3, 3}, {2, 0, 2, 6, 4, 6, 10, 8, 10});
}

TEST(IndexSelect, AcceptsInt32IndicesAndTransposedInput) {
  Tensor idx = tensor<int32_t>({3, 1});
  expect_tensor(index_select(x34().t(), 0, idx), {2, 3}, {3, 7, 11, 1, 5, 9});
}

TEST(IndexSelect, NegativeDimOnIntegerTensor) {
  Tensor r = index_select(x34().to(kInt64).t(), -1, longs({2}));
  EXPECT_EQ(r.dtype(), kInt64);
  expect_tensor(r, {4, 1}, {8, 9, 10, 11});
}

TEST(IndexSelect, ZeroDimSelfAndEmptyIndex) {
  expect_tensor(index_select(scalar_tensor(5.0), 0, longs({0})), {}, {5});
  expect_tensor(index_select(x34(), 0, longs({}, {0})), {0, 4}, {});
}

TEST(IndexSelect, MetaTensorsGiveShape) {
  Tensor r = index_select(empty({3, 4}, kMeta), 1, empty({5}, TensorOptions(kInt64).device(kMeta)));
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 5}));
}

TEST(Gather, GathersAlongDim1) {
  expect_tensor(gather(x34(), 1, longs({0, 2, 1, 1, 3, 0}, {3, 2})), {3, 2}, {0, 2, 5, 5, 11, 8});
}

TEST(Gather, IndexSmallerThanSelfAlongDim0) {
  expect_tensor(gather(x34(), 0, longs({2, 0, 1, 1}, {1, 4})), {1, 4}, {8, 1, 6, 7});
}

TEST(Gather, TransposedSelf) {
  expect_tensor(gather(x34().t(), 1, longs({2, 0, 1, 1}, {2, 2})), {2, 2}, {8, 0, 5, 5});
}

TEST(Gather, ZeroDimSelfAndEmptyIndex) {
  expect_tensor(gather(scalar_tensor(5.0), 0, longs({0, 0})), {2}, {5, 5});
  expect_tensor(gather(y234(), 1, longs({}, {0, 5, 6})), {0, 5, 6}, {});
}

TEST(Gather, LargeGatherIsParallelAndCorrect) {
  Tensor src = arange(200000, kFloat).reshape({1000, 200});
  std::vector<int64_t> iv(200000);
  for (int64_t i = 0; i < 200000; ++i) iv[i] = (i * 7) % 200;
  Tensor idx = longs(iv, {1000, 200});
  Tensor r = gather(src, 1, idx);
  std::vector<float> v = r.to_vector<float>();
  for (int64_t i = 0; i < 200000; i += 997) EXPECT_EQ(v[i], static_cast<float>((i / 200) * 200 + (i * 7) % 200));
}

TEST(Scatter, ScattersSourceAlongDim1) {
  Tensor src = tensor<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  Tensor r = scatter(zeros({3, 4}), 1, longs({3, 0, 1, 1, 2, 2}, {3, 2}), src);
  // Repeated indices in a line: the later position wins.
  expect_tensor(r, {3, 4}, {2, 0, 0, 1, 0, 5, 0, 0, 0, 0, 8, 0});
}

TEST(Scatter, ScattersAScalarValue) {
  expect_tensor(scatter(x34(), 0, longs({2, 0, 1, 1}, {1, 4}), Scalar(-1.5)), {3, 4},
                {0, -1.5, 2, 3, 4, 5, -1.5, -1.5, -1.5, 9, 10, 11});
}

TEST(Scatter, InPlaceOverloadsWriteIntoSelf) {
  Tensor self = zeros({4});
  Tensor r = scatter(self, 0, longs({1}), Scalar(3.0));
  expect_tensor(self, {4}, {0, 0, 0, 0});  // the functional form leaves self alone
  expect_tensor(r, {4}, {0, 3, 0, 0});
  ops::call(ops::registry().get("aten::scatter_.value"), {self, 0, longs({2}), Scalar(4.0)});
  ops::call(ops::registry().get("aten::scatter_add_"), {self, 0, longs({2, 0}), tensor<float>({1, 6})});
  expect_tensor(self, {4}, {6, 0, 5, 0});
}

TEST(ScatterAdd, AddsRepeatedIndices) {
  Tensor src = tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_tensor(scatter_add(ones({2, 3}), 1, longs({0, 0, 2, 1, 1, 1}, {2, 3}), src), {2, 3}, {4, 1, 4, 1, 16, 1});
}

TEST(ScatterAdd, IntegerDtype) {
  Tensor r = scatter_add(zeros({4}, kInt64), 0, longs({3, 3, 0, 3}), longs({1, 2, 3, 4}));
  EXPECT_EQ(r.dtype(), kInt64);
  expect_tensor(r, {4}, {3, 0, 0, 7});
}

TEST(Index, OneIndexTensorWithNegativeValues) {
  expect_tensor(index(x34(), {longs({2, -1, 0})}), {3, 4}, {8, 9, 10, 11, 8, 9, 10, 11, 0, 1, 2, 3});
}

TEST(Index, AdjacentIndicesBroadcastInPlace) {
  Tensor r = index(y234(), {std::nullopt, longs({0, 2}, {2, 1}), longs({1, 3})});
  expect_tensor(r, {2, 2, 2}, {1, 3, 9, 11, 13, 15, 21, 23});
}

TEST(Index, IndicesSeparatedBySliceGoFirst) {
  Tensor r = index(y234(), {longs({1, 0}), std::nullopt, longs({3, -4})});
  expect_tensor(r, {2, 3}, {15, 19, 23, 0, 4, 8});
}

TEST(Index, BoolMask) {
  expect_tensor(index(x34(), {tensor<bool>({true, false, true})}), {2, 4}, {0, 1, 2, 3, 8, 9, 10, 11});
}

TEST(Index, TwoDimMaskAfterSlice) {
  Tensor mask = tensor<bool>({true, false, false, true, false, false, false, false, false, true, false, false}, {3, 4});
  expect_tensor(index(y234(), {std::nullopt, mask}), {2, 3}, {0, 3, 9, 12, 15, 21});
}

TEST(Index, Int32IndexOnTransposedSelf) {
  expect_tensor(index(x34().t(), {tensor<int32_t>({1, 3})}), {2, 3}, {1, 5, 9, 3, 7, 11});
}

TEST(Index, BoolSelf) {
  Tensor r = index(tensor<bool>({true, false, true}), {longs({2, 1})});
  EXPECT_EQ(r.dtype(), kBool);
  expect_tensor(r, {2}, {1, 0});
}

TEST(Index, MetaTensorWithIntegerIndicesGivesShape) {
  const TensorOptions meta_long = TensorOptions(kInt64).device(kMeta);
  Tensor r = index(empty({2, 3, 4}, kMeta), {empty({2}, meta_long), std::nullopt, empty({2}, meta_long)});
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3}));
}

TEST(Index, MetaTensorWithMaskRaises) {
  try {
    (void)index(empty({2, 3}, kMeta), {empty({2}, TensorOptions(kBool).device(kMeta))});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplementedError);
    EXPECT_NE(std::string(e.what()).find("depends on the mask's values"), std::string::npos) << e.what();
  }
}

TEST(IndexPut, WritesPairsOfIndices) {
  Tensor r = index_put(x34(), {longs({0, 2}), longs({1, 3})}, tensor<float>({-1, -2}));
  expect_tensor(r, {3, 4}, {0, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -2});
}

TEST(IndexPut, BroadcastsAScalarValue) {
  expect_tensor(index_put(x34(), {longs({1})}, scalar_tensor(7.0)), {3, 4}, {0, 1, 2, 3, 7, 7, 7, 7, 8, 9, 10, 11});
}

TEST(IndexPut, AccumulateAddsRepeatedIndices) {
  Tensor idx = longs({0, 2, 0, 0});
  Tensor v = tensor<float>({1, 2, 3, 4});
  expect_tensor(index_put(zeros({3}), {idx}, v, true), {3}, {8, 0, 2});
  expect_tensor(index_put(zeros({3}), {idx}, v, false), {3}, {4, 0, 2});
}

TEST(IndexPut, MaskAfterSlice) {
  Tensor r = index_put(x34(), {std::nullopt, tensor<bool>({true, false, false, true})}, tensor<float>({10, 20}));
  expect_tensor(r, {3, 4}, {10, 1, 2, 20, 10, 5, 6, 20, 10, 9, 10, 20});
}

TEST(IndexPut, SeparatedIndices) {
  Tensor r = index_put(y234(), {longs({1, 0}), std::nullopt, longs({3, 0})}, tensor<float>({100, 200}, {2, 1}));
  expect_tensor(r, {2, 3, 4}, {200, 1, 2, 3, 200, 5, 6, 7, 200, 9, 10, 11,
                               12, 13, 14, 100, 16, 17, 18, 100, 20, 21, 22, 100});
}

TEST(IndexPut, InPlaceModifiesSelf) {
  Tensor self = zeros({2, 2});
  Tensor& r = index_put_(self, {longs({1}), longs({0})}, scalar_tensor(5.0), false);
  EXPECT_TRUE(r.is_same(self));
  expect_tensor(self, {2, 2}, {0, 0, 5, 0});
}

TEST(IndexPut, MetaSelfWithMetaMaskGivesShape) {
  Tensor r = index_put(empty({2, 3}, kMeta), {empty({2}, TensorOptions(kBool).device(kMeta))}, empty({1}, kMeta));
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3}));
}

Tensor nan_input() { return tensor<double>({3, kNaN, 1, -2, 1, 0, 5, kNaN, kNaN, -1}, {2, 5}).to(kFloat); }

TEST(Sort, NaNSortsAsLargest) {
  auto [v, i] = sort(nan_input());
  expect_tensor(v, {2, 5}, {-2, 1, 1, 3, kNaN, -1, 0, 5, kNaN, kNaN});
  expect_tensor(i, {2, 5}, {3, 2, 4, 0, 1, 4, 0, 1, 2, 3});
}

TEST(Sort, DescendingAlongDim0) {
  auto [v, i] = sort(nan_input(), 0, true);
  expect_tensor(v, {2, 5}, {3, kNaN, kNaN, kNaN, 1, 0, 5, 1, -2, -1});
  expect_tensor(i, {2, 5}, {0, 0, 1, 1, 0, 1, 1, 0, 0, 1});
}

TEST(Sort, TiesComeOutAsPyTorchOrdersThem) {
  auto [v, i] = sort(ones({40}));
  expect_tensor(i, {40}, {30, 21, 22, 23, 24, 25, 26, 27, 28, 29, 20, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                          10, 1,  2,  3,  4,  5,  6,  7,  8,  9,  0,  11, 12, 13, 14, 15, 16, 17, 18, 19});
}

Tensor repeated_ints() {
  std::vector<int64_t> v;
  for (int r = 0; r < 6; ++r)
    for (int64_t x : {2, 1, 2, 0, 1, 2, 0}) v.push_back(x);
  return longs(v);
}

TEST(Sort, IntegerDescendingTies) {
  auto [v, i] = sort(repeated_ints(), -1, true);
  expect_tensor(i, {42}, {12, 23, 21, 26, 19, 28, 16, 30, 14, 33, 35, 9,  7,  37, 5,  40, 2,  0,  1,  32, 36,
                          29, 39, 25, 22, 4,  8,  11, 15, 18, 17, 31, 13, 27, 34, 10, 20, 6,  38, 24, 3,  41});
}

TEST(Sort, StableOverloadKeepsTieOrder) {
  const ops::OpDef& op = ops::registry().get("aten::sort.stable");
  Stack out = ops::call(op, {repeated_ints(), true, -1, true});
  expect_tensor(out[1].to_tensor(), {42}, {0,  2,  5,  7,  9,  12, 14, 16, 19, 21, 23, 26, 28, 30,
                                           33, 35, 37, 40, 1,  4,  8,  11, 15, 18, 22, 25, 29, 32,
                                           36, 39, 3,  6,  10, 13, 17, 20, 24, 27, 31, 34, 38, 41});
}

TEST(Sort, BoolAndHalf) {
  auto [bv, bi] = sort(tensor<bool>({true, false, true, false}));
  expect_tensor(bv, {4}, {0, 0, 1, 1});
  expect_tensor(bi, {4}, {1, 3, 0, 2});
  auto [hv, hi] = sort(tensor<float>({1.5, -1, 0.25}).to(kHalf));
  EXPECT_EQ(hv.dtype(), kHalf);
  expect_tensor(hv, {3}, {-1, 0.25, 1.5});
  expect_tensor(hi, {3}, {1, 2, 0});
}

TEST(Sort, ZeroDimAndEmpty) {
  auto [v, i] = sort(scalar_tensor(5.0));
  expect_tensor(v, {}, {5});
  expect_tensor(i, {}, {0});
  auto [ev, ei] = sort(empty({0, 3}), 0);
  EXPECT_EQ(ei.sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST(Topk, LargestWithNaN) {
  auto [v, i] = topk(nan_input(), 2);
  expect_tensor(v, {2, 2}, {kNaN, 3, kNaN, kNaN});
  expect_tensor(i, {2, 2}, {1, 0, 3, 2});
}

TEST(Topk, Smallest) {
  auto [v, i] = topk(nan_input(), 2, -1, false);
  expect_tensor(v, {2, 2}, {-2, 1, -1, 0});
  expect_tensor(i, {2, 2}, {3, 2, 4, 0});
}

TEST(Topk, AlongDim0) {
  auto [v, i] = topk(nan_input(), 1, 0);
  expect_tensor(v, {1, 5}, {3, kNaN, kNaN, kNaN, 1});
  expect_tensor(i, {1, 5}, {0, 0, 1, 1, 0});
}

TEST(Topk, TiesMatchPyTorchOnBothAlgorithms) {
  auto [v1, i1] = topk(ones({400}), 5);  // partial_sort path (k * 64 <= n)
  expect_tensor(i1, {5}, {3, 4, 1, 0, 2});
  auto [v2, i2] = topk(longs({1, 3, 3, 2, 3}), 3, -1, true, false);  // nth_element path
  expect_tensor(i2, {3}, {2, 4, 1});
  std::vector<int64_t> r = {2, 0, 2, 0, 1, 0, 1, 1, 1, 0, 2, 2, 0, 0, 1, 2, 0, 0, 2, 0, 2, 2, 2, 2, 2,
                            2, 1, 2, 0, 0, 1, 0, 2, 0, 1, 0, 1, 2, 2, 1, 2, 0, 1, 1, 1, 2, 1, 1, 2, 1,
                            1, 2, 2, 1, 2, 2, 2, 1, 2, 2, 1, 1, 0, 0, 1, 2, 1, 1, 2, 1, 2, 2, 0, 1, 0,
                            2, 0, 1, 1, 2, 2, 2, 2, 1, 0, 2, 1, 1, 1, 2, 1, 1, 1, 1, 1, 2, 1, 1, 2, 1};
  auto [v3, i3] = topk(longs(r), 10);
  expect_tensor(i3, {10}, {79, 70, 71, 40, 38, 37, 75, 82, 85, 27});
}

TEST(Topk, MetaGivesShape) {
  auto [v, i] = topk(empty({4, 7}, kMeta), 3, 0);
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(i.dtype(), kInt64);
}

TEST(Nonzero, CoordinatesInRowMajorOrderNaNIsNonzero) {
  Tensor x = tensor<double>({0, kNaN, 0, -0.0, 2, 1}, {2, 3});
  Tensor r = nonzero(x);
  EXPECT_EQ(r.dtype(), kInt64);
  expect_tensor(r, {3, 2}, {0, 1, 1, 1, 1, 2});
}

TEST(Nonzero, ZeroDim) {
  EXPECT_EQ(nonzero(scalar_tensor(3.0)).sizes().vec(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(nonzero(scalar_tensor(0.0)).sizes().vec(), (std::vector<int64_t>{0, 0}));
}

TEST(Nonzero, MetaInputRaises) {
  EXPECT_THROW((void)nonzero(empty({3}, kMeta)), Error);
}

}  // namespace
}  // namespace ember
