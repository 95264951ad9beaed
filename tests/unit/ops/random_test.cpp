// The Philox 4x32-10 generator (Random123 known-answer vectors), the (seed, offset)
// contract of Note [random], and the random ops' distributions.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "ember/ember.h"
#include "kernels/cpu/philox.h"

namespace ember {
namespace {

TEST(Philox, MatchesRandom123KnownAnswers) {
  struct Case {
    philox::Words ctr;
    uint32_t k0, k1;
    philox::Words want;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Case& c : cases) {
    const philox::Words got = philox::philox4x32_10(c.ctr, c.k0, c.k1);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got.w[j], c.want.w[j]) << "word " << j;
  }
}

TEST(Philox, BlockPutsCounterLowWordFirstAndSeedInTheKey) {
  const uint64_t seed = 0x0123456789abcdefULL, counter = 0xfedcba9876543210ULL;
  const philox::Words a = philox::block(seed, counter);
  const philox::Words b = philox::philox4x32_10({{0x76543210u, 0xfedcba98u, 0, 0}}, 0x89abcdefu, 0x01234567u);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(a.w[j], b.w[j]);
}

/// |a - b| in units of b's last place.
double ulps(double a, double b) { return std::fabs(a - b) / (std::nextafter(std::fabs(b), INFINITY) - std::fabs(b)); }

TEST(Philox, PortableLogIsWithinFourUlpsOverBoxMullersRange) {
  // philox.h's own log (the same bits on every device) against libm on [2^-53, 1].
  double worst = 0;
  for (int i = 1; i <= 200000; ++i) {
    const philox::Words w = philox::block(11, static_cast<uint64_t>(i));
    const double x = 1.0 - philox::uniform_double(w.w[0], w.w[1]);
    if (x != 1.0) worst = std::max(worst, ulps(philox::log_(x), std::log(x)));
  }
  EXPECT_EQ(philox::log_(1.0), 0.0);
  EXPECT_EQ(philox::log_(0x1p-53), std::log(0x1p-53));
  EXPECT_LE(worst, 4.0);
}

TEST(Philox, PortableCosSinOfTurnsIsWithinTwoUlpsOfOne) {
  for (int i = 0; i < 200000; ++i) {
    const philox::Words w = philox::block(12, static_cast<uint64_t>(i));
    const double t = philox::uniform_double(w.w[0], w.w[1]);
    double c, s;
    philox::cos_sin_turns(t, c, s);
    const long double th = 2 * 3.14159265358979323846264338327950288L * t;
    EXPECT_NEAR(c, static_cast<double>(cosl(th)), 0x1p-52) << t;
    EXPECT_NEAR(s, static_cast<double>(sinl(th)), 0x1p-52) << t;
  }
  double c, s;
  philox::cos_sin_turns(0.25, c, s);
  EXPECT_EQ(c, 0.0);
  EXPECT_EQ(s, 1.0);
}

TEST(Generator, ManualSeedResetsOffset) {
  manual_seed(7);
  (void)rand({10});
  EXPECT_EQ(generator_state(), (std::pair<uint64_t, uint64_t>{7, 3}));  // ceil(10 / 4) counters
  manual_seed(9);
  EXPECT_EQ(generator_state(), (std::pair<uint64_t, uint64_t>{9, 0}));
}

TEST(Rand, FloatElementIReadsCounterOffsetPlusIOver4LaneIMod4) {
  set_generator_state(1234, 5);
  std::vector<float> v = rand({11}).to_vector<float>();
  for (int64_t i = 0; i < 11; ++i) {
    const philox::Words w = philox::block(1234, 5 + static_cast<uint64_t>(i / 4));
    EXPECT_EQ(v[i], static_cast<float>(w.w[i % 4] >> 8) / 16777216.0f) << i;
  }
  EXPECT_EQ(generator_state().second, 5u + 3u);
}

TEST(Rand, DoubleElementIReadsTwoWordsOfCounterIOver2) {
  set_generator_state(99, 0);
  std::vector<double> v = rand({5}, kDouble).to_vector<double>();
  for (int64_t i = 0; i < 5; ++i) {
    const philox::Words w = philox::block(99, static_cast<uint64_t>(i / 2));
    const int j = static_cast<int>(i % 2);
    EXPECT_EQ(v[i], philox::uniform_double(w.w[2 * j], w.w[2 * j + 1])) << i;
  }
  EXPECT_EQ(generator_state().second, 3u);
}

TEST(Randn, FloatPairsOfLanesGoThroughBoxMuller) {
  set_generator_state(42, 0);
  std::vector<float> v = randn({6}).to_vector<float>();
  for (int64_t i = 0; i < 6; i += 2) {
    const philox::Words w = philox::block(42, static_cast<uint64_t>(i / 4));
    const int j = static_cast<int>(i % 4);
    double z0, z1;
    philox::box_muller(philox::uniform_float(w.w[j]), philox::uniform_float(w.w[j + 1]), z0, z1);
    EXPECT_EQ(v[i], static_cast<float>(z0));
    EXPECT_EQ(v[i + 1], static_cast<float>(z1));
  }
  EXPECT_EQ(generator_state().second, 2u);
}

TEST(Rand, SameSeedSameNumbersDifferentSeedsDiffer) {
  manual_seed(3);
  std::vector<float> a = rand({64}).to_vector<float>();
  std::vector<float> a2 = rand({64}).to_vector<float>();
  manual_seed(3);
  std::vector<float> b = rand({64}).to_vector<float>();
  manual_seed(4);
  std::vector<float> c = rand({64}).to_vector<float>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, a2);  // the offset moved on
  EXPECT_NE(a, c);
}

TEST(Rand, IndependentOfThreadCount) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  manual_seed(11);
  std::vector<float> one = randn({300001}).to_vector<float>();
  omp_set_num_threads(4);
  manual_seed(11);
  std::vector<float> many = randn({300001}).to_vector<float>();
  omp_set_num_threads(saved);
  EXPECT_EQ(one, many);
}

template <typename T>
std::pair<double, double> moments(const std::vector<T>& v) {
  double s = 0, s2 = 0;
  for (T x : v) {
    s += static_cast<double>(x);
    s2 += static_cast<double>(x) * static_cast<double>(x);
  }
  const double n = static_cast<double>(v.size()), mean = s / n;
  return {mean, s2 / n - mean * mean};
}

TEST(Rand, UniformMomentsAndRange) {
  manual_seed(5);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    std::vector<double> v = rand({1 << 20}, dt).to_vector<double>();
    auto [mean, var] = moments(v);
    EXPECT_NEAR(mean, 0.5, 3e-3) << dt;
    EXPECT_NEAR(var, 1.0 / 12, 3e-3) << dt;
    for (double x : v) ASSERT_TRUE(x >= 0 && x < 1) << dt;
  }
}

TEST(Randn, NormalMoments) {
  manual_seed(6);
  for (ScalarType dt : {kFloat, kDouble}) {
    auto [mean, var] = moments(randn({1 << 20}, dt).to_vector<double>());
    EXPECT_NEAR(mean, 0.0, 5e-3) << dt;
    EXPECT_NEAR(var, 1.0, 5e-3) << dt;
  }
}

TEST(RandLike, FollowsSelfsShapeAndDtype) {
  Tensor r = rand_like(zeros({3, 2}, kDouble));
  EXPECT_EQ(r.dtype(), kDouble);
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(randn_like(zeros({4}, kHalf)).dtype(), kHalf);
}

TEST(Rand, MetaDeviceGivesShapeAndLeavesTheOffset) {
  manual_seed(1);
  Tensor r = rand({1000}, kMeta);
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(generator_state().second, 0u);
}

TEST(Bernoulli, TensorProbabilities) {
  manual_seed(8);
  std::vector<double> p(1 << 18);
  for (size_t i = 0; i < p.size(); ++i) p[i] = (i % 2) ? 0.25 : 1.0;
  Tensor out = bernoulli(tensor<double>(p));
  EXPECT_EQ(out.dtype(), kDouble);
  std::vector<double> v = out.to_vector<double>();
  double odd = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_TRUE(v[i] == 0 || v[i] == 1);
    if (i % 2) odd += v[i];
    else ASSERT_EQ(v[i], 1);
  }
  EXPECT_NEAR(odd / (p.size() / 2), 0.25, 5e-3);
}

TEST(Bernoulli, ScalarProbabilityKeepsDtype) {
  manual_seed(8);
  Tensor out = bernoulli(zeros({1 << 18}, kInt64), 0.7);
  EXPECT_EQ(out.dtype(), kInt64);
  auto [mean, var] = moments(out.to_vector<double>());
  EXPECT_NEAR(mean, 0.7, 5e-3);
  EXPECT_NEAR(var, 0.21, 5e-3);
}

TEST(NativeDropout, ScalesKeptElementsAndReturnsABoolMask) {
  manual_seed(10);
  Tensor x = rand({1 << 18}) + 1.0;
  auto [out, mask] = native_dropout(x, 0.3, true);
  EXPECT_EQ(mask.dtype(), kBool);
  std::vector<float> xv = x.to_vector<float>(), ov = out.to_vector<float>();
  std::vector<bool> mv = mask.to_vector<bool>();
  const float scale = static_cast<float>(1.0 / 0.7);
  double kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    ASSERT_EQ(ov[i], mv[i] ? xv[i] * scale : 0.0f) << i;
    kept += mv[i];
  }
  EXPECT_NEAR(kept / xv.size(), 0.7, 5e-3);
}

TEST(NativeDropout, PEqualOneGivesZerosAndEmptyMask) {
  auto [out, mask] = native_dropout(ones({5}), 1.0, true);
  EXPECT_EQ(out.to_vector<float>(), std::vector<float>(5, 0.0f));
  EXPECT_EQ(mask.to_vector<bool>(), std::vector<bool>(5, false));
}

TEST(NativeDropout, EvalCopiesInputWithAllTrueMask) {
  Tensor x = tensor<float>({1, 2, 3});
  auto [out, mask] = native_dropout(x, 0.5, false);
  EXPECT_FALSE(out.is_same(x));
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(mask.to_vector<bool>(), std::vector<bool>(3, true));
  const uint64_t before = generator_state().second;
  (void)native_dropout(x, 0.5, false);
  EXPECT_EQ(generator_state().second, before);  // eval draws nothing
}

TEST(NativeDropout, TrainNoneMeansTrainingAndEmptyInputKeepsDtypeForMask) {
  manual_seed(2);
  const uint64_t before = generator_state().second;
  (void)native_dropout(ones({9}), 0.5, std::nullopt);
  EXPECT_EQ(generator_state().second, before + 3);
  auto [out, mask] = native_dropout(ones({0}), 0.5, true);
  EXPECT_EQ(mask.dtype(), kFloat);  // as ATen: empty_like(input)
}

TEST(Dropout, EvalAndZeroPReturnTheInputAndTrainingUsesNativeDropout) {
  Tensor x = ones({8});
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  set_generator_state(77, 0);
  std::vector<float> d = dropout(x, 0.5, true).to_vector<float>();
  set_generator_state(77, 0);
  auto [out, mask] = native_dropout(x, 0.5, true);
  EXPECT_EQ(d, out.to_vector<float>());
  for (float v : d) EXPECT_TRUE(v == 0.0f || v == 2.0f);
}

}  // namespace
}  // namespace ember
