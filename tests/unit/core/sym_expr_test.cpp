// Size expressions: the canonical form (what simplifies to what), Python's division
// semantics, interval bounds, and printing/parsing — checked on fixed examples and on
// random expressions against plain integer arithmetic.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "core/sym_expr.h"
#include "ember/error.h"

namespace ember::core::sym {

namespace {

const Expr s0 = Expr::symbol(0);
const Expr s1 = Expr::symbol(1);
const Expr s2 = Expr::symbol(2);

TEST(SymExpr, DividingBySmallestInt64RaisesInsteadOfRecursingForever) {
  // -k overflows for k = INT64_MIN: before, floordiv and mod called themselves until the
  // stack ran out (an imported program can write such a divisor).
  const Expr k(std::numeric_limits<int64_t>::min());
  EXPECT_THROW(floordiv(s0 + 1, k), Error);
  EXPECT_THROW(mod(s0 + 1, k), Error);
  EXPECT_EQ(floordiv(Expr(int64_t{7}), Expr(int64_t{-2})), Expr(int64_t{-4}));
}

TEST(SymExpr, AProductExpandingIntoTooManyTermsRaises) {
  Expr sum(int64_t{0});
  for (int i = 0; i < 20; ++i) sum = sum + Expr::symbol(i);
  Expr power = sum;
  EXPECT_THROW(
      {
        for (int i = 0; i < 8; ++i) power = power * sum;
      },
      Error);
  EXPECT_NO_THROW((s0 + s1 + 1) * (s0 - s1 + 2) * (s2 + 3));
}

TEST(SymExpr, SumsOfTheSameTermsInAnyOrderAreEqual) {
  EXPECT_EQ(s0 + s1, s1 + s0);
  EXPECT_EQ((s0 + 1) * (s0 - 1), s0 * s0 - 1);
  EXPECT_EQ(((s0 + s1) * s2).hash(), (s2 * s1 + s0 * s2).hash());
  EXPECT_EQ(to_string(s0 * s1 + s1), to_string(s1 + s1 * s0));
}

TEST(SymExpr, LikeTermsCombineAndCancel) {
  EXPECT_EQ(to_string(s0 + s0), "2*s0");
  EXPECT_TRUE((s0 - s0).is_const());
  EXPECT_EQ((s0 * s1 - s1 * s0 + 3), Expr(3));
  EXPECT_EQ(to_string(s0 * s0 * 3), "3*s0**2");
}

TEST(SymExpr, FloorDivisionTakesOutMultiplesOfTheDivisor) {
  EXPECT_EQ(floordiv(8 * s0 + 3, 8), s0);
  EXPECT_EQ(floordiv(8 * s0 + 12, 8), s0 + 1);
  EXPECT_EQ(to_string(floordiv(s0 + 16, 8)), "s0//8 + 2");
  EXPECT_EQ(floordiv(2 * s0 + 2, 4), floordiv(s0 + 1, 2));  // common factor 2
  EXPECT_EQ(floordiv(floordiv(s0, 2), 4), floordiv(s0, 8));
  EXPECT_EQ(floordiv(s0, 1), s0);
  EXPECT_EQ(floordiv(s0 * s1, s1), s0);
  EXPECT_EQ(floordiv(6 * s0 * s1 * s1 + 3 * s1, 3 * s1), 2 * s0 * s1 + 1);
  EXPECT_EQ(floordiv(s0 + s1, s0 + s1), Expr(1));
}

TEST(SymExpr, ModuloKeepsOnlyWhatTheDivisorDoesNotDivide) {
  EXPECT_EQ(mod(8 * s0 + 3, 8), Expr(3));
  EXPECT_EQ(mod(s0 + 10, 8), mod(s0 + 2, 8));
  EXPECT_EQ(mod(2 * s0, 4), 2 * mod(s0, 2));
  EXPECT_EQ(mod(mod(s0, 16), 8), mod(s0, 8));
  EXPECT_EQ(mod(s0 * s1, s1), Expr(0));
  EXPECT_EQ(mod(s0, 1), Expr(0));
}

TEST(SymExpr, DivisionAndModuloFollowPython) {
  EXPECT_EQ(floordiv(Expr(-7), Expr(2)), Expr(-4));
  EXPECT_EQ(mod(Expr(-7), Expr(2)), Expr(1));
  EXPECT_EQ(mod(Expr(7), Expr(-3)), Expr(-2));
  EXPECT_EQ(floordiv(Expr(7), Expr(-2)), Expr(-4));
  const int64_t v[] = {-7};
  EXPECT_EQ(evaluate(floordiv(s0, 2), v), -4);
  EXPECT_EQ(evaluate(mod(s0, 2), v), 1);
  EXPECT_EQ(evaluate(mod(s0, -3), v), -1);
}

TEST(SymExpr, DivisionByAConstantZeroIsAnError) {
  EXPECT_THROW((void)floordiv(s0, 0), Error);
  EXPECT_THROW((void)mod(s0, 0), Error);
  const int64_t v[] = {5, 0};
  EXPECT_THROW((void)evaluate(floordiv(s0, s1), v), Error);
}

TEST(SymExpr, MinAndMaxFoldWhenTheDifferenceIsConstant) {
  EXPECT_EQ(min(s0, s0 + 1), s0);
  EXPECT_EQ(max(s0, s0 + 1), s0 + 1);
  EXPECT_EQ(min(s0, s1), min(s1, s0));
  EXPECT_EQ(to_string(max(s1, s0)), "Max(s0, s1)");
}

TEST(SymExpr, EvaluatingOverflowIsAnError) {
  const int64_t v[] = {INT64_MAX / 2 + 1};
  EXPECT_THROW((void)evaluate(2 * s0, v), Error);
}

TEST(SymExpr, PrintsLikeSympy) {
  EXPECT_EQ(to_string(2 * s0 * s1 + floordiv(s1, 8) - 1), "2*s0*s1 + s1//8 - 1");
  EXPECT_EQ(to_string(mod(s0, 8)), "Mod(s0, 8)");
  EXPECT_EQ(to_string(min(s0, 4)), "Min(4, s0)");
  EXPECT_EQ(to_string(2 * floordiv(s0, 8)), "2*(s0//8)");
  EXPECT_EQ(to_string(floordiv(s0 + 1, 2)), "(s0 + 1)//2");
  EXPECT_EQ(to_string(4 - s0), "-s0 + 4");
  EXPECT_EQ(to_string(-floordiv(Expr(1), s0)), "-(1//s0)");  // not (-1)//s0
  EXPECT_EQ(to_string(s0, [](int32_t) { return std::string("x.size(0)"); }), "x.size(0)");
}

TEST(SymExpr, ParsesWhatItPrintsAndPythonOperators) {
  EXPECT_EQ(parse("2*s0*s1 + s1//8 - 1"), 2 * s0 * s1 + floordiv(s1, 8) - 1);
  EXPECT_EQ(parse("s0 % 8"), mod(s0, 8));
  EXPECT_EQ(parse("min(s0, 4) + Max(s1, s0)"), min(s0, 4) + max(s0, s1));
  EXPECT_EQ(parse("-(s0 - 3)**2"), -((s0 - 3) * (s0 - 3)));
  EXPECT_EQ(parse("  1024 "), Expr(1024));
}

TEST(SymExpr, ParseErrorsSayWhatWasExpectedAndWhere) {
  try {
    (void)parse("s0 +");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot parse the size expression 's0 +': expected a number, a symbol, a call "
                                         "or '(' at column 5, got the end"),
              std::string::npos)
        << e.what();
  }
  try {
    (void)parse("s0 * batch");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown symbol 'batch'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse("s0 s1"), Error);
  EXPECT_THROW((void)parse("Mod(s0)"), Error);
  EXPECT_THROW((void)parse("99999999999999999999"), Error);
}

TEST(SymExpr, ConstantsPastInt64AreParseErrorsWhateverTheirFirstDigit) {
  // 30 digits that compare below "9223372036854775807" as text.
  EXPECT_THROW((void)parse("100000000000000000000000000000"), Error);
  EXPECT_THROW((void)parse("s0 + 9223372036854775808"), Error);
  EXPECT_EQ(parse("9223372036854775807"), Expr(int64_t{9223372036854775807}));
}

TEST(SymExpr, BoundsFollowTheSymbolsRanges) {
  const auto ranges = [](int32_t id) { return id == 0 ? Range{2, Range::kInfinity} : Range{3, 10}; };
  EXPECT_EQ(bounds(s0 - 2, ranges), (Range{0, Range::kInfinity}));
  EXPECT_EQ(bounds(mod(s0, 8), ranges), (Range{0, 7}));
  EXPECT_EQ(bounds(mod(s1, 16), ranges), (Range{3, 10}));
  EXPECT_EQ(bounds(min(s0, 4), ranges), (Range{2, 4}));
  EXPECT_EQ(bounds(floordiv(s1, 2), ranges), (Range{1, 5}));
  EXPECT_EQ(bounds(-s0 * s1, ranges), (Range{Range::kMinusInfinity, -6}));
}

// Random expressions against the same computation on plain integers (Python semantics),
// and their printed text parsed back.
struct Sample {
  Expr expr;
  std::vector<int64_t> values;  // one result per assignment
};

class RandomExpressions {
 public:
  explicit RandomExpressions(uint32_t seed) : rng_(seed) {
    for (auto& a : assignments_) {
      for (int64_t& v : a) v = std::uniform_int_distribution<int64_t>(-20, 40)(rng_);
    }
  }

  Sample make(int depth) {
    const int choice = std::uniform_int_distribution<int>(0, depth == 0 ? 1 : 8)(rng_);
    if (choice == 0) {
      const int64_t c = std::uniform_int_distribution<int64_t>(-9, 9)(rng_);
      return Sample{Expr(c), std::vector<int64_t>(kAssignments, c)};
    }
    if (choice == 1) {
      const int32_t id = std::uniform_int_distribution<int32_t>(0, kSymbols - 1)(rng_);
      Sample s{Expr::symbol(id), {}};
      for (const auto& a : assignments_) s.values.push_back(a[static_cast<size_t>(id)]);
      return s;
    }
    Sample a = make(depth - 1);
    if (choice >= 6) {  // a constant divisor, so that no assignment divides by zero
      int64_t k = std::uniform_int_distribution<int64_t>(-6, 6)(rng_);
      if (k == 0) k = 3;
      Sample out{choice == 6 ? floordiv(a.expr, Expr(k)) : mod(a.expr, Expr(k)), {}};
      for (int64_t v : a.values) out.values.push_back(choice == 6 ? floordiv(v, k) : mod(v, k));
      if (choice == 8) {  // a symbol as divisor, shifted to be positive on every assignment
        const Expr d = Expr::symbol(0) + 21;
        out.expr = floordiv(a.expr, d);
        out.values.clear();
        for (size_t i = 0; i < a.values.size(); ++i) out.values.push_back(floordiv(a.values[i], assignments_[i][0] + 21));
      }
      return out;
    }
    Sample b = make(depth - 1);
    Sample out;
    for (size_t i = 0; i < a.values.size(); ++i) {
      const int64_t x = a.values[i];
      const int64_t y = b.values[i];
      out.values.push_back(choice == 2 ? x + y : choice == 3 ? x - y : choice == 4 ? x * y : std::min(x, y));
    }
    out.expr = choice == 2 ? a.expr + b.expr : choice == 3 ? a.expr - b.expr : choice == 4 ? a.expr * b.expr : min(a.expr, b.expr);
    return out;
  }

  static constexpr int kSymbols = 3;
  static constexpr size_t kAssignments = 6;
  std::array<std::array<int64_t, kSymbols>, kAssignments> assignments_{};

 private:
  std::mt19937 rng_;
};

TEST(SymExpr, RandomExpressionsEvaluateLikePlainIntegers) {
  RandomExpressions gen(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    const Sample s = gen.make(4);
    for (size_t i = 0; i < RandomExpressions::kAssignments; ++i) {
      ASSERT_EQ(evaluate(s.expr, gen.assignments_[i]), s.values[i]) << to_string(s.expr) << " at assignment " << i;
    }
  }
}

TEST(SymExpr, RandomExpressionsParseBackFromTheirText) {
  RandomExpressions gen(99);
  for (int trial = 0; trial < 2000; ++trial) {
    const Sample s = gen.make(4);
    const std::string text = to_string(s.expr);
    ASSERT_EQ(parse(text), s.expr) << text << " parsed as " << to_string(parse(text));
  }
}

TEST(SymExpr, RandomExpressionsStayInsideTheirBounds) {
  RandomExpressions gen(7);
  const auto ranges = [](int32_t) { return Range{-20, 40}; };
  for (int trial = 0; trial < 2000; ++trial) {
    const Sample s = gen.make(3);
    const Range r = bounds(s.expr, ranges);
    for (int64_t v : s.values) ASSERT_TRUE(r.contains(v)) << to_string(s.expr) << " = " << v << " outside bounds";
  }
}

}  // namespace
}  // namespace ember::core::sym
