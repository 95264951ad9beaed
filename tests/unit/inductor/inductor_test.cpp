// Tests of the inductor CPU backend: compiled graphs equal eager, pointwise chains fuse
// into one kernel, reductions (tested fully in reduction_test.cpp) become row kernels with their prologues
// and epilogues, extern calls fall back (logged), and the on-disk cache hits, and
// rebuilds a corrupt entry. Each distinct graph costs one C++ compile, so graphs are few.
#include "inductor/inductor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ember/ember.h"
#include "inductor/pipeline.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

using testing::expect_close;

Tensor w1(const Tensor& x) {
  return sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), std::nullopt, Scalar(10));
}

using InductorTest = testing::CompileDirTest;

TEST_F(InductorTest, PointwiseChainOfW1FusesIntoOneKernelAndEqualsEager) {
  testing::LogCapture logs("fusion,schedule,output_code");
  auto compiled = compile(w1, {.backend = "inductor"});
  // 300 x 257: more than one thread's worth of elements, and rows with a vector tail.
  Tensor x = randn({300, 257});
  expect_close(compiled(x), w1(x), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_EQ(r.kernels[0].second.size(), 11u) << "every call of W1 is computed by the one kernel";
  EXPECT_TRUE(r.extern_calls.empty());
  EXPECT_NE(r.source.find("#pragma omp parallel for"), std::string::npos) << "77,100 elements run in parallel";
  EXPECT_NE(logs.text().find("schedule of graph"), std::string::npos);
  EXPECT_NE(logs.text().find("1 kernels"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("fused %relu into"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("extern \"C\" void cpp_fused_"), std::string::npos) << "output_code shows the source";
  // A second call replays the compiled code.
  Tensor x2 = randn({300, 257});
  expect_close(compiled(x2), w1(x2), 1.3e-6, 1e-5);
}

TEST_F(InductorTest, BroadcastAndTransposedInputsAreReadThroughIndexMaps) {
  auto fn = [](const Tensor& a, const Tensor& b, const Tensor& c) { return (a + b) * c.t() - b.expand({4, 3, 5}); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor a = randn({4, 1, 5}), b = randn({3, 5}), c = randn({5, 3});
  expect_close(compiled(a, b, c), fn(a, b, c), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.kernels.size(), 1u);
  EXPECT_TRUE(r.extern_calls.empty()) << "views are index maps, not fallbacks";
}

TEST_F(InductorTest, APointwiseKernelWithAChannelsLastOutputLoopsAlongItsMemory) {
  // relu of NHWC activations returns NHWC (its meta follows the input): the kernel's
  // innermost, vectorized loop runs over channels, contiguous in both buffers, not over W
  // with every element 32 floats apart (Note [inductor], "Loop order").
  auto fn = [](const Tensor& a) { return (a * 2.0).relu(); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({2, 5, 6, 32}).permute({0, 3, 1, 2});  // [2, 32, 5, 6] over NHWC memory
  Tensor y = compiled(x), want = fn(x);
  EXPECT_EQ(y.strides().vec(), want.strides().vec());
  expect_close(y, want, 0, 0);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u);
  const std::string kernel = r.source.substr(std::min(r.source.find("extern \"C\" void cpp_fused"), r.source.size()));
  ASSERT_FALSE(kernel.empty()) << r.source;
  EXPECT_NE(kernel.find("V::load(in0 + o0 + x)"), std::string::npos) << kernel;
  EXPECT_EQ(kernel.find("ld<V>("), std::string::npos) << "no strided vector load\n" << kernel;
}

TEST_F(InductorTest, MatmulRunsAsAnExternCallAndItsEpilogueFusesAndTheFallbackIsLogged) {
  testing::LogCapture logs("inductor");
  auto fn = [](const Tensor& a, const Tensor& b, const Tensor& bias) { return relu(mm(a, b) + bias) * 2; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor a = randn({16, 8}), b = randn({8, 12}), bias = randn({12});
  expect_close(compiled(a, b, bias), fn(a, b, bias), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.extern_calls, std::vector<std::string>{"aten::mm"});
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].second.size(), 3u) << "add, relu and mul fuse behind the extern mm";
  EXPECT_NE(logs.text().find("extern fallback: aten::mm"), std::string::npos) << logs.text();
}

TEST_F(InductorTest, AnEpilogueOverAGemmResultThatDiesThereWritesInPlace) {
  // mm's result is read only by the epilogue kernel (bias add, gelu), elementwise: the
  // kernel writes its output over it instead of a new buffer.
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) { return gelu(mm(x, w) + b); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({33, 20}), w = randn({20, 17}), b = randn({17});
  const int64_t before = inductor::outputs_in_place();
  expect_close(compiled(x, w, b), fn(x, w, b), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::outputs_in_place() - before, 1);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_NE(r.source.find("const float* in0 ="), std::string::npos)
      << "the buffer the output may overwrite has no __restrict\n"
      << r.source;
}

TEST_F(InductorTest, AGraphOutputOrAValueReadLaterIsNeverOverwritten) {
  // h is returned, and g is read by a later kernel: neither may be written over.
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor h = mm(x, w);
    Tensor g = mm(x, w) * 3;
    return std::make_tuple(h, relu(h) + g, sigmoid(g));
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({16, 16}), w = randn({16, 16});
  auto [h, r, s] = compiled(x, w);
  auto [h0, r0, s0] = fn(x, w);
  expect_close(h, h0, 1.3e-6, 1e-5);
  expect_close(r, r0, 1.3e-6, 1e-5);
  expect_close(s, s0, 1.3e-6, 1e-5);
}

TEST_F(InductorTest, DeadIntermediateBuffersAreReusedByLaterKernelsOfTheSameSize) {
  // k1 = tanh(x*2) feeds mm; after mm it is dead, so k2 = relu(h + h^T) can take its
  // buffer (k2 reads h at two index maps, so it cannot write over h itself); likewise k2's
  // buffer is free for k3 after the second mm. Outputs are never reused.
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor h = mm(tanh(x * 2), w);
    Tensor g = mm(relu(h + h.t()), w);
    return sigmoid(g + g.t());
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({16, 16}), w = randn({16, 16});
  const int64_t before = inductor::buffers_reused();
  const Tensor out = compiled(x, w);
  expect_close(out, fn(x, w), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::last_compile_report().kernels.size(), 3u);
  EXPECT_GE(inductor::buffers_reused() - before, 1) << "a kernel output took a dead intermediate's buffer";
  const Tensor again = compiled(x, w);
  expect_close(again, out, 0, 0);
  EXPECT_NE(again.storage(), out.storage()) << "a returned tensor's buffer is never handed to a later call";
}

TEST_F(InductorTest, Float64AndTypeConversionsCompileAndEqualEager) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    return gelu(x.to(kDouble) * y - 1.5) + where(y > 0, y, x.to(kDouble));
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({7, 33}), y = randn({7, 33}, kDouble);
  const Tensor out = compiled(x, y);
  EXPECT_EQ(out.dtype(), kDouble);
  expect_close(out, fn(x, y), 1e-7, 1e-7);
}

TEST_F(InductorTest, SecondIdenticalCompileHitsTheDiskCacheWithoutRunningTheCompiler) {
  Tensor x = randn({8, 16});
  const int64_t before = inductor::compiler_invocations();
  auto first = compile(w1, {.backend = "inductor"});
  expect_close(first(x), w1(x), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::compiler_invocations(), before + 1);
  EXPECT_FALSE(inductor::last_compile_report().cache_hit);
  auto second = compile(w1, {.backend = "inductor"});
  expect_close(second(x), w1(x), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::compiler_invocations(), before + 1) << "the second compile loads the cached library";
  EXPECT_TRUE(inductor::last_compile_report().cache_hit);
}

TEST_F(InductorTest, CorruptCachedLibraryIsDetectedAndRebuilt) {
  Tensor x = randn({8, 16});
  auto first = compile(w1, {.backend = "inductor"});
  expect_close(first(x), w1(x), 1.3e-6, 1e-5);
  const std::string so = inductor::last_compile_report().so_path;
  ASSERT_TRUE(fs::exists(so));
  // A half-written library: replaced by a new file (the loaded one stays mapped intact).
  const std::string partial = so + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out << "\x7f"
           "ELF truncated";
  }
  fs::rename(partial, so);
  const int64_t before = inductor::compiler_invocations();
  auto second = compile(w1, {.backend = "inductor"});
  expect_close(second(x), w1(x), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::compiler_invocations(), before + 1) << "the corrupt entry is rebuilt";
  EXPECT_FALSE(inductor::last_compile_report().cache_hit);
  EXPECT_GT(fs::file_size(so), 1000u);
}

/// The unit the compiler read for the library at `so_path` (the cache's .cpp beside it).
std::string unit_of(const std::string& so_path) {
  std::ifstream in(fs::path(so_path).replace_extension(".cpp"));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(InductorTest, GeneratedUnitsIncludeThePreludeWhichGccReadsPrecompiled) {
  testing::LogCapture logs("inductor");
  Tensor x = randn({8, 16});
  auto compiled = compile(w1, {.backend = "inductor"});
  expect_close(compiled(x), w1(x), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_TRUE(r.source.starts_with(inductor::cpp_prelude())) << "the source shown keeps the prelude's text";
  const std::string unit = unit_of(r.so_path);
  EXPECT_TRUE(unit.starts_with(std::string(inductor::cpp_prelude_banner()) +
                               "#include \"ember_inductor_prelude.h\"\n#line "))
      << unit.substr(0, 300);
  EXPECT_EQ(unit.find("inline V ld("), std::string::npos) << "the unit includes the prelude instead of its text";
  // After the include, a #line directive puts the rest on the source's line numbers: the
  // namespace's opening is the prelude's last line.
  const std::string& prelude = inductor::cpp_prelude();
  const std::string rest = "#line " + std::to_string(std::count(prelude.begin(), prelude.end(), '\n')) +
                           "\nnamespace ember::vec {\n" + r.source.substr(prelude.size());
  EXPECT_TRUE(unit.ends_with(rest)) << unit.substr(0, 300);
#if defined(__GNUC__) && !defined(__clang__)
  const std::optional<fs::path> pch = inductor::precompiled_prelude_dir();
  ASSERT_TRUE(pch) << "a GCC build precompiles the prelude";
  EXPECT_TRUE(fs::exists(*pch / "ember_inductor_prelude.h.gch"));
  EXPECT_NE(logs.text().find("-Winvalid-pch -I'" + pch->string() + "'"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("[-Winvalid-pch]"), std::string::npos)
      << "GCC took the precompiled prelude (-Winvalid-pch would say why not): " << logs.text();
#endif
  // Off: the unit parses the prelude, and gives the same library.
  config().inductor.precompiled_prelude_dir = "off";
  EXPECT_FALSE(inductor::precompiled_prelude_dir());
  auto plain = compile([](const Tensor& t) { return w1(t) + 1; }, {.backend = "inductor"});
  expect_close(plain(x), w1(x) + 1, 1.3e-6, 1e-5);
  EXPECT_EQ(logs.text().find("-Winvalid-pch", logs.text().rfind("compiling generated code")), std::string::npos);
}

TEST_F(InductorTest, GeneratedCodeCompilesAtTheConfiguredOptimizationLevel) {
  testing::LogCapture logs("inductor");
  Tensor x = randn({8, 16});
  EXPECT_EQ(config().inductor.cpp_opt_level, 2) << "the default, by measurement (Note [inductor])";
  auto at_two = compile(w1, {.backend = "inductor"});
  expect_close(at_two(x), w1(x), 1.3e-6, 1e-5);
  const std::string first = logs.text();
  EXPECT_NE(first.find(" -O2 -fopenmp -fPIC"), std::string::npos) << first;
  // Another level is another library (the flags are part of the cache key), same values.
  const int64_t before = inductor::compiler_invocations();
  config().inductor.cpp_opt_level = 3;
  auto at_three = compile(w1, {.backend = "inductor"});
  const Tensor y = at_three(x);
  config().inductor.cpp_opt_level = 2;
  expect_close(y, w1(x), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::compiler_invocations() - before, 1);
  const std::string second = logs.text().substr(first.size());
  EXPECT_NE(second.find(" -O3 -fopenmp -fPIC"), std::string::npos) << second;
#if defined(__GNUC__) && !defined(__clang__)
  EXPECT_EQ(second.find("[-Winvalid-pch]"), std::string::npos)
      << "GCC takes the prelude precompiled at -O2 under -O3 too: " << second;
#endif
}

TEST_F(InductorTest, AUnitThatFailsWithADamagedPrecompiledPreludeCompilesWithoutItAndSaysSo) {
  const std::optional<fs::path> build_pch = inductor::precompiled_prelude_dir();
  if (!build_pch) GTEST_SKIP() << "this build has no precompiled prelude (GCC only)";
  // A truncated copy: GCC finds it, starts reading it and fails.
  const fs::path damaged = root_ / "pch";
  fs::create_directories(damaged);
  fs::copy_file(*build_pch / "ember_inductor_prelude.h", damaged / "ember_inductor_prelude.h");
  {
    std::ifstream in(*build_pch / "ember_inductor_prelude.h.gch", std::ios::binary);
    std::string head(100000, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(damaged / "ember_inductor_prelude.h.gch", std::ios::binary) << head;
  }
  config().inductor.precompiled_prelude_dir = damaged.string();
  ASSERT_EQ(inductor::precompiled_prelude_dir(), damaged);
  testing::LogCapture logs("inductor");
  Tensor x = randn({8, 16});
  auto compiled = compile(w1, {.backend = "inductor"});
  expect_close(compiled(x), w1(x), 1.3e-6, 1e-5);
  EXPECT_NE(logs.text().find("a unit failed with the precompiled prelude and compiled without it"), std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("while reading precompiled header"), std::string::npos) << "GCC's reason is shown";
  EXPECT_FALSE(inductor::precompiled_prelude_dir()) << "not used again in this process";
}

TEST_F(InductorTest, ATrainingGraphsBackwardCompilesWhileItsForwardDoesAndBackwardWaitsForIt) {
  Tensor x = randn({8, 16}), w = randn({16, 32}).requires_grad_();
  auto fn = [](const Tensor& x, const Tensor& w) { return mm(x, w).tanh().sum(); };
  testing::LogCapture logs("inductor");
  const int64_t before = inductor::compiler_invocations();
  Tensor loss = compile(fn, {.backend = "inductor"})(x, w);
  EXPECT_EQ(inductor::compiler_invocations(), before + 2) << "the forward call started the backward's compiler too";
  EXPECT_EQ(logs.text().find("waiting for the compiler started ahead"), std::string::npos) << logs.text();
  loss.backward();
  EXPECT_EQ(inductor::compiler_invocations(), before + 2) << "backward waits for the build it started, once";
  EXPECT_NE(logs.text().find("waiting for the compiler started ahead"), std::string::npos) << logs.text();
  EXPECT_FALSE(inductor::last_compile_report().cache_hit);
  const Tensor t = mm(x, w.detach()).tanh();
  expect_close(w.grad(), mm(x.t(), 1 - t * t), 1e-5, 1e-5);
}

// Rows of 1000: a vector body and a scalar tail for 8 and 16 float lanes alike; 64 rows
// of 1000 are more than one thread's worth, so the row loop runs in parallel.
TEST_F(InductorTest, SoftmaxOverTheLastDimOfW2IsOneRowKernelAndEqualsEager) {
  testing::LogCapture logs("schedule,inductor");
  auto fn = [](const Tensor& x) { return softmax(x, -1); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({64, 1000}) * 4;
  expect_close(compiled(x), fn(x), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  EXPECT_EQ(logs.text().find("extern fallback"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("softmax row kernel over Float[64, 1000]"), std::string::npos) << logs.text();
  EXPECT_NE(r.source.find("#pragma omp parallel for"), std::string::npos);
}

// Softmax's sum pass stores exp(x - max) into the output row and the last pass scales it:
// the epilogue must see the scaled value, also when it reads the softmax's input again,
// when the input rows are strided (softmax over a transposed view's last dim), and when a
// conversion to another dtype reads the kernel's output.
TEST_F(InductorTest, SoftmaxStoringItsExponentialsFeedsEpiloguesTheFinalValues) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    return std::vector<Tensor>{softmax(x, -1) * 3 + x, softmax(y.t(), -1) - 1, (softmax(x, -1) * 2).to(kDouble)};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({37, 70}) * 4, y = randn({70, 37}) * 4;
  const auto got = compiled(x, y), want = fn(x, y);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1.3e-6, 1e-5, "output " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.kernels.size(), 4u) << "three softmax row kernels with their epilogues, and the conversion";
  EXPECT_NE(r.source.find("softmax_sum<V>(70, mx, in_v, in_s, out0 + q0, 1)"), std::string::npos) << r.source;
}

TEST_F(InductorTest, LayerNormWithWeightAndBiasOfW3IsOneRowKernelAndEqualsEager) {
  testing::LogCapture logs("schedule,inductor");
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) { return layer_norm(x, {1000}, w, b, 1e-5); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({64, 1000}) * 3 + 1, w = randn({1000}), b = randn({1000});
  expect_close(compiled(x, w, b), fn(x, w, b), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  EXPECT_NE(logs.text().find("layer_norm row kernel over Float[64, 1000]"), std::string::npos) << logs.text();
}

TEST_F(InductorTest, PointwiseProducersFuseIntoARowKernelAsPrologueAndConsumersAsEpilogue) {
  testing::LogCapture logs("fusion,inductor");
  // x * 2 + y is read only by log_softmax (prologue); * 3 and + the column sums read
  // its output elementwise (epilogue). The sum over dim 0 (other sizes than its user) is
  // a kernel of its own.
  auto fn = [](const Tensor& x, const Tensor& y) { return log_softmax(x * 2 + y, -1) * 3 + sum(x, {0}, true); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({64, 1000}), y = randn({1000});
  expect_close(compiled(x, y), fn(x, y), 1.3e-6, 1e-5);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  ASSERT_EQ(r.kernels.size(), 2u) << logs.text();
  const size_t big = r.kernels[0].second.size() == 5 ? 0 : 1;
  EXPECT_EQ(r.kernels[big].second.size(), 5u) << "mul, add, log_softmax, mul, add in one kernel";
  EXPECT_EQ(r.kernels[1 - big].second, std::vector<std::string>{"sum"});
  EXPECT_NE(logs.text().find("as a prologue"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("with its epilogue"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("materialized %sum: "), std::string::npos) << logs.text();
}

TEST_F(InductorTest, Float64SumMeanAmaxAminOverTheLastDimWithAndWithoutKeepdim) {
  testing::LogCapture logs("fusion,inductor");
  // exp(x) - 1 feeds the sum only (prologue); amax reads a transposed view (strided
  // loads); amin without keepdim is read through a view (so it is materialized).
  auto fn = [](const Tensor& x, const Tensor& xt) {
    return sum(exp(x) - 1, {-1}, true) * 0.5 + amax(xt.t(), {-1}, true) - mean(x, {1}, true) +
           amin(x, {-1}).unsqueeze(-1);
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({64, 1000}, kDouble), xt = randn({1000, 64}, kDouble);
  const Tensor out = compiled(x, xt);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{64, 1}));
  expect_close(out, fn(x, xt), 1e-7, 1e-7);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  EXPECT_EQ(logs.text().find("extern fallback"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("fused %sub into its users' kernel (root %add_1, as a prologue)"), std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("fused %sum (sum row) with its epilogue"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("materialized %amax: %add's kernel already has a reduction"), std::string::npos);
  EXPECT_EQ(r.kernels.size(), 4u) << "sum with its epilogue; amax, mean and amin each alone";
  EXPECT_NE(r.source.find("row_minmax<V, 0>"), std::string::npos);
  EXPECT_NE(r.source.find("col_minmax<V, CB, 1>"), std::string::npos)
      << "the transposed view's reduced dim is outer in memory: vectors run along the kept dim";
}

}  // namespace
}  // namespace ember
