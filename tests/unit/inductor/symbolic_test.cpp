// Tests of the inductor backend over size symbols (Note [dynamic shapes], "The inductor
// over symbolic graphs"): a graph of pointwise ops and views compiled with dynamic=true
// runs every batch size from one compile (one shared library, kernels that read the sizes
// at run time) with eager's values, sizes and strides, a graph that needs gradients
// through forward and backward graphs over the symbols; a graph the rule does not admit
// (a symbol that is not an input size) is specialized while it is traced and compiles per
// size, as before. Row kernels: symbolic_rows_test.cpp.
#include <gtest/gtest.h>

#include <regex>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::expect_identical;
using testing::LogCapture;

class InductorSymbolic : public testing::CompileDirTest {};

TEST_F(InductorSymbolic, PointwiseGraphCompilesOnceForEveryBatchSizeAndMatchesEager) {
  Tensor b = randn({16});
  auto f = [&b](const Tensor& x) { return std::make_tuple((x * 2.0 + 1.0).relu(), x + b); };
  auto fn = compile(f, {.backend = "inductor", .name = "pw", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  // 3000 rows: over the kernels' parallel threshold, decided at run time.
  for (int64_t batch : {7, 64, 100, 3000, 7}) {
    Tensor x = randn({batch, 16});
    const auto [r, s] = fn(x);
    const auto [er, es] = f(x);
    const std::string what = "batch " + std::to_string(batch);
    expect_identical(r, er, what);
    expect_identical(s, es, what);
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one symbolic entry for every batch size";
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  const inductor::CompileReport report = inductor::last_compile_report();
  EXPECT_NE(report.source.find("(void* const* bufs, const int64_t* ks)"), std::string::npos) << report.source;
  EXPECT_NE(report.source.find("ks[0]"), std::string::npos) << report.source;
  // Batch 1 stays static (sizes 0 and 1 are specialized): an entry of its own.
  Tensor one = randn({1, 16});
  const auto [r1, s1] = fn(one);
  const auto [e1, f1] = f(one);
  expect_identical(r1, e1, "batch 1");
  expect_identical(s1, f1, "batch 1");
  EXPECT_EQ(fn.cache_size(), 2u);
}

TEST_F(InductorSymbolic, NonContiguousViewsAndOneDimInputsRunAtEverySize) {
  // A transposed view read through symbolic strides, a 1-d input whose only dim is a
  // symbol (blocks of a runtime length), and a broadcast of a [N, 1] column.
  auto f = [](const Tensor& x, const Tensor& v) {
    return std::make_tuple((x.t() * 2.0 - 1.0).relu(), (v - 0.5).abs(), x + x.select(1, 0).unsqueeze(1));
  };
  auto fn = compile(f, {.backend = "inductor", .name = "views", .arg_names = {"x", "v"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t n : {5, 33, 9000}) {
    Tensor x = randn({n, 6}), v = randn({n * 2 + 1});
    const auto [a, c, d] = fn(x, v);
    const auto [ea, ec, ed] = f(x, v);
    const std::string what = "n " + std::to_string(n);
    expect_identical(a, ea, what);
    expect_identical(c, ec, what);
    expect_identical(d, ed, what);
  }
  EXPECT_EQ(fn.cache_size(), 1u);
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  const inductor::CompileReport report = inductor::last_compile_report();
  EXPECT_EQ(report.graph_name.find("views"), 0u) << report.graph_name;
  EXPECT_EQ(report.kernels.size(), 3u);
  EXPECT_NE(report.source.find("ld<V>(in0 + o0 + x * ks["), std::string::npos)
      << "the transposed view: a load strided by a runtime size\n"
      << report.source;
}

TEST_F(InductorSymbolic, ConvolutionBlockKeepsItsBatchAndImageSizeSymbolic) {
  // convolution, batch norm (eval) and max pooling have meta functions over SymInt in every
  // dim (ops/spatial_meta.cpp): the channels meet the weight and are specialized, the batch
  // and the image size stay symbolic.
  LogCapture logs;
  set_logs("dynamic");
  Tensor w = randn({8, 3, 3, 3}), b = randn({8}), mean = randn({8}), var = rand({8}) + 0.5;
  auto f = [&](const Tensor& x) {
    Tensor y = batch_norm(conv2d(x, w, b, {1, 1}, {1, 1}), std::nullopt, std::nullopt, mean, var, false);
    return max_pool2d(y.relu(), {2, 2}) * 2.0;
  };
  auto fn = compile(f, {.backend = "inductor", .name = "cnn", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t n : {2, 5, 9}) {
    Tensor x = randn({n, 3, 10, 12});
    expect_close(fn(x), f(x));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_LE(inductor::compiler_invocations() - before, 1);
  EXPECT_NE(logs.text().find("eval s1 == 3"), std::string::npos) << "the channels meet the weight\n" << logs.text();
  EXPECT_EQ(logs.text().find("(x.size(0)) = 2"), std::string::npos) << "the batch stays symbolic:\n" << logs.text();
  EXPECT_EQ(logs.text().find("(x.size(2)) = 10"), std::string::npos) << "the height stays symbolic:\n" << logs.text();
  // Another image size is served by the same entry.
  Tensor other = randn({4, 3, 14, 9});
  expect_close(fn(other), f(other));
  EXPECT_EQ(fn.cache_size(), 1u);
}

/// x [n, c, h, w], filters [o, c, kh, kw] (transposed: [c, o, kh, kw]), bias [o].
struct ConvGeometry {
  int64_t n, c, h, w, o, kh, kw;
};

// The sizes keep clear of each other's values where duck sizing would tie them (every
// size is a symbol under dynamic=true, and two inputs' dims that are equal at the trace
// share one: a later call must keep them equal).
const std::vector<ConvGeometry> kConvGeometries = {{2, 3, 9, 10, 4, 5, 6}, {3, 2, 7, 12, 5, 4, 3}, {4, 5, 11, 8, 2, 6, 5}};

auto conv_relu(const Tensor& x, const Tensor& w, const Tensor& b) { return conv2d(x, w, b, {2, 1}, {1, 2}).relu() * 2.0; }

TEST_F(InductorSymbolic, ConvolutionsWhoseWeightIsAnInputKeepEverySizeSymbolic) {
  // Under dynamic=true every size of every input is a symbol, the weight's too (its output
  // and input channels, its kernel): the convolution's meta computes over them
  // (ops/spatial_meta.cpp), forward and transposed, so one entry serves every geometry,
  // with eager's values and sizes.
  LogCapture logs;
  set_logs("dynamic");
  auto transposed = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return convolution(x, w, b, {2, 2}, {1, 0}, {1, 1}, true, {1, 0}, 1) - 1.0;
  };
  auto fn = compile(conv_relu, {.backend = "inductor", .name = "conv_weight", .dynamic = true});
  auto fn_t = compile(transposed, {.backend = "inductor", .name = "conv_t_weight", .dynamic = true});
  for (const auto& [n, c, h, wd, o, kh, kw] : kConvGeometries) {
    SCOPED_TRACE(::testing::Message() << "x [" << n << ", " << c << ", " << h << ", " << wd << "], " << o
                                      << " filters of " << kh << " x " << kw);
    const Tensor x = randn({n, c, h, wd}), w = randn({o, c, kh, kw}), b = randn({o});
    const Tensor got = fn(x, w, b), want = conv_relu(x, w, b);
    EXPECT_EQ(got.sizes(), want.sizes());
    expect_close(got, want);
    const Tensor wt = randn({c, o, kh, kw});
    const Tensor got_t = fn_t(x, wt, b), want_t = transposed(x, wt, b);
    EXPECT_EQ(got_t.sizes(), want_t.sizes());
    expect_close(got_t, want_t);
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(fn_t.cache_size(), 1u) << logs.text();
  // No size became a constant: a replacement only ever names another symbol (the input's
  // channels are the weight's).
  EXPECT_FALSE(std::regex_search(logs.text(), std::regex("set_replacement s[0-9]+ = [0-9]")))
      << "a size was specialized:\n" << logs.text();
}

TEST_F(InductorSymbolic, ATrainingGraphThatSpecializedASizeIsNotRunForOtherSizesThroughAnotherEntry) {
  // The convolution's derivative formula reads its bias's size as an integer, so the
  // training graph of a dynamic=true convolution specializes the output channels (a guard).
  // The capture cache shares one compiled function between the inference entry and the
  // training entry (their graphs have one text); the training entry was guarded before
  // its training graph specialized. A training call at other channels through that entry
  // used to reach the specialized graph and fail ("the graph records ... for it"); it runs
  // in the interpreter now, with eager's values and gradients, at every size.
  auto fn = compile(conv_relu, {.backend = "inductor", .name = "conv_train", .dynamic = true});
  for (const auto& [n, c, h, wd, o, kh, kw] : kConvGeometries) {
    SCOPED_TRACE(::testing::Message() << "x [" << n << ", " << c << ", " << h << ", " << wd << "], " << o
                                      << " filters of " << kh << " x " << kw);
    const Tensor x = randn({n, c, h, wd}), w = randn({o, c, kh, kw}), b = randn({o});
    expect_close(fn(x, w, b), conv_relu(x, w, b));
    const Tensor xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_();
    const Tensor y = fn(xg, wg, b);
    const Tensor xe = x.clone().requires_grad_(), we = w.clone().requires_grad_();
    const Tensor ye = conv_relu(xe, we, b);
    expect_close(y, ye);
    y.sum().backward();
    ye.sum().backward();
    expect_close(xg.grad(), xe.grad());
    expect_close(wg.grad(), we.grad());
  }
}

TEST_F(InductorSymbolic, Conv3dCompiledDynamicMatchesEagerAtEverySize) {
  // A 3-D convolution (5-D input, Note [3-D convolution]) is an extern call of the compiled
  // graph, its relu and scale a generated kernel: compiled with dynamic=true it gives
  // eager's values and sizes at every batch and volume, forward and backward. (A 5-D input
  // compiles one entry per size for now, a pointwise-only graph too.)
  Tensor w = randn({4, 2, 3, 3, 2}), b = randn({4});
  auto f = [&](const Tensor& x) {
    return convolution(x, w, b, {1, 2, 1}, {1, 1, 0}, {1, 1, 1}, false, {0}, 1).relu() * 2.0;
  };
  auto fn = compile(f, {.backend = "inductor", .name = "conv3d", .arg_names = {"x"}, .dynamic = true});
  for (auto sizes : std::vector<std::vector<int64_t>>{{2, 2, 4, 6, 5}, {3, 2, 5, 7, 6}, {1, 2, 3, 4, 4}}) {
    Tensor x = randn(sizes);
    const Tensor got = fn(x), want = f(x);
    EXPECT_EQ(got.sizes(), want.sizes());
    expect_close(got, want);
  }
  Tensor x = randn({2, 2, 4, 6, 5}).requires_grad_();
  fn(x).sum().backward();
  const Tensor compiled_grad = x.grad();
  Tensor x2 = x.detach().requires_grad_();
  f(x2).sum().backward();
  expect_close(compiled_grad, x2.grad());
}

TEST_F(InductorSymbolic, LinearOverASymbolicBatchFusesItsBiasIntoTheReaderThroughTheView) {
  // linear of a 3-d input is view → addmm → view; the bias add moves past the view into
  // gelu's kernel, as for static sizes, and the GEMM is a plain mm.
  Tensor w = randn({24, 16}), b = randn({24});
  auto f = [&](const Tensor& x) { return gelu(linear(x, w, b), "tanh"); };
  auto fn = compile(f, {.backend = "inductor", .name = "lin", .arg_names = {"x"}, .dynamic = true});
  for (int64_t t : {5, 9}) {
    Tensor x = randn({2, t, 16});
    expect_close(fn(x), f(x));
  }
  EXPECT_EQ(fn.cache_size(), 1u);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.extern_calls, std::vector<std::string>{"aten::mm"});
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_NE(r.kernels[0].first.find("add"), std::string::npos) << r.kernels[0].first;
}

TEST_F(InductorSymbolic, CallItDoesNotLowerRunsItsEagerKernelInsideTheGraphAtEverySize) {
  // softmax over a dim other than the last does not lower: it is an extern call between
  // two kernels over the symbols, and its eager kernel runs at each call's sizes.
  auto f = [](const Tensor& x) { return softmax((x * 2.0).relu(), 0) + 1.0; };
  auto fn = compile(f, {.backend = "inductor", .name = "red", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t n : {3, 5, 7}) {
    Tensor x = randn({n, 4});
    expect_close(fn(x), f(x));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one entry for every size";
  EXPECT_LE(inductor::compiler_invocations() - before, 1);
  const std::string source = inductor::last_compile_report().source;
  EXPECT_NE(source.find("const int64_t* ks"), std::string::npos) << "its kernels read the sizes at run time:\n" << source;
}

TEST_F(InductorSymbolic, GraphThatNeedsGradientsCompilesItsForwardAndBackwardOnceOverItsSymbols) {
  Tensor w = randn({4}).requires_grad_();
  auto f = [&w](const Tensor& x) { return (x * w).relu(); };
  auto fn = compile(f, {.backend = "inductor", .name = "train", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t n : {3, 5}) {
    Tensor x = randn({n, 4});
    w.mutable_grad() = Tensor();
    Tensor y = fn(x);
    y.sum().backward();
    const Tensor compiled_grad = w.grad().clone();
    w.mutable_grad() = Tensor();
    Tensor e = f(x);
    e.sum().backward();
    expect_close(y, e);
    expect_close(compiled_grad, w.grad());
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "the joint graph is traced over the symbols (Note [aot])";
  EXPECT_EQ(inductor::compiler_invocations() - before, 2) << "the forward and the backward, once each";
  const std::string source = inductor::last_compile_report().source;
  EXPECT_NE(source.find("const int64_t* ks"), std::string::npos) << "the backward's kernels read the sizes:\n"
                                                                   << source;
}

TEST_F(InductorSymbolic, MlpBlockWithAddmmCompilesOnceForEveryBatchSize) {
  // linear (t + addmm, whose eager kernel takes the runtime M), GELU, linear, the residual.
  Tensor w1 = randn({32, 16}), b1 = randn({32}), w2 = randn({16, 32}), b2 = randn({16});
  auto f = [&](const Tensor& x) { return linear(gelu(linear(x, w1, b1)), w2, b2) + x; };
  auto fn = compile(f, {.backend = "inductor", .name = "mlp", .arg_names = {"x"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t batch : {7, 64, 100, 256}) {
    Tensor x = randn({batch, 16});
    const Tensor got = fn(x), want = f(x);
    const std::string what = "batch " + std::to_string(batch);
    ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
    ASSERT_EQ(got.strides().vec(), want.strides().vec()) << what;
    expect_close(got, want, 1e-5, 1e-5, what);
  }
  EXPECT_EQ(fn.cache_size(), 1u);
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  const inductor::CompileReport report = inductor::last_compile_report();
  EXPECT_EQ(report.graph_name.find("mlp"), 0u) << report.graph_name;
  EXPECT_EQ(report.extern_calls, (std::vector<std::string>{"aten::mm", "aten::mm"}))
      << "the matrix products run as extern calls, their biases moved into the kernels that read them";
  EXPECT_NE(report.source.find("const int64_t* ks"), std::string::npos) << report.source;
}

TEST_F(InductorSymbolic, MlpBlockWithLayerNormCompilesOnceForEveryBatchSize) {
  // W4's block (smaller): x + fc2(gelu(fc1(ln(x)))); batch 1 is its own static entry.
  manual_seed(0);
  auto block = std::make_shared<nn::MLPBlock>(64, 256);
  block->eval();
  auto forward = [](nn::MLPBlock& m, const Tensor& x) { return m.forward(x); };
  auto fn = compile(forward, {.backend = "inductor", .name = "mlp_block", .dynamic = true});
  NoGradGuard no_grad;
  const int64_t before = inductor::compiler_invocations();
  for (int64_t batch : {7, 64, 100, 256, 1}) {
    Tensor x = randn({batch, 64});
    const Tensor got = fn(*block, x), want = block->forward(x);
    const std::string what = "batch " + std::to_string(batch);
    ASSERT_EQ(got.strides().vec(), want.strides().vec()) << what;
    expect_close(got, want, 1e-5, 1e-5, what);
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "one symbolic entry for batch 7..256, one static for batch 1";
  EXPECT_EQ(inductor::compiler_invocations() - before, 2);
}

}  // namespace
}  // namespace ember
