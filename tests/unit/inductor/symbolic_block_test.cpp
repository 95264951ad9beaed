// W10's shape in small: a GPT-2 block (nn::GPT2Block, whose attention reads the sequence
// length with ember::sym_size) compiled with dynamic=true under the inductor serves every
// sequence length from one compile: its views, the causal mask and the reshapes of
// linear/matmul of 3-D and 4-D inputs keep the length symbolic (Note [dynamic shapes],
// "Symbolic int lists"), and every length gives eager's values, sizes and strides.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::LogCapture;

class InductorSymbolicBlock : public testing::CompileDirTest {};

TEST_F(InductorSymbolicBlock, Gpt2BlockCompilesOnceForSeveralSequenceLengthsAndMatchesEager) {
  manual_seed(0);
  nn::GPT2Block block(64, 4, 128);
  block.eval();
  LogCapture logs;
  set_logs("dynamic,perf_hints");
  auto fn = compile([&](const Tensor& x) { return block.forward(x); },
                    {.backend = "inductor", .name = "gpt", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  NoGradGuard no_grad;  // inference, as W10 runs it
  for (int64_t t : {5, 17, 40, 64, 5}) {
    Tensor x = randn({1, t, 64});
    Tensor y = fn(x);
    Tensor expected = block.forward(x);
    const std::string what = "T " + std::to_string(t);
    expect_close(y, expected, 1e-4, 1e-4, what);
    ASSERT_EQ(y.strides().vec(), expected.strides().vec()) << what;
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one symbolic entry for every length\n" << logs.text();
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  EXPECT_NE(inductor::last_compile_report().source.find("ks[0]"), std::string::npos)
      << "the kernels read the length at run time";
}

TEST_F(InductorSymbolicBlock, Gpt2BlockUnderAotEagerCompilesOnceAndMatchesEager) {
  manual_seed(0);
  nn::GPT2Block block(32, 2, 64);
  block.eval();
  auto fn = compile([&](const Tensor& x) { return block.forward(x); },
                    {.backend = "aot_eager", .name = "gpt_aot", .arg_names = {"x"}, .dynamic = true});
  for (int64_t t : {3, 12, 31}) {
    Tensor x = randn({2, t, 32});
    Tensor y = fn(x);
    Tensor expected = block.forward(x);
    expect_close(y, expected, 1e-5, 1e-5, "T " + std::to_string(t));
    ASSERT_EQ(y.strides().vec(), expected.strides().vec());
  }
  EXPECT_EQ(fn.cache_size(), 1u);
}

}  // namespace
}  // namespace ember
