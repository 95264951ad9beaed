// Freezing (inductor.freezing, TORCHINDUCTOR_FREEZING): an inference graph's parameters are
// constants, its weight-only calls are folded, and each float32 GEMM runs on a weight packed
// once into oneDNN's blocked layout with its epilogue (bias, ReLU, GELU, a residual add) as
// post-ops. Compiled with freezing on and off, each case equals eager (values within
// PyTorch's float32 tolerance, dtypes, sizes, strides); training graphs ignore the knob.
// See Note [freezing] (docs/notes/inductor.md).
#include <gtest/gtest.h>
#include <omp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/blocks.h"
#include "inductor/freezing.h"
#include "inductor/inductor.h"
#include "kernels/cpu/packed_conv.h"
#include "kernels/cpu/packed_linear.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using FreezingTest = testing::CompileDirTest;

/// A module whose forward is `fn(x, fc)`: one Linear with a chosen epilogue.
class LinearWith : public nn::UnaryModule {
 public:
  LinearWith(int64_t in, int64_t out, std::function<Tensor(const Tensor&, nn::Linear&)> fn)
      : fc(register_module("fc", std::make_shared<nn::Linear>(in, out))), fn_(std::move(fn)) {}
  Tensor forward(const Tensor& x) override { return fn_(x, *fc); }
  std::string name() const override { return "LinearWith"; }
  std::shared_ptr<nn::Linear> fc;

 private:
  std::function<Tensor(const Tensor&, nn::Linear&)> fn_;
};

Tensor run_module(nn::UnaryModule& m, const Tensor& x) { return m.forward(x); }

/// Compiles `m` with freezing off, on with the packed primitive forced, on with the
/// unpacked calls forced, and on with the timed choice (each a fresh compile), calls each twice under NoGradGuard and expects
/// eager's values (float32: rtol 1.3e-6, atol 1e-5), dtype, sizes and strides. Returns the
/// report of the frozen compile.
inductor::CompileReport check_equal_eager(nn::UnaryModule& m, const Tensor& x) {
  m.eval();
  NoGradGuard no_grad;
  const Tensor want = m.forward(x);
  inductor::CompileReport frozen;
  for (const char* mode : {"off", "packed", "unpacked", "timed"}) {
    config().inductor.freezing = mode[0] != 'o';
    if (mode[0] == 'p' || mode[0] == 'u') inductor::force_frozen_linear_choice(mode[0] == 'p');
    const int64_t packed_runs = inductor::frozen_linear_runs(true);
    auto compiled = compile(run_module, {.backend = "inductor"});
    for (int call = 0; call < 2; ++call) {
      const Tensor got = compiled(m, x);
      EXPECT_EQ(got.strides().vec(), want.strides().vec()) << "freezing " << mode;
      expect_close(got, want, 1.3e-6, 1e-5, std::string("freezing ") + mode);
    }
    if (mode[0] == 'p') {
      frozen = inductor::last_compile_report();
      EXPECT_EQ(inductor::frozen_linear_runs(true) - packed_runs, 2 * static_cast<int64_t>(frozen.frozen_linears.size()))
          << "every frozen linear ran packed";
    }
    inductor::force_frozen_linear_choice(std::nullopt);
  }
  config().inductor.freezing = false;
  return frozen;
}

TEST_F(FreezingTest, LinearEqualsEagerWithAPackedWeight) {
  manual_seed(1);
  LinearWith m(48, 40, [](const Tensor& x, nn::Linear& fc) { return fc.forward(x); });
  const inductor::CompileReport r = check_equal_eager(m, randn({24, 48}));
  ASSERT_EQ(r.frozen_linears.size(), 1u);
  EXPECT_NE(r.frozen_linears[0].find("24x48x40 +bias"), std::string::npos) << r.frozen_linears[0];
}

TEST_F(FreezingTest, LinearReluRunsTheReluAsAPostOp) {
  manual_seed(2);
  LinearWith m(48, 40, [](const Tensor& x, nn::Linear& fc) { return relu(fc.forward(x)); });
  const inductor::CompileReport r = check_equal_eager(m, randn({24, 48}));
  ASSERT_EQ(r.frozen_linears.size(), 1u);
  EXPECT_NE(r.frozen_linears[0].find("+bias +relu"), std::string::npos) << r.frozen_linears[0];
  EXPECT_TRUE(r.kernels.empty()) << "the epilogue needs no generated kernel";
}

TEST_F(FreezingTest, LinearGeluInBothFormsRunsAsAPostOp) {
  for (const char* approximate : {"none", "tanh"}) {
    manual_seed(3);
    LinearWith m(64, 72, [approximate](const Tensor& x, nn::Linear& fc) { return gelu(fc.forward(x), approximate); });
    const inductor::CompileReport r = check_equal_eager(m, randn({16, 64}) * 2);
    ASSERT_EQ(r.frozen_linears.size(), 1u);
    const std::string form = std::string("approximate ") + approximate;
    EXPECT_NE(r.frozen_linears[0].find(std::string("+bias +gelu_") + (approximate[0] == 'n' ? "erf" : "tanh")),
              std::string::npos)
        << form << ": " << r.frozen_linears[0];
  }
}

TEST_F(FreezingTest, LinearBiasAndResidualAddRunInsideTheGemm) {
  manual_seed(4);
  // The residual is the input itself, computed before the GEMM: a binary post-op.
  LinearWith m(40, 40, [](const Tensor& x, nn::Linear& fc) { return x + fc.forward(x); });
  const inductor::CompileReport r = check_equal_eager(m, randn({20, 40}));
  ASSERT_EQ(r.frozen_linears.size(), 1u);
  EXPECT_NE(r.frozen_linears[0].find("+bias +add"), std::string::npos) << r.frozen_linears[0];
  EXPECT_TRUE(r.kernels.empty());
}

TEST_F(FreezingTest, MlpBlockOf3DInputEqualsEagerAndPacksBothGemms) {
  // W4's block (layer norm, fc1 + GELU, fc2 + residual) over a 3-D input: the GEMMs read
  // views of the activations and write views back.
  manual_seed(5);
  nn::MLPBlock m(32, 96);
  const inductor::CompileReport r = check_equal_eager(m, randn({3, 7, 32}));
  ASSERT_EQ(r.frozen_linears.size(), 2u);
  EXPECT_NE(r.frozen_linears[0].find("21x32x96 +bias +gelu_erf"), std::string::npos) << r.frozen_linears[0];
  EXPECT_NE(r.frozen_linears[1].find("21x96x32 +bias +add"), std::string::npos) << r.frozen_linears[1];
}

TEST_F(FreezingTest, Gpt2BlockEqualsEager) {
  manual_seed(6);
  nn::GPT2Block m(32, 2, 64);
  const inductor::CompileReport r = check_equal_eager(m, randn({2, 8, 32}));
  EXPECT_EQ(r.frozen_linears.size(), 4u) << "c_attn, attention's c_proj, c_fc and the MLP's c_proj";
}

/// A ResNet basic block in eval mode whose batch norms hold statistics and affine
/// parameters away from the identity, so that folding them shows.
std::shared_ptr<nn::BasicBlock> basic_block_with_statistics(int64_t channels) {
  auto m = std::make_shared<nn::BasicBlock>(channels);
  NoGradGuard no_grad;
  for (nn::BatchNorm2d* bn : {m->bn1.get(), m->bn2.get()}) {
    bn->tensor("running_mean").copy_(randn({channels}) * 0.3);
    bn->tensor("running_var").copy_(rand({channels}) + 0.5);
    bn->tensor("weight").copy_(randn({channels}) * 0.5 + 1);
    bn->tensor("bias").copy_(randn({channels}) * 0.2);
  }
  return m;
}

TEST_F(FreezingTest, ResNetBasicBlockFoldsBatchNormIntoItsConvolutionsAndEqualsEager) {
  // W6's block: conv -> bn -> relu -> conv -> bn -> + x -> relu. Each batch norm (eval) is
  // folded into its convolution's weight and bias, the relu and the residual run as the
  // primitive's post-ops, and no kernel is left; NCHW and channels_last inputs, and 24
  // channels (not whole blocks of 16 or 8: the layouts are oneDNN's choice, and the
  // intermediate may be reordered between the two primitives).
  for (const auto& [channels_last, channels] : {std::pair{false, 16}, std::pair{true, 16}, std::pair{false, 24}}) {
    manual_seed(11);
    std::shared_ptr<nn::BasicBlock> m = basic_block_with_statistics(channels);
    Tensor x = randn({2, channels, 10, 10});
    if (channels_last) x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});  // NHWC memory
    const int64_t packs = kernels::cpu::PackedConv::packs();
    const inductor::CompileReport r = check_equal_eager(*m, x);
    const std::string layout = std::string(channels_last ? "channels_last" : "NCHW") + ", " +
                               std::to_string(channels) + " channels";
    // The two convolutions run as one step, conv2 reading conv1's output in oneDNN's layout.
    ASSERT_EQ(r.frozen_linears.size(), 1u) << layout;
    const std::string& text = r.frozen_linears[0];
    const std::string c = std::to_string(channels);
    EXPECT_NE(text.find("conv 2x" + c + "x10x10 -> " + c + " 3x3"), std::string::npos) << text;
    EXPECT_NE(text.find("+bias +relu, weight "), std::string::npos) << text;
    EXPECT_NE(text.find("; then %"), std::string::npos) << text;
    EXPECT_NE(text.find("+bias +sum +relu, weight "), std::string::npos) << text;
    EXPECT_EQ(text.find(" nhwc ") != std::string::npos, channels_last) << text;
    EXPECT_TRUE(r.kernels.empty()) << layout << ": the batch norms, relus and residual need no kernel";
    EXPECT_EQ(kernels::cpu::PackedConv::packs() - packs, 3 * 2) << layout << ": two weights per frozen compile";
  }
}

TEST_F(FreezingTest, AConvolutionWhoseResultIsReadTwiceRunsAsItsOwnStep) {
  // relu(bn1(conv1(x))) also feeds the output: it must exist as a tensor, so conv1 is not
  // merged with conv2.
  manual_seed(13);
  std::shared_ptr<nn::BasicBlock> block = basic_block_with_statistics(16);
  struct TwoOutputs : nn::UnaryModule {
    explicit TwoOutputs(std::shared_ptr<nn::BasicBlock> b) : b(register_module("b", std::move(b))) {}
    Tensor forward(const Tensor& x) override {
      const Tensor h = b->relu->forward(b->bn1->forward(b->conv1->forward(x)));
      return relu(b->bn2->forward(b->conv2->forward(h)) + x) + h;
    }
    std::string name() const override { return "TwoOutputs"; }
    std::shared_ptr<nn::BasicBlock> b;
  } m(block);
  const inductor::CompileReport r = check_equal_eager(m, randn({2, 16, 10, 10}));
  ASSERT_EQ(r.frozen_linears.size(), 2u);
  EXPECT_EQ(r.frozen_linears[0].find("; then"), std::string::npos) << r.frozen_linears[0];
}

TEST_F(FreezingTest, AConvolutionWithBiasAndReluPacksItsWeightOnceNotPerCall) {
  manual_seed(12);
  auto conv = std::make_shared<nn::Conv2d>(8, 24, std::vector<int64_t>{3, 3}, std::vector<int64_t>{2, 2},
                                           std::vector<int64_t>{1, 1});
  struct ConvRelu : nn::UnaryModule {
    explicit ConvRelu(std::shared_ptr<nn::Conv2d> c) : conv(register_module("conv", std::move(c))) {}
    Tensor forward(const Tensor& x) override { return relu(conv->forward(x)); }
    std::string name() const override { return "ConvRelu"; }
    std::shared_ptr<nn::Conv2d> conv;
  } m(conv);
  const inductor::CompileReport r = check_equal_eager(m, randn({3, 8, 9, 11}));
  ASSERT_EQ(r.frozen_linears.size(), 1u);
  EXPECT_NE(r.frozen_linears[0].find("conv 3x8x9x11 -> 24 3x3 +bias +relu"), std::string::npos)
      << r.frozen_linears[0];
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  auto compiled = compile(run_module, {.backend = "inductor"});
  const Tensor x = randn({3, 8, 9, 11});
  const int64_t packs = kernels::cpu::PackedConv::packs();
  for (int call = 0; call < 5; ++call) expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  EXPECT_EQ(kernels::cpu::PackedConv::packs() - packs, 1) << "one weight, packed at compile time";
  config().inductor.freezing = false;
}

TEST_F(FreezingTest, AFloat64LinearIsFoldedButNotPacked) {
  // The packed primitive is float32's; a float64 GEMM keeps its extern call (on the folded
  // weight) and equals eager to float64's precision.
  manual_seed(12);
  LinearWith m(16, 8, [](const Tensor& x, nn::Linear& fc) { return relu(fc.forward(x)); });
  m.to(kDouble);
  m.eval();
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  const Tensor x = randn({4, 16}, kDouble);
  const Tensor got = compile(run_module, {.backend = "inductor"})(m, x), want = m.forward(x);
  EXPECT_EQ(got.strides().vec(), want.strides().vec());
  expect_close(got, want, 1e-12, 1e-12);
  EXPECT_TRUE(inductor::last_compile_report().frozen_linears.empty());
}

TEST_F(FreezingTest, AGraphOverSizeSymbolsIgnoresFreezingAndSaysSo) {
  testing::LogCapture logs("inductor");
  manual_seed(13);
  LinearWith m(16, 8, [](const Tensor& x, nn::Linear& fc) { return relu(fc.forward(x)); });
  m.eval();
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  auto compiled = compile(run_module, {.backend = "inductor", .dynamic = true});
  for (int64_t rows : {4, 7}) {
    const Tensor x = randn({rows, 16});
    expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  }
  EXPECT_NE(logs.text().find("freezing ignored for graph"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("it has size symbols"), std::string::npos) << logs.text();
}

TEST_F(FreezingTest, ATransposedWeightIsFoldedIntoAConstant) {
  testing::LogCapture logs("+inductor");
  manual_seed(7);
  LinearWith m(16, 8, [](const Tensor& x, nn::Linear& fc) { return fc.forward(x); });
  m.eval();
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  compile(run_module, {.backend = "inductor"})(m, randn({4, 16}));
  EXPECT_NE(logs.text().find("aten::transpose.int) reads only constants; computed once and kept as a constant"),
            std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("2 parameters taken as constants, 1 calls folded"), std::string::npos) << logs.text();
}

TEST_F(FreezingTest, TheWeightIsPackedOnceNotPerCall) {
  manual_seed(8);
  LinearWith m(64, 64, [](const Tensor& x, nn::Linear& fc) { return relu(fc.forward(x)); });
  m.eval();
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  auto compiled = compile(run_module, {.backend = "inductor"});
  const Tensor x = randn({32, 64});
  const int64_t packs = kernels::cpu::PackedLinear::packs();
  const int64_t runs = inductor::frozen_linear_runs(true) + inductor::frozen_linear_runs(false);
  for (int call = 0; call < 5; ++call) expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  EXPECT_EQ(kernels::cpu::PackedLinear::packs() - packs, 1) << "one weight, packed at compile time";
  EXPECT_EQ(inductor::frozen_linear_runs(true) + inductor::frozen_linear_runs(false) - runs, 5);
}

TEST_F(FreezingTest, AnotherThreadCountPacksOnceMoreForItsTeamAndEqualsEager) {
  // oneDNN makes a primitive for the team that runs it: a call on another thread count
  // packs the weight once more, then reuses it.
  manual_seed(14);
  LinearWith m(64, 48, [](const Tensor& x, nn::Linear& fc) { return gelu(fc.forward(x), "tanh"); });
  m.eval();
  config().inductor.freezing = true;
  inductor::force_frozen_linear_choice(true);
  NoGradGuard no_grad;
  auto compiled = compile(run_module, {.backend = "inductor"});
  const Tensor x = randn({33, 64});
  const int threads = omp_get_max_threads();
  const int other = threads == 1 ? 2 : 1;
  const int64_t packs = kernels::cpu::PackedLinear::packs();
  expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  omp_set_num_threads(other);
  for (int call = 0; call < 2; ++call) expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  omp_set_num_threads(threads);
  expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  inductor::force_frozen_linear_choice(std::nullopt);
  EXPECT_EQ(kernels::cpu::PackedLinear::packs() - packs, 2) << "at compile time, then once for the other team";
}

TEST_F(FreezingTest, TheChoiceBetweenPackedAndUnpackedIsTimedOncePerShapeAndLogged) {
  testing::LogCapture logs("autotuning");
  manual_seed(9);
  LinearWith m(56, 24, [](const Tensor& x, nn::Linear& fc) { return gelu(fc.forward(x)); });
  m.eval();
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  auto compiled = compile(run_module, {.backend = "inductor"});
  const Tensor x = randn({40, 56});
  for (int call = 0; call < 3; ++call) compiled(m, x);
  const std::string line = "frozen linear 40x56x24 +bias +gelu_erf";
  EXPECT_EQ(testing::count_of(logs.text(), line), 1u) << logs.text();
  EXPECT_NE(logs.text().find("ms, unpacked "), std::string::npos) << logs.text();
}

TEST_F(FreezingTest, ATrainingGraphIgnoresFreezingAndSaysSo) {
  testing::LogCapture logs("inductor");
  manual_seed(10);
  LinearWith m(16, 8, [](const Tensor& x, nn::Linear& fc) { return relu(fc.forward(x)); });
  config().inductor.freezing = true;
  const int64_t packs = kernels::cpu::PackedLinear::packs();
  auto compiled = compile([](nn::UnaryModule& mod, const Tensor& x) { return mod.forward(x).sum(); },
                          {.backend = "inductor"});
  const Tensor x = randn({4, 16});
  Tensor loss = compiled(m, x);
  loss.backward();
  EXPECT_EQ(kernels::cpu::PackedLinear::packs(), packs) << "no weight packed for a training graph";
  EXPECT_NE(logs.text().find("freezing ignored for graph"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("is a training graph's forward"), std::string::npos) << logs.text();
  // The gradient is eager's.
  const Tensor g = m.fc->weight().grad();
  m.fc->weight().mutable_grad() = Tensor();
  m.forward(x).sum().backward();
  expect_close(g, m.fc->weight().grad(), 1.3e-6, 1e-5);
}

TEST_F(FreezingTest, AReplacedParameterRecompilesWithTheNewWeight) {
  // Guards pin each parameter by identity: a new tensor in its place recompiles, and the
  // new compile packs the new weight (an in-place change is not seen: Note [freezing]).
  manual_seed(11);
  LinearWith m(16, 8, [](const Tensor& x, nn::Linear& fc) { return fc.forward(x); });
  m.eval();
  config().inductor.freezing = true;
  NoGradGuard no_grad;
  auto compiled = compile(run_module, {.backend = "inductor"});
  const Tensor x = randn({4, 16});
  expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  const int64_t packs = kernels::cpu::PackedLinear::packs();
  m.fc->weight() = randn({8, 16});  // the old tensor is freed here (the compiled graph still holds it)
  expect_close(compiled(m, x), m.forward(x), 1.3e-6, 1e-5);
  EXPECT_EQ(kernels::cpu::PackedLinear::packs() - packs, 1) << "the new weight is packed";
}

}  // namespace
}  // namespace ember
