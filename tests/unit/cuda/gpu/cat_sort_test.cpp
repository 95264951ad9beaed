// The CUDA cat and stack (a composite of unsqueeze and cat) against Ember's CPU on the same
// inputs: every dim, every dtype, mixed dtypes promoted as the CPU's meta function does,
// strided, broadcast and channels-last inputs, legacy empty inputs, and the CPU's errors.
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
  const Tensor t = varied({4, 6}, kFloat).t();                                     // transposed
  const Tensor s = varied({6, 8}, kFloat).slice(1, 0, 8, 2);                       // every other column
  const Tensor e = varied({6, 1}, kFloat).expand({6, 3});                          // stride 0
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
    EXPECT_EQ(compare_list("aten::stack", {varied({2, 3}, kFloat), varied({3, 2}, kHalf, 5).t()}, dim),
              "")
        << dim;
  for (ScalarType t : kAllDtypes)
    EXPECT_EQ(compare_list("aten::stack", {varied({3}, t), varied({3}, t, 1), varied({3}, t, 2)}, 1), "") << t;
}

}  // namespace
}  // namespace ember::gpu_test
