// Tests of the inductor over sizes that single SymInt arguments and floor division make
// (Note [dynamic shapes], "The inductor over symbolic graphs"): a slice whose end is
// `s1 // 2` compiles once, its kernels computing Python's floor division from `ks`.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ember
