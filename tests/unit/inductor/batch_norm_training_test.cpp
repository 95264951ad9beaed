// Batch norm in training mode through the inductor (graph_passes.cpp's
// split_batch_norm_training): the statistics are one extern call of
// batch_norm_update_stats, the normalization is eager's affine map as pointwise ops that
// fuse with the readers (relu, a residual add); outputs, saved statistics and running
// stats equal eager's. See Note [inductor], "Training graphs".
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using BatchNormTrainingTest = testing::CompileDirTest;

size_t extern_count(const inductor::CompileReport& r, const std::string& op) {
  size_t n = 0;
  for (const std::string& e : r.extern_calls) n += e == op;
  return n;
}

/// The kernel that computes `node` (a graph node's name), or nullptr.
const std::vector<std::string>* kernel_of(const inductor::CompileReport& r, const std::string& node) {
  for (const auto& k : r.kernels)
    for (const std::string& n : k.second)
      if (n == node) return &k.second;
  return nullptr;
}

/// native_batch_norm's three outputs, relu of the first, and the running stats after the
/// call, of `x` at `dtype`: the same parameters for the eager and the compiled call.
struct BatchNormCall {
  std::vector<Tensor> outs;
  Tensor running_mean, running_var;
};

BatchNormCall run_batch_norm(const Tensor& x, const Tensor& residual, bool compiled) {
  const ScalarType dt = x.dtype();
  manual_seed(5);
  const int64_t C = x.size(1);
  Tensor w = randn({C}, dt), b = randn({C}, dt), rm = randn({C}, dt), rv = rand({C}, dt) + 0.5;
  auto fn = [](const Tensor& x, const Tensor& r, const Tensor& w, const Tensor& b, const Tensor& rm,
               const Tensor& rv) {
    auto [y, mean, invstd] = native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
    return std::vector<Tensor>{(y + r).relu(), y, mean, invstd};
  };
  NoGradGuard no_grad;
  std::vector<Tensor> outs =
      compiled ? compile(fn, {.backend = "inductor"})(x, residual, w, b, rm, rv) : fn(x, residual, w, b, rm, rv);
  return {outs, rm, rv};
}

class BatchNormTrainingCase : public BatchNormTrainingTest, public ::testing::WithParamInterface<ScalarType> {};

TEST_P(BatchNormTrainingCase, StatisticsAreOneExternCallAndTheAffineMapFusesWithItsReadersEqualToEager) {
  const ScalarType dt = GetParam();
  testing::LogCapture logs("inductor,fusion,schedule");
  // Odd sizes (vector tails); the residual is read transposed.
  const Tensor x = randn({5, 3, 11, 9}, dt) * 2 + 3, r = randn({5, 3, 9, 11}, dt).transpose(2, 3);
  const BatchNormCall want = run_batch_norm(x, r, false);
  const BatchNormCall got = run_batch_norm(x, r, true);
  const inductor::CompileReport rep = inductor::last_compile_report();
  EXPECT_EQ(extern_count(rep, "aten::batch_norm_update_stats"), 1u) << logs.text();
  EXPECT_EQ(extern_count(rep, "aten::native_batch_norm"), 0u) << logs.text();
  // relu(y + r) is computed in one kernel with the affine map that makes y.
  const std::vector<std::string>* k = kernel_of(rep, "relu");
  ASSERT_NE(k, nullptr) << logs.text();
  EXPECT_TRUE(std::any_of(k->begin(), k->end(), [](const std::string& n) { return n.starts_with("mul"); }))
      << "x * alpha in relu's kernel\n"
      << logs.text();
  const double tol = dt == kFloat ? 1e-6 : 1e-13;
  const char* names[] = {"relu(y + r)", "y", "save_mean", "save_invstd"};
  ASSERT_EQ(got.outs.size(), want.outs.size());
  for (size_t i = 0; i < got.outs.size(); ++i) {
    expect_close(got.outs[i], want.outs[i], tol, tol, names[i]);
    EXPECT_EQ(got.outs[i].strides().vec(), want.outs[i].strides().vec()) << names[i];
  }
  // The mean is eager's sum in eager's order: equal, not merely close.
  EXPECT_EQ(got.outs[2].to(kDouble).to_vector<double>(), want.outs[2].to(kDouble).to_vector<double>());
  expect_close(got.running_mean, want.running_mean, 0, 0, "running_mean");
  expect_close(got.running_var, want.running_var, tol, 0, "running_var");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BatchNormTrainingCase, ::testing::Values(kFloat, kDouble),
                         [](const ::testing::TestParamInfo<ScalarType>& i) { return i.param == kFloat ? "F32" : "F64"; });

TEST_F(BatchNormTrainingTest, BatchNormWithoutAffineOrRunningStatsSplitsToo) {
  auto fn = [](const Tensor& x) {
    auto [y, mean, invstd] = native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1,
                                               1e-3);
    return std::vector<Tensor>{y.sigmoid(), mean, invstd};
  };
  NoGradGuard no_grad;
  const Tensor x = randn({7, 4}) - 1;
  const std::vector<Tensor> got = compile(fn, {.backend = "inductor"})(x), want = fn(x);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), "aten::batch_norm_update_stats"), 1u);
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-6, 1e-6, "output " + std::to_string(i));
}

TEST_F(BatchNormTrainingTest, ABatchNormOfHalfOrTransposedInputOrInEvalModeIsNotSplit) {
  // float16 stays the eager kernel's (the generated code computes in f32/f64); so does a
  // transposed input, whose affine map would follow its strides where eager's output is
  // contiguous; eval mode is the AOT stage's affine map (Note [aot]), never a statistics call.
  auto fn = [](const Tensor& x, const Tensor& rm, const Tensor& rv, bool training) {
    return std::get<0>(native_batch_norm(x, std::nullopt, std::nullopt, rm, rv, training, 0.1, 1e-5));
  };
  NoGradGuard no_grad;
  const Tensor rm = zeros({3}), rv = ones({3});
  compile(fn, {.backend = "inductor"})(randn({4, 3, 5}).to(kHalf), rm, rv, true);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), "aten::native_batch_norm"), 1u);
  const Tensor xt = randn({4, 5, 3}).transpose(1, 2);
  const Tensor got = compile(fn, {.backend = "inductor"})(xt, rm.clone(), rv.clone(), true);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), "aten::native_batch_norm"), 1u);
  EXPECT_EQ(got.strides().vec(), fn(xt, rm.clone(), rv.clone(), true).strides().vec());
  compile(fn, {.backend = "inductor"})(randn({4, 3, 5}), rm, rv, false);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), "aten::batch_norm_update_stats"), 0u);
}

TEST_F(BatchNormTrainingTest, TheCompilerBisectorCanDisableTheSplit) {
  testing::LogCapture logs("inductor");
  config().inductor.bisect_max_graph_passes = 0;
  auto fn = [](const Tensor& x) {
    return std::get<0>(native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5));
  };
  NoGradGuard no_grad;
  const Tensor x = randn({4, 3, 5});
  expect_close(compile(fn, {.backend = "inductor"})(x), fn(x), 0, 0, "the eager kernel's result");
  config().inductor.bisect_max_graph_passes = -1;
  EXPECT_EQ(extern_count(inductor::last_compile_report(), "aten::native_batch_norm"), 1u);
  EXPECT_NE(logs.text().find("graph pass skipped: split_batch_norm_training on aten::native_batch_norm"),
            std::string::npos)
      << logs.text();
}

}  // namespace
}  // namespace ember
