// Reductions: values, dtypes and shapes as PyTorch 1.13 gives them (expected values were
// computed with torch), plus a reference check of the engine over layouts and dim sets.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "ember/ember.h"

namespace ember {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_values(const Tensor& t, IntArrayRef shape, ScalarType dtype, const std::vector<double>& expected,
                   double rtol = 1.3e-6, double atol = 1e-5) {
  ASSERT_EQ(t.sizes(), shape);
  ASSERT_EQ(t.dtype(), dtype);
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i])) << "at " << i;
    }
  }
}

/// The 3x4 float matrix most tests reduce.
Tensor x34() {
  return tensor<float>({0.5f, -1.25f, 3.0f, 2.0f, 4.5f, 0.25f, -2.0f, 1.5f, -0.75f, 6.0f, 1.0f, -3.5f}, {3, 4});
}

// --- sum / mean / prod ---------------------------------------------------------------------

TEST(ReductionSum, AllElements) { expect_values(x34().sum(), {}, kFloat, {11.25}); }

TEST(ReductionSum, OverLastDim) { expect_values(x34().sum({1}), {3}, kFloat, {4.25, 4.25, 2.75}); }

TEST(ReductionSum, NegativeDimWithKeepdim) {
  expect_values(x34().sum({-2}, true), {1, 4}, kFloat, {4.25, 5.0, 2.0, 0.0});
}

TEST(ReductionSum, TransposedInput) { expect_values(x34().t().sum({1}), {4}, kFloat, {4.25, 5.0, 2.0, 0.0}); }

TEST(ReductionSum, EmptyDimListMeansAllDims) {
  expect_values(x34().sum(IntArrayRef{}), {}, kFloat, {11.25});
  expect_values(sum(x34(), IntArrayRef{}, true), {1, 1}, kFloat, {11.25});
}

TEST(ReductionSum, SeveralDimsOfPermutedInput) {
  Tensor x = arange(24, kFloat).reshape({2, 3, 4}).permute({2, 0, 1});
  expect_values(x.sum({0, 2}), {2}, kFloat, {66.0, 210.0});
}

TEST(ReductionSum, IntegersPromoteToInt64) {
  Tensor i = arange(12).reshape({3, 4}) - 5;
  expect_values(i.sum(), {}, kInt64, {6});
  expect_values(i.sum({0}), {4}, kInt64, {-3, 0, 3, 6});
  expect_values(ones({3}, kInt32).sum(), {}, kInt64, {3});
}

TEST(ReductionSum, BoolCountsTrueAsInt64) {
  Tensor b = tensor<bool>({true, false, true, false, false, true}, {2, 3});
  expect_values(b.sum(), {}, kInt64, {3});
  expect_values(b.sum({0}), {3}, kInt64, {1, 0, 2});
}

TEST(ReductionSum, DtypeArgumentCastsInputFirst) {
  expect_values(sum(x34(), kDouble), {}, kDouble, {11.25});
  expect_values(sum(x34(), {1}, false, kInt64), {3}, kInt64, {4, 3, 4});
}

TEST(ReductionSum, HalfAccumulatesInFloat) {
  expect_values(full({4096}, 0.1, kHalf).sum(), {}, kHalf, {409.5}, 1e-3, 1e-5);
  expect_values(full({1000}, 0.3, kBFloat16).sum(), {}, kBFloat16, {300.0}, 1.6e-2, 1e-5);
}

TEST(ReductionSum, MillionFloatsStayAccurate) {
  expect_values(full({1000000}, 0.1).sum(), {}, kFloat, {100000.0078125});
  expect_values(full({1000000}, 0.1).mean(), {}, kFloat, {0.10000000894069672});
}

TEST(ReductionSum, DoubleInput) {
  expect_values(tensor<double>({0.1, 0.2, 0.3}).sum(), {}, kDouble, {0.6000000000000001}, 1e-7, 1e-7);
}

TEST(ReductionSum, EmptyInputGivesZero) {
  expect_values(empty({0, 3}).sum(), {}, kFloat, {0.0});
  expect_values(empty({0, 2}, kInt32).sum({0}), {2}, kInt64, {0, 0});
}

TEST(ReductionSum, ZeroDimInput) {
  Tensor z = scalar_tensor(2.5);
  expect_values(z.sum({0}), {}, kFloat, {2.5});
  expect_values(z.sum({0}, true), {}, kFloat, {2.5});
  expect_values(z.sum({-1}), {}, kFloat, {2.5});
}

TEST(ReductionMean, AllAndOverDim) {
  expect_values(x34().mean(), {}, kFloat, {0.9375});
  expect_values(x34().mean({0}), {4}, kFloat, {1.4166666269302368, 1.6666666269302368, 0.6666666865348816, 0.0});
}

TEST(ReductionMean, DtypeArgumentAllowsIntegerInput) {
  expect_values(mean(arange(6).reshape({2, 3}), {1}, false, kDouble), {2}, kDouble, {1.0, 4.0});
}

TEST(ReductionMean, HalfInput) { expect_values(full({4096}, 0.1, kHalf).mean(), {}, kHalf, {0.0999755859375}, 1e-3); }

TEST(ReductionMean, EmptyGivesNan) {
  expect_values(empty({0}).mean(), {}, kFloat, {kNan});
  expect_values(empty({0, 3}).mean({0}), {3}, kFloat, {kNan, kNan, kNan});
}

TEST(ReductionProd, OverDim) { expect_values(prod(x34(), 1), {3}, kFloat, {-3.75, -3.375, 15.75}); }

TEST(ReductionProd, IntegersPromoteAndWrap) {
  expect_values(prod(arange(12).reshape({3, 4}) - 5, 1), {3}, kInt64, {120, 0, 360});
  expect_values(prod(tensor<int64_t>({int64_t{1} << 40, int64_t{1} << 40, 3})), {}, kInt64, {0});
  expect_values(prod(tensor<bool>({true, true})), {}, kInt64, {1});
}

TEST(ReductionProd, EmptyGivesOne) {
  expect_values(prod(empty({0})), {}, kFloat, {1.0});
  expect_values(prod(empty({0, 2}), 0), {2}, kFloat, {1.0, 1.0});
}

// --- amax / amin / max / min / argmax --------------------------------------------------------

TEST(ReductionAmax, OverDimsKeepsDtype) {
  expect_values(amax(x34(), {0}), {4}, kFloat, {4.5, 6.0, 3.0, 2.0});
  expect_values(amin(x34(), {1}, true), {3, 1}, kFloat, {-1.25, -2.0, -3.5});
  expect_values(amax(arange(12).reshape({3, 4}) - 5, {1}), {3}, kInt64, {-2, 2, 6});
  expect_values(amax(arange(24, kFloat).reshape({2, 3, 4}), {0, 2}), {3}, kFloat, {15.0, 19.0, 23.0});
  expect_values(amax(tensor<bool>({true, false})), {}, kBool, {1});
}

TEST(ReductionAmax, EmptyDimListMeansAll) { expect_values(amax(x34(), {}), {}, kFloat, {6.0}); }

TEST(ReductionAmax, NanPropagates) {
  Tensor n = tensor<double>({1.0, kNan, 3.0, kNan, -1.0}).to(kFloat);
  expect_values(max(n), {}, kFloat, {kNan});
  expect_values(amin(n), {}, kFloat, {kNan});
}

TEST(ReductionAmax, EmptyNonReducedDimGivesEmpty) {
  expect_values(amax(empty({0, 3}), {1}), {0}, kFloat, {});
}

TEST(ReductionMax, AllElements) { expect_values(max(x34()), {}, kFloat, {6.0}); }

TEST(ReductionMax, DimReturnsValuesAndFirstIndex) {
  auto [v, i] = max(x34(), 1);
  expect_values(v, {3}, kFloat, {3.0, 4.5, 6.0});
  expect_values(i, {3}, kInt64, {2, 0, 1});
  Tensor ties = tensor<float>({2, 5, 5, 1, 1, 1, 0, 0}, {2, 4});
  auto [tv, ti] = max(ties, 1);
  expect_values(tv, {2}, kFloat, {5.0, 1.0});
  expect_values(ti, {2}, kInt64, {1, 0});
  auto [mv, mi] = min(ties, 1);
  expect_values(mv, {2}, kFloat, {1.0, 0.0});
  expect_values(mi, {2}, kInt64, {3, 2});
}

TEST(ReductionMax, MinDimKeepdimOverRows) {
  auto [v, i] = min(x34(), 0, true);
  expect_values(v, {1, 4}, kFloat, {-0.75, -1.25, -2.0, -3.5});
  expect_values(i, {1, 4}, kInt64, {2, 0, 1, 2});
}

TEST(ReductionMax, DimReturnsIndexOfFirstNan) {
  Tensor n = tensor<double>({1.0, kNan, 3.0, kNan, -1.0}).to(kFloat);
  auto [v, i] = max(n, 0);
  expect_values(v, {}, kFloat, {kNan});
  expect_values(i, {}, kInt64, {1});
  expect_values(argmin(n), {}, kInt64, {1});
}

TEST(ReductionMax, ZeroDimInput) {
  auto [v, i] = max(scalar_tensor(2.5), 0);
  expect_values(v, {}, kFloat, {2.5});
  expect_values(i, {}, kInt64, {0});
}

TEST(ReductionArgmax, FlattenedIndexInLogicalOrder) {
  expect_values(argmax(x34()), {}, kInt64, {9});
  expect_values(argmax(x34().t()), {}, kInt64, {5});
  expect_values(argmax(x34(), std::nullopt, true), {1, 1}, kInt64, {9});
  expect_values(argmax(scalar_tensor(2.5), 0, true), {}, kInt64, {0});
}

TEST(ReductionArgmax, AlongDim) {
  expect_values(argmin(x34(), 1), {3}, kInt64, {1, 2, 3});
  expect_values(argmax(tensor<float>({2, 5, 5, 1, 1, 1, 0, 0}, {2, 4}), 0), {4}, kInt64, {0, 0, 0, 0});
}

// --- var / std --------------------------------------------------------------------------------

TEST(ReductionVar, DefaultCorrectionIsOne) {
  expect_values(var(x34()), {}, kFloat, {7.330965995788574});
  expect_values(var(x34(), std::vector<int64_t>{1}), {3}, kFloat,
                {3.4322917461395264, 7.348958492279053, 15.973958015441895});
}

TEST(ReductionVar, CorrectionZeroAndFractional) {
  expect_values(var(x34(), std::vector<int64_t>{0}, 0), {4}, kFloat,
                {5.013888835906982, 9.76388931274414, 4.222222328186035, 6.166666507720947});
  expect_values(var(tensor<float>({1, 2, 4}), std::nullopt, 0.5), {}, kFloat, {42.0 / 9.0 / 2.5});
}

TEST(ReductionVar, TooFewElementsGiveInfOrNan) {
  expect_values(var(tensor<float>({1, 2}), std::nullopt, 2), {}, kFloat, {kInf});
  expect_values(var(tensor<float>({3})), {}, kFloat, {kNan});
  expect_values(var(scalar_tensor(2.5)), {}, kFloat, {kNan});
  expect_values(var(empty({0, 2}), std::vector<int64_t>{0}), {2}, kFloat, {kNan, kNan});
}

TEST(ReductionVar, LargeOffsetStaysAccurate) {
  expect_values(var(tensor<float>({10000.1f, 10000.2f, 10000.3f, 10000.4f})), {}, kFloat, {0.016731897369027138});
}

TEST(ReductionVar, HalfInputKeepsDtype) {
  expect_values(var(tensor<float>({1.5f, 2.0f}).to(kHalf)), {}, kHalf, {0.125}, 1e-3);
}

TEST(ReductionStd, IsSqrtOfVar) {
  expect_values(ember::std(x34()), {}, kFloat, {2.707575559616089});
  expect_values(ember::std(x34(), std::vector<int64_t>{1}, std::nullopt, true), {3, 1}, kFloat,
                {1.8526445627212524, 2.7108962535858154, 3.9967434406280518});
}

// --- any / all ---------------------------------------------------------------------------------

TEST(ReductionAny, BoolInput) {
  Tensor b = tensor<bool>({true, false, true, false, false, true}, {2, 3});
  expect_values(any(b, 1), {2}, kBool, {1, 1});
  expect_values(all(b, 0), {3}, kBool, {0, 0, 1});
}

TEST(ReductionAny, Uint8KeepsUint8) {
  Tensor u = tensor<int64_t>({0, 3, 0}).to(kUInt8);
  expect_values(any(u), {}, kUInt8, {1});
  expect_values(all(u), {}, kUInt8, {0});
}

TEST(ReductionAny, FloatNanCountsAsTrue) {
  Tensor f = tensor<double>({0.0, kNan}).to(kFloat);
  expect_values(any(f), {}, kBool, {1});
  expect_values(all(f), {}, kBool, {0});
}

TEST(ReductionAny, EmptyInput) {
  expect_values(any(empty({0})), {}, kBool, {0});
  expect_values(all(empty({0})), {}, kBool, {1});
}

// --- cumsum ------------------------------------------------------------------------------------

TEST(ReductionCumsum, AlongEachDim) {
  expect_values(cumsum(x34(), 0), {3, 4}, kFloat, {0.5, -1.25, 3.0, 2.0, 5.0, -1.0, 1.0, 3.5, 4.25, 5.0, 2.0, 0.0});
  expect_values(cumsum(x34(), -1), {3, 4}, kFloat,
                {0.5, -0.75, 2.25, 4.25, 4.5, 4.75, 2.75, 4.25, -0.75, 5.25, 6.25, 2.75});
  expect_values(cumsum(x34().t(), 1), {4, 3}, kFloat,
                {0.5, 5.0, 4.25, -1.25, -1.0, 5.0, 3.0, 1.0, 2.0, 2.0, 3.5, 0.0});
}

TEST(ReductionCumsum, IntegersAndBoolPromote) {
  expect_values(cumsum(arange(12).reshape({3, 4}) - 5, 1), {3, 4}, kInt64,
                {-5, -9, -12, -14, -1, -1, 0, 2, 3, 7, 12, 18});
  expect_values(cumsum(tensor<bool>({true, false, true, false, false, true}, {2, 3}), 1), {2, 3}, kInt64,
                {1, 1, 2, 0, 0, 1});
  expect_values(cumsum(x34(), 1, kInt32), {3, 4}, kInt32, {0, -1, 2, 4, 4, 4, 2, 3, 0, 6, 7, 4});
}

TEST(ReductionCumsum, ZeroDimAndEmpty) {
  expect_values(cumsum(scalar_tensor(2.5), 0), {}, kFloat, {2.5});
  expect_values(cumsum(empty({0, 2}), 0), {0, 2}, kFloat, {});
}

// --- logsumexp ---------------------------------------------------------------------------------

TEST(ReductionLogsumexp, OverDims) {
  expect_values(logsumexp(x34(), {1}), {3}, kFloat, {3.381328582763672, 4.563495635986328, 6.0079522132873535});
  expect_values(logsumexp(x34(), {0, 1}), {}, kFloat, {6.276601314544678});
  expect_values(logsumexp(x34(), {0}, true), {1, 4}, kFloat,
                {4.523289680480957, 6.003885269165039, 3.132845163345337, 2.4766175746917725});
}

TEST(ReductionLogsumexp, InfiniteRows) {
  Tensor y = tensor<double>({-kInf, -kInf, kInf, 1.0, 1000.0, 1000.0}, {3, 2}).to(kFloat);
  expect_values(logsumexp(y, {1}), {3}, kFloat, {-kInf, kInf, 1000.6931762695312});
}

TEST(ReductionLogsumexp, IntegersGiveFloat) {
  expect_values(logsumexp(tensor<int64_t>({1, 2}), {0}), {}, kFloat, {2.3132617473602295});
}

TEST(ReductionLogsumexp, EmptyGivesMinusInf) { expect_values(logsumexp(empty({0}), {0}), {}, kFloat, {-kInf}); }

// --- meta device ---------------------------------------------------------------------------------

TEST(ReductionMeta, ShapesAndDtypesWithoutData) {
  Tensor m = empty({4, 5, 6}, kMeta);
  Tensor s = sum(m, {0, -1}, true);
  EXPECT_TRUE(s.is_meta());
  EXPECT_EQ(s.sizes(), IntArrayRef({1, 5, 1}));
  EXPECT_EQ(sum(empty({4, 5}, TensorOptions(kInt32).device(kMeta))).dtype(), kInt64);
  auto [v, i] = max(m, 1);
  EXPECT_EQ(v.sizes(), IntArrayRef({4, 6}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(var(m, std::vector<int64_t>{2}).sizes(), IntArrayRef({4, 5}));
  EXPECT_EQ(ember::std(m).sizes(), IntArrayRef({}));
  EXPECT_EQ(logsumexp(m, {1}).sizes(), IntArrayRef({4, 6}));
  EXPECT_EQ(cumsum(m, 1).sizes(), IntArrayRef({4, 5, 6}));
  EXPECT_EQ(any(m, 0).dtype(), kBool);
  EXPECT_EQ(argmax(m, 2, true).sizes(), IntArrayRef({4, 5, 1}));
}

// --- the engine against a naive reference ---------------------------------------------------------

/// Naive sum, max and variance of `x` over `dims` (keepdim=false), in double.
struct Naive {
  std::vector<double> sum, max, var;
};
Naive naive(const Tensor& x, const std::vector<bool>& mask) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<int64_t> out_sizes;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!mask[d]) out_sizes.push_back(x.size(d));
  int64_t m = 1, kcount = 1;
  for (int64_t s : out_sizes) m *= s;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (mask[d]) kcount *= x.size(d);
  std::vector<std::vector<double>> groups(static_cast<size_t>(m));
  std::vector<int64_t> idx(static_cast<size_t>(x.dim()), 0);
  for (size_t lin = 0; lin < v.size(); ++lin) {
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!mask[d]) o = o * x.size(d) + idx[d];
    groups[o].push_back(v[lin]);
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      if (++idx[d] < x.size(d)) break;
      idx[d] = 0;
    }
  }
  Naive r;
  for (const auto& g : groups) {
    const double s = std::accumulate(g.begin(), g.end(), 0.0);
    const double mu = s / static_cast<double>(kcount);
    double m2 = 0, mx = -kInf;
    for (double e : g) {
      m2 += (e - mu) * (e - mu);
      mx = std::max(mx, e);
    }
    r.sum.push_back(s);
    r.max.push_back(mx);
    r.var.push_back(m2 / static_cast<double>(kcount - 1));
  }
  return r;
}

std::vector<double> values_of(const Tensor& t) { return t.to_vector<double>(); }

void check_layouts(IntArrayRef shape) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> perm(static_cast<size_t>(nd));
  std::iota(perm.begin(), perm.end(), 0);
  do {
    // A contiguous tensor in permuted order, viewed back in `shape`: every memory layout.
    std::vector<int64_t> psizes;
    for (int64_t p : perm) psizes.push_back(shape[p]);
    Tensor base = sin(arange(n, kFloat) * 0.37).reshape(psizes);
    std::vector<int64_t> inv(static_cast<size_t>(nd));
    for (int64_t i = 0; i < nd; ++i) inv[perm[i]] = i;
    Tensor x = base.permute(inv);
    for (int64_t bits = 1; bits < (int64_t{1} << nd); ++bits) {
      std::vector<int64_t> dims;
      std::vector<bool> mask(static_cast<size_t>(nd), false);
      for (int64_t d = 0; d < nd; ++d)
        if (bits & (int64_t{1} << d)) {
          dims.push_back(d);
          mask[d] = true;
        }
      const Naive ref = naive(x, mask);
      const std::vector<double> s = values_of(x.sum(dims)), mx = values_of(amax(x, dims)),
                                v = values_of(var(x, dims));
      ASSERT_EQ(s.size(), ref.sum.size());
      for (size_t i = 0; i < s.size(); ++i) {
        EXPECT_NEAR(s[i], ref.sum[i], 1e-5 + 1.3e-6 * std::abs(ref.sum[i])) << "sum " << shape << " dims " << IntArrayRef(dims);
        EXPECT_EQ(mx[i], ref.max[i]) << "amax " << shape << " dims " << IntArrayRef(dims);
        if (std::isnan(ref.var[i])) {  // one element: 0 / 0
          EXPECT_TRUE(std::isnan(v[i])) << "var " << shape << " dims " << IntArrayRef(dims);
        } else {
          EXPECT_NEAR(v[i], ref.var[i], 1e-5 + 1.3e-6 * std::abs(ref.var[i]))
              << "var " << shape << " dims " << IntArrayRef(dims);
        }
      }
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(ReductionEngine, EveryDimSubsetOfEveryLayoutMatchesReference) {
  check_layouts({3, 5, 4});
  check_layouts({2, 3, 1, 4});
  check_layouts({7, 11});
}

TEST(ReductionEngine, LargeReductionsTakeTheParallelPaths) {
  check_layouts({300, 257});   // many outputs: split by output
  check_layouts({70000, 3});   // few outputs, long columns: split by reduction range
  check_layouts({3, 70000});   // few outputs, long rows
}

TEST(ReductionEngine, SlicedInputWithGaps) {
  Tensor x = cos(arange(600, kFloat) * 0.1).reshape({20, 30}).slice(1, 1, std::nullopt, 3).slice(0, 0, 15, 2);
  std::vector<bool> rows{false, true}, cols{true, false};
  EXPECT_EQ(values_of(x.sum({1})).size(), 8u);
  const Naive r1 = naive(x, rows), r0 = naive(x, cols);
  const std::vector<double> s1 = values_of(x.sum({1})), s0 = values_of(x.sum({0}));
  for (size_t i = 0; i < s1.size(); ++i) EXPECT_NEAR(s1[i], r1.sum[i], 1e-5);
  for (size_t i = 0; i < s0.size(); ++i) EXPECT_NEAR(s0[i], r0.sum[i], 1e-5);
}

TEST(ReductionEngine, MaxDimIndicesMatchArgmaxOnLargeInput) {
  Tensor x = sin(arange(200000, kFloat) * 0.731).reshape({4, 50000});
  auto [v, i] = max(x, 1);
  const std::vector<double> flat = x.to_vector<double>();
  const std::vector<double> vals = values_of(v), idx = values_of(i), col = values_of(argmax(x.t().contiguous(), 0));
  for (int64_t r = 0; r < 4; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < 50000; ++c)
      if (flat[r * 50000 + c] > flat[r * 50000 + best]) best = c;
    EXPECT_EQ(idx[r], best);
    EXPECT_EQ(col[r], best);
    EXPECT_EQ(vals[r], flat[r * 50000 + best]);
  }
}

}  // namespace
}  // namespace ember
