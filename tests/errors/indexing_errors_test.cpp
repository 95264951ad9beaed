// User mistakes in the indexing and random families raise ember::Error with PyTorch
// 1.13's message and exception kind; bad indices are caught before any memory access.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

using Idx = std::vector<std::optional<Tensor>>;

Tensor longs(std::vector<int64_t> v, IntArrayRef sizes = {}) { return tensor<int64_t>(v, sizes); }
Tensor x23() { return arange(6, kFloat).reshape({2, 3}); }

/// Runs f, expects an ember::Error of `kind` whose message contains `text`.
template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "expected an ember::Error containing: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}
constexpr ErrorKind kIndex = ErrorKind::IndexError;
constexpr ErrorKind kRuntime = ErrorKind::RuntimeError;

TEST(IndexingErrors, IndexSelectOutOfRangeAlongDim0) {
  expect_error([] { (void)index_select(x23(), 0, longs({2})); }, kIndex, "index out of range in self");
  expect_error([] { (void)index_select(x23(), 0, longs({-1})); }, kIndex, "index out of range in self");
}

TEST(IndexingErrors, IndexSelectOutOfRangeAlongDim1UsesAtenWording) {
  expect_error([] { (void)index_select(x23(), 1, longs({3})); }, kRuntime,
               "INDICES element is out of DATA bounds, id=3 axis_dim=3");
}

TEST(IndexingErrors, IndexSelectIndexDtypeAndRank) {
  expect_error([] { (void)index_select(x23(), 1, tensor<float>({1})); }, kRuntime,
               "index_select(): Expected dtype int32 or int64 for index");
  expect_error([] { (void)index_select(x23(), 1, longs({1}, {1, 1})); }, kIndex,
               "index_select(): Index is supposed to be a vector");
}

TEST(IndexingErrors, IndexSelectNamesOpAndUserLine) {
  const int line = __LINE__ + 2;
  try {
    (void)index_select(x23(), 0, longs({7}));
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("aten::index_select"), std::string::npos) << msg;
    EXPECT_NE(msg.find("indexing_errors_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
  }
}

TEST(IndexingErrors, GatherOutOfBounds) {
  expect_error([] { (void)gather(x23(), 1, longs({3}, {1, 1})); }, kRuntime,
               "index 3 is out of bounds for dimension 1 with size 3");
  expect_error([] { (void)gather(x23(), 1, longs({-1}, {1, 1})); }, kRuntime,
               "index -1 is out of bounds for dimension 1 with size 3");
}

TEST(IndexingErrors, GatherIndexDtypeRankAndSize) {
  expect_error([] { (void)gather(x23(), 1, tensor<int32_t>({1}, {1, 1})); }, kRuntime,
               "gather(): Expected dtype int64 for index");
  expect_error([] { (void)gather(x23(), 1, longs({1})); }, kRuntime,
               "Index tensor must have the same number of dimensions as input tensor");
  expect_error([] { (void)gather(x23(), 1, longs({1, 1, 1}, {3, 1})); }, kRuntime,
               "Size does not match at dimension 0 expected index [3, 1] to be smaller than self [2, 3] apart from "
               "dimension 1");
}

TEST(IndexingErrors, ScatterChecks) {
  expect_error([] { (void)scatter(x23(), 1, longs({3}, {1, 1}), ones({1, 1})); }, kRuntime,
               "index 3 is out of bounds for dimension 1 with size 3");
  expect_error([] { (void)scatter(x23(), 1, longs({1}, {1, 1}), ones({1, 1}, kDouble)); }, kRuntime,
               "scatter(): Expected self.dtype to be equal to src.dtype");
  expect_error([] { (void)scatter(x23(), 1, longs({1, 1, 1, 1}, {1, 4}), ones({1, 1})); }, kRuntime,
               "Expected index [1, 4] to be smaller than self [2, 3] apart from dimension 1 and to be smaller size "
               "than src [1, 1]");
  expect_error([] { (void)scatter(x23(), 1, longs(std::vector<int64_t>(9, 1), {3, 3}), Scalar(2.0)); }, kRuntime,
               "Expected index [3, 3] to be smaller than self [2, 3] apart from dimension 1");
  expect_error([] { (void)scatter_add(x23(), 1, tensor<int32_t>({1}, {1, 1}), ones({1, 1})); }, kRuntime,
               "scatter(): Expected dtype int64 for index");
}

TEST(IndexingErrors, IndexOutOfBoundsIsAnIndexError) {
  expect_error([] { (void)index(x23(), {longs({5})}); }, kIndex, "index 5 is out of bounds for dimension 0 with size 2");
  expect_error([] { (void)index(x23(), {longs({-3})}); }, kIndex,
               "index -3 is out of bounds for dimension 0 with size 2");
  expect_error([] { (void)index(x23(), {std::nullopt, longs({3})}); }, kIndex,
               "index 3 is out of bounds for dimension 1 with size 3");
}

TEST(IndexingErrors, IndexTensorTypesCountAndShapes) {
  expect_error([] { (void)index(x23(), {tensor<float>({1})}); }, kIndex,
               "tensors used as indices must be long, byte or bool tensors");
  expect_error([] { (void)index(x23(), {longs({0}), longs({0}), longs({0})}); }, kIndex,
               "too many indices for tensor of dimension 2 (got 3)");
  expect_error([] { (void)index(x23(), {tensor<bool>({true, false, true})}); }, kIndex,
               "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0");
  expect_error([] { (void)index(x23(), {longs({0, 1}), longs({0, 1, 2})}); }, kIndex,
               "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
}

TEST(IndexingErrors, IndexPutDtypeAndValueShape) {
  expect_error([] { (void)index_put(x23(), {longs({0})}, ones({3}, kDouble)); }, kRuntime,
               "Index put requires the source and destination dtypes match, got Float for the destination and Double "
               "for the source.");
  expect_error([] { (void)index_put(x23(), {longs({0})}, ones({4})); }, kRuntime,
               "shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result of shape [1, 3]");
}

TEST(IndexingErrors, IndexPutOutOfBoundsLeavesSelfUnchanged) {
  Tensor self = zeros({2, 3});
  expect_error([&] { (void)index_put_(self, {longs({0, 1}), longs({0, 7})}, ones({2}), true); }, kIndex,
               "index 7 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(self.to_vector<float>(), std::vector<float>(6, 0.0f));
}

TEST(IndexingErrors, SortAndTopkArguments) {
  expect_error([] { (void)sort(x23(), 2); }, kIndex, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  expect_error([] { (void)topk(x23(), 4); }, kRuntime, "selected index k out of range");
  expect_error([] { (void)topk(x23(), -1); }, kRuntime, "selected index k out of range");
  expect_error([] { (void)topk(tensor<bool>({true, false}), 1); }, kRuntime, "\"topk_cpu\" not implemented for 'Bool'");
}

TEST(RandomErrors, IntegerDtypesForRandAndRandn) {
  expect_error([] { (void)rand({3}, kInt64); }, kRuntime, "\"check_uniform_bounds\" not implemented for 'Long'");
  expect_error([] { (void)rand({3}, kBool); }, kRuntime, "\"check_uniform_bounds\" not implemented for 'Bool'");
  expect_error([] { (void)randn({3}, kInt64); }, kRuntime, "\"normal_kernel_cpu\" not implemented for 'Long'");
  expect_error([] { (void)rand({-1}); }, kRuntime, "Trying to create tensor with negative dimension -1");
}

TEST(RandomErrors, BernoulliProbabilities) {
  expect_error([] { (void)bernoulli(ones({3}, kInt64)); }, kRuntime,
               "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'");
  expect_error([] { (void)bernoulli(ones({3}) * 2.0); }, kRuntime,
               "Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
  expect_error([] { (void)bernoulli(ones({3}), 2.0); }, kRuntime, "bernoulli_ expects p to be in [0, 1], but got p=2");
}

TEST(RandomErrors, DropoutArguments) {
  expect_error([] { (void)dropout(ones({3}), 1.5, true); }, kRuntime,
               "dropout probability has to be between 0 and 1, but got 1.5");
  expect_error([] { (void)native_dropout(ones({3}), 1.5, true); }, kRuntime,
               "bernoulli_ expects p to be in [0, 1], but got p=-0.5");
  expect_error([] { (void)native_dropout(ones({3}, kInt64), 0.5, true); }, kRuntime,
               "result type Float can't be cast to the desired output type Long");
}

}  // namespace
}  // namespace ember
