// Tensor methods that touch autograd state inside a compiled function: detach() (an op,
// aten::detach, traced like any other), requires_grad_, retain_grad and register_hook on a
// traced tensor (a graph break, GB0009, after which they act on the real tensor), and the
// autograd state traced tensors report (requires_grad, grad_fn, is_leaf as eagerly).
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::expect_close;

class DetachCompiled : public testing::DiagnosticsTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(DetachCompiled, DetachInsideACompiledFunctionEqualsEager) {
  const std::vector<std::function<Tensor(const Tensor&)>> fns = {
      [](const Tensor& x) { return x.detach() * 3; },
      [](const Tensor& x) {
        Tensor y = x * 2;
        return y.detach();
      },
      [](const Tensor& x) { return (x * 2).detach() + 1; },
      [](const Tensor& x) { return x.t().detach().contiguous(); },
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    auto compiled = compile(fns[i], {.backend = GetParam()});
    for (int call = 0; call < 2; ++call) {
      const Tensor x = randn({3, 2});
      expect_close(compiled(x), fns[i](x), 1e-6, 1e-6, "function " + std::to_string(i));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DetachCompiled, ::testing::Values("eager", "inductor"));

class AutogradState : public testing::DiagnosticsTest {};

TEST_F(AutogradState, DetachIsRecordedAsAtenDetach) {
  testing::RecordingBackend backend;
  auto compiled = compile([](const Tensor& x) { return (x * 2).detach() + 1; }, {.custom_backend = backend.fn()});
  compiled(ones({2}));
  ASSERT_EQ(backend.graphs->size(), 1u);
  EXPECT_NE(backend.graphs->at(0).find("aten::detach("), std::string::npos) << backend.graphs->at(0);
}

TEST_F(AutogradState, ADetachedValueCarriesNoGradient) {
  auto compiled = compile([](const Tensor& x) { return x * 2 + (x * 3).detach(); });
  const Tensor x = randn({4}).requires_grad_();
  compiled(x).sum().backward();
  expect_close(x.grad(), full({4}, 2.0), 0, 0, "only x * 2 is differentiated");
}

TEST_F(AutogradState, WritingThroughADetachedAliasOfALeafIsAllowedAndWritesItsData) {
  auto fn = [](const Tensor& x) {
    Tensor d = x.detach();
    d.mul_(2);
    return x * 1;
  };
  auto compiled = compile(fn);
  const Tensor a = ones({3}).requires_grad_(), b = ones({3}).requires_grad_();
  const Tensor ra = compiled(a), rb = fn(b);
  expect_close(ra, rb, 0, 0);
  expect_close(a.detach(), full({3}, 2.0), 0, 0, "the leaf's data was doubled");
  EXPECT_TRUE(ra.requires_grad());
}

TEST_F(AutogradState, RequiresGradOfATracedTensorIsGraphBreakGB0009AtTheUserLine) {
  auto compiled = compile(
      [](const Tensor& x) {
        Tensor w = x * 2;
        w.requires_grad_();
        return w * 3;
      },
      {.fullgraph = true});
  const std::string msg = testing::error_of([&] { compiled(ones({2})); });
  EXPECT_NE(msg.find("GB0009"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Tensor.requires_grad_()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("autograd_state_test.cpp:"), std::string::npos) << msg;
}

TEST_F(AutogradState, RequiresGradOfAnIntermediateMakesItALeafAsEagerly) {
  auto fn = [](const Tensor& x) {
    Tensor w = x * 2;
    w.requires_grad_();
    Tensor y = (w * w).sum();
    y.backward();
    return w.grad();
  };
  auto compiled = compile(fn);
  const Tensor x = randn({3});
  expect_close(compiled(x), fn(x), 1e-6, 1e-6, "d(w*w)/dw = 2w");
  expect_close(compiled(x), x * 4, 1e-6, 1e-6);
}

TEST_F(AutogradState, RequiresGradOfAnArgumentReachesTheCallersTensor) {
  auto compiled = compile([](const Tensor& x) {
    x.requires_grad_();
    return x * 2;
  });
  const Tensor x = randn({3});
  const Tensor y = compiled(x);
  EXPECT_TRUE(x.requires_grad()) << "requires_grad_ on the argument changes the caller's tensor, as eagerly";
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  expect_close(x.grad(), full({3}, 2.0), 0, 0);
}

TEST_F(AutogradState, TracedTensorsReportEagersAutogradState) {
  std::vector<std::string> seen;
  auto fn = [&seen](const Tensor& x, const Tensor& c) {
    Tensor y = x * c;
    seen.push_back(std::to_string(y.requires_grad()) + " " + std::to_string(y.is_leaf()) + " " +
                   (y.grad_fn() ? y.grad_fn()->name() : "none") + " " + std::to_string((c * 2).requires_grad()));
    return y;
  };
  auto compiled = compile(fn);
  const Tensor x = randn({2}).requires_grad_(), c = randn({2});
  fn(x, c);
  compiled(x, c);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], seen[0]) << "traced: " << seen[1] << ", eager: " << seen[0];
  EXPECT_EQ(seen[0], "1 0 MulBackward0 0");
}

TEST_F(AutogradState, RetainGradAndHooksOnTracedTensorsActOnTheRealOnes) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    y.retain_grad();
    y.register_hook([](const Tensor& g) { return g * 5; });
    (y * y).sum().backward();
    return std::make_tuple(y.grad(), x.grad());
  };
  auto compiled = compile(fn);
  const Tensor a = randn({3}).requires_grad_(), b = a.detach().clone().requires_grad_();
  testing::LogCapture logs;
  auto [cy, cx] = compiled(a);
  EXPECT_EQ(logs.text().find("WON'T CONVERT"), std::string::npos) << "capture must not give up:\n" << logs.text();
  auto [ey, ex] = fn(b);
  expect_close(cy, ey, 1e-6, 1e-6, "y.grad()");
  expect_close(cx, ex, 1e-6, 1e-6, "x.grad()");
}

}  // namespace
}  // namespace ember
