// Core ATen ops whose behaviour the generated conformance cases cannot hold: ops
// returning a Scalar (_local_scalar_dense) or reading a tensor's geometry (sym_size.int,
// sym_stride.int, sym_numel, sym_storage_offset, sym_is_contiguous), randperm's contract
// with the generator, and
// the public functions of the ops added for the Core ATen set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/compile.h"
#include "ember/ember.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember {
namespace {

TEST(CoreOps, ALikeOfANonDenseTensorKeepsItsDimsOrderAsPyTorchs) {
  // PyTorch's empty_like (and so clone, zeros_like, full_like, flip): a tensor that is not
  // non-overlapping and dense gets dense strides in its own dims' order
  // (infer_dense_strides), not contiguous ones. PyTorch 1.13 and 2.11 both give (1, 24, 8).
  const Tensor x = randn({4, 6, 8}).slice(1, 0, 6, 2).permute({2, 0, 1});
  ASSERT_EQ(x.strides().vec(), (std::vector<int64_t>{1, 48, 16}));
  const std::vector<int64_t> want{1, 24, 8};
  EXPECT_EQ(x.clone().strides().vec(), want);
  EXPECT_EQ(flip(x, {0}).strides().vec(), want);
  EXPECT_EQ(empty_like(x).strides().vec(), want);
  EXPECT_EQ(zeros_like(x).strides().vec(), want);
  // A dense layout is kept as it is (PyTorch: zeros_like of a transpose is transposed).
  const Tensor t = randn({3, 4}).t();
  EXPECT_EQ(zeros_like(t).strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(full_like(t, 2.0).strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(x.clone().contiguous().to_vector<float>(), x.contiguous().to_vector<float>());
}

TEST(CoreOps, LocalScalarDenseReadsTheOneElementInItsDtype) {
  const Scalar f = _local_scalar_dense(full({}, 2.5));
  EXPECT_TRUE(f.is_floating_point());
  EXPECT_EQ(f.to_double(), 2.5);
  const Scalar i = _local_scalar_dense(full({1, 1}, int64_t{-7}, TensorOptions(kLong)));
  EXPECT_TRUE(i.is_integral());
  EXPECT_EQ(i.to_long(), -7);
  EXPECT_TRUE(_local_scalar_dense(full({}, true)).to_bool());
  // Through the registry by its ATen name, as a graph from PyTorch calls it.
  const Stack out = ops::call(ops::registry().get("aten::_local_scalar_dense"), {full({}, 0.25, TensorOptions(kDouble))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_scalar().to_double(), 0.25);
}

TEST(CoreOps, LocalScalarDenseOfSeveralElementsIsAUserError) {
  EXPECT_THROW(_local_scalar_dense(zeros({3})), Error);
  EXPECT_THROW(_local_scalar_dense(zeros({0})), Error);
}

/// The one result of Core ATen op `name`, called through the registry as a graph from
/// PyTorch calls it.
IValue call_read(const char* name, Stack args) { return ops::call(ops::registry().get(name), std::move(args)).at(0); }

TEST(CoreOps, GeometryReadsGiveSizesStridesNumelAndOffsetAsPyTorch) {
  const Tensor x = randn({3, 4}).t();  // sizes [4, 3], strides [1, 4]
  EXPECT_EQ(call_read("aten::sym_size.int", {x, int64_t{-1}}).to_int(), 3);
  EXPECT_EQ(call_read("aten::sym_stride.int", {x, int64_t{1}}).to_int(), 4);
  EXPECT_EQ(call_read("aten::sym_numel", {x}).to_int(), 12);
  EXPECT_EQ(call_read("aten::sym_storage_offset", {x.select(0, 2)}).to_int(), 2);
  try {
    call_read("aten::sym_size.int", {x, int64_t{2}});
    ADD_FAILURE() << "no error for dim 2 of a 2-D tensor";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::IndexError);
    EXPECT_NE(std::string(e.what()).find("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
              std::string::npos)
        << e.what();
  }
}

TEST(CoreOps, SymIsContiguousFollowsEachMemoryFormatAsPyTorch) {
  // PyTorch 2.11's answers for the same tensors.
  const auto contiguous_as = [](const Tensor& t, const char* format) {
    return call_read("aten::sym_is_contiguous", {t, std::string(format)}).to_bool();
  };
  const Tensor x = randn({2, 3, 4, 5});
  EXPECT_FALSE(contiguous_as(x, "channels_last"));
  const Tensor nhwc = ops::call(ops::registry().get("aten::clone"), {x, std::string("channels_last")}).at(0).to_tensor();
  EXPECT_TRUE(contiguous_as(nhwc, "channels_last"));
  EXPECT_FALSE(contiguous_as(nhwc, "contiguous_format"));
  EXPECT_TRUE(contiguous_as(randn({2, 3, 1, 1}), "channels_last"));  // size-1 dims skipped
  EXPECT_FALSE(contiguous_as(randn({0, 3, 4, 5}), "channels_last"));
  EXPECT_FALSE(contiguous_as(randn({3, 4}), "channels_last"));  // another rank
  EXPECT_TRUE(contiguous_as(randn({3, 1}).t(), "contiguous_format"));
  EXPECT_FALSE(contiguous_as(randn({3, 4}).t(), "contiguous_format"));
  EXPECT_TRUE(call_read("aten::sym_is_contiguous", {x}).to_bool());  // the default format
}

TEST(CoreOps, GeometryReadsUnderDynamicCaptureAreSizeExpressionsNotNodes) {
  auto f = [](const Tensor& x) {
    const SymInt rows = call_read("aten::sym_size.int", {x, int64_t{0}}).to_sym_int();
    const SymInt n = call_read("aten::sym_numel", {x}).to_sym_int();
    return x.reshape({n}) * 2.0 + x.reshape({rows, -1}).sum();
  };
  auto fn = compile(f, {.backend = "inductor", .dynamic = true});
  for (int64_t rows : {3, 5, 8}) {
    const Tensor x = randn({rows, 4});
    const Tensor got = fn(x), want = f(x);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(max((got - want).abs()).item().to_double(), 1e-5);
  }
  EXPECT_EQ(fn.cache_size(), 1u);
}

TEST(CoreOps, RandpermIsAPermutationThatTheSeedReproduces) {
  manual_seed(123);
  const Tensor a = randperm(1000);
  EXPECT_EQ(a.dtype(), kLong);
  EXPECT_EQ(a.sizes(), IntArrayRef({1000}));
  std::vector<int64_t> v = a.to_vector<int64_t>();
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  // Not the identity, and the next call (the generator moved on) differs.
  int64_t fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += v[static_cast<size_t>(i)] == i;
  EXPECT_LT(fixed, 20);
  EXPECT_NE(randperm(1000).to_vector<int64_t>(), v);
  manual_seed(123);
  EXPECT_EQ(randperm(1000).to_vector<int64_t>(), v);
}

TEST(CoreOps, RandpermIsUniformOverPositions) {
  // Over many draws of n = 4, each value lands in each position about a quarter of the time.
  manual_seed(7);
  const int draws = 4000;
  int64_t counts[4][4] = {};
  for (int d = 0; d < draws; ++d) {
    const std::vector<int64_t> p = randperm(4).to_vector<int64_t>();
    for (int i = 0; i < 4; ++i) ++counts[i][p[static_cast<size_t>(i)]];
  }
  for (auto& row : counts)
    for (int64_t c : row) EXPECT_NEAR(static_cast<double>(c) / draws, 0.25, 0.04);
}

TEST(CoreOps, RandpermRejectsWhatPyTorchRejects) {
  EXPECT_THROW(randperm(-1), Error);
  EXPECT_THROW(randperm(5, TensorOptions(kBool)), Error);
  EXPECT_THROW(randperm(2050, TensorOptions(kHalf)), Error);
  EXPECT_THROW(randperm(257, TensorOptions(kUInt8)), Error);
  EXPECT_EQ(randperm(256, TensorOptions(kUInt8)).numel(), 256);
}

TEST(CoreOps, IsinfIsTrueOnlyForInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = tensor<float>({inf, -inf, std::nanf(""), 0.f, 3e38f}, {5});
  EXPECT_EQ(isinf(x).to_vector<bool>(), (std::vector<bool>{true, true, false, false, false}));
  EXPECT_EQ(isinf(full({3}, int64_t{5}, TensorOptions(kLong))).to_vector<bool>(), (std::vector<bool>(3, false)));
}

TEST(CoreOps, HardtanhClampsInSelfsDtypeAndMinAboveMaxGivesMax) {
  const Tensor x = tensor<int64_t>({-3, 0, 2, 5}, {4});
  const Tensor y = hardtanh(x, -1.5, 2.5);
  EXPECT_EQ(y.dtype(), kLong);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 2, 2}));
  EXPECT_EQ(hardtanh(tensor<float>({-2.f, 0.f, 2.f}, {3}), 1, -1).to_vector<float>(),
            (std::vector<float>{-1.f, -1.f, -1.f}));
}

TEST(CoreOps, AnyDimsWithAnEmptyListReducesNothing) {
  const Tensor x = tensor<float>({1.f, 0.f, 0.f, 0.f}, {2, 2});
  EXPECT_EQ(any(x, std::vector<int64_t>{}).sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(any(x, std::nullopt).dim(), 0);
  EXPECT_EQ(any(x, std::vector<int64_t>{0, 1}, true).sizes(), IntArrayRef({1, 1}));
}

TEST(CoreOps, Atan2OutWritesIntoOutAndRejectsAnotherShape) {
  Tensor out = zeros({3});
  const Tensor a = tensor<float>({1.f, -1.f, 0.f}, {3}), b = tensor<float>({1.f, 1.f, -1.f}, {3});
  Tensor& r = atan2_out(out, a, b);
  EXPECT_TRUE(r.is_same(out));
  EXPECT_NEAR(out.to_vector<float>()[0], M_PI / 4, 1e-6);
  Tensor wrong = zeros({2});
  EXPECT_THROW(atan2_out(wrong, a, b), Error);
}

}  // namespace
}  // namespace ember
