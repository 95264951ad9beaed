// GPU tests of CUDA graphs (compile mode "reduce-overhead", inductor/cudagraphs.cpp): the
// first call warms up, the second captures and replays, later calls replay; every result
// equals eager CUDA for pointwise, row, GEMM-with-epilogue and GPT-2 block graphs; new
// inputs give new results; an output kept across a replay is overwritten (the documented
// behaviour); training graphs are captured and never overwrite what autograd holds; a
// compiled AdamW step on CUDA is made capturable; graphs that cannot be captured say why on
// TORCH_LOGS=cudagraphs and still equal eager.
#include <gtest/gtest.h>

#include "ember/compile.h"
#include "ember/config.h"
#include "ember/ember.h"
#include "ember/nn/blocks.h"
#include "ember/optim.h"
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

using CapturableAdamW = Gpu;

/// Three CUDA parameters of float32 and their gradients for step `k` (the same values for
/// every copy made from `seed`).
std::vector<Tensor> adamw_params(uint64_t seed) {
  std::vector<Tensor> ps;
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{64, 32}, {32}, {5, 7}})
    ps.push_back(on_gpu(sizes, kFloat, seed++).requires_grad_(true));
  return ps;
}
void set_grads(const std::vector<Tensor>& ps, uint64_t k) {
  for (size_t i = 0; i < ps.size(); ++i) ps[i].mutable_grad() = on_gpu(ps[i].sizes(), kFloat, 1000 + 10 * k + i);
}

TEST_F(CapturableAdamW, TheDeviceStepEqualsTheHostStepWithinFloatRounding) {
  // PyTorch's capturable branch: the step count on the device and the bias corrections in
  // float32 there, against the host path's float64 corrections.
  for (const bool amsgrad : {false, true}) {
    SCOPED_TRACE(amsgrad ? "amsgrad" : "adamw");
    const optim::AdamWOptions o{.lr = 0.01, .betas = {0.8, 0.9}, .weight_decay = 0.1, .amsgrad = amsgrad};
    std::vector<Tensor> dev = adamw_params(1), host;
    for (const Tensor& p : dev) host.push_back(p.detach().cpu().requires_grad_(true));
    optim::AdamW on_device(
        dev, {.lr = o.lr, .betas = o.betas, .weight_decay = o.weight_decay, .amsgrad = amsgrad, .capturable = true}),
        on_host(host, o);
    for (uint64_t k = 0; k < 6; ++k) {
      set_grads(dev, k);
      for (size_t i = 0; i < dev.size(); ++i) host[i].mutable_grad() = dev[i].grad().cpu();
      on_device.step();
      on_host.step();
    }
    EXPECT_TRUE(on_device.state(0).step.is_cuda());
    EXPECT_EQ(on_device.state(0).step.cpu().item<double>(), 6.0);
    for (size_t i = 0; i < dev.size(); ++i) {
      EXPECT_EQ(mismatch(dev[i].detach(), host[i].detach(), Tolerance{{1e-6, 1e-6}}), "") << "param " << i;
      EXPECT_EQ(mismatch(on_device.state(i).exp_avg_sq, on_host.state(i).exp_avg_sq, Tolerance{{1e-6, 1e-6}}), "");
    }
  }
}

TEST_F(CapturableAdamW, ACompiledStepOnCudaIsMadeCapturableAndReplayedFromACudaGraph) {
  // As torch.compile does, tracing the first step of CUDA parameters makes AdamW capturable:
  // the step counts are created on the device, the step's graph has no host input and is
  // captured. Its updates equal an eager capturable AdamW's.
  std::vector<Tensor> compiled_params = adamw_params(1), eager_params = adamw_params(1);
  optim::AdamW compiled_opt(compiled_params, {.lr = 0.01, .weight_decay = 0.1});
  optim::AdamW eager_opt(eager_params, {.lr = 0.01, .weight_decay = 0.1, .capturable = true});
  auto step = compile([&compiled_opt] { compiled_opt.step(); }, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t k = 0; k < 8; ++k) {
    set_grads(compiled_params, k);
    set_grads(eager_params, k);
    step();
    eager_opt.step();
    for (size_t i = 0; i < compiled_params.size(); ++i)
      EXPECT_EQ(mismatch(compiled_params[i].detach(), eager_params[i].detach().cpu(), compiled_tolerance(kFloat)), "")
          << "step " << k << ", param " << i;
  }
  EXPECT_TRUE(compiled_opt.options().capturable);
  EXPECT_TRUE(compiled_opt.state(0).step.is_cuda());
  EXPECT_EQ(compiled_opt.state(2).step.cpu().item<double>(), 8.0);
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("skipping cudagraphs"), std::string::npos) << logs.text();
}

TEST_F(CapturableAdamW, ACompiledStepWithoutCudaGraphsCountsEachStepOnceAndEqualsEager) {
  // Without CUDA graphs the new step count is written straight into its state tensor, while
  // the update's kernel computes the bias corrections from the count it read (Note
  // [recomputed scalars]): the count must be read before it is written, once per step.
  std::vector<Tensor> compiled_params = adamw_params(1), eager_params = adamw_params(1);
  optim::AdamW compiled_opt(compiled_params, {.lr = 0.01, .weight_decay = 0.1});
  optim::AdamW eager_opt(eager_params, {.lr = 0.01, .weight_decay = 0.1, .capturable = true});
  auto step = compile([&compiled_opt] { compiled_opt.step(); }, {.backend = "inductor"});
  for (uint64_t k = 0; k < 5; ++k) {
    set_grads(compiled_params, k);
    set_grads(eager_params, k);
    step();
    eager_opt.step();
    for (size_t i = 0; i < compiled_params.size(); ++i) {
      EXPECT_EQ(compiled_opt.state(i).step.cpu().item<double>(), static_cast<double>(k + 1)) << "param " << i;
      EXPECT_EQ(mismatch(compiled_params[i].detach(), eager_params[i].detach().cpu(), compiled_tolerance(kFloat)), "")
          << "step " << k << ", param " << i;
    }
  }
  EXPECT_TRUE(compiled_opt.options().capturable);
}

TEST_F(CapturableAdamW, StateMadeOnTheHostBeforeCompilingStaysThere) {
  // As torch.compile: an optimizer that stepped eagerly first keeps its host step counts,
  // and its compiled step runs without a CUDA graph, saying why.
  std::vector<Tensor> ps = adamw_params(1);
  optim::AdamW opt(ps, {.lr = 0.01});
  set_grads(ps, 0);
  opt.step();
  auto step = compile([&opt] { opt.step(); }, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t k = 1; k < 4; ++k) {
    set_grads(ps, k);
    step();
  }
  EXPECT_FALSE(opt.options().capturable);
  EXPECT_FALSE(opt.state(0).step.is_cuda());
  EXPECT_NE(logs.text().find("skipping cudagraphs due to cpu device"), std::string::npos) << logs.text();
}

// Training graphs, as PyTorch's cudagraph trees capture them: the forward and the
// backward each recorded once; the forward's saved values and the backward's gradients are
// not overwritten while autograd holds them (the call runs without the graph instead).
using CudaGraphTraining = Gpu;

// linear's weight gradient is the transpose of a product: a backward output that is a view
// of a buffer the graph made (the runner must count that buffer as its own, not as held).
Tensor mlp_loss(const Tensor& x, const Tensor& w) { return sum(gelu(linear(x, w)) * 2); }

TEST_F(CudaGraphTraining, ForwardAndBackwardAreCapturedAndEachStepsGradientsEqualEager) {
  const Tensor w0 = on_gpu({32, 64}, kFloat, 9) * 0.1;
  Tensor w = w0.clone().requires_grad_(true), we = w0.clone().requires_grad_(true);
  auto compiled = compile(mlp_loss, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t step = 0; step < 5; ++step) {
    const Tensor x = on_gpu({16, 64}, kFloat, 30 + step);
    const Tensor loss = compiled(x, w), want = mlp_loss(x, we);
    EXPECT_EQ(mismatch(loss.detach(), want.detach().cpu(), compiled_tolerance(kFloat)), "") << "step " << step;
    loss.backward();
    want.backward();
    EXPECT_EQ(mismatch(w.grad(), we.grad().cpu(), compiled_tolerance(kFloat)), "") << "step " << step;
    w.mutable_grad() = Tensor();  // zero_grad(set_to_none), as a training loop does
    we.mutable_grad() = Tensor();
  }
  EXPECT_EQ(testing::count_of(logs.text(), "recorded a CUDA graph"), 2u) << "the forward and the backward\n"
                                                                         << logs.text();
  EXPECT_EQ(logs.text().find("skipping cudagraphs"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("still in use"), std::string::npos) << logs.text();
}

TEST_F(CudaGraphTraining, TwoForwardsBeforeTheirBackwardsKeepEachOnesSavedValues) {
  // The second forward finds the first one's saved values held by its pending backward:
  // it runs without the graph, so both backwards see their own values.
  const Tensor w0 = on_gpu({32, 64}, kFloat, 9) * 0.1;
  Tensor w = w0.clone().requires_grad_(true), we = w0.clone().requires_grad_(true);
  auto compiled = compile(mlp_loss, kReduceOverhead);
  testing::LogCapture logs("cudagraphs");
  for (uint64_t step = 0; step < 3; ++step) {  // warm-up, capture, a replay
    compiled(on_gpu({16, 64}, kFloat, 40 + step), w).backward();
    w.mutable_grad() = Tensor();
  }
  const Tensor x1 = on_gpu({16, 64}, kFloat, 50), x2 = on_gpu({16, 64}, kFloat, 51);
  const Tensor l1 = compiled(x1, w), l2 = compiled(x2, w);
  l2.backward();
  const Tensor g2 = w.grad().clone();
  w.mutable_grad() = Tensor();
  l1.backward();
  mlp_loss(x2, we).backward();
  EXPECT_EQ(mismatch(g2, we.grad().cpu(), compiled_tolerance(kFloat)), "") << "the second forward's gradient";
  we.mutable_grad() = Tensor();
  mlp_loss(x1, we).backward();
  EXPECT_EQ(mismatch(w.grad(), we.grad().cpu(), compiled_tolerance(kFloat)), "") << "the first forward's gradient";
  EXPECT_NE(logs.text().find("values of its last replay are still in use"), std::string::npos) << logs.text();
}

TEST_F(CudaGraphTraining, GradientsAccumulatedOverBackwardsWithoutZeroingEqualEager) {
  // Without zero_grad the grad slot keeps the last backward's gradient, which the next
  // backward adds to: that backward runs without the graph rather than overwrite it.
  const Tensor w0 = on_gpu({32, 64}, kFloat, 9) * 0.1;
  Tensor w = w0.clone().requires_grad_(true), we = w0.clone().requires_grad_(true);
  auto compiled = compile(mlp_loss, kReduceOverhead);
  for (uint64_t step = 0; step < 5; ++step) {
    const Tensor x = on_gpu({16, 64}, kFloat, 60 + step);
    compiled(x, w).backward();
    mlp_loss(x, we).backward();
    EXPECT_EQ(mismatch(w.grad(), we.grad().cpu(), compiled_tolerance(kFloat)), "") << "after step " << step;
  }
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
