// The float32 math of kernels/cpu/vec.h (the lanes of every dense float32 kernel, eager
// and generated): the error of each function against float64 on a sample of every float
// (each 4099th bit pattern, ~1M values over the whole range) stays within the bound of
// Note [vectorized math], and special values (NaN, infinities, overflow, underflow, -0)
// come out as PyTorch gives them, in the eager ops too. bench_vec_math_ulp measures
// every float.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "ember/ember.h"
#include "ops/vec_math_cases.h"

namespace ember {
namespace {

using vec::VecF;
namespace ulp = vec::ulp;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

const ulp::MathCase& math_case(const std::string& name) {
  for (const auto& c : ulp::math_cases())
    if (name == c.name) return c;
  throw std::runtime_error("no math case " + name);
}

ulp::SweepResult sampled(const std::string& name) { return ulp::sweep(math_case(name), 4099); }

// The bounds: the every-float maxima of the Note, rounded up.
TEST(VecMath, ExpLogTanhErfWithinTheirUlpBoundsOverSampledFloats) {
  const std::pair<const char*, double> bounds[] = {{"exp", 2.5}, {"log", 2.0}, {"tanh", 2.0}, {"erf", 1.5}};
  for (const auto& [name, bound] : bounds) {
    const auto r = sampled(name);
    EXPECT_LE(r.max_ulp, bound) << name << " at x = " << r.max_ulp_at;
  }
}

// sigmoid's formula, 1 / (1 + e^-x), gives 0 where e^-x overflows (x < -88.7) though the
// exact value is a subnormal, as PyTorch's does: bounded in ulps over normal results.
TEST(VecMath, SigmoidWithinFourUlpOverSampledNormalResults) {
  const auto r = sampled("sigmoid");
  EXPECT_LE(r.max_ulp_normal, 4.0) << "at x = " << r.max_ulp_normal_at;
  EXPECT_LE(r.max_ratio, 0.05) << "at x = " << r.max_ratio_at;
}

// GELU's formulas cancel (1 + erf or 1 + tanh near -1) where the result is tiny, so their
// ulp error is the formula's; against PyTorch's float32 tolerance they stay far inside it.
TEST(VecMath, GeluBothFormsWithinAHundredthOfPyTorchToleranceOverSampledFloats) {
  for (const char* name : {"gelu", "gelu_tanh"}) {
    const auto r = sampled(name);
    EXPECT_LE(r.max_ratio, 0.05) << name << " at x = " << r.max_ratio_at;
  }
}

// The ulp measure itself: exact is 0, the next float is 1, a NaN or infinity mismatch is
// infinite, and an overflow counts as exact when the float result is the infinity.
TEST(VecMath, UlpErrorCountsFloatSteps) {
  EXPECT_EQ(ulp::ulp_error(1.0f, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(ulp::ulp_error(std::nextafter(1.0f, 2.0f), 1.0), 1.0);
  EXPECT_DOUBLE_EQ(ulp::ulp_error(0x1p-149f, 0.0), 1.0);
  EXPECT_EQ(ulp::ulp_error(kNan, 1.0), HUGE_VAL);
  EXPECT_EQ(ulp::ulp_error(1.0f, std::nan("")), HUGE_VAL);
  EXPECT_EQ(ulp::ulp_error(kInf, 1e39), 0.0);
  EXPECT_EQ(ulp::ulp_error(3.4e38f, 1e39), HUGE_VAL);
}

/// f applied to each value in the lanes of a vector.
std::vector<float> lanes_of(VecF (*f)(VecF), std::vector<float> xs) {
  std::vector<float> out;
  for (size_t i = 0; i < xs.size(); i += VecF::size()) {
    float in[VecF::size()] = {}, res[VecF::size()];
    for (size_t j = 0; j < static_cast<size_t>(VecF::size()) && i + j < xs.size(); ++j) in[j] = xs[i + j];
    f(VecF::load(in)).store(res);
    for (size_t j = 0; j < static_cast<size_t>(VecF::size()) && i + j < xs.size(); ++j) out.push_back(res[j]);
  }
  return out;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " #" << i << ": " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " #" << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " #" << i << " (sign)";
    }
  }
}

TEST(VecMath, ExpSpecialValuesAsPyTorch) {
  const std::vector<float> xs = {-kInf, kInf, kNan, 0.0f, -0.0f, 88.8f, 1e30f, -104.0f, -1e30f};
  const std::vector<float> want = {0.0f, kInf, kNan, 1.0f, 1.0f, kInf, kInf, 0.0f, 0.0f};
  expect_same(lanes_of(math_case("exp").vec, xs), want, "exp");
  // The largest finite result, and a subnormal one.
  const auto edge = lanes_of(math_case("exp").vec, {88.72283f, -100.0f});
  EXPECT_TRUE(std::isfinite(edge[0]));
  EXPECT_NEAR(edge[1], std::exp(-100.0), 0x1p-149);
}

TEST(VecMath, LogSpecialValuesAsPyTorch) {
  const std::vector<float> xs = {0.0f, -0.0f, -1.0f, -kInf, kInf, kNan, 1.0f, 0x1p-149f};
  const std::vector<float> want = {-kInf, -kInf, kNan, kNan, kInf, kNan, 0.0f, static_cast<float>(std::log(0x1p-149))};
  expect_same(lanes_of(math_case("log").vec, xs), want, "log");
}

TEST(VecMath, TanhErfSigmoidSpecialValuesAsPyTorch) {
  expect_same(lanes_of(math_case("tanh").vec, {kInf, -kInf, kNan, -0.0f, 0.0f, 20.0f, -1e-40f}),
              {1.0f, -1.0f, kNan, -0.0f, 0.0f, 1.0f, -1e-40f}, "tanh");
  expect_same(lanes_of(math_case("erf").vec, {kInf, -kInf, kNan, -0.0f, 0.0f, 5.0f, -1e30f}),
              {1.0f, -1.0f, kNan, -0.0f, 0.0f, 1.0f, -1.0f}, "erf");
  expect_same(lanes_of(math_case("sigmoid").vec, {kInf, -kInf, kNan, -1000.0f, 1000.0f, 0.0f}),
              {1.0f, 0.0f, kNan, 0.0f, 1.0f, 0.5f}, "sigmoid");
}

// The eager ops take the same lanes: specials in a 37-element tensor (vector and tail).
TEST(VecMath, EagerOpsKeepSpecialValues) {
  std::vector<float> xs(37, 0.5f);
  xs[0] = -kInf, xs[1] = kInf, xs[2] = kNan, xs[3] = -0.0f, xs[4] = -1000.0f, xs[36] = -kInf;
  const Tensor x = tensor<float>(xs, {37});
  const auto e = exp(x).to_vector<float>(), t = tanh(x).to_vector<float>(), s = sigmoid(x).to_vector<float>();
  const auto l = log(x).to_vector<float>(), g = gelu(x).to_vector<float>();
  EXPECT_EQ(e[0], 0.0f);
  EXPECT_EQ(e[1], kInf);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_EQ(e[36], 0.0f);
  EXPECT_EQ(t[0], -1.0f);
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_TRUE(std::signbit(t[3]) && t[3] == 0.0f);
  EXPECT_EQ(s[4], 0.0f);
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(l[3], -kInf);
  EXPECT_TRUE(std::isnan(l[0]));
  EXPECT_EQ(l[1], kInf);
  EXPECT_EQ(g[1], kInf);
  EXPECT_EQ(g[4], -0.0f);
}

}  // namespace
}  // namespace ember
