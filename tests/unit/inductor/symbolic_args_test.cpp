// Tests of the inductor over sizes that single SymInt arguments and floor division make
// (Note [dynamic shapes], "The inductor over symbolic graphs"): a slice whose end is
// `s1 // 2` compiles once, its kernels computing Python's floor division from `ks`; and the
// parallel split of kernels over symbols is decided at run time, so sizes below and above
// the threshold both equal eager with two threads from one library.
#include <gtest/gtest.h>
#include <omp.h>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::LogCapture;

class InductorSymbolicArgs : public testing::CompileDirTest {};

TEST_F(InductorSymbolicArgs, AFloorDividedSliceEndCompilesOnceAndItsKernelsFloorDivideAtRunTime) {
  LogCapture logs;
  set_logs("dynamic");
  // x[:, : x.size(1) // 2] and x[:, x.size(1) // 2 :] as PyTorch spells them.
  auto f = [](const Tensor& x) {
    const SymInt half = sym_size(x, 1) / 2;
    return std::make_tuple((x.slice(1, std::nullopt, half) * 2.0 + 1.0).relu(), x.slice(1, half).sum({1}));
  };
  auto fn = compile(f, {.backend = "inductor", .name = "halves", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t n : {8, 9, 33, 100}) {
    Tensor x = randn({3, n});
    const auto [a, b] = fn(x);
    const auto [ea, eb] = f(x);
    const std::string what = "n " + std::to_string(n);
    expect_close(a, ea, 1e-5, 1e-5, what);
    expect_close(b, eb, 1e-5, 1e-5, what);
    EXPECT_EQ(a.sizes().vec(), ea.sizes().vec()) << what;
    EXPECT_EQ(a.strides().vec(), ea.strides().vec()) << what;
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  const std::string source = inductor::last_compile_report().source;
  EXPECT_NE(source.find("ks[1] / 2 - (ks[1] % 2 != 0 && (ks[1] < 0) != (2 < 0))"), std::string::npos) << source;
}

/// The parallel split of `k` kernels over symbols: the decision at run time in the source, and eager's
/// values at row counts below and above the threshold (32768 elements) from one library.
void expect_runtime_split(const char* name, const std::function<Tensor(const Tensor&)>& f,
                          const std::string& pragma) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  auto fn = compile(f, {.backend = "inductor", .name = name, .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t rows : {7, 100, 600, 5000}) {  // 448 .. 320000 elements
    Tensor x = randn({rows, 64});
    expect_close(fn(x), f(x), 1e-5, 1e-5, std::string(name) + " rows " + std::to_string(rows));
  }
  omp_set_num_threads(threads);
  EXPECT_EQ(fn.cache_size(), 1u);
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  const std::string source = inductor::last_compile_report().source;
  EXPECT_NE(source.find(pragma), std::string::npos) << source;
  EXPECT_EQ(source.find("#pragma omp parallel for schedule(static)\n"), std::string::npos)
      << "no split fixed at compile time from the example size\n"
      << source;
}

TEST_F(InductorSymbolicArgs, PointwiseKernelsOverSymbolsSplitAcrossThreadsByTheRuntimeSize) {
  expect_runtime_split("pw_split", [](const Tensor& x) { return (x * 2.0 - 1.0).relu(); },
                       "for_rows(numel >= 32768 && rows > 1, rows, [&](int64_t r) {");
}

TEST_F(InductorSymbolicArgs, RowKernelsOverSymbolsSplitAcrossThreadsByTheRuntimeSize) {
  expect_runtime_split("row_split", [](const Tensor& x) { return (x * x).sum({1}); },
                       "for_rows(rows > 1 && rows * red >= 32768, rows, [&](int64_t r) {");
}

TEST_F(InductorSymbolicArgs, AWholeTensorSumOverSymbolsSplitsItsRangeByTheRuntimeSize) {
  expect_runtime_split("all_split", [](const Tensor& x) { return x.sum(); }, "if (red >= 32768) {\n#pragma omp parallel num_threads");
}

}  // namespace
}  // namespace ember
