// The CUDA cat and stack (a composite of unsqueeze and cat), sort and topk against Ember's
// CPU on the same inputs. cat/stack: every dim, every dtype, mixed dtypes promoted as the
// CPU's meta function does, strided, broadcast and channels-last inputs, legacy empty
// inputs, the CPU's errors. sort/topk: every dtype and dim, both directions, ties (the CUDA
// sort is always stable: its indices are the CPU's stable sort's), NaN and signed zeros in
// ATen's order, lines long enough for many network stages, strided and 0-dim inputs.
#include "data_helpers.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

/// `op(list, dim)` on the CPU and on the same tensors on the GPU.
std::string compare_list(const std::string& op, const std::vector<Tensor>& ts, int64_t dim) {
  return compare_ok(op, {ts, dim});
}

TEST_F(Gpu, CatMatchesTheCpuAlongEveryDimForEveryDtype) {
  for (ScalarType t : kAllDtypes)
    for (int64_t dim : {0, 1, 2, -1}) {
      std::vector<int64_t> a = {2, 3, 4}, b = a, c = a;
      const int64_t d = dim < 0 ? dim + 3 : dim;
      b[d] = 1;
      c[d] = 5;
      EXPECT_EQ(compare_list("aten::cat", {varied(a, t), varied(b, t, 7), varied(c, t, 11)}, dim), "")
          << t << " dim " << dim;
    }
}

TEST_F(Gpu, CatPromotesMixedDtypesAsTheCpu) {
  const std::vector<std::vector<ScalarType>> mixes = {
      {kFloat, kHalf, kInt64}, {kInt32, kBool}, {kHalf, kBFloat16}, {kUInt8, kInt8}, {kDouble, kFloat}};
  for (const auto& mix : mixes) {
    std::vector<Tensor> ts;
    for (size_t i = 0; i < mix.size(); ++i) ts.push_back(varied({2, 3}, mix[i], static_cast<int64_t>(i)));
    EXPECT_EQ(compare_list("aten::cat", ts, 1), "") << mix[0] << " " << mix[1];
  }
}

TEST_F(Gpu, CatOfStridedAndBroadcastInputsMatchesTheCpu) {
  const Tensor t = varied({4, 6}, kFloat).t();                // transposed
  const Tensor s = varied({6, 8}, kFloat).slice(1, 0, 8, 2);  // every other column
  const Tensor e = varied({6, 1}, kFloat).expand({6, 3});     // stride 0
  EXPECT_EQ(compare_list("aten::cat", {t, s, e}, 1), "");
  EXPECT_EQ(compare_list("aten::cat", {t.t(), s.t()}, 0), "");
}

TEST_F(Gpu, CatOfChannelsLastInputsGivesAChannelsLastResultAsTheCpu) {
  const Tensor a = varied({2, 4, 5, 3}, kHalf).permute({0, 3, 1, 2});
  const Tensor b = varied({2, 4, 5, 2}, kHalf, 3).permute({0, 3, 1, 2});
  EXPECT_EQ(compare_list("aten::cat", {a, b}, 1), "");
  EXPECT_EQ(compare_list("aten::cat", {a, a}, 0), "");
}

TEST_F(Gpu, CatSkipsLegacyEmptyInputsAndHandlesEmptyResults) {
  const Tensor x = varied({2, 3}, kFloat);
  EXPECT_EQ(compare_list("aten::cat", {empty({0}), x, empty({0})}, 1), "");
  EXPECT_EQ(compare_list("aten::cat", {empty({0}), empty({0})}, 0), "");
  EXPECT_EQ(compare_list("aten::cat", {empty({0, 3}), empty({0, 3})}, 0), "");
}

TEST_F(Gpu, CatRaisesTheCpusErrors) {
  const std::vector<Tensor> bad = {varied({2, 3}, kFloat), varied({2, 4}, kFloat)};
  const std::string cpu = testing::error_of([&] { cat(bad, 0); });
  const std::string gpu = testing::error_of([&] { cat({bad[0].cuda(), bad[1].cuda()}, 0); });
  EXPECT_EQ(gpu.substr(0, gpu.find('\n')), cpu.substr(0, cpu.find('\n')));
}

TEST_F(Gpu, StackMatchesTheCpuAlongEveryDimWithMixedDtypes) {
  for (int64_t dim : {0, 1, 2, -1})
    EXPECT_EQ(compare_list("aten::stack", {varied({2, 3}, kFloat), varied({3, 2}, kHalf, 5).t()}, dim), "") << dim;
  for (ScalarType t : kAllDtypes)
    EXPECT_EQ(compare_list("aten::stack", {varied({3}, t), varied({3}, t, 1), varied({3}, t, 2)}, 1), "") << t;
}

// --- sort / topk -----------------------------------------------------------------------------

Stack on_gpu(const Stack& s) {
  Stack g;
  for (const IValue& v : s) g.push_back(v.is_tensor() ? IValue(v.to_tensor().cuda()) : v);
  return g;
}

// tril/triu keep a triangle (a host-made mask broadcast over the batch dims) and repeat
// tiles its input: the CPU's values, NaN and -0.0 kept, for every dtype, any diagonal,
// strided input, batches and empty results.
TEST_F(Gpu, TrilTriuAndRepeatMatchTheCpuForEveryDtype) {
  for (ScalarType t : kAllDtypes) {
    for (const char* op : {"aten::tril", "aten::triu"}) {
      for (int64_t d : {-2, 0, 1, 5}) {
        EXPECT_EQ(compare_ok(op, {varied({2, 3, 5, 4}, t), d}), "") << op << " " << t << " diagonal " << d;
        EXPECT_EQ(compare_ok(op, {varied({6, 5}, t).t(), d}), "") << op << " " << t << " transposed";
      }
      EXPECT_EQ(compare_ok(op, {varied({0, 3}, t), int64_t{0}}), "") << op << " empty";
    }
    EXPECT_EQ(compare_ok("aten::repeat", {varied({2, 3}, t), std::vector<int64_t>{2, 1, 3}}), "") << t;
    EXPECT_EQ(compare_ok("aten::repeat", {varied({4, 3}, t).t(), std::vector<int64_t>{1, 2}}), "") << t;
    EXPECT_EQ(compare_ok("aten::repeat", {varied({2, 3}, t), std::vector<int64_t>{0, 2}}), "") << t;
  }
  const Tensor special = tensor<float>({NAN, -0.0f, 1.0f, INFINITY}, {2, 2});
  EXPECT_EQ(compare_ok("aten::triu", {special, int64_t{0}}), "");
}

TEST_F(Gpu, SortGivesTheCpusStableSortForEveryDtypeDimAndDirection) {
  // varied() repeats values, so every line has ties.
  for (ScalarType t : kAllDtypes)
    for (int64_t dim : {0, 1, 2, -1})
      for (bool desc : {false, true}) {
        const Stack args = {varied({5, 37, 3}, t), std::optional<bool>(true), dim, desc};
        EXPECT_EQ(compare_outputs("aten::sort.stable", args, on_gpu(args)), "") << t << " dim " << dim << " " << desc;
      }
}

TEST_F(Gpu, SortPutsNaNAboveEveryNumberAndKeepsSignedZerosInIndexOrder) {
  const std::vector<double> v = {3, NAN, -0.0, INFINITY, 0.0, -INFINITY, NAN, -2, 0.0, -0.0, 1e-30};
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
    for (bool desc : {false, true}) {
      const Stack args = {tensor(v, {11}, TensorOptions(kDouble)).to(t), std::optional<bool>(true), int64_t{0}, desc};
      EXPECT_EQ(compare_outputs("aten::sort.stable", args, on_gpu(args)), "") << t << " " << desc;
    }
}

TEST_F(Gpu, SortWithoutStableGivesTheCpusValuesAndTheStableIndices) {
  const Tensor x = varied({4, 50}, kFloat);
  const auto [values, indices] = sort(x.cuda(), 1, true);
  const auto [cpu_values, cpu_indices] = sort(x, 1, true);
  const Stack stable = call_op("aten::sort.stable", {x, std::optional<bool>(true), int64_t{1}, true});
  EXPECT_EQ(mismatch(values, cpu_values, kExact), "");
  EXPECT_EQ(mismatch(indices, stable[1].to_tensor(), kExact), "");
}

TEST_F(Gpu, SortOfLongLinesStridedInputsAndZeroDimMatchesTheCpu) {
  for (int64_t n : {1000, 4097, 70001}) {
    const Stack args = {rand({2, n}, TensorOptions(kFloat)).to(kHalf), std::optional<bool>(true), int64_t{1}, false};
    EXPECT_EQ(compare_outputs("aten::sort.stable", args, on_gpu(args)), "") << n;
  }
  const Tensor x = varied({6, 9}, kInt32);
  EXPECT_EQ(compare_outputs("aten::sort.stable", {x.t(), std::optional<bool>(true), int64_t{1}, true},
                            {x.cuda().t(), std::optional<bool>(true), int64_t{1}, true}),
            "");
  const Stack scalar = {varied({}, kDouble), std::optional<bool>(true), int64_t{0}, false};
  EXPECT_EQ(compare_outputs("aten::sort.stable", scalar, on_gpu(scalar)), "");
  const Stack empty_args = {empty({3, 0}), std::optional<bool>(true), int64_t{1}, false};
  EXPECT_EQ(compare_outputs("aten::sort.stable", empty_args, on_gpu(empty_args)), "");
}

/// A [rows, n] tensor whose lines hold distinct values (a permutation of 0..n-1, shifted).
Tensor distinct(int64_t rows, int64_t n, ScalarType t) {
  std::vector<double> v(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      v[r * n + i] = static_cast<double>((i * 37 + r * 11) % n) - static_cast<double>(n / 2);
  return tensor(v, {rows, n}, TensorOptions(kDouble)).to(t);
}

TEST_F(Gpu, TopkMatchesTheCpuForLargestAndSmallestWithDistinctValues) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt8})
    for (int64_t k : {1, 3, 101})
      for (bool largest : {true, false}) {
        const Stack args = {distinct(3, 101, t), k, int64_t{1}, largest, true};
        EXPECT_EQ(compare_outputs("aten::topk", args, on_gpu(args)), "") << t << " k " << k << " " << largest;
      }
  // Along dim 0 of a transposed input.
  const Tensor x = distinct(4, 29, kFloat);
  EXPECT_EQ(compare_outputs("aten::topk", {x.t(), int64_t{5}, int64_t{0}, true, true},
                            {x.cuda().t(), int64_t{5}, int64_t{0}, true, true}),
            "");
}

TEST_F(Gpu, TopkWithTiesGivesTheCpusValuesAndUnsortedTopkTheSameSet) {
  const Tensor x = varied({3, 60}, kFloat);
  const auto [values, indices] = topk(x.cuda(), 7, 1, true, true);
  const auto [cpu_values, cpu_indices] = topk(x, 7, 1, true, true);
  EXPECT_EQ(mismatch(values, cpu_values, kExact), "");
  // Unsorted: the same elements in some order (the CUDA kernel returns them sorted).
  const Tensor d = distinct(3, 60, kFloat);
  const auto [u_values, u_indices] = topk(d.cuda(), 9, 1, false, false);
  const auto [c_values, c_indices] = topk(d, 9, 1, false, false);
  EXPECT_EQ(mismatch(std::get<0>(sort(u_values, 1, false)), std::get<0>(sort(c_values, 1, false)), kExact), "");
  EXPECT_EQ(mismatch(std::get<0>(sort(u_indices, 1, false)), std::get<0>(sort(c_indices, 1, false)), kExact), "");
}

TEST_F(Gpu, TopkOfZeroAndOutOfRangeKBehaveAsOnTheCpu) {
  const Stack zero = {distinct(2, 5, kFloat), int64_t{0}, int64_t{1}, true, true};
  EXPECT_EQ(compare_outputs("aten::topk", zero, on_gpu(zero)), "");
  const Tensor x = distinct(2, 5, kFloat);
  const std::string cpu = testing::error_of([&] { topk(x, 6, 1, true, true); });
  const std::string gpu = testing::error_of([&] { topk(x.cuda(), 6, 1, true, true); });
  EXPECT_EQ(gpu.substr(0, gpu.find('\n')), cpu.substr(0, cpu.find('\n')));
}

}  // namespace
}  // namespace ember::gpu_test
