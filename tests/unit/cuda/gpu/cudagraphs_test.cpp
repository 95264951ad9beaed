// GPU tests of CUDA graphs (compile mode "reduce-overhead", inductor/cudagraphs.cpp): the
// first call warms up, the second captures and replays, later calls replay; every result
// equals eager CUDA for pointwise, row, GEMM-with-epilogue and GPT-2 block graphs; new
// inputs give new results; an output kept across a replay is overwritten (the documented
// behaviour); graphs that cannot be captured say why on TORCH_LOGS=cudagraphs and still
// equal eager.
#include <gtest/gtest.h>

#include "ember/compile.h"
#include "ember/config.h"
#include "ember/ember.h"
#include "ember/nn/blocks.h"
#include "gpu_helpers.h"
#include "support/log_capture.h"

namespace ember::gpu_test {
namespace {

Tensor on_gpu(IntArrayRef sizes, ScalarType dtype, uint64_t seed = 7) {
  return random_values(sizes, dtype, -2, 2, seed).cuda();
}

const CompileOptions kReduceOverhead{.backend = "inductor", .mode = "reduce-overhead"};

class CudaGraphs : public Gpu, public ::testing::WithParamInterface<ScalarType> {};

/// Calls `compiled` and `fn` on four argument sets (warm-up, capture, two replays), each
/// result against eager; the log says a graph was recorded, once.
template <typename Compiled, typename Fn, typename MakeArgs>
void expect_replays_equal_eager(Compiled& compiled, Fn fn, MakeArgs make_args, ScalarType t) {
  testing::LogCapture logs("cudagraphs");
  for (uint64_t call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call + 1));
    auto args = make_args(100 + call);
    const Tensor got = std::apply(compiled, args);
    const Tensor want = std::apply(fn, args);
    ASSERT_TRUE(got.is_cuda());
    EXPECT_EQ(mismatch(got, want.cpu(), compiled_tolerance(t)), "");
  }
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("skipping cudagraphs"), std::string::npos) << logs.text();
}

TEST_P(CudaGraphs, W1PointwiseReplayEqualsEagerForNewInputs) {
  const ScalarType t = GetParam();
  auto w1 = [](const Tensor& x) {
    return sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), std::nullopt, Scalar(10));
  };
  auto compiled = compile(w1, kReduceOverhead);
  expect_replays_equal_eager(compiled, w1, [&](uint64_t seed) { return std::tuple{on_gpu({301, 257}, t, seed)}; }, t);
}

TEST_P(CudaGraphs, SoftmaxRowReplayEqualsEager) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& x) { return softmax(x, -1) * 3 + log_softmax(x * 2, -1); };
  auto compiled = compile(f, kReduceOverhead);
  expect_replays_equal_eager(compiled, f, [&](uint64_t seed) { return std::tuple{on_gpu({64, 1000}, t, seed)}; }, t);
}

TEST_P(CudaGraphs, GemmWithEpilogueReplayEqualsEager) {
  // cuBLASLt's product and its workspace inside the graph, a fused bias + gelu after it.
  const ScalarType t = GetParam();
  const Tensor w = on_gpu({256, 128}, t, 3) * 0.1, b = on_gpu({256}, t, 4);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) { return gelu(linear(x, w, b)) * 2 - 1; };
  auto compiled = compile(f, kReduceOverhead);
  expect_replays_equal_eager(
      compiled, f, [&](uint64_t seed) { return std::tuple{on_gpu({64, 128}, t, seed), w, b}; }, t);
}

Tensor gpt2_forward(nn::UnaryModule& m, const Tensor& x) { return m.forward(x); }

TEST_P(CudaGraphs, W5Gpt2BlockReplayEqualsEager) {
  const ScalarType t = GetParam();
  manual_seed(0);
  auto block = std::make_shared<nn::GPT2Block>();
  block->to(Device("cuda:0"));
  block->to(t);
  block->eval();
  NoGradGuard no_grad;
  auto compiled = compile(gpt2_forward, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call + 1));
    const Tensor x = on_gpu({2, 16, 768}, t, 21 + call);
    const Tensor got = compiled(*block, x);
    EXPECT_EQ(mismatch(got, block->forward(x).cpu(), compiled_tolerance(t)), "");
  }
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 1u) << logs.text();
  EXPECT_EQ(compiled.cache_size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaGraphs, ::testing::Values(kFloat, kHalf, kBFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

using CudaGraphOutputs = Gpu;

TEST_F(CudaGraphOutputs, AnOutputKeptAcrossAReplayIsOverwrittenByTheNextCall) {
  // As in PyTorch: the outputs of a replay are the graph's static buffers, valid until the
  // next call of the same compiled graph; a caller keeping one must clone it.
  auto f = [](const Tensor& x) { return exp(x) + 1; };
  auto compiled = compile(f, kReduceOverhead);
  const Tensor x1 = on_gpu({1000}, kFloat, 1), x2 = on_gpu({1000}, kFloat, 2), x3 = on_gpu({1000}, kFloat, 3);
  compiled(x1);                               // warm-up: a fresh tensor
  const Tensor kept = compiled(x2);           // captured and replayed: the static output
  const Tensor cloned = kept.clone();
  EXPECT_EQ(mismatch(cloned, f(x2).cpu(), compiled_tolerance(kFloat)), "");
  const Tensor next = compiled(x3);
  EXPECT_EQ(next.raw_data_ptr(), kept.raw_data_ptr()) << "the same static buffer";
  EXPECT_EQ(mismatch(kept, f(x3).cpu(), compiled_tolerance(kFloat)), "") << "overwritten by the replay";
  EXPECT_EQ(mismatch(cloned, f(x2).cpu(), compiled_tolerance(kFloat)), "") << "the clone keeps its values";
}

TEST_F(CudaGraphOutputs, FeedingAnOutputBackAsTheNextInputEqualsEagerIteration) {
  auto f = [](const Tensor& x) { return tanh(x * 0.9 + 0.1); };
  auto compiled = compile(f, kReduceOverhead);
  Tensor c = on_gpu({4096}, kFloat, 5), e = c.clone();
  for (int i = 0; i < 6; ++i) {
    c = compiled(c);
    e = f(e);
    EXPECT_EQ(mismatch(c, e.cpu(), compiled_tolerance(kFloat)), "") << "iteration " << i;
  }
}

TEST_F(CudaGraphOutputs, AStridedInputIsCopiedIntoTheStaticBuffer) {
  auto f = [](const Tensor& x) { return x * x - 1; };
  auto compiled = compile(f, kReduceOverhead);
  for (uint64_t call = 0; call < 3; ++call) {
    const Tensor x = on_gpu({64, 96}, kFloat, 40 + call).t().contiguous().t();  // same strides as the trace
    EXPECT_EQ(mismatch(compiled(x), f(x).cpu(), compiled_tolerance(kFloat)), "");
  }
}

TEST_F(CudaGraphOutputs, ParametersAreReadInPlaceAndAReplacedOneReRecordsTheGraph) {
  // As PyTorch's static inputs: a module's parameters are not copied at each replay; the
  // graph reads them where they are, so an in-place update is seen by the next replay.
  manual_seed(0);
  auto block = std::make_shared<nn::MLPBlock>();
  block->to(Device("cuda:0"));
  block->eval();
  NoGradGuard no_grad;
  auto compiled = compile(gpt2_forward, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t call = 0; call < 3; ++call) {
    const Tensor x = on_gpu({32, 1024}, kFloat, 50 + call);
    EXPECT_EQ(mismatch(compiled(*block, x), block->forward(x).cpu(), compiled_tolerance(kFloat)), "");
  }
  EXPECT_NE(logs.text().find("1 copied into static buffers"), std::string::npos) << "x alone is copied: "
                                                                                  << logs.text();
  block->fc1->weight().mul_(0.5);  // in place: the next replay reads it
  const Tensor x = on_gpu({32, 1024}, kFloat, 60);
  EXPECT_EQ(mismatch(compiled(*block, x), block->forward(x).cpu(), compiled_tolerance(kFloat)), "");
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 1u) << logs.text();
  // A parameter replaced by another tensor: the runner records the graph again, copying
  // it (a recompile's first call would be a warm-up that records nothing).
  block->fc2->weight() = block->fc2->weight().clone() * 2;
  EXPECT_EQ(mismatch(compiled(*block, x), block->forward(x).cpu(), compiled_tolerance(kFloat)), "");
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 2u) << logs.text();
}

using CudaGraphSkips = Gpu;

TEST_F(CudaGraphSkips, AGraphWithACpuStepLogsTheSkipAndEqualsEager) {
  // y stays on the CPU and is copied inside the function: the graph mixes devices and its
  // copy is a host step, so it runs without CUDA graphs.
  auto f = [](const Tensor& x, const Tensor& y) { return exp(x) + y.cuda(); };
  auto compiled = compile(f, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t call = 0; call < 3; ++call) {
    const Tensor x = on_gpu({8, 9}, kFloat, call), y = random_values({8, 9}, kFloat, -1, 2, 10 + call);
    EXPECT_EQ(mismatch(compiled(x, y), f(x, y).cpu()), "");
  }
  EXPECT_NE(logs.text().find("skipping cudagraphs due to"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("recorded a CUDA graph"), std::string::npos) << logs.text();
}

TEST_F(CudaGraphSkips, ACpuScalarInputLogsCpuDeviceAndEqualsEager) {
  // A 0-dim CPU tensor beside CUDA ones is read on the host at each call.
  auto f = [](const Tensor& x, const Tensor& s) { return x * s + 1; };
  auto compiled = compile(f, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t call = 0; call < 3; ++call) {
    const Tensor x = on_gpu({100}, kFloat, call);
    const Tensor s = scalar_tensor(Scalar(1.5 + static_cast<double>(call)), kFloat);
    EXPECT_EQ(mismatch(compiled(x, s), f(x, s).cpu(), compiled_tolerance(kFloat)), "") << "call " << call;
  }
  EXPECT_NE(logs.text().find("skipping cudagraphs due to cpu device"), std::string::npos) << logs.text();
}

TEST_F(CudaGraphSkips, ATrainingGraphLogsTheSkipAndItsGradientsEqualEager) {
  auto f = [](const Tensor& x, const Tensor& w) { return sum(gelu(matmul(x, w)) * 2); };
  const Tensor x = on_gpu({16, 64}, kFloat), w = on_gpu({64, 32}, kFloat, 9) * 0.1;
  auto compiled = compile(f, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (int call = 0; call < 3; ++call) {
    Tensor wc = w.detach().requires_grad_(true), we = w.detach().requires_grad_(true);
    compiled(x, wc).backward();
    f(x, we).backward();
    EXPECT_EQ(mismatch(wc.grad(), we.grad().cpu(), compiled_tolerance(kFloat)), "") << "call " << call;
  }
  EXPECT_NE(logs.text().find("skipping cudagraphs due to a training graph's forward"), std::string::npos)
      << logs.text();
}

TEST_F(CudaGraphSkips, TheCudagraphsKnobCapturesWithoutTheMode) {
  config().inductor.cudagraphs = true;
  auto f = [](const Tensor& x) { return relu(x) * 3; };
  auto compiled = compile(f, {.backend = "inductor"});
  testing::LogCapture logs("cudagraphs");
  for (uint64_t call = 0; call < 3; ++call) {
    const Tensor x = on_gpu({500}, kFloat, call);
    EXPECT_EQ(mismatch(compiled(x), f(x).cpu(), compiled_tolerance(kFloat)), "");
  }
  config().inductor.cudagraphs = false;
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 1u) << logs.text();
}

}  // namespace
}  // namespace ember::gpu_test
