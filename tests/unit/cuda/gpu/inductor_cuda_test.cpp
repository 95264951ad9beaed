// GPU tests of the inductor's CUDA code generator: functions like the workloads W1–W7,
// compiled with the "inductor" backend on cuda:0, equal eager CUDA (values within the
// dtype's tolerance, dtypes, sizes, strides) in float32, float16 and bfloat16; the
// generated code runs on the GPU (last_compile_report's source is CUDA); a CPU call of the
// same function is a separate cache entry; a graph mixing CPU and CUDA tensors runs eagerly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/compile.h"
#include "ember/config.h"
#include "ember/ember.h"
#include "ember/nn/blocks.h"
#include "gpu_helpers.h"
#include "inductor/inductor.h"
#include "support/log_capture.h"

namespace ember::gpu_test {
namespace {

class InductorCuda : public Gpu, public ::testing::WithParamInterface<ScalarType> {};

/// Every output of `fn` compiled for CUDA against eager CUDA.
template <typename Fn, typename... Args>
void expect_compiled_equals_eager(Fn fn, const Args&... args) {
  auto compiled = compile(fn, {.backend = "inductor"});
  const Tensor got = compiled(args...);
  const Tensor want = fn(args...);
  ASSERT_TRUE(got.is_cuda()) << "the compiled result stays on the GPU";
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_NE(r.source.find("__global__"), std::string::npos) << "compiled to CUDA kernels:\n" << r.source;
  EXPECT_EQ(mismatch(got, want.cpu(), compiled_tolerance(want.dtype())), "") << r.source;
}

Tensor on_gpu(IntArrayRef sizes, ScalarType dtype, uint64_t seed = 7) {
  return random_values(sizes, dtype, -2, 2, seed).cuda();
}

TEST_P(InductorCuda, W1PointwiseChainEqualsEager) {
  auto w1 = [](const Tensor& x) {
    return sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), std::nullopt, Scalar(10));
  };
  expect_compiled_equals_eager(w1, on_gpu({301, 257}, GetParam()));
  // Transposed (strided kernel) and an odd length (the vector kernel's scalar tail).
  expect_compiled_equals_eager(w1, on_gpu({64, 96}, GetParam()).t());
  expect_compiled_equals_eager(w1, on_gpu({1027}, GetParam()));
}

TEST_P(InductorCuda, W2SoftmaxWithAnEpilogueEqualsEager) {
  auto f = [](const Tensor& x) { return softmax(x, -1) * 3; };
  expect_compiled_equals_eager(f, on_gpu({64, 1000}, GetParam()));   // a warp per row
  expect_compiled_equals_eager(f, on_gpu({16, 5000}, GetParam()));   // a block per row
  auto g = [](const Tensor& x) { return log_softmax(x + 1, -1); };
  expect_compiled_equals_eager(g, on_gpu({33, 77}, GetParam()));
}

TEST_P(InductorCuda, W3LayerNormEqualsEager) {
  const ScalarType t = GetParam();
  const Tensor w = on_gpu({1024}, t, 3), b = on_gpu({1024}, t, 5);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) { return layer_norm(x, {1024}, w, b); };
  expect_compiled_equals_eager(f, on_gpu({128, 1024}, t), w, b);
  auto g = [](const Tensor& x) { return relu(layer_norm(x * 2, {3000})); };
  expect_compiled_equals_eager(g, on_gpu({8, 3000}, t));
}

TEST_P(InductorCuda, RowsHeldInRegistersEqualEagerForEveryRowLength) {
  const ScalarType t = GetParam();
  auto softmax_fn = [](const Tensor& x) { return softmax(x * 2, -1) * 3; };
  auto log_softmax_fn = [](const Tensor& x) { return log_softmax(x, -1) - x; };
  for (int64_t n : {1, 31, 32, 33, 767, 768, 1024, 4096, 5000, 8192}) {
    SCOPED_TRACE("rows of " + std::to_string(n));
    const Tensor w = on_gpu({n}, t, 3), b = on_gpu({n}, t, 5);
    auto layer_norm_fn = [n](const Tensor& x, const Tensor& w, const Tensor& b) {
      return relu(layer_norm(x + 1, {n}, w, b));
    };
    // Contiguous rows (16-byte accesses where the row allows), rows starting one element
    // past an aligned address (element by element), and rows n + 1 elements apart.
    const Tensor contiguous = on_gpu({9, n}, t);
    const Tensor shifted = on_gpu({9 * n + 1}, t, 11).narrow(0, 1, 9 * n).view({9, n});
    const Tensor strided = on_gpu({9, n + 1}, t, 13).narrow(1, 0, n);
    for (const Tensor& x : {contiguous, shifted, strided}) {
      expect_compiled_equals_eager(softmax_fn, x);
      expect_compiled_equals_eager(log_softmax_fn, x);
      expect_compiled_equals_eager(layer_norm_fn, x, w, b);
    }
  }
}

TEST_P(InductorCuda, ReductionsOverAnyDimsEqualEager) {
  const ScalarType t = GetParam();
  expect_compiled_equals_eager([](const Tensor& x) { return sum(x * x, {1}) * 0.5; }, on_gpu({64, 4096}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return amax(x, {0}, true) - 1; }, on_gpu({33, 17}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return mean(x, {0, 2}); }, on_gpu({6, 5, 40}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return x - mean(x, {-1}, true); }, on_gpu({50, 300}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return var(x, std::vector<int64_t>{1}); }, on_gpu({20, 2000}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return amin(x.t(), {1}); }, on_gpu({70, 30}, t));
  // Column reductions (a thread per column), the bias gradient's shape.
  expect_compiled_equals_eager([](const Tensor& x) { return sum(x, {0}, true) + 1; }, on_gpu({300, 2000}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return var(x, std::vector<int64_t>{0}); }, on_gpu({50, 1500}, t));
  // Split reductions: few long rows.
  expect_compiled_equals_eager([](const Tensor& x) { return sum(x) * 2; }, on_gpu({512, 1024}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return mean(x, {1}); }, on_gpu({3, 70000}, t));
  expect_compiled_equals_eager([](const Tensor& x) { return amax(exp(x), {0}); }, on_gpu({100000, 2}, t));
}

TEST_P(InductorCuda, W4MlpBlockWithGemmExternCallsEqualsEager) {
  const ScalarType t = GetParam();
  const Tensor w1 = on_gpu({256, 64}, t, 3) * 0.1, b1 = on_gpu({256}, t, 4);
  const Tensor w2 = on_gpu({64, 256}, t, 5) * 0.1, b2 = on_gpu({64}, t, 6);
  auto f = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
    return x + linear(gelu(linear(layer_norm(x, {64}), w1, b1)), w2, b2);
  };
  expect_compiled_equals_eager(f, on_gpu({32, 64}, t), w1, b1, w2, b2);
}

TEST_P(InductorCuda, W5MaskedAttentionEqualsEager) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
    const Tensor s = matmul(q, k.transpose(-2, -1)) * 0.125;
    return matmul(softmax(masked_fill(s, mask, -1e4), -1), v);
  };
  // The mask is an input, made on the CPU and moved, as the GPT-2 block's (triu has no CUDA
  // kernel, and a graph building it on the CPU would mix devices).
  const Tensor mask = triu(ones({16, 16}, kBool), 1).cuda();
  expect_compiled_equals_eager(f, on_gpu({2, 4, 16, 32}, t, 1), on_gpu({2, 4, 16, 32}, t, 2), on_gpu({2, 4, 16, 32}, t, 3),
                               mask);
}

Tensor gpt2_forward(nn::UnaryModule& m, const Tensor& x) { return m.forward(x); }

/// W5's block in eval mode on cuda:0 in dtype `t`, its parameters from seed 0.
std::shared_ptr<nn::GPT2Block> gpt2_block_on_gpu(ScalarType t) {
  manual_seed(0);
  auto block = std::make_shared<nn::GPT2Block>();
  block->to(Device("cuda:0"));
  block->to(t);
  block->eval();
  return block;
}

TEST_P(InductorCuda, W5Gpt2BlockBuildingItsMaskOnTheHostCompilesToCudaKernels) {
  // The block makes its causal mask on the CPU and copies it (triu has no CUDA kernel):
  // traced before any eager call, the copy is in the graph, computed once at compile time
  // and kept on the GPU as a graph constant, so the graph compiles instead of running in
  // the interpreter.
  const ScalarType t = GetParam();
  const std::shared_ptr<nn::GPT2Block> block = gpt2_block_on_gpu(t);
  NoGradGuard no_grad;
  const Tensor x = on_gpu({2, 16, 768}, t, 21);
  auto compiled = compile(gpt2_forward, {.backend = "inductor"});
  const Tensor got = compiled(*block, x);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.host_constants.size(), 1u) << "the mask's copy, folded";
  EXPECT_NE(r.host_constants[0].find("aten::_to_copy"), std::string::npos) << r.host_constants[0];
  EXPECT_NE(r.source.find("__global__"), std::string::npos) << "compiled to CUDA kernels, not interpreted";
  const Tensor want = block->forward(x);
  ASSERT_TRUE(got.is_cuda());
  EXPECT_EQ(mismatch(got, want.cpu(), compiled_tolerance(t)), "") << r.source;
  // Later calls reuse the compiled graph and its constant.
  EXPECT_EQ(mismatch(compiled(*block, x), want.cpu(), compiled_tolerance(t)), "");
  EXPECT_EQ(compiled.cache_size(), 1u);
}

TEST_P(InductorCuda, W5Gpt2BlockOverADynamicLengthCompilesOnceToCudaKernels) {
  // W10 on the GPU: one compile serves every sequence length; the causal mask over the
  // symbolic length is built on the device, so the graph compiles (a host mask of a
  // symbolic size would make it mix devices and run in the interpreter).
  const ScalarType t = GetParam();
  const std::shared_ptr<nn::GPT2Block> block = gpt2_block_on_gpu(t);
  NoGradGuard no_grad;
  testing::LogCapture logs("perf_hints");
  auto compiled = compile(gpt2_forward, {.backend = "inductor", .name = "w10", .dynamic = true});
  for (int64_t T : {32, 77, 200}) {
    const Tensor x = on_gpu({1, T, 768}, t, 21);
    const Tensor got = compiled(*block, x);
    EXPECT_EQ(mismatch(got, block->forward(x).cpu(), compiled_tolerance(t)), "") << "T = " << T;
  }
  EXPECT_EQ(compiled.cache_size(), 1u);
  EXPECT_NE(inductor::last_compile_report().source.find("const ember_dev::Sizes<"), std::string::npos);
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_P(InductorCuda, W6ConvolutionBlockEqualsEager) {
  const ScalarType t = GetParam();
  const Tensor w = on_gpu({8, 8, 3, 3}, t, 3) * 0.2;
  const Tensor rm = zeros({8}, TensorOptions(t).device(Device("cuda:0")));
  const Tensor rv = ones({8}, TensorOptions(t).device(Device("cuda:0")));
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& rm, const Tensor& rv) {
    const Tensor y = batch_norm(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}), std::nullopt, std::nullopt, rm, rv, false);
    return relu(y + x);
  };
  NoGradGuard no_grad;
  expect_compiled_equals_eager(f, on_gpu({2, 8, 12, 12}, t), w, rm, rv);
}

// A batch norm in training mode compiled for CUDA: output and running stats equal eager's.
// (On the CPU the inductor splits such a batch norm into batch_norm_update_stats, a
// CPU-only op, and fused pointwise code; on CUDA the graph must keep native_batch_norm.)
TEST_P(InductorCuda, W9BatchNormInTrainingEqualsEagerWithItsRunningStats) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& x, const Tensor& rm, const Tensor& rv) {
    return relu(batch_norm(x, std::nullopt, std::nullopt, rm, rv, true) + x);
  };
  const TensorOptions on(TensorOptions(t).device(Device("cuda:0")));
  const Tensor x = on_gpu({4, 8, 6, 6}, t);
  Tensor rm_c = zeros({8}, on), rv_c = ones({8}, on), rm_e = zeros({8}, on), rv_e = ones({8}, on);
  NoGradGuard no_grad;
  auto compiled = compile(f, {.backend = "inductor"});
  const Tensor got = compiled(x, rm_c, rv_c);
  const Tensor want = f(x, rm_e, rv_e);
  ASSERT_TRUE(got.is_cuda());
  EXPECT_EQ(mismatch(got, want.cpu(), compiled_tolerance(t)), "");
  EXPECT_EQ(mismatch(rm_c, rm_e.cpu(), compiled_tolerance(t)), "");
  EXPECT_EQ(mismatch(rv_c, rv_e.cpu(), compiled_tolerance(t)), "");
}

TEST_P(InductorCuda, W7TrainingStepGradientsEqualEager) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& x, const Tensor& w) { return sum(gelu(matmul(layer_norm(x, {64}), w)) * 2); };
  const Tensor x = on_gpu({16, 64}, t), w = on_gpu({64, 32}, t, 9) * 0.1;
  Tensor xc = x.detach().requires_grad_(true), wc = w.detach().requires_grad_(true);
  Tensor xe = x.detach().requires_grad_(true), we = w.detach().requires_grad_(true);
  auto compiled = compile(f, {.backend = "inductor"});
  compiled(xc, wc).backward();
  f(xe, we).backward();
  EXPECT_EQ(mismatch(xc.grad(), xe.grad().cpu(), compiled_tolerance(t)), "");
  EXPECT_EQ(mismatch(wc.grad(), we.grad().cpu(), compiled_tolerance(t)), "");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, InductorCuda, ::testing::Values(kFloat, kHalf, kBFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

using InductorCudaDevices = Gpu;

TEST_F(InductorCudaDevices, CpuAndCudaCallsOfOneFunctionAreSeparateEntries) {
  auto f = [](const Tensor& x) { return exp(x) + 1; };
  try {  // the CPU call builds C++: a GPU machine may lack the toolchain (Sleef's headers)
    compile(f, {.backend = "inductor"})(random_values({2, 3}, kFloat));
  } catch (const Error& e) {
    if (std::string(e.what()).find("does not compile") == std::string::npos) throw;
    GTEST_SKIP() << "this machine cannot build the inductor's CPU code: " << e.what();
  }
  auto compiled = compile(f, {.backend = "inductor"});
  const Tensor x = random_values({40, 50}, kFloat);
  EXPECT_EQ(mismatch(compiled(x.cuda()), f(x)), "");
  EXPECT_EQ(inductor::last_compile_report().source.find("__global__") != std::string::npos, true);
  const Tensor on_cpu = compiled(x);
  EXPECT_TRUE(on_cpu.is_cpu()) << "the CPU call compiled its own graph (the device is guarded)";
  EXPECT_EQ(mismatch(on_cpu, f(x)), "");
  EXPECT_EQ(inductor::last_compile_report().source.find("__global__"), std::string::npos);
  EXPECT_EQ(compiled.cache_size(), 2u);
}

TEST_F(InductorCudaDevices, AGraphMixingCpuAndCudaTensorsRunsEagerly) {
  auto f = [](const Tensor& x, const Tensor& y) { return exp(x) + y.cuda(); };
  auto compiled = compile(f, {.backend = "inductor"});
  const Tensor x = random_values({8, 9}, kFloat), y = random_values({8, 9}, kFloat, -1, 2, 3);
  EXPECT_EQ(mismatch(compiled(x.cuda(), y), f(x.cuda(), y).cpu()), "");
}

TEST_F(InductorCudaDevices, AGraphWithADataDependentSizeCompilesOnceIntoKernelsForEveryCount) {
  // The mask's count is an unbacked symbol the wrapper reads from the index's output; the
  // kernels after it (exp, the column sum over the kept rows) take it as a size value.
  const bool was = config().dynamo.capture_dynamic_output_shape_ops;
  config().dynamo.capture_dynamic_output_shape_ops = true;
  testing::LogCapture logs("perf_hints");
  auto f = [](const Tensor& x) { return exp(index(x, {x.sum({1}) > 0})).sum({0}); };
  auto compiled = compile(f, {.backend = "inductor", .fullgraph = true, .name = "rows"});
  for (uint64_t seed : {4, 5, 6, 7}) {
    const Tensor x = random_values({16, 8}, kFloat, -1, 1, seed).cuda();
    EXPECT_EQ(mismatch(compiled(x), f(x).cpu(), Tolerance{{1e-5, 1e-5}}), "") << "seed " << seed;
  }
  const Tensor none = full({16, 8}, -1.0, TensorOptions().device(Device("cuda:0")));
  EXPECT_EQ(mismatch(compiled(none), f(none).cpu(), Tolerance{{1e-5, 1e-5}}), "") << "no kept row";
  config().dynamo.capture_dynamic_output_shape_ops = was;
  EXPECT_EQ(compiled.cache_size(), 1u);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_NE(r.source.find("const ember_dev::Sizes<"), std::string::npos) << "kernels over the count:\n" << r.source;
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_F(InductorCudaDevices, ATrainingGraphOverASymbolicBatchCompilesOnceAndItsGradientsEqualEager) {
  // The AOT stage traces the joint graph over the batch symbol; the forward and backward
  // graphs both compile for CUDA over it (the layer norm's backward rows, the column sums
  // of the weight's gradient over s0 rows). Float32: in float16 and bfloat16 the weight's
  // gradient sums up to 300 terms that cancel (a result of 0.005 from terms near 1), and
  // compiled code rounds at other points than eager (H200: 0.015 against eager's 0.005 at
  // batch 300 in float16), as a static compile does.
  auto f = [](const Tensor& x, const Tensor& w) { return sum(gelu(matmul(layer_norm(x, {64}), w)) * 2); };
  const Tensor w = on_gpu({64, 32}, kFloat, 9) * 0.1;
  auto compiled = compile(f, {.backend = "inductor", .name = "train_dynamic", .dynamic = true});
  for (int64_t batch : {16, 37, 300}) {
    const Tensor x = on_gpu({batch, 64}, kFloat, 5);
    Tensor xc = x.detach().requires_grad_(true), wc = w.detach().requires_grad_(true);
    Tensor xe = x.detach().requires_grad_(true), we = w.detach().requires_grad_(true);
    compiled(xc, wc).backward();
    f(xe, we).backward();
    EXPECT_EQ(mismatch(xc.grad(), xe.grad().cpu(), compiled_tolerance(kFloat)), "") << "batch " << batch;
    EXPECT_EQ(mismatch(wc.grad(), we.grad().cpu(), compiled_tolerance(kFloat)), "") << "batch " << batch;
  }
  EXPECT_EQ(compiled.cache_size(), 1u);
  EXPECT_NE(inductor::last_compile_report().source.find("const ember_dev::Sizes<"), std::string::npos)
      << "the backward's kernels over the batch";
}

TEST_F(InductorCudaDevices, ATrainingGraphThroughADataDependentSizeCompilesAndItsGradientsEqualEager) {
  // AOT autograd traces the joint graph over the mask's count: the backward graph reads it
  // from a saved value's size and scatters the gradient back (index_put) on the GPU.
  const bool was = config().dynamo.capture_dynamic_output_shape_ops;
  config().dynamo.capture_dynamic_output_shape_ops = true;
  testing::LogCapture logs("perf_hints");
  auto f = [](const Tensor& x) { return (exp(index(x, {x.sum({1}) > 0})) * 3.0).pow(2).sum(); };
  auto compiled = compile(f, {.backend = "inductor", .fullgraph = true, .name = "rows_training"});
  for (uint64_t seed : {4, 5, 6}) {
    const Tensor x = random_values({16, 8}, kFloat, -1, 1, seed).cuda();
    Tensor xc = x.detach().requires_grad_(true), xe = x.detach().requires_grad_(true);
    compiled(xc).backward();
    f(xe).backward();
    EXPECT_EQ(mismatch(xc.grad(), xe.grad().cpu(), Tolerance{{1e-5, 1e-5}}), "") << "seed " << seed;
  }
  config().dynamo.capture_dynamic_output_shape_ops = was;
  EXPECT_EQ(compiled.cache_size(), 1u);
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_P(InductorCuda, ASymbolicGraphCompilesOnceIntoKernelsForEverySize) {
  // Rows of x (s0) and the length of s's rows (s1) vary: one compile serves every call,
  // its kernels taking the sizes as values (a layer norm's rows of 768 in registers, a
  // softmax and a variance over rows of s1, column sums over s0 rows, a transposed
  // pointwise read, a GEMM extern over s0 rows), against eager at each size.
  const ScalarType t = GetParam();
  const Tensor w = on_gpu({768}, t, 3), b = on_gpu({768}, t, 5), wm = on_gpu({768, 64}, t, 9) * 0.05;
  auto f = [](const Tensor& x, const Tensor& s, const Tensor& w, const Tensor& b, const Tensor& wm) {
    const Tensor h = layer_norm(x * 2 + 1, {768}, w, b);
    return std::make_tuple(gelu(h), softmax(s, -1) * 3, var(s, std::vector<int64_t>{1}), h.sum({0}), s.t() + 1,
                           matmul(h, wm));
  };
  auto compiled = compile(f, {.backend = "inductor", .fullgraph = true, .name = "dynamic", .dynamic = true});
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{8, 77}, {13, 128}, {100, 5}, {3, 1030}, {2051, 33}};
  for (const auto& [rows, cols] : sizes) {
    const Tensor x = on_gpu({rows, 768}, t, 11), s = on_gpu({rows, cols}, t, 13);
    const auto got = compiled(x, s, w, b, wm);
    const auto want = f(x, s, w, b, wm);
    const std::string at = std::to_string(rows) + " x " + std::to_string(cols);
    EXPECT_EQ(mismatch(std::get<0>(got), std::get<0>(want).cpu(), compiled_tolerance(t)), "") << at;
    EXPECT_EQ(mismatch(std::get<1>(got), std::get<1>(want).cpu(), compiled_tolerance(t)), "") << at;
    EXPECT_EQ(mismatch(std::get<2>(got), std::get<2>(want).cpu(), compiled_tolerance(t)), "") << at;
    EXPECT_EQ(mismatch(std::get<3>(got), std::get<3>(want).cpu(), compiled_tolerance(t)), "") << at;
    EXPECT_EQ(mismatch(std::get<4>(got), std::get<4>(want).cpu(), compiled_tolerance(t)), "") << at;
    EXPECT_EQ(mismatch(std::get<5>(got), std::get<5>(want).cpu(), compiled_tolerance(t)), "") << at;
  }
  EXPECT_EQ(compiled.cache_size(), 1u) << "one compile for every size";
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_NE(r.source.find("const ember_dev::Sizes<"), std::string::npos) << "kernels over the sizes:\n" << r.source;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(InductorCudaDevices, TraceHoldsOutputCodeCuAndTheKernelProfileTimesCudaSteps) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ember_cuda_trace_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto saved = config().inductor.trace;
  config().inductor.trace.enabled = true;
  config().inductor.trace.debug_dir = root.string();
  config().inductor.trace.kernel_profile = true;
  auto fn = [](const Tensor& x, const Tensor& w) { return relu(mm(x * 2, w) + 1); };
  {
    auto compiled = compile(fn, {.backend = "inductor"});
    const Tensor x = random_values({64, 32}, kFloat).cuda(), w = random_values({32, 48}, kFloat, -1, 1, 3).cuda();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(mismatch(compiled(x, w), fn(x, w).cpu()), "");
  }
  config().inductor.trace = saved;
  std::vector<fs::path> graphs;
  for (const auto& run : fs::directory_iterator(root / "torch_compile_debug"))
    for (const auto& g : fs::directory_iterator(run.path() / "torchinductor"))
      if (g.is_directory()) graphs.push_back(g.path());
  ASSERT_EQ(graphs.size(), 1u);
  const std::string code = read_file(graphs[0] / "output_code.cu");
  EXPECT_NE(code.find("extern \"C\" __global__ void"), std::string::npos) << code;
  EXPECT_NE(code.find("launch plan"), std::string::npos) << code;
  EXPECT_NE(read_file(graphs[0] / "ir_pre_fusion.txt").find("device=cuda:0"), std::string::npos);
  const std::string profile = read_file(graphs[0] / "kernel_profile.txt");
  EXPECT_NE(profile.find(": 3 calls, 3 steps"), std::string::npos) << profile;
  EXPECT_NE(profile.find("kernel cuda_fused_mul_0"), std::string::npos) << profile;
  EXPECT_NE(profile.find("extern aten::mm (%mm)"), std::string::npos) << profile;
  fs::remove_all(root);
}

}  // namespace
}  // namespace ember::gpu_test
