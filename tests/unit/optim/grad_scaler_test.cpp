// Tests of amp::GradScaler (Note [autocast], "GradScaler") against torch.amp.GradScaler's
// semantics written out by hand: scaling, skipped steps on inf/NaN, the scale's backoff
// and growth (PyTorch's _amp_update_scale_ in float32 with float64 products), unscale_
// before clipping, a float16 autocast training loop on the CPU, its state and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"

namespace ember {
namespace {

using amp::GradScaler;
using testing::error_of;
using testing::expect_identical;

/// PyTorch's _amp_update_scale_ kernel: a float scale, an int tracker, double factors.
struct ReferenceScale {
  float scale;
  int32_t tracker = 0;
  void update(bool found_inf, double growth, double backoff, int64_t interval) {
    if (found_inf) {
      scale = static_cast<float>(static_cast<double>(scale) * backoff);
      tracker = 0;
      return;
    }
    const int32_t successful = tracker + 1;
    if (successful == interval) {
      const float grown = static_cast<float>(static_cast<double>(scale) * growth);
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    } else {
      tracker = successful;
    }
  }
};

/// One parameter whose gradient the test sets, and an SGD over it.
struct OneParam {
  Tensor p = tensor<float>({1.0f, -2.0f, 0.5f}).requires_grad_();
  optim::SGD opt{{p}, {.lr = 0.5}};
  void set_grad(std::vector<float> g) { p.mutable_grad() = tensor<float>(g); }
  /// A step of finite gradients through `scaler`, then its update.
  void clean_step(GradScaler& scaler) {
    set_grad({1.0f, 1.0f, 1.0f});
    EXPECT_TRUE(scaler.step(opt));
    scaler.update();
  }
};

TEST(GradScaler, ScaleMultipliesByTheInitialScaleOfTwoToTheSixteen) {
  GradScaler scaler(kCPU);
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  const Tensor loss = tensor<float>({0.25f, -3.0f});
  expect_identical(scaler.scale(loss), loss * 65536.0);
  EXPECT_EQ(scaler.scale_tensor().dtype(), kFloat);
  EXPECT_EQ(scaler.scale_tensor().dim(), 0);
  EXPECT_EQ(scaler.get_growth_factor(), 2.0);
  EXPECT_EQ(scaler.get_backoff_factor(), 0.5);
  EXPECT_EQ(scaler.get_growth_interval(), 2000);
}

TEST(GradScaler, StepUnscalesTheGradientsBeforeTheOptimizerStep) {
  OneParam m;
  GradScaler scaler(kCPU, {.init_scale = 1024.0});
  scaler.scale(ones({1}));
  m.set_grad({1024.0f, -512.0f, 3.0f});
  EXPECT_TRUE(scaler.step(m.opt));
  // p - lr * grad / scale, with grad / scale as grad * float(1 / double(scale)).
  expect_identical(m.p.detach(), tensor<float>({1.0f - 0.5f, -2.0f + 0.25f, 0.5f - 0.5f * (3.0f / 1024.0f)}));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024.0);
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(GradScaler, AStepWithAnInfOrNaNGradientIsSkippedAndTheScaleBacksOff) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    OneParam m;
    GradScaler scaler(kCPU);
    scaler.scale(ones({1}));
    const Tensor before = m.p.detach().clone();
    m.set_grad({1.0f, bad, 2.0f});
    EXPECT_FALSE(scaler.step(m.opt)) << bad;
    expect_identical(m.p.detach(), before, "the parameter is untouched");
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 32768.0) << bad;
    EXPECT_EQ(scaler.growth_tracker(), 0);
  }
}

TEST(GradScaler, TheScaleGrowsAfterGrowthIntervalCleanStepsAndBacksOffAfterASkip) {
  OneParam m;
  GradScaler scaler(kCPU, {.init_scale = 8.0, .growth_interval = 3});
  scaler.scale(ones({1}));
  const double expected_scale[] = {8, 8, 16, 16, 8, 8, 8, 16};
  const int64_t expected_tracker[] = {1, 2, 0, 1, 0, 1, 2, 0};
  const bool inf_at[] = {false, false, false, false, true, false, false, false};
  for (int i = 0; i < 8; ++i) {
    m.set_grad({1.0f, inf_at[i] ? INFINITY : 1.0f, 1.0f});
    EXPECT_EQ(scaler.step(m.opt), !inf_at[i]) << "step " << i;
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), expected_scale[i]) << "step " << i;
    EXPECT_EQ(scaler.growth_tracker(), expected_tracker[i]) << "step " << i;
  }
}

TEST(GradScaler, TheScaleFollowsPyTorchsUpdateKernelWithOddFactors) {
  OneParam m;
  const double growth = 1.7, backoff = 0.3;
  GradScaler scaler(kCPU, {.init_scale = 1000.1, .growth_factor = growth, .backoff_factor = backoff, .growth_interval = 2});
  scaler.scale(ones({1}));
  ReferenceScale ref{static_cast<float>(1000.1)};
  uint32_t bits = 12345;
  for (int i = 0; i < 40; ++i) {
    bits = bits * 1103515245u + 12345u;
    const bool inf = (bits >> 16) % 3 == 0;
    m.set_grad({inf ? NAN : 0.5f, 1.0f, 1.0f});
    scaler.step(m.opt);
    scaler.update();
    ref.update(inf, growth, backoff, 2);
    ASSERT_EQ(static_cast<float>(scaler.get_scale()), ref.scale) << "step " << i;
    ASSERT_EQ(scaler.growth_tracker(), ref.tracker) << "step " << i;
  }
}

TEST(GradScaler, TheScaleDoesNotGrowPastFloat32sRange) {
  OneParam m;
  GradScaler scaler(kCPU, {.init_scale = 3e38, .growth_interval = 1});
  scaler.scale(ones({1}));
  m.clean_step(scaler);
  EXPECT_EQ(static_cast<float>(scaler.get_scale()), 3e38f);
  EXPECT_EQ(scaler.growth_tracker(), 0) << "the tracker resets even when the scale cannot grow";
}

TEST(GradScaler, UnscaleThenClipGradNormThenStepUsesTheClippedGradients) {
  OneParam m;
  GradScaler scaler(kCPU, {.init_scale = 256.0});
  scaler.scale(ones({1}));
  m.set_grad({768.0f, -1024.0f, 0.0f});  // unscaled: (3, -4, 0), norm 5
  scaler.unscale_(m.opt);
  expect_identical(m.p.grad(), tensor<float>({3.0f, -4.0f, 0.0f}), "unscaled in place");
  // clip_grad_norm_(max_norm=1): grad *= max_norm / (total_norm + 1e-6).
  const double total = std::sqrt(m.p.grad().pow(2).sum().item<double>());
  EXPECT_EQ(total, 5.0);
  const double coef = 1.0 / (total + 1e-6);
  m.p.mutable_grad().mul_(coef);
  const Tensor clipped = m.p.grad().clone();
  const Tensor before = m.p.detach().clone();
  EXPECT_TRUE(scaler.step(m.opt));
  expect_identical(m.p.detach(), before.add(clipped, -0.5), "step() does not unscale a second time");
  scaler.update();
}

TEST(GradScaler, Float16AutocastTrainingOnTheCpuEqualsTheLoopWrittenOut) {
  manual_seed(0);
  nn::Linear fc(6, 4);
  Tensor w_ref = fc.weight().detach().clone().requires_grad_(), b_ref = fc.bias().detach().clone().requires_grad_();
  const Tensor x = randn({8, 6}), y = randn({8, 4});
  optim::SGD opt(fc.parameters(), {.lr = 0.1});
  // A scale so large that float16 gradients overflow at first: steps are skipped and the
  // scale backs off until they fit, then grows every 4 clean steps.
  const double init = std::ldexp(1.0, 28);
  GradScaler scaler(kCPU, {.init_scale = init, .growth_interval = 4});
  ReferenceScale ref{static_cast<float>(init)};
  int skipped = 0, stepped = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss;
    {
      autocast scope(kCPU, kHalf);
      loss = mse_loss(fc.forward(x), y);
    }
    EXPECT_EQ(loss.dtype(), kFloat);
    scaler.scale(loss).backward();
    const bool did_step = scaler.step(opt);
    scaler.update();

    // The same step written out: float16 linear, float32 loss, scaled backward, inf check,
    // unscale, SGD.
    w_ref.mutable_grad() = Tensor();
    b_ref.mutable_grad() = Tensor();
    const Tensor out = linear(x.to(kHalf), w_ref.to(kHalf), b_ref.to(kHalf));
    (mse_loss(out.to(kFloat), y) * ref.scale).backward();
    const bool finite = std::isfinite(w_ref.grad().sum().item<double>()) && std::isfinite(b_ref.grad().sum().item<double>());
    const float inv = static_cast<float>(1.0 / static_cast<double>(ref.scale));
    if (finite) {
      NoGradGuard no_grad;
      w_ref.add_(w_ref.grad() * inv, -0.1);
      b_ref.add_(b_ref.grad() * inv, -0.1);
    }
    ref.update(!finite, 2.0, 0.5, 4);
    ASSERT_EQ(did_step, finite) << "step " << step;
    ASSERT_EQ(static_cast<float>(scaler.get_scale()), ref.scale) << "step " << step;
    expect_identical(fc.weight().detach(), w_ref.detach(), "weight at step " + std::to_string(step));
    expect_identical(fc.bias().detach(), b_ref.detach(), "bias at step " + std::to_string(step));
    (did_step ? stepped : skipped) += 1;
  }
  EXPECT_GT(skipped, 3) << "the large initial scale overflowed float16";
  EXPECT_GT(stepped, 10);
  EXPECT_GT(scaler.get_scale(), 1.0);
}

TEST(GradScaler, StateDictRoundTripsAndALoadedTrackerContinues) {
  OneParam m;
  GradScaler a(kCPU, {.init_scale = 4.0, .growth_interval = 3});
  a.scale(ones({1}));
  m.clean_step(a);
  const amp::GradScalerState s = a.state_dict();
  EXPECT_EQ(s.scale, 4.0);
  EXPECT_EQ(s.growth_tracker, 1);
  EXPECT_EQ(s.growth_interval, 3);
  GradScaler b(kCPU);
  b.load_state_dict(s);
  EXPECT_EQ(b.get_scale(), 4.0);
  b.scale(ones({1}));
  for (int i = 0; i < 2; ++i) m.clean_step(b);
  EXPECT_EQ(b.get_scale(), 8.0) << "1 loaded + 2 clean steps reach the interval of 3";
}

TEST(GradScaler, UpdateWithANewScaleSetsIt) {
  GradScaler scaler(kCPU);
  scaler.scale(ones({1}));
  scaler.update(128.0);
  EXPECT_EQ(scaler.get_scale(), 128.0);
}

TEST(GradScaler, ADisabledScalerPassesEverythingThrough) {
  OneParam m;
  GradScaler scaler(kCPU, {.enabled = false});
  const Tensor loss = ones({2});
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  m.set_grad({INFINITY, 1.0f, 1.0f});
  EXPECT_TRUE(scaler.step(m.opt)) << "no inf check when disabled";
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_EQ(scaler.state_dict().growth_tracker, 0);
}

TEST(GradScaler, ACudaScalerWithoutACudaDeviceDisablesItself) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  GradScaler scaler;  // kCUDA, PyTorch's default
  EXPECT_FALSE(scaler.is_enabled());
}

TEST(GradScaler, MisuseRaisesPyTorchsErrors) {
  OneParam m;
  GradScaler scaler(kCPU);
  EXPECT_NE(error_of([&] { scaler.step(m.opt); }).find("Attempted step but _scale is None"), std::string::npos);
  EXPECT_NE(error_of([&] { scaler.update(); }).find("Attempted update but _scale is None"), std::string::npos);
  {
    GradScaler no_grads(kCPU);
    no_grads.scale(ones({1}));
    EXPECT_NE(error_of([&] { no_grads.step(m.opt); }).find("No inf checks were recorded for this optimizer."),
              std::string::npos);
  }
  scaler.scale(ones({1}));
  m.set_grad({1.0f, 1.0f, 1.0f});
  scaler.unscale_(m.opt);
  EXPECT_NE(error_of([&] { scaler.unscale_(m.opt); }).find("unscale_() has already been called on this optimizer"),
            std::string::npos);
  scaler.step(m.opt);
  EXPECT_NE(error_of([&] { scaler.step(m.opt); }).find("step() has already been called since the last update()."),
            std::string::npos);
  EXPECT_NE(error_of([&] { scaler.unscale_(m.opt); }).find("unscale_() is being called after step()."),
            std::string::npos);
  scaler.update();
  m.p.mutable_grad() = ones({3}, kHalf);
  EXPECT_NE(error_of([&] { scaler.unscale_(m.opt); }, ErrorKind::ValueError).find("Attempting to unscale FP16 gradients."),
            std::string::npos);
  GradScaler fresh(kCPU);
  fresh.scale(ones({1}));
  EXPECT_NE(error_of([&] { fresh.update(); }).find("No inf checks were recorded prior to update."), std::string::npos);
  const int line = __LINE__ + 1;
  const std::string msg = error_of([] { GradScaler bad(kCPU, {.growth_factor = 1.0}); }, ErrorKind::ValueError);
  EXPECT_NE(msg.find("The growth factor must be > 1.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("grad_scaler_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
  EXPECT_NE(error_of([] { GradScaler bad(kCPU, {.backoff_factor = 1.5}); }).find("The backoff factor must be < 1.0"),
            std::string::npos);
}

}  // namespace
}  // namespace ember
