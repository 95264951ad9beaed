// Convolution and pooling against values printed by PyTorch 1.13 for the same inputs.
// Inputs are patterns ((i*a) % m - s) / d so both sides build them without pasting data.
#include <gtest/gtest.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

#include "core/allocator.h"
#include "ember/ember.h"
#include "kernels/cpu/autotune.h"
#include "kernels/cpu/conv.h"
#include "support/error_of.h"
#include "support/pattern_tensors.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::pattern;

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }

// torch: F.conv2d(x, w, b, stride=(2,1), padding=(1,0), dilation=(1,2))
const std::vector<double> kConv2dExpected = {
    -0.125,   1.9375,  0.21875, 0.21875,  0.59375,  0.59375,  0.59375,  -0.09375, 0.78125,  0.125,    -0.1875,
    0.875,    -1.625,  0.4375,  -1.28125, -1.28125, -0.90625, -0.90625, -0.90625, -1.59375, -0.71875, -1.375,
    -1.6875,  -0.625,  -0.375,  1.6875,   -0.03125, -0.03125, 0.34375,  0.34375,  0.34375,  -0.34375, 0.53125,
    -0.125,   -0.4375, 0.625,   1.375,    3.4375,   1.71875,  1.71875,  2.09375,  2.09375,  2.09375,  1.40625,
    2.28125,  1.625,   1.3125,  2.375,    0.21875,  0.21875,  0.5625,   0.21875,  0.59375,  -0.09375, 0.59375,
    1.625,    -0.1875, 0.875,   0.21875,  -0.09375, -1.28125, -1.28125, -0.9375,  -1.28125, -0.90625, -1.59375,
    -0.90625, 0.125,   -1.6875, -0.625,   -1.28125, -1.59375, -0.03125, -0.03125, 0.3125,   -0.03125, 0.34375,
    -0.34375, 0.34375, 1.375,   -0.4375,  0.625,    -0.03125, -0.34375, 1.71875,  1.71875,  2.0625,   1.71875,
    2.09375,  1.40625, 2.09375, 3.125,    1.3125,   2.375,    1.71875,  1.40625};

Tensor conv2d_case(ScalarType dtype) {
  Tensor x = pattern({2, 3, 5, 6}, 7, 11, 5, 4.0, dtype);
  Tensor w = pattern({4, 3, 3, 2}, 5, 9, 4, 8.0, dtype);
  Tensor b = tensor<double>({0.5, -1.0, 0.25, 2.0}).to(dtype);
  return conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2});
}

TEST(Conv2d, Float32WithStridePaddingDilationAndBiasMatchesTorch) {
  Tensor y = conv2d_case(kFloat);
  EXPECT_EQ(y.dtype(), kFloat);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 4, 3, 4}));
  expect_close(y, kConv2dExpected, 1e-5, 1.3e-6);
}

TEST(Conv2d, Float64UsesIm2colAndMatchesTorch) { expect_close(conv2d_case(kDouble), kConv2dExpected, 1e-12); }

TEST(Conv2d, HalfAndBFloat16ComputeInFloat) {
  // Every input value is exact in 16 bits; outputs round once.
  expect_close(conv2d_case(kHalf), kConv2dExpected, 1e-5, 1e-3);
  expect_close(conv2d_case(kBFloat16), kConv2dExpected, 1e-5, 1.6e-2);
  EXPECT_EQ(conv2d_case(kBFloat16).dtype(), kBFloat16);
}

TEST(Conv2d, GroupedConvolutionMatchesTorch) {
  // torch: F.conv2d(x[1,4,4,5], w[6,2,2,2], padding=1, groups=2)
  const std::vector<double> expected = {
      0.75,   -1.375, 1.25,   0.625,  -1.625, -0.125, -1.75,  4.875,  3.75,   -2.25,  -0.125, -2.25,  -2.25,  2.5,
      -1.875, 0.25,   -4.125, 2.375,  2.125,  3.375,  -2.625, -3.75,  4.875,  3.75,   -0.625, -1.375, -0.25,  -2.375,
      2.0,    -1.875, -1.75,  0.875,  -2.375, 2.5,    2.5,    -1.875, -0.75,  -4.25,  3.0,    2.125,  -2.0,   1.75,
      0.25,   -2.125, 1.875,  -2.25,  1.75,   -2.0,   -2.0,   3.25,   2.375,  -1.75,  -4.25,  2.375,  0.625,  -0.375,
      0.375,  1.125,  0.25,   -1.0,   -0.75,  -2.125, 0.125,  -0.875, 1.375,  2.5,    0.25,   -2.0,   -0.375, 1.25,
      -0.375, -1.25,  -0.75,  2.875,  1.25,   -0.375, -2.0,   -0.25,  -1.75,  -0.375, 1.25,   2.875,  -2.0,   -2.5,
      1.875,  0.625,  -1.625, -0.625, 2.0,    0.75,   -0.875, 0.875,  0.125,  -0.625, 0.25,   -0.5,   1.75,   -2.0,
      2.125,  3.0,    -4.25,  -0.75,  -1.0,   2.375,  3.25,   -4.0,   1.75,   -1.75,  -0.5,   1.875,  -2.125, 2.0,
      -2.0,   2.125,  0.625,  2.5,    -2.375, -2.375, 2.5,    0.625,  3.0,    -2.75,  -0.625, -1.75,  2.0,    -0.5,
      -2.25,  -0.125, -2.25,  3.75,   4.875,  -1.75,  -2.0,   -2.625, 3.375,  4.5,    -4.125, 2.0,    -1.75,  -1.875,
      2.5,    -4.5,   -0.125, -0.75,  0.375,  1.375,  2.0,    -0.625, -1.625, 0.0,    -0.125, 2.375,  -1.375, -0.25,
      -2.375, 3.0,    -1.875, -0.875, -0.5,   -3.375, 3.5,    2.5,    1.375,  -0.625, -3.5,   3.375,  0.5,    -2.125,
      1.375,  -0.375, -1.625, 0.375,  -0.875, -1.875, 0.125,  -0.625, 0.25,   1.125,  0.375,  0.25};
  for (ScalarType dtype : {kFloat, kDouble}) {
    Tensor x = pattern({1, 4, 4, 5}, 3, 13, 6, 4.0, dtype);
    Tensor w = pattern({6, 2, 2, 2}, 5, 7, 3, 2.0, dtype);
    Tensor y = conv2d(x, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, 2);
    EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{1, 6, 5, 6}));
    expect_close(y, expected, 1e-5, 1.3e-6);
  }
}

TEST(Conv1d, StridedPaddedWithBiasMatchesTorch) {
  // torch: F.conv1d(x[2,4,7], w[3,4,3], b, stride=2, padding=1)
  const std::vector<double> expected = {-1.125, 0.0,   0.0,   -0.875, 1.5,   1.25,  2.125, 2.0,
                                        -1.125, 1.625, 3.375, 0.5,    0.125, 0.0,   0.0,   2.75,
                                        -1.5,   2.125, 1.375, 0.875,  2.125, 3.375, 1.875, 1.625};
  for (ScalarType dtype : {kFloat, kDouble}) {
    Tensor x = pattern({2, 4, 7}, 3, 13, 6, 4.0, dtype);
    Tensor w = pattern({3, 4, 3}, 5, 7, 3, 2.0, dtype);
    Tensor b = tensor<double>({1.0, 0.0, -1.0}).to(dtype);
    Tensor y = conv1d(x, w, b, {2}, {1});
    EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 3, 4}));
    expect_close(y, expected, 1e-5, 1.3e-6);
  }
}

TEST(Conv2d, IntegerConvolutionIsExact) {
  // torch: F.conv2d((arange(32) % 5 - 2).reshape(1,2,4,4), (arange(24) % 3 - 1).reshape(3,2,2,2), tensor([1,2,3]))
  std::vector<int64_t> xv, wv;
  for (int64_t i = 0; i < 32; ++i) xv.push_back(i % 5 - 2);
  for (int64_t i = 0; i < 24; ++i) wv.push_back(i % 3 - 1);
  Tensor y = conv2d(tensor(xv, {1, 2, 4, 4}), tensor(wv, {3, 2, 2, 2}), tensor<int64_t>({1, 2, 3}));
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{9,  3,  2,  -5, 9,  3, -4, -5, 9,  -1, -1, -1, 14, -1,
                                                          -1, -1, 14, -1, -2, 4, 5,  -3, -2, 4,  11, -3, -2}));
}

TEST(Conv2d, UnbatchedInputGivesUnbatchedOutput) {
  Tensor x = pattern({2, 5, 6}, 7, 11, 5, 4.0);
  Tensor w = pattern({3, 2, 3, 3}, 5, 9, 4, 8.0);
  Tensor y = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{3, 5, 6}));
  // torch: first row of channel 0 and last row of channel 2.
  const std::vector<double> v = y.to_vector<double>();
  const std::vector<double> first = {2.15625, -1.3125, -0.40625, 1.1875, -1.0, -0.59375};
  const std::vector<double> last = {0.875, -0.90625, 0.53125, 1.28125, -1.40625, 1.78125};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(v[i], first[i], 1e-12);
    EXPECT_NEAR(v[v.size() - 6 + i], last[i], 1e-12);
  }
}

TEST(Conv2d, NonContiguousInputEqualsContiguous) {
  Tensor x = pattern({2, 5, 6, 3}, 7, 11, 5, 4.0, kFloat).permute({0, 3, 1, 2});  // NHWC memory
  ASSERT_FALSE(x.is_contiguous());
  Tensor w = pattern({4, 3, 3, 3}, 5, 9, 4, 8.0, kFloat).transpose(2, 3);
  Tensor a = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  Tensor b = conv2d(x.contiguous(), w.contiguous(), std::nullopt, {1, 1}, {1, 1});
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
}

TEST(Conv2d, OneDnnFloat32AgreesWithFloat64OnResNetShape) {
  // The workload's conv3x3 64->64, checked against the independent float64 im2col path.
  Tensor x = pattern({2, 64, 20, 20}, 7, 23, 11, 8.0);
  Tensor w = pattern({64, 64, 3, 3}, 5, 19, 9, 64.0);
  Tensor ref = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  testing::LogCapture logs("autotuning");
  Tensor got = conv2d(x.to(kFloat), w.to(kFloat), std::nullopt, {1, 1}, {1, 1});
  expect_close(got, ref.to_vector<double>(), 1e-5, 1.3e-6);
  // 64 channels fill whole blocks: with AVX2 or AVX-512 the first call timed oneDNN's
  // own layout against the blocked one (Note [convolution layout autotuning]).
  // (Unless EMBER_CONV_LAYOUT pins the layout.)
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  if ((isa & dnnl_cpu_isa_avx2) == static_cast<unsigned>(dnnl_cpu_isa_avx2) && !std::getenv("EMBER_CONV_LAYOUT")) {
    EXPECT_NE(logs.text().find("conv2d 2x64x20x20 -> 64 channels, kernel 3x3"), std::string::npos) << logs.text();
    EXPECT_NE(logs.text().find(" ms -> "), std::string::npos) << logs.text();
  }
  // A second call hits the cached primitive and gives the same bits.
  Tensor again = conv2d(x.to(kFloat), w.to(kFloat), std::nullopt, {1, 1}, {1, 1});
  EXPECT_EQ(again.to_vector<float>(), got.to_vector<float>());
}

TEST(Conv2d, AWeightIsReorderedOnceOnItsSecondSightAndAgainAfterAWrite) {
  // oneDNN reads the weight in a blocked layout of its own; a weight seen twice at the same
  // version is reordered once and kept, reordered again after an in-place write, and a new
  // weight in freed memory is not taken for the old one (Note [kept convolution weights]).
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  if ((isa & dnnl_cpu_isa_avx2) != static_cast<unsigned>(dnnl_cpu_isa_avx2))
    GTEST_SKIP() << "without AVX2 the primitive may read OIHW weights as they are";
  using kernels::cpu::conv2d_kept_weight_bytes;
  using kernels::cpu::conv2d_weight_reorders_kept;
  NoGradGuard no_grad;
  Tensor x = pattern({2, 64, 12, 12}, 7, 23, 11, 8.0, kFloat), x2 = pattern({2, 64, 12, 12}, 3, 29, 13, 4.0, kFloat);
  auto want = [](const Tensor& in, const Tensor& w) {
    return conv2d(in.to(kDouble), w.to(kDouble), std::nullopt, {1, 1}, {1, 1}).to_vector<double>();
  };
  const int64_t kept0 = conv2d_weight_reorders_kept();
  {
    Tensor w = pattern({64, 64, 3, 3}, 5, 19, 9, 64.0, kFloat);
    expect_close(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}), want(x, w), 1e-5, 1e-5);
    EXPECT_EQ(conv2d_weight_reorders_kept(), kept0) << "first sight: reordered for the call alone";
    expect_close(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}), want(x, w), 1e-5, 1e-5);
    EXPECT_EQ(conv2d_weight_reorders_kept(), kept0 + 1) << "second sight: reordered and kept";
    expect_close(conv2d(x2, w, std::nullopt, {1, 1}, {1, 1}), want(x2, w), 1e-5, 1e-5);
    EXPECT_EQ(conv2d_weight_reorders_kept(), kept0 + 1) << "the kept weight serves another input";
    EXPECT_GE(conv2d_kept_weight_bytes(), static_cast<int64_t>(w.numel() * sizeof(float)));
    w.mul_(-0.5);  // an in-place write bumps the storage's version
    expect_close(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}), want(x, w), 1e-5, 1e-5);
    EXPECT_EQ(conv2d_weight_reorders_kept(), kept0 + 1) << "the changed weight: first sight again";
    expect_close(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}), want(x, w), 1e-5, 1e-5);
    EXPECT_EQ(conv2d_weight_reorders_kept(), kept0 + 2) << "the changed weight, reordered again and kept";
  }
  EXPECT_EQ(conv2d_kept_weight_bytes(), 0) << "the copy is dropped with its storage";
  // Another weight of the same size, likely in the freed block: its own values.
  Tensor w2 = pattern({64, 64, 3, 3}, 3, 17, 7, 32.0, kFloat);
  expect_close(conv2d(x, w2, std::nullopt, {1, 1}, {1, 1}), want(x, w2), 1e-5, 1e-5);
  expect_close(conv2d(x, w2, std::nullopt, {1, 1}, {1, 1}), want(x, w2), 1e-5, 1e-5);
}

/// Sets OpenMP's thread count for a scope.
struct ThreadCount {
  int saved = omp_get_max_threads();
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
};

/// A candidate that works `ms` of the calling thread's CPU time, and one that is away from
/// the CPU for `ms` (asleep, as a candidate whose rounds fell in other programs' time slices).
std::function<void()> busy_for(double ms) {
  return [ms] {
    const double t0 = kernels::cpu::autotune_clock_ms(true);
    while (kernels::cpu::autotune_clock_ms(true) - t0 < ms) {
    }
  };
}
std::function<void()> away_for(int ms) {
  return [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
}

TEST(Autotune, AtOneThreadTimeAwayFromTheCpuDoesNotCount) {
  // Layout and GEMM choices are timed on first sight of a shape, often on a machine other
  // programs share: at one thread a candidate is its thread's CPU time, so a candidate
  // descheduled in every round still wins when its work is the least.
  ThreadCount one(1);
  std::vector<double> ms;
  EXPECT_EQ(kernels::cpu::fastest({busy_for(3.0), away_for(20)}, ms), 1u);
  EXPECT_GE(ms[0], 3.0);
  EXPECT_LT(ms[1], 1.0);
}

TEST(Autotune, WithSeveralThreadsTheWallClockCounts) {
  // A team's CPU time would leave out work a candidate fails to spread over its threads,
  // so with more than one the wall clock times them, time away from the CPU included.
  ThreadCount two(2);
  std::vector<double> ms;
  EXPECT_EQ(kernels::cpu::fastest({busy_for(3.0), away_for(50)}, ms), 0u);
  EXPECT_GE(ms[1], 50.0);
}

/// `run` that counts its calls in `calls`.
std::function<void()> counted(std::function<void()> run, int& calls) {
  return [run = std::move(run), &calls] {
    ++calls;
    run();
  };
}

TEST(Autotune, AWarmUpRoundThatTakesTheBudgetIsTheOnlyTimedRun) {
  // A first call of a large product pays for every timing run: when the warm-up round
  // alone takes the budget, its times decide and no further round runs.
  ThreadCount one(1);
  int slow = 0, slower = 0;
  std::vector<double> ms;
  EXPECT_EQ(kernels::cpu::fastest({counted(busy_for(30.0), slower), counted(busy_for(20.0), slow)}, ms, 4, 40.0), 1u);
  EXPECT_EQ(slower, 1);
  EXPECT_EQ(slow, 1);
  EXPECT_GE(ms[0], 30.0);
  EXPECT_GE(ms[1], 20.0);
}

TEST(Autotune, ASmallCandidateDescheduledInTheWarmUpIsTimedAgain) {
  // At two threads the wall clock times the candidates: one that lost 150 ms to other
  // programs in its warm-up run takes the budget's time, but the rounds go on since a
  // round of the candidates at their fastest is a few ms, and its later runs show it the
  // faster. (Away from the CPU rather than busy, so that the machine's load moves the
  // times little.)
  ThreadCount two(2);
  int calls = 0, other = 0;
  std::vector<double> ms;
  auto descheduled_once = [&calls] { away_for(calls++ == 0 ? 150 : 1)(); };
  EXPECT_EQ(kernels::cpu::fastest({descheduled_once, counted(away_for(10), other)}, ms, 4, 100.0), 0u);
  EXPECT_EQ(calls, 5);  // the warm-up and four rounds
  EXPECT_EQ(other, 2);  // the warm-up and one round: then ten times the fastest, left out
  EXPECT_LT(ms[0], 10.0);
}

TEST(Autotune, ACandidateOverTwiceTheFastestAfterTwoRunsIsNotTimedAgain) {
  // A library path several times slower than the others for a shape cannot win; timing it
  // in every round would be most of the first call's cost. After the warm-up and one round
  // a candidate over kDropRatio times the fastest is left out; one within it is kept.
  ThreadCount one(1);
  int fast = 0, close = 0, slow = 0;
  std::vector<double> ms;
  EXPECT_EQ(kernels::cpu::fastest({counted(busy_for(3.0), slow), counted(busy_for(1.0), fast),
                                   counted(busy_for(1.5), close)},
                                  ms, 4, 100.0),
            1u);
  EXPECT_EQ(slow, 2);
  EXPECT_EQ(fast, 5);
  EXPECT_EQ(close, 5);
  EXPECT_GE(ms[0], 3.0);
}

TEST(Autotune, SmallCandidatesGetEveryRoundWithinTheBudget) {
  ThreadCount one(1);
  int a = 0, b = 0;
  std::vector<double> ms;
  kernels::cpu::fastest({counted(busy_for(0.2), a), counted(busy_for(0.1), b)}, ms, 4, 100.0);
  EXPECT_EQ(a, 5);  // the warm-up and four rounds
  EXPECT_EQ(b, 5);
}

/// grad_input and grad_weight of W9's 3x3 64->64 convolution (x[8,64,56,56]), as `mask` asks.
std::tuple<Tensor, Tensor, Tensor> resnet_conv_backward(const Tensor& gy, const Tensor& x, const Tensor& w,
                                                        std::array<bool, 3> mask) {
  return convolution_backward(gy, x, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1, mask);
}

TEST(Conv2d, OneDnnBackwardGivesTheSameGradientsTogetherAsApart) {
  // Asked for both, the two primitives share one reordered grad_output; the bits must be
  // those of each gradient asked for alone.
  Tensor x = pattern({2, 64, 12, 12}, 7, 23, 11, 8.0, kFloat);
  Tensor w = pattern({64, 64, 3, 3}, 5, 19, 9, 64.0, kFloat);
  Tensor gy = pattern({2, 64, 12, 12}, 3, 17, 8, 4.0, kFloat);
  auto [gi, gw, gb] = resnet_conv_backward(gy, x, w, {true, true, false});
  EXPECT_FALSE(gb.defined());
  EXPECT_EQ(gi.to_vector<float>(), std::get<0>(resnet_conv_backward(gy, x, w, {true, false, false})).to_vector<float>());
  EXPECT_EQ(gw.to_vector<float>(), std::get<1>(resnet_conv_backward(gy, x, w, {false, true, false})).to_vector<float>());
  // And both agree with the float64 im2col path.
  auto [ri, rw, rb] = resnet_conv_backward(gy.to(kDouble), x.to(kDouble), w.to(kDouble), {true, true, false});
  expect_close(gi, ri.to_vector<double>(), 1e-4, 1e-5);
  expect_close(gw, rw.to_vector<double>(), 1e-3, 1e-5);
}

TEST(Conv2d, OneDnnTemporariesAreTensorMemoryOfTheCpuAllocator) {
  // oneDNN's layouts are reached through temporaries (the input reordered into nChw16c or
  // NHWC, the result before it is reordered back). They come from the CPU allocator, whose
  // cache keeps their pages resident from call to call (Note [allocator]), so they count in
  // its live bytes: through oneDNN's own malloc a 6.4 MB temporary was fresh memory on most
  // calls of a training step, about 7,800 page faults per W9 step.
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  if ((isa & dnnl_cpu_isa_avx2) != static_cast<unsigned>(dnnl_cpu_isa_avx2) || std::getenv("EMBER_CONV_LAYOUT"))
    GTEST_SKIP() << "without AVX2 (or with a pinned layout) the primitive may read NCHW itself";
  Tensor x = pattern({8, 64, 56, 56}, 7, 23, 11, 8.0, kFloat);
  Tensor w = pattern({64, 64, 3, 3}, 5, 19, 9, 64.0, kFloat);
  (void)conv2d(x, w, std::nullopt, {1, 1}, {1, 1});  // creates and times the primitives
  const size_t plane_bytes = static_cast<size_t>(x.numel()) * sizeof(float);
  const size_t live = core::cpu_memory_stats().live_bytes;
  core::cpu_reset_peak_memory();
  Tensor y = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  // The output, the reordered input and the result in oneDNN's layout were live at once.
  EXPECT_GE(core::cpu_memory_stats().peak_live_bytes - live, 3 * plane_bytes);
  EXPECT_EQ(core::cpu_memory_stats().live_bytes - live, plane_bytes);  // the temporaries are freed
  (void)resnet_conv_backward(y, x, w, {true, true, false});
  core::cpu_reset_peak_memory();
  const size_t live_y = core::cpu_memory_stats().live_bytes;
  {
    auto grads = resnet_conv_backward(y, x, w, {true, true, false});
    EXPECT_GE(core::cpu_memory_stats().peak_live_bytes - live_y, 3 * plane_bytes);
  }
  EXPECT_EQ(core::cpu_memory_stats().live_bytes, live_y);
}

TEST(Conv2d, EmptyBatchAndZeroInputChannels) {
  Tensor y = conv2d(zeros({0, 3, 5, 5}), ones({4, 3, 3, 3}));
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{0, 4, 3, 3}));
  // No input channels: the output is the bias.
  Tensor z = conv2d(zeros({1, 0, 3, 3}), zeros({2, 0, 2, 2}), tensor<float>({1.5f, -2.0f}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, -2.0f, -2.0f, -2.0f, -2.0f}));
}

TEST(Conv2d, MetaTensorsGiveShapeWithoutData) {
  Tensor y = convolution(empty({8, 64, 56, 56}, kMeta), empty({32, 32, 3, 3}, kMeta), empty({32}, kMeta), {2, 2},
                         {1, 1}, {1, 1}, false, {0, 0}, 2);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{8, 32, 28, 28}));
}

TEST(ConvTranspose2d, GroupedStridedDilatedWithOutputPaddingMatchesTorch) {
  // torch: F.conv_transpose2d(x[2,4,3,4], w[4,3,3,2], b[6], stride=(2,1), padding=(1,0), output_padding=(1,0),
  //                           groups=2, dilation=(1,2)); checked on three rows of the [2, 6, 6, 6] result.
  for (ScalarType dtype : {kFloat, kDouble, kBFloat16}) {
    Tensor x = pattern({2, 4, 3, 4}, 7, 11, 5, 4.0, dtype);
    Tensor w = pattern({4, 3, 3, 2}, 5, 9, 4, 8.0, dtype);
    Tensor b = tensor<double>({0.5, -1.0, 0.25, 2.0, 1.0, 0.0}).to(dtype);
    Tensor y = convolution(x, w, b, {2, 1}, {1, 0}, {1, 2}, true, {1, 0}, 2);
    EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 6, 6, 6}));
    const double rtol = dtype == kBFloat16 ? 1.6e-2 : 1.3e-6;
    expect_close(y.select(0, 0).select(0, 0).select(0, 0), {0.78125, 0.5, 0.03125, -0.0625, 0.6875, 0.875}, 1e-5, rtol);
    expect_close(y.select(0, 0).select(0, 1).select(0, 5), {-1.03125, -0.9375, -1.09375, -1.28125, -0.4375, -0.71875},
                 1e-5, rtol);
    expect_close(y.select(0, 1).select(0, 5).select(0, 5), {0.75, -0.25, 0.125, 0.5, 0.0, 0.0}, 1e-5, rtol);
  }
}

TEST(ConvTranspose1d, StridedPaddedMatchesTorch) {
  // torch: F.conv_transpose1d(x[1,2,5], w[2,3,3], stride=2, padding=1)
  Tensor x = pattern({1, 2, 5}, 3, 13, 6, 4.0);
  Tensor w = pattern({2, 3, 3}, 5, 7, 3, 2.0);
  Tensor y = convolution(x, w, std::nullopt, {2}, {1}, {1}, true, {0}, 1);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{1, 3, 9}));
  expect_close(y, {-0.5,   -0.375, -0.5,   -0.375, -0.5, -0.375, -0.5,  -0.375, 2.75, -1.75, 1.375,  -1.0, 0.25, -0.25,
                   -0.875, 0.5,    -3.625, 2.875,  2.25, -0.375, 1.125, 0.0,    0.0,  0.375, -1.125, -2.5, -2.25},
               1e-12);
}

TEST(ConvTranspose2d, IsTheAdjointOfConv2d) {
  // <conv2d(x, w), y> == <x, conv_transpose2d(y, w)> for the same stride/padding/dilation.
  Tensor x = pattern({2, 4, 7, 6}, 7, 23, 11, 8.0);
  Tensor w = pattern({6, 4, 3, 2}, 5, 19, 9, 16.0);
  Tensor cx = convolution(x, w, std::nullopt, {2, 1}, {1, 1}, {1, 2}, false, {0, 0}, 1);
  Tensor y = pattern(sizes_of(cx), 3, 13, 6, 4.0);
  Tensor ty = convolution(y, w, std::nullopt, {2, 1}, {1, 1}, {1, 2}, true, {0, 0}, 1);
  ASSERT_EQ(sizes_of(ty), sizes_of(x));
  auto dot = [](const Tensor& a, const Tensor& b) {
    std::vector<double> u = a.to_vector<double>(), v = b.to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
    return s;
  };
  EXPECT_NEAR(dot(cx, y), dot(x, ty), 1e-9);
}

// --- channels_last (Note [channels_last convolution]) ---------------------------------

/// `t` (4-D) as a dense channels_last tensor: NHWC memory, NCHW sizes.
Tensor to_channels_last(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }

std::vector<int64_t> nhwc_strides(const Tensor& t) {
  const int64_t c = t.size(1), h = t.size(2), w = t.size(3);
  return {h * w * c, 1, w * c, c};
}

TEST(ConvChannelsLast, Float32NhwcGivesNchwValuesInNhwcStrides) {
  // A W6-like 64 -> 64 3x3 convolution with NHWC activations runs oneDNN on them as they
  // are; values agree with the NCHW call, forward and every gradient.
  Tensor x = pattern({2, 64, 10, 9}, 7, 23, 11, 8.0, kFloat);
  Tensor w = pattern({64, 64, 3, 3}, 5, 19, 9, 64.0, kFloat);
  Tensor b = pattern({64}, 3, 7, 3, 4.0, kFloat);
  Tensor y = convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
  Tensor y_cl = convolution(to_channels_last(x), w, b, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
  EXPECT_EQ(y_cl.strides().vec(), nhwc_strides(y_cl));
  expect_close(y_cl, y.to_vector<double>(), 1e-4, 1e-5);
  Tensor gy = pattern(sizes_of(y), 3, 17, 8, 4.0, kFloat);
  auto [gi, gw, gb] = convolution_backward(gy, x, w, std::vector<int64_t>{64}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1,
                                           {true, true, true});
  auto [ci, cw, cb] = convolution_backward(to_channels_last(gy), to_channels_last(x), w, std::vector<int64_t>{64},
                                           {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1, {true, true, true});
  EXPECT_EQ(ci.strides().vec(), nhwc_strides(ci));
  EXPECT_EQ(cw.strides().vec(), nhwc_strides(cw));
  expect_close(ci, gi.to_vector<double>(), 1e-4, 1e-5);
  expect_close(cw, gw.to_vector<double>(), 1e-3, 1e-5);
  expect_close(cb, gb.to_vector<double>(), 1e-3, 1e-5);
}

TEST(ConvChannelsLast, TransposedConvolutionFollowsPyTorch2) {
  // PyTorch 2.11 (torch 1.13 kept these contiguous): conv_transpose2d of a channels_last
  // x[1,3,4,4] by w[3,2,3,3], stride 2, padding 1, output_padding 1 gives y of strides
  // (128, 1, 16, 2); convolution_backward gives grad_input (48, 1, 12, 3) and grad_weight
  // (18, 1, 6, 2). Values are the contiguous call's.
  Tensor x = pattern({1, 3, 4, 4}, 7, 11, 5, 4.0, kFloat);
  Tensor w = pattern({3, 2, 3, 3}, 5, 9, 4, 8.0, kFloat);
  Tensor y = convolution(x, w, std::nullopt, {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 1);
  Tensor y_cl = convolution(to_channels_last(x), w, std::nullopt, {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 1);
  EXPECT_EQ(y_cl.strides().vec(), (std::vector<int64_t>{128, 1, 16, 2}));
  expect_close(y_cl, y.to_vector<double>(), 1e-6);
  Tensor gy = pattern(sizes_of(y), 3, 13, 6, 4.0, kFloat);
  auto [gi, gw, gb] =
      convolution_backward(gy, x, w, std::nullopt, {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 1, {true, true, false});
  auto [ci, cw, cb] = convolution_backward(gy, x, to_channels_last(w), std::nullopt, {2, 2}, {1, 1}, {1, 1}, true,
                                           {1, 1}, 1, {true, true, false});
  EXPECT_EQ(ci.strides().vec(), (std::vector<int64_t>{48, 1, 12, 3}));
  EXPECT_EQ(cw.strides().vec(), (std::vector<int64_t>{18, 1, 6, 2}));
  expect_close(ci, gi.to_vector<double>(), 1e-5);
  expect_close(cw, gw.to_vector<double>(), 1e-5);
}

TEST(ConvChannelsLast, MetaTensorsPlanTheKernelsStrides) {
  // Compiled graphs plan buffers from the meta function: it must give the kernel's strides.
  const std::vector<int64_t> cl_in{64 * 56 * 56, 1, 56 * 64, 64};
  Tensor x = empty_strided({8, 64, 56, 56}, cl_in, kMeta);
  Tensor y = convolution(x, empty({32, 64, 3, 3}, kMeta), std::nullopt, {2, 2}, {1, 1}, {1, 1}, false, {0, 0}, 1);
  EXPECT_EQ(y.strides().vec(), (std::vector<int64_t>{28 * 28 * 32, 1, 28 * 32, 32}));
  Tensor c = convolution(empty({8, 64, 56, 56}, kMeta), empty({32, 64, 3, 3}, kMeta), std::nullopt, {2, 2}, {1, 1},
                         {1, 1}, false, {0, 0}, 1);
  EXPECT_TRUE(c.is_contiguous());
}

TEST(ConvChannelsLast, LeafGradientsKeepTheLeafsStrides) {
  // convolution_backward's grad_weight is channels_last for a channels_last input, but a
  // leaf's .grad follows PyTorch's layout contract: the leaf's own strides.
  Tensor x = to_channels_last(pattern({2, 3, 6, 5}, 7, 11, 5, 4.0, kFloat)).requires_grad_();
  Tensor w = pattern({4, 3, 3, 3}, 5, 9, 4, 8.0, kFloat).requires_grad_();
  Tensor y = convolution(x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1);
  y.sum().backward();
  EXPECT_EQ(x.grad().strides().vec(), nhwc_strides(x));
  EXPECT_TRUE(w.grad().is_contiguous());
  auto [gi, gw, gb] = convolution_backward(ones_like(y.detach()), x.detach(), w.detach(), std::nullopt, {1, 1}, {0, 0},
                                           {1, 1}, false, {0, 0}, 1, {true, true, false});
  EXPECT_EQ(gw.strides().vec(), nhwc_strides(gw));
  expect_close(w.grad(), gw.to_vector<double>(), 1e-6);
}

TEST(ConvChannelsLast, CloneToChannelsLastGivesNhwcStridesAndTheSameValues) {
  // aten::clone(x, memory_format=channels_last), what layout optimization converts a
  // convolution's input with (Note [aot], "Layout optimization").
  Tensor x = pattern({2, 3, 4, 5}, 7, 23, 11, 8.0, kFloat);
  Tensor c = call_op("aten::clone", {x, std::string("channels_last")}).at(0).to_tensor();
  EXPECT_EQ(c.strides().vec(), nhwc_strides(c));
  expect_close(c, x.to_vector<double>(), 0);
  try {
    call_op("aten::clone", {pattern({3, 4, 5}, 7, 23, 11, 8.0, kFloat), std::string("channels_last")});
    FAIL() << "expected an error for a 3-D tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("required rank 4 tensor to use channels_last format"), std::string::npos)
        << e.what();
  }
}

TEST(ConvChannelsLast, BatchNormUpdateStatsOverNhwcGivesTheNhwcKernelsMeanBitForBit) {
  // The statistics split_batch_norm_training takes from batch_norm_update_stats, over an
  // NHWC input read in place: the mean of native_batch_norm's NHWC kernel bit for bit, the
  // biased variance and the running stats to a rounding (one shifted pass, not two).
  Tensor x = to_channels_last(pattern({4, 72, 12, 11}, 7, 23, 11, 8.0, kFloat) + 3.0);
  Tensor rm1 = pattern({72}, 5, 9, 4, 8.0, kFloat), rv1 = pattern({72}, 3, 7, 3, 4.0, kFloat).abs() + 1.0;
  Tensor rm2 = rm1.clone(), rv2 = rv1.clone();
  auto [y, mean, invstd] = native_batch_norm(x, std::nullopt, std::nullopt, rm1, rv1, true, 0.1, 1e-5);
  Stack stats = call_op("aten::batch_norm_update_stats", {x, rm2, rv2, 0.1});
  const Tensor m = stats.at(0).to_tensor(), v = stats.at(1).to_tensor();
  EXPECT_EQ(m.to_vector<float>(), mean.to_vector<float>());
  expect_close(((v + 1e-5).rsqrt()), invstd.to_vector<double>(), 1e-6, 1e-5);
  expect_close(rm2, rm1.to_vector<double>(), 0);
  expect_close(rv2, rv1.to_vector<double>(), 1e-6, 1e-5);
}

TEST(ConvChannelsLast, BatchNormOverNhwcEqualsNchwAcrossThreadsAndChannelBlocks) {
  // Batch norm follows its input's memory format; over NHWC it sums rows of channels in
  // blocks of 16 split across threads. A W9-like input large enough to run in parallel,
  // with 72 channels (four whole blocks and a partial one): the same values as over NCHW,
  // and the same bits at every thread count.
  Tensor x = pattern({4, 72, 12, 11}, 7, 23, 11, 8.0, kFloat);
  Tensor w = pattern({72}, 5, 9, 4, 8.0, kFloat), b = pattern({72}, 3, 7, 3, 4.0, kFloat);
  Tensor gy = pattern({4, 72, 12, 11}, 3, 17, 8, 4.0, kFloat);
  auto [y, mean, invstd] = native_batch_norm(x, w, b, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  auto [gi, gw, gb] = native_batch_norm_backward(gy, x, w, std::nullopt, std::nullopt, mean, invstd, true, 1e-5,
                                                 {true, true, true});
  const int threads = omp_get_max_threads();
  std::vector<float> first;
  for (int t : {1, 2}) {
    omp_set_num_threads(t);
    auto [cy, cmean, cinvstd] =
        native_batch_norm(to_channels_last(x), w, b, std::nullopt, std::nullopt, true, 0.1, 1e-5);
    auto [ci, cw, cb] = native_batch_norm_backward(to_channels_last(gy), to_channels_last(x), w, std::nullopt,
                                                   std::nullopt, cmean, cinvstd, true, 1e-5, {true, true, true});
    EXPECT_EQ(cy.strides().vec(), nhwc_strides(cy));
    EXPECT_EQ(ci.strides().vec(), nhwc_strides(ci));
    expect_close(cy, y.to_vector<double>(), 1e-5, 1e-5);
    expect_close(cmean, mean.to_vector<double>(), 1e-6, 1e-6);
    expect_close(cinvstd, invstd.to_vector<double>(), 1e-6, 1e-6);
    expect_close(ci, gi.to_vector<double>(), 1e-5, 1e-4);
    expect_close(cw, gw.to_vector<double>(), 1e-3, 1e-5);
    expect_close(cb, gb.to_vector<double>(), 1e-3, 1e-5);
    if (first.empty()) first = ci.to_vector<float>();
    else EXPECT_EQ(ci.to_vector<float>(), first) << "the result depends on the thread count";
  }
  omp_set_num_threads(threads);
}

// --- pooling ---------------------------------------------------------------------------

TEST(MaxPool2d, PaddingDilationCeilModeValuesAndIndicesMatchTorch) {
  // torch: F.max_pool2d(x, (3,2), stride=(2,2), padding=(1,1), dilation=(1,2), ceil_mode=True, return_indices=True)
  for (ScalarType dtype : {kFloat, kDouble}) {
    Tensor x = pattern({1, 2, 5, 6}, 7, 17, 8, 4.0, dtype);
    auto [v, i] = max_pool2d_with_indices(x, {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
    EXPECT_EQ(sizes_of(v), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(i.dtype(), kInt64);
    expect_close(v, {1.75, 1.75, 1.0,  0.25, 1.75, 1.75, 1.0,  0.25, 1.5,  1.5,  2.0, 2.0,
                     1.25, 1.25, 1.75, 1.75, 1.0,  1.0,  1.75, 1.75, 0.75, 0.75, 1.5, 1.5},
                 0);
    EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 9,  11, 7,  7,  9,  11, 19, 19, 29, 29,
                                                            1, 1, 11, 11, 13, 13, 11, 11, 25, 25, 23, 23}));
  }
}

TEST(MaxPool2d, NanIsTheMaximumAndTheLastNanWins) {
  Tensor x = pattern({1, 2, 5, 6}, 7, 17, 8, 4.0);
  std::vector<double> v = x.to_vector<double>();
  v[0] = NAN;
  v[7] = NAN;  // [0, 0, 1, 1], same window as [0, 0, 0, 0]
  auto [out, idx] = max_pool2d_with_indices(tensor(v, {1, 2, 5, 6}), {2, 2});
  Tensor plane = out.select(0, 0).select(0, 0);
  expect_close(plane, {NAN, 1.5, 0.75, 2.0, 1.25, 0.5}, 0);
  EXPECT_EQ(idx.select(0, 0).select(0, 0).to_vector<int64_t>(), (std::vector<int64_t>{7, 2, 4, 12, 14, 16}));
}

/// ATen's max_pool2d scan (aten/src/ATen/native/cpu/MaxPoolKernel.cpp) of one plane
/// [h, w] of `x` at output (oh, ow): the value and the input index it picked.
std::pair<double, int64_t> aten_max_pool_at(const std::vector<double>& x, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                            std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                                            std::array<int64_t, 2> pad, std::array<int64_t, 2> d) {
  int64_t ih0 = oh * s[0] - pad[0], iw0 = ow * s[1] - pad[1];
  const int64_t ih1 = std::min(ih0 + (k[0] - 1) * d[0] + 1, h), iw1 = std::min(iw0 + (k[1] - 1) * d[1] + 1, w);
  while (ih0 < 0) ih0 += d[0];
  while (iw0 < 0) iw0 += d[1];
  int64_t best = ih0 * w + iw0;
  double m = -INFINITY;
  for (int64_t ih = ih0; ih < ih1; ih += d[0])
    for (int64_t iw = iw0; iw < iw1; iw += d[1])
      if (x[ih * w + iw] > m || std::isnan(x[ih * w + iw])) {
        m = x[ih * w + iw];
        best = ih * w + iw;
      }
  return {m, best};
}

TEST(MaxPool2d, TiesMinusInfinityAndNansPickAtensIndexForEveryGeometry) {
  // Values from a small set (many ties), with -inf and NaN among them, 7 planes of 9x11.
  const int64_t h = 9, w = 11;
  std::vector<double> x(static_cast<size_t>(7 * h * w));
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t r = static_cast<int64_t>((i * 37 + i / 5) % 13);
    x[i] = r == 0 ? -INFINITY : r == 1 ? NAN : static_cast<double>(r % 4);
  }
  for (size_t i = 0; i < 20; ++i) x[i] = -INFINITY;  // windows holding only -inf
  using G = std::array<int64_t, 2>;
  struct Geometry {
    G k, s, pad, d;
    bool ceil;
  };
  for (const Geometry& g : {Geometry{{2, 2}, {2, 2}, {0, 0}, {1, 1}, false}, Geometry{{3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
                            Geometry{{3, 2}, {1, 3}, {1, 1}, {2, 3}, true}, Geometry{{2, 4}, {3, 1}, {0, 2}, {1, 1}, false}}) {
    for (ScalarType dtype : {kFloat, kDouble}) {
      auto [v, idx] = max_pool2d_with_indices(tensor(x, {1, 7, h, w}).to(dtype), {g.k[0], g.k[1]}, {g.s[0], g.s[1]},
                                              {g.pad[0], g.pad[1]}, {g.d[0], g.d[1]}, g.ceil);
      const int64_t oh_n = v.size(2), ow_n = v.size(3);
      const std::vector<double> got = v.to(kDouble).to_vector<double>();
      const std::vector<int64_t> got_idx = idx.to_vector<int64_t>();
      for (int64_t c = 0; c < 7; ++c) {
        const std::vector<double> plane(x.begin() + c * h * w, x.begin() + (c + 1) * h * w);
        for (int64_t oh = 0; oh < oh_n; ++oh)
          for (int64_t ow = 0; ow < ow_n; ++ow) {
            const auto [m, at] = aten_max_pool_at(plane, h, w, oh, ow, g.k, g.s, g.pad, g.d);
            const size_t o = static_cast<size_t>((c * oh_n + oh) * ow_n + ow);
            EXPECT_EQ(got_idx[o], at) << "plane " << c << " at (" << oh << ", " << ow << ")";
            if (std::isnan(m)) EXPECT_TRUE(std::isnan(got[o]));
            else EXPECT_EQ(got[o], m);
          }
      }
    }
  }
}

TEST(MaxPool2d, ChannelsLastInputGivesChannelsLastValuesAndIndicesAsTorch) {
  // torch 2.11: F.max_pool2d_with_indices of a channels_last input on the CPU returns both
  // outputs channels_last, with the NCHW call's values and indices.
  Tensor x = pattern({2, 5, 7, 9}, 7, 17, 8, 4.0);
  std::vector<double> v = x.to_vector<double>();
  v[3] = NAN;
  v[40] = -INFINITY;
  x = tensor(v, {2, 5, 7, 9});
  const Tensor nhwc = to_channels_last(x);
  for (ScalarType dtype : {kFloat, kDouble}) {
    auto [want_v, want_i] = max_pool2d_with_indices(x.to(dtype), {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
    auto [got_v, got_i] = max_pool2d_with_indices(nhwc.to(dtype), {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
    const std::vector<int64_t> s = sizes_of(got_v);
    const std::vector<int64_t> nhwc_strides{s[1] * s[2] * s[3], 1, s[1] * s[3], s[1]};
    EXPECT_EQ(got_v.strides().vec(), nhwc_strides);
    EXPECT_EQ(got_i.strides().vec(), nhwc_strides);
    EXPECT_EQ(got_i.to_vector<int64_t>(), want_i.to_vector<int64_t>());
    const std::vector<double> a = got_v.to(kDouble).to_vector<double>(), b = want_v.to(kDouble).to_vector<double>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k)
      if (std::isnan(b[k])) EXPECT_TRUE(std::isnan(a[k]));
      else EXPECT_EQ(a[k], b[k]) << "element " << k;
    // Its meta agrees.
    auto [meta_v, meta_i] = max_pool2d_with_indices(empty_strided({2, 5, 7, 9}, {315, 1, 45, 5}, TensorOptions(kMeta).dtype(dtype)),
                                                    {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
    EXPECT_EQ(meta_v.strides().vec(), nhwc_strides);
    EXPECT_EQ(meta_i.strides().vec(), nhwc_strides);
  }
}

TEST(MaxPool2d, BFloat16AndUnbatchedAndDefaultStride) {
  Tensor x = pattern({2, 5, 6}, 7, 17, 8, 4.0, kBFloat16);  // the [1,2,5,6] case without its batch dim
  Tensor y = max_pool2d(x, {2, 2});
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 2, 3}));
  expect_close(y, {1.75, 1.5, 0.75, 2.0, 1.25, 0.5, 1.5, 0.75, 1.75, 1.25, 0.5, 2.0}, 0);
}

TEST(MaxPool2d, NonContiguousAndMetaInputs) {
  Tensor x = pattern({1, 6, 5, 2}, 7, 17, 8, 4.0).permute({0, 3, 2, 1});
  EXPECT_EQ(max_pool2d(x, {2, 2}).to_vector<double>(), max_pool2d(x.contiguous(), {2, 2}).to_vector<double>());
  auto [v, i] = max_pool2d_with_indices(empty({4, 3, 9, 9}, kMeta), {3, 3}, {2, 2}, {1, 1});
  EXPECT_TRUE(v.is_meta());
  EXPECT_EQ(sizes_of(i), (std::vector<int64_t>{4, 3, 5, 5}));
  EXPECT_EQ(i.dtype(), kInt64);
}

TEST(AvgPool2d, CeilModeWithAndWithoutCountIncludePadMatchesTorch) {
  Tensor x = pattern({1, 2, 5, 6}, 7, 17, 8, 4.0);
  // torch: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
  expect_close(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, false),
               {-0.125,
                0.375,
                -0.375,
                -0.75,
                0.75,
                0.3055555555555556,
                -0.4444444444444444,
                -0.5833333333333334,
                0.5625,
                0.0,
                -0.041666666666666664,
                1.0,
                0.3125,
                -0.25,
                -0.2916666666666667,
                0.75,
                0.125,
                -0.5555555555555556,
                0.1111111111111111,
                0.9166666666666666,
                -0.0625,
                -0.625,
                0.041666666666666664,
                0.375},
               1e-12);
  // count_include_pad=True: the divisor counts padding but not the ceil-mode overhang.
  expect_close(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, true),
               {-0.05555555555555555,
                0.25,
                -0.25,
                -0.25,
                0.5,
                0.3055555555555556,
                -0.4444444444444444,
                -0.2916666666666667,
                0.25,
                0.0,
                -0.027777777777777776,
                0.3333333333333333,
                0.1388888888888889,
                -0.16666666666666666,
                -0.19444444444444445,
                0.25,
                0.08333333333333333,
                -0.5555555555555556,
                0.1111111111111111,
                0.4583333333333333,
                -0.027777777777777776,
                -0.4166666666666667,
                0.027777777777777776,
                0.125},
               1e-12);
}

TEST(AvgPool2d, DivisorOverrideReplacesTheWindowSize) {
  Tensor x = pattern({1, 2, 5, 6}, 7, 17, 8, 4.0, kFloat);
  Tensor y = avg_pool2d(x, {2, 3}, {1, 2}, {0, 0}, false, true, 5);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{1, 2, 4, 2}));
  expect_close(y, {0.05, 0.0, 0.75, -0.15, 0.6, -0.3, 0.45, -0.45, 0.15, -0.75, 0.0, -0.05, -0.15, -0.2, -0.3, -0.35},
               1e-6);
}

TEST(AvgPool2d, Int64TruncatesTowardZero) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 32; ++i) v.push_back(i * 7 % 10 - 5);
  Tensor y = avg_pool2d(tensor(v, {2, 4, 4}), {2, 2});
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{0, -1, -1, 0, 0, -1, 0, 0}));
}

TEST(AdaptiveAvgPool2d, UnevenWindowsMatchTorch) {
  // torch: F.adaptive_avg_pool2d(x[2,5,7], (3,4))
  Tensor x = pattern({2, 5, 7}, 7, 17, 8, 4.0);
  Tensor y = adaptive_avg_pool2d(x, {3, 4});
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 3, 4}));
  expect_close(y,
               {-0.3125,
                -0.16666666666666666,
                -0.20833333333333334,
                -0.0625,
                0.0,
                -0.4444444444444444,
                0.2222222222222222,
                0.25,
                0.3125,
                0.4583333333333333,
                0.4166666666666667,
                -0.5,
                0.375,
                0.16666666666666666,
                0.125,
                0.625,
                -0.375,
                -0.1111111111111111,
                0.08333333333333333,
                -0.125,
                -0.0625,
                0.08333333333333333,
                -0.6666666666666666,
                -0.875},
               1e-12);
}

TEST(AdaptiveAvgPool2d, BFloat16AccumulatesInFloat) {
  Tensor y = adaptive_avg_pool2d(pattern({2, 5, 7}, 7, 17, 8, 4.0, kBFloat16), {2, 3});
  EXPECT_EQ(y.dtype(), kBFloat16);
  expect_close(y,
               {0.1943359375, -0.08349609375, 0.111328125, 0.138671875, -0.138671875, -0.416015625, -0.416015625,
                -0.22265625, 0.4453125, 0.0, 0.1943359375, -0.08349609375},
               0);
}

TEST(AdaptiveAvgPool2d, GlobalPoolingIsTheMeanAndZeroSizeIsEmpty) {
  Tensor x = pattern({2, 3, 4, 5}, 7, 17, 8, 4.0);
  Tensor y = adaptive_avg_pool2d(x, {1, 1});
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 3, 1, 1}));
  std::vector<double> v = x.to_vector<double>();
  double sum = 0;
  for (int i = 0; i < 20; ++i) sum += v[i];
  EXPECT_NEAR(y.to_vector<double>()[0], sum / 20, 1e-12);
  EXPECT_EQ(sizes_of(adaptive_avg_pool2d(x, {0, 2})), (std::vector<int64_t>{2, 3, 0, 2}));
}

TEST(AvgPool1d, CeilModeWithoutCountIncludePadValuesAndGradientMatchTorch) {
  // torch: y = F.avg_pool1d(x[2,2,7], 3, stride=2, padding=1, ceil_mode=True,
  // count_include_pad=False); (y * arange(8).view(y.shape)).sum().backward()
  Tensor x = pattern({2, 2, 7}, 7, 17, 8, 4.0).requires_grad_();
  Tensor y = avg_pool1d(x, {3}, {2}, {1}, true, false);
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, 2, 4}));
  expect_close(y,
               {-1.125, 0.08333333333333333, -0.6666666666666666, -0.875, 0.5, -0.4166666666666667, 0.25, 0.75, 0.0,
                -0.9166666666666666, -0.25, 0.25, -0.5, 0.0, 0.6666666666666666, -0.25},
               1e-12);
  sum(y * arange(16, kDouble).view({2, 2, 4})).backward();
  expect_close(x.grad(),
               {0.0, 0.3333333333333333, 0.3333333333333333, 1.0, 0.6666666666666666, 2.1666666666666665, 1.5, 2.0,
                3.666666666666667, 1.6666666666666667, 3.666666666666667, 2.0, 5.5, 3.5, 4.0, 7.0, 3.0,
                6.333333333333334, 3.3333333333333335, 8.833333333333334, 5.5, 6.0, 10.333333333333332,
                4.333333333333333, 9.0, 4.666666666666667, 12.166666666666668, 7.5},
               1e-12);
}

TEST(AvgPool1d, WrongRankOrListLengthRaisesAtensMessages) {
  using testing::error_of;
  EXPECT_NE(error_of([] { avg_pool1d(ones({2, 3, 4, 5}), {2}); })
                .find("Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking "
                      "arguments for avg_pool1d)"),
            std::string::npos);
  EXPECT_NE(error_of([] { avg_pool1d(ones({2, 3, 8}), {2, 2}); })
                .find("avg_pool1d() argument 'kernel_size' should contain one int (got 2)"),
            std::string::npos);
  EXPECT_NE(error_of([] { avg_pool1d(ones({2, 3, 8}), {2}, {1}, {0, 0}); })
                .find("avg_pool1d() argument 'padding' should contain one int (got 2)"),
            std::string::npos);
}

TEST(AdaptiveAvgPool1d, UnbatchedUnevenWindowsMatchTorch) {
  using testing::error_of;
  // torch: F.adaptive_avg_pool1d(x[3,7], 3)
  Tensor y = adaptive_avg_pool1d(pattern({3, 7}, 7, 17, 8, 4.0), {3});
  EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{3, 3}));
  expect_close(y,
               {-0.25, 0.4166666666666667, -0.3333333333333333, 0.6666666666666666, -0.08333333333333333,
                0.5833333333333334, 0.16666666666666666, -0.5833333333333334, 0.08333333333333333},
               1e-12);
  EXPECT_NE(error_of([] { adaptive_avg_pool1d(ones({2, 3, 8}), {2, 2}); })
                .find("adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
            std::string::npos);
}

}  // namespace
}  // namespace ember
