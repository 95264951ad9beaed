// Tests of autocast under ember::compile (Note [autocast], "Under compile"): the casts are
// recorded as _to_copy nodes, a compiled call inside a scope equals eager inside it on
// every backend, the autocast state is guarded, casts are not cached while tracing, and
// training through a compiled forward under autocast gives eager's gradients.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ops/autocast.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::expect_identical;

/// Eager and aot_eager run the eager kernels on the same casts: bitwise equal. The
/// inductor's fused float32 reductions may sum in another order.
void expect_backend_equal(const std::string& backend, const Tensor& compiled, const Tensor& eager,
                          const std::string& what) {
  if (backend == "inductor") {
    ASSERT_EQ(compiled.strides().vec(), eager.strides().vec()) << what;
    expect_close(compiled, eager, 1e-5, 1e-5, what);
  } else {
    expect_identical(compiled, eager, what);
  }
}

class CompiledAutocast : public testing::CompileDirTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(CompiledAutocast, ACompiledCallInsideAScopeEqualsEagerInsideIt) {
  const Tensor w = randn({6, 8}).requires_grad_(), b = randn({6}).requires_grad_(), target = randn({4, 6});
  auto fn = [&](const Tensor& x) {
    Tensor h = linear(x, w, b).relu();                // bfloat16
    Tensor p = softmax(h, 1);                         // not on the CPU list: bfloat16
    return std::make_tuple(h, p, mse_loss(h, target));  // float32
  };
  auto compiled = compile(fn, {.backend = GetParam()});
  const Tensor x = randn({4, 8});
  autocast scope(kCPU);
  for (int call = 0; call < 2; ++call) {  // the trace, then a replay
    auto [h, p, loss] = compiled(x);
    auto [eh, ep, eloss] = fn(x);
    EXPECT_EQ(h.dtype(), kBFloat16);
    EXPECT_EQ(loss.dtype(), kFloat);
    expect_backend_equal(GetParam(), h, eh, "linear");
    expect_backend_equal(GetParam(), p, ep, "softmax");
    expect_backend_equal(GetParam(), loss, eloss, "mse_loss");
  }
  EXPECT_EQ(compiled.cache_size(), 1u);
}

TEST_P(CompiledAutocast, ACallOutsideTheScopeDoesNotReuseTheGraphTracedInside) {
  auto fn = [](const Tensor& x, const Tensor& y) { return mm(x, y) * 2; };
  auto compiled = compile(fn, {.backend = GetParam()});
  const Tensor x = randn({3, 5}), y = randn({5, 2});
  {
    autocast scope(kCPU);
    expect_identical(compiled(x, y), fn(x, y), "inside");
    EXPECT_EQ(compiled(x, y).dtype(), kBFloat16);
  }
  const Tensor outside = compiled(x, y);
  EXPECT_EQ(outside.dtype(), kFloat);
  expect_backend_equal(GetParam(), outside, fn(x, y), "outside");
  {
    autocast scope(kCPU, kHalf);
    EXPECT_EQ(compiled(x, y).dtype(), kHalf) << "another dtype is another graph";
  }
  EXPECT_EQ(compiled.cache_size(), 3u);
}

TEST_P(CompiledAutocast, AScopeInsideTheCompiledFunctionEqualsEager) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor low;
    {
      autocast scope(kCPU);
      low = mm(x, y);
    }
    return mm(low.to(kFloat), y.t()) + 1;  // float32 again
  };
  auto compiled = compile(fn, {.backend = GetParam()});
  const Tensor x = randn({4, 4}), y = randn({4, 4});
  for (int call = 0; call < 2; ++call) expect_backend_equal(GetParam(), compiled(x, y), fn(x, y), "call");
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
}

TEST_P(CompiledAutocast, TrainingThroughACompiledForwardUnderAutocastGivesEagersGradients) {
  manual_seed(3);
  nn::Linear eager_fc(8, 5), compiled_fc(8, 5);
  compiled_fc.load_state_dict(eager_fc.state_dict());
  const Tensor x = randn({6, 8}), target = randn({6, 5});
  auto forward = [&target](nn::Linear& fc, const Tensor& in) { return mse_loss(fc.forward(in).relu(), target); };
  auto compiled = compile([&](const Tensor& in) { return forward(compiled_fc, in); }, {.backend = GetParam()});
  for (int step = 0; step < 2; ++step) {
    Tensor eager_loss, compiled_loss;
    {
      autocast scope(kCPU);
      eager_loss = forward(eager_fc, x);
      compiled_loss = compiled(x);
    }
    eager_loss.backward();
    compiled_loss.backward();
    expect_backend_equal(GetParam(), compiled_loss, eager_loss, "loss");
    expect_backend_equal(GetParam(), compiled_fc.weight().grad(), eager_fc.weight().grad(), "weight grad");
    expect_backend_equal(GetParam(), compiled_fc.bias().grad(), eager_fc.bias().grad(), "bias grad");
    EXPECT_EQ(compiled_fc.weight().grad().dtype(), kFloat);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledAutocast, ::testing::Values("eager", "aot_eager", "inductor"));

class AutocastCapture : public testing::DiagnosticsTest {};

TEST_F(AutocastCapture, TheCastsAreRecordedAsToCopyNodesBeforeTheOpRunsInTheLowDtype) {
  testing::RecordingBackend backend;
  auto compiled = compile([](const Tensor& x, const Tensor& y) { return mm(x, y); }, {.custom_backend = backend.fn()});
  autocast scope(kCPU);
  compiled(randn({2, 3}), randn({3, 4}));
  ASSERT_EQ(backend.graphs->size(), 1u);
  const std::string& g = backend.graphs->at(0);
  EXPECT_NE(g.find("bf16[2, 3] = aten::_to_copy(%arg0, torch.bfloat16"), std::string::npos) << g;
  EXPECT_NE(g.find("bf16[3, 4] = aten::_to_copy(%arg1, torch.bfloat16"), std::string::npos) << g;
  EXPECT_NE(g.find("bf16[2, 4] = aten::mm(%_to_copy, %_to_copy_1)"), std::string::npos) << "mm's output is bfloat16\n" << g;
  EXPECT_NE(g.find("autocast_compile_test.cpp:"), std::string::npos) << "the casts carry the user's line\n" << g;
}

TEST_F(AutocastCapture, TheGuardFailureNamesTheAutocastState) {
  auto fn = [](const Tensor& x) { return mm(x, x); };
  const Tensor x = randn({2, 2});
  ExplainOutput inside;
  {
    autocast scope(kCPU);
    inside = explain(fn)(x);
  }
  bool said = false;
  for (const std::string& g : inside.out_guards) said = said || g.find("autocast(cpu, bfloat16) enabled") != std::string::npos;
  EXPECT_TRUE(said) << "the guards of a trace under autocast say so";
  set_logs("recompiles");
  testing::LogCapture logs;
  auto compiled = compile(fn, {.backend = "eager"});
  {
    autocast scope(kCPU);
    compiled(x);
  }
  compiled(x);
  EXPECT_NE(logs.text().find("autocast state mismatch. expected autocast(cpu, bfloat16) enabled"), std::string::npos)
      << logs.text();
}

TEST_F(AutocastCapture, AWeightCastCachedBeforeATraceIsNotReusedByTheGraph) {
  Tensor w = randn({4, 4}).requires_grad_();
  auto fn = [&w](const Tensor& x) { return mm(x, w); };
  auto compiled = compile(fn, {.backend = "eager"});
  const Tensor x = randn({2, 4});
  {
    autocast scope(kCPU);
    const Tensor eager = fn(x);  // caches the weight's cast
    EXPECT_EQ(ops::autocast_cache_size(), 1u);
    expect_identical(compiled(x), eager, "first scope");
    EXPECT_EQ(ops::autocast_cache_size(), 1u) << "the trace cached nothing";
  }
  {
    NoGradGuard no_grad;
    w.add_(1);  // an optimizer step
  }
  autocast scope(kCPU);
  expect_identical(compiled(x), mm(x.to(kBFloat16), w.detach().to(kBFloat16)), "after the weight changed");
}

}  // namespace
}  // namespace ember
