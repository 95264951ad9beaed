// same(): PyTorch's accuracy rule — compiled fails only when its error against a float64
// reference exceeds eager's by the multiplier plus tol/10 — with its NaN/Inf rules and
// the cosine-similarity option. See Note [minifier], "Accuracy".
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/debug.h"
#include "ember/ember.h"

namespace ember {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f32(std::vector<double> v) {
  std::vector<float> f(v.begin(), v.end());
  return tensor<float>(f);
}
Tensor f64(std::vector<double> v) { return tensor<double>(v); }

TEST(Same, ResultsWithinTolOfEagerPass) { EXPECT_TRUE(same(f32({1, 2, 3}), f32({1, 2, 3.00001}), f64({1, 2, 3}))); }

TEST(Same, CompiledErrorWithinTwiceEagersErrorPasses) {
  // Eager is off by 0.01 everywhere; compiled by 0.015: worse than tol, but within 2x eager's error.
  SameOptions o;
  o.tol = 1e-4;
  EXPECT_TRUE(same(f32({1.01, 2.01, 3.01}), f32({1.015, 2.015, 3.015}), f64({1, 2, 3}), o));
}

TEST(Same, CompiledErrorBeyondTwiceEagersErrorFailsAndSaysBy) {
  SameOptions o;
  o.tol = 1e-4;
  SameResult r = same(f32({1.01, 2.01, 3.01}), f32({1.03, 2.03, 3.03}), f64({1, 2, 3}), o);
  EXPECT_FALSE(r);
  EXPECT_NE(r.why.find("RMSE(compiled, fp64)"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("2 * RMSE(eager, fp64)"), std::string::npos) << r.why;
}

TEST(Same, MultiplierIsThreeForHalfResults) {
  // Compiled error 2.5x eager's: fails for float32, passes for float16.
  SameOptions o;
  o.tol = 1e-4;
  const Tensor ref = f64({0.0, 0.0, 0.0, 0.0});
  const Tensor eager = f64({0.125, 0.125, 0.125, 0.125});
  const Tensor compiled = f64({0.3125, 0.3125, 0.3125, 0.3125});
  EXPECT_FALSE(same(eager.to(kFloat), compiled.to(kFloat), ref, o));
  EXPECT_TRUE(same(eager.to(kHalf), compiled.to(kHalf), ref, o));
}

TEST(Same, AbsoluteFloorLetsATinyErrorPassWhenEagerIsExact) {
  // Eager exact; compiled has one outlier of 0.03 among 10000 elements (RMSE 3e-4) and
  // the floor is tol/10 = 1e-3 for tol = 0.01; the same outlier among 100 fails.
  SameOptions o;
  o.tol = 0.01;
  for (int64_t n : {10000, 100}) {
    Tensor exact = zeros({n}, kFloat);
    Tensor compiled = zeros({n}, kFloat);
    compiled.narrow(0, 0, 1).fill_(0.03);
    EXPECT_EQ(static_cast<bool>(same(exact, compiled, exact.to(kDouble), o)), n == 10000) << n;
  }
}

TEST(Same, NaNWhereEagerHasNaNPasses) {
  EXPECT_TRUE(same(f32({1, kNaN}), f32({1, kNaN}), f64({1, kNaN})));
  SameOptions strict;
  strict.equal_nan = false;
  EXPECT_FALSE(same(f32({1, kNaN}), f32({1, kNaN}), f64({1, 2}), strict));
}

TEST(Same, NaNOrInfWhereEagerIsFiniteFails) {
  SameResult r = same(f32({1, 2}), f32({1, kNaN}), f64({1, 2}));
  EXPECT_FALSE(r);
  EXPECT_NE(r.why.find("element 1"), std::string::npos) << r.why;
  EXPECT_FALSE(same(f32({1, 2}), f32({1, kInf}), f64({1, 2})));
}

TEST(Same, InfMustMatchEagersSign) {
  EXPECT_TRUE(same(f32({kInf, -kInf}), f32({kInf, -kInf}), f64({kInf, -kInf})));
  EXPECT_FALSE(same(f32({kInf}), f32({-kInf}), f64({kInf})));
}

TEST(Same, NonFiniteMatchingTheFp64ReferencePasses) {
  EXPECT_TRUE(same(f32({1, 2}), f32({kNaN, 2}), f64({kNaN, 2})));   // NaN where fp64 has one
  EXPECT_TRUE(same(f32({kInf, 1}), f32({0.5, 1}), f64({0.5, 1})));  // eager overflowed, compiled exact
  EXPECT_FALSE(same(f32({kInf, 1}), f32({0.5, 1}), f64({2, 1})));   // neither eager nor fp64
}

TEST(Same, SizesDtypesAndIntegersMustMatchExactly) {
  EXPECT_FALSE(same(f32({1, 2}), f32({1, 2, 3}), f64({1, 2})));
  SameResult r = same(f32({1, 2}), f64({1, 2}), f64({1, 2}));
  EXPECT_FALSE(r);
  EXPECT_NE(r.why.find("dtypes differ"), std::string::npos) << r.why;
  EXPECT_TRUE(same(tensor<int64_t>({1, 2}), tensor<int64_t>({1, 2}), Tensor()));
  EXPECT_FALSE(same(tensor<int64_t>({1, 2}), tensor<int64_t>({1, 3}), Tensor()));
}

TEST(Same, CosineSimilarityJudgesDirectionNotScale) {
  SameOptions o;
  o.cos_similarity = true;
  EXPECT_TRUE(same(f32({1, 2, 3}), f32({1.5, 3, 4.5}), f64({1, 2, 3}), o));
  EXPECT_FALSE(same(f32({1, 2, 3}), f32({-1, -2, -3}), f64({1, 2, 3}), o));
}

TEST(Same, ListsNameTheFailingOutput) {
  SameResult r = same(std::vector<Tensor>{f32({1}), f32({2})}, std::vector<Tensor>{f32({1}), f32({5})},
                      std::vector<Tensor>{f64({1}), f64({2})});
  EXPECT_FALSE(r);
  EXPECT_EQ(r.why.rfind("output 1: ", 0), 0u) << r.why;
}

}  // namespace
}  // namespace ember
