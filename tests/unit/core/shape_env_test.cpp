// The shape environment: which sizes become symbols, what comparing SymInts records,
// what the ranges decide without a guard, and checking the guards against new sizes.
#include <gtest/gtest.h>

#include <limits>

#include "core/shape_env.h"
#include "ember/ember.h"
#include "support/log_capture.h"

namespace ember::core {
namespace {

std::vector<std::string> guards_of(const ShapeEnv& env) { return env.format_guards(); }

TEST(ShapeEnv, ArithmeticWhoseValueOverflowsInt64Raises) {
  // Values from outside data (an imported program's integers) may be anything: before,
  // the example value wrapped around silently.
  ShapeEnv env;
  const SymInt x = env.create_size(4, "x.size(0)");
  const SymInt big(int64_t{4000000000000000000});
  EXPECT_THROW(x * big, Error);
  EXPECT_THROW(big * SymInt(4), Error);
  EXPECT_THROW(SymInt(std::numeric_limits<int64_t>::min()) - x, Error);
  EXPECT_EQ((x * SymInt(3) + SymInt(1)).hint(), 13);
}

TEST(ShapeEnv, SizesZeroAndOneStayStatic) {
  ShapeEnv env;
  EXPECT_FALSE(env.create_size(0, "x.size(0)").is_symbolic());
  EXPECT_FALSE(env.create_size(1, "x.size(1)").is_symbolic());
  EXPECT_TRUE(env.create_size(2, "x.size(2)").is_symbolic());
  EXPECT_EQ(env.num_symbols(), 1u);
  EXPECT_EQ(guards_of(env), std::vector<std::string>{"2 <= x.size(2)"});
}

TEST(ShapeEnv, EqualExampleSizesShareASymbolAndGuardTheirEquality) {
  ShapeEnv env;
  const SymInt x = env.create_size(8, "x.size(0)");
  const SymInt y = env.create_size(8, "y.size(0)");
  EXPECT_EQ(x.expr(), y.expr());
  EXPECT_EQ(env.format_guards(), (std::vector<std::string>{"2 <= x.size(0)", "2 <= y.size(0)", "y.size(0) == x.size(0)"}));
  const int64_t same[] = {5, 5};
  const int64_t different[] = {5, 6};
  EXPECT_TRUE(env.check(same));
  EXPECT_FALSE(env.check(different));
  EXPECT_EQ(env.first_failure(different), "y.size(0) == x.size(0) (6 vs 5)");
}

TEST(ShapeEnv, WithoutDuckShapingEqualSizesGetTwoSymbols) {
  ShapeEnv env(ShapeEnv::Options{.duck_shape = false});
  const SymInt x = env.create_size(8, "x.size(0)");
  const SymInt y = env.create_size(8, "y.size(0)");
  EXPECT_NE(x.expr(), y.expr());
  const int64_t different[] = {5, 6};
  EXPECT_TRUE(env.check(different));
}

TEST(ShapeEnv, AComparisonAnswersWithTheHintsAndGuardsTheAnswer) {
  ShapeEnv env(ShapeEnv::Options{.duck_shape = false});
  const SymInt a = env.create_size(8, "a.size(0)");
  const SymInt b = env.create_size(8, "b.size(0)");
  EXPECT_TRUE(a == b);
  EXPECT_EQ(env.guards().size(), 1u);
  // The equality replaces the newer symbol by the older from now on.
  EXPECT_EQ(env.simplify(b.expr()), a.expr());
  EXPECT_EQ((a - b).maybe_int(), std::optional<int64_t>(0));
  const int64_t ok[] = {3, 3};
  const int64_t bad[] = {3, 4};
  EXPECT_TRUE(env.check(ok));
  EXPECT_FALSE(env.check(bad));
}

TEST(ShapeEnv, AFalseComparisonGuardsItsNegation) {
  ShapeEnv env;
  const SymInt a = env.create_size(8, "a.size(0)");
  const SymInt b = env.create_size(6, "b.size(0)");
  EXPECT_FALSE(a < b);
  EXPECT_EQ(env.format_guards().back(), "b.size(0) <= a.size(0)");
  const int64_t holds[] = {6, 6};
  const int64_t fails[] = {5, 6};
  EXPECT_TRUE(env.check(holds));
  EXPECT_FALSE(env.check(fails));
}

TEST(ShapeEnv, WhatTheRangesDecideAddsNoGuard) {
  ShapeEnv env;
  const SymInt s = env.create_size(8, "x.size(0)");
  EXPECT_TRUE(s > 1);
  EXPECT_TRUE(s != 0);
  EXPECT_FALSE(s == 1);
  EXPECT_TRUE(s * 2 >= s + 2);
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(sym_min(s, 1).maybe_int(), std::optional<int64_t>(1));
  EXPECT_EQ(sym_max(s, 2).expr(), s.expr());
}

TEST(ShapeEnv, AGuardOnOneSymbolNarrowsItsRange) {
  ShapeEnv env;
  const SymInt s = env.create_size(8, "x.size(0)");
  EXPECT_TRUE(s >= 4);
  EXPECT_TRUE(s < 100);
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(env.format_guards(), std::vector<std::string>{"4 <= x.size(0) <= 99"});
  const int64_t low[] = {3};
  const int64_t high[] = {100};
  const int64_t inside[] = {50};
  EXPECT_FALSE(env.check(low));
  EXPECT_FALSE(env.check(high));
  EXPECT_TRUE(env.check(inside));
  EXPECT_EQ(env.first_failure(low), "4 <= x.size(0) <= 99 (x.size(0) is 3)");
}

TEST(ShapeEnv, DivisibilityBecomesAGuard) {
  ShapeEnv env;
  const SymInt s = env.create_size(16, "x.size(1)");
  EXPECT_TRUE(mod(s, 8) == 0);
  EXPECT_EQ(env.format_guards().back(), "Mod(x.size(1), 8) == 0");
  const int64_t ok[] = {24};
  const int64_t bad[] = {20};
  EXPECT_TRUE(env.check(ok));
  EXPECT_FALSE(env.check(bad));
}

// Divisibility facts (Note [dynamic shapes], "Divisibility facts"): a guard `Mod(e, k) == 0`
// lets later expressions and comparisons use that k divides e, as PyTorch's ShapeEnv does
// with its `divisible` set.

sym::Expr expr_of(const SymInt& s) { return s.is_symbolic() ? s.expr() : sym::Expr(s.hint()); }

TEST(ShapeEnv, ADivisibilityFactCancelsAMultipliedExactDivision) {
  ShapeEnv env;
  const SymInt s = env.create_size(16, "x.size(1)");
  const SymInt t = env.create_size(5, "x.size(2)");
  EXPECT_TRUE(mod(s, 4) == 0);
  EXPECT_EQ(expr_of(SymInt(4) * floordiv(s, 4)), s.expr());
  EXPECT_EQ(expr_of(floordiv(s, 4) * 4 * t), (s * t).expr());
  EXPECT_EQ(expr_of(SymInt(8) * floordiv(s, 4) - s), s.expr());
  EXPECT_EQ(expr_of(SymInt(2) * floordiv(s, 4)), env.simplify(sym::parse("2*(s0//4)")));  // 4 does not divide 2
  EXPECT_EQ(env.simplify(sym::parse("Mod(4*(s0//4) + 1, 8)")), sym::parse("Mod(s0 + 1, 8)"));
}

TEST(ShapeEnv, ADivisibilityFactDecidesARelationWithoutAGuard) {
  ShapeEnv env;
  const SymInt s = env.create_size(12, "x.size(1)");
  const SymInt t = env.create_size(7, "x.size(2)");
  EXPECT_TRUE(mod(s, 3) == 0);
  const size_t before = env.guards().size();
  EXPECT_TRUE(floordiv(s, 3) * 3 * t == s * t);
  EXPECT_FALSE(floordiv(s, 3) * 3 != s);
  EXPECT_TRUE(mod(s, 3) == 0);  // asked again: decided
  EXPECT_EQ(env.guards().size(), before);
}

TEST(ShapeEnv, ADivisibilityFactDecidesTheModuloOfAMultiple) {
  ShapeEnv env;
  const SymInt s = env.create_size(16, "x.size(1)");
  const SymInt t = env.create_size(5, "x.size(2)");
  EXPECT_TRUE(mod(s, 4) == 0);
  EXPECT_EQ(mod(s * t, 4).maybe_int(), std::optional<int64_t>(0));
  EXPECT_EQ(mod(s, 2).maybe_int(), std::optional<int64_t>(0));
  EXPECT_EQ(mod(s + 8, 4).maybe_int(), std::optional<int64_t>(0));
  EXPECT_EQ(mod(3 * s * t, 12).maybe_int(), std::optional<int64_t>(0));
  // What the fact does not show stays: 4 | s says nothing of s modulo 8, or of s + 1.
  EXPECT_EQ(expr_of(mod(s, 8)), sym::parse("Mod(s0, 8)"));
  EXPECT_EQ(expr_of(mod(s + 1, 4)), sym::parse("Mod(s0 + 1, 4)"));
  EXPECT_EQ(expr_of(mod(t, 4)), sym::parse("Mod(s1, 4)"));
}

TEST(ShapeEnv, ADivisibilityFactDividesAProductExactly) {
  ShapeEnv env;
  const SymInt s = env.create_size(16, "x.size(1)");
  const SymInt t = env.create_size(5, "x.size(2)");
  EXPECT_TRUE(mod(s, 4) == 0);
  EXPECT_EQ(expr_of(floordiv(s * t, 4)), sym::parse("s1*(s0//4)"));
  EXPECT_EQ(expr_of(floordiv(2 * s * t, 8)), sym::parse("s1*(s0//4)"));
  EXPECT_EQ(expr_of(floordiv(s * t + 4 * t, 4)), sym::parse("s1*(s0//4) + s1"));
  EXPECT_EQ(expr_of(4 * (floordiv(s * t, 4))), (s * t).expr());
  EXPECT_EQ((floordiv(s * t, 4)).hint(), 20);
  // Not exact: s*t + 1, and t alone.
  EXPECT_EQ(expr_of(floordiv(s * t + 1, 4)), sym::parse("(s0*s1 + 1)//4"));
  EXPECT_EQ(expr_of(4 * floordiv(t, 4)), sym::parse("4*(s1//4)"));
}

TEST(ShapeEnv, ADivisibilityFactRoundsTheSymbolsRangeToMultiples) {
  ShapeEnv env;
  const SymInt s = env.create_size(6, "x.size(1)");
  const SymInt t = env.create_size(5, "x.size(2)");
  EXPECT_TRUE(mod(s, 3) == 0);
  const size_t before = env.guards().size();
  // s in [2, inf] and 3 | s: s >= 3, so s//3 >= 1 and t*(s//3) is never 1.
  EXPECT_EQ(env.range(s.expr()), (sym::Range{3, sym::Range::kInfinity}));
  EXPECT_TRUE(floordiv(s, 3) >= 1);
  EXPECT_TRUE(t * floordiv(s, 3) != 1);
  EXPECT_EQ(env.guards().size(), before);
  // The symbol's own range, which check() tests, is unchanged: the fact's guard rejects 2.
  EXPECT_EQ(env.symbol(s.expr().symbol_id()).range, (sym::Range{2, sym::Range::kInfinity}));
  // Without the fact, s//3 may be 0.
  ShapeEnv plain;
  const SymInt p = plain.create_size(6, "x.size(1)");
  EXPECT_TRUE(floordiv(p, 3) >= 1);
  EXPECT_EQ(plain.guards().size(), 1u);
}

TEST(ShapeEnv, NothingSimplifiesWithoutADivisibilityFact) {
  ShapeEnv env;
  const SymInt s = env.create_size(16, "x.size(1)");
  const SymInt t = env.create_size(5, "x.size(2)");
  EXPECT_EQ(expr_of(SymInt(4) * floordiv(s, 4)), sym::parse("4*(s0//4)"));
  EXPECT_EQ(expr_of(mod(s * t, 4)), sym::parse("Mod(s0*s1, 4)"));
  EXPECT_EQ(expr_of(floordiv(s * t, 4)), sym::parse("(s0*s1)//4"));
  EXPECT_TRUE(env.divisible().empty());
  // The comparison answers with the hints and is a guard of its own.
  EXPECT_TRUE(floordiv(s, 4) * 4 * t == s * t);
  EXPECT_EQ(env.format_guards().back(), "4*x.size(2)*(x.size(1)//4) == x.size(1)*x.size(2)");
  // A remainder guarded non-zero is no fact either.
  EXPECT_TRUE(mod(t, 4) != 0);
  EXPECT_TRUE(env.divisible().empty());
  EXPECT_EQ(expr_of(SymInt(4) * floordiv(t, 4)), sym::parse("4*(s1//4)"));
}

TEST(ShapeEnv, DivisibilityFactsComeFromEveryFormOfTheGuard) {
  ShapeEnv env(ShapeEnv::Options{.duck_shape = false});
  const SymInt a = env.create_size(12, "a.size(0)");
  const SymInt b = env.create_size(12, "b.size(0)");
  const SymInt c = env.create_size(10, "c.size(0)");
  EXPECT_FALSE(mod(a, 6) != 0);             // a false != records the equality
  EXPECT_TRUE(SymInt(0) == mod(2 * b, 8));  // 8 | 2*b is 4 | b
  EXPECT_TRUE(mod(c + 2, 4) == 0);          // a sum
  ASSERT_EQ(env.divisible().size(), 3u);
  EXPECT_EQ(env.known_divisor(a.expr()), 6);
  EXPECT_EQ(env.known_divisor(b.expr()), 4);
  EXPECT_EQ(env.known_divisor(c.expr() + 2), 4);
  EXPECT_EQ(env.known_divisor(c.expr()), 1);
  EXPECT_EQ(env.known_divisor(a.expr() * b.expr() + 12), 12);
  EXPECT_EQ(expr_of(4 * (floordiv(c + 2, 4))), (c + 2).expr());
  // A guard read back from a graph's text is a fact as well.
  ShapeEnv restored;
  const SymInt r = restored.restore_symbol("x.size(1)", 12, sym::Range{2, sym::Range::kInfinity});
  restored.restore_guard(Relation::Eq, sym::parse("Mod(s0, 3)"), sym::Expr(int64_t{0}));
  EXPECT_EQ(expr_of(3 * floordiv(r, 3)), r.expr());
}

TEST(ShapeEnv, DivisibilityFactsFollowReplacements) {
  ShapeEnv env(ShapeEnv::Options{.duck_shape = false});
  const SymInt a = env.create_size(8, "a.size(0)");
  const SymInt b = env.create_size(8, "b.size(0)");
  EXPECT_TRUE(mod(b, 4) == 0);
  EXPECT_TRUE(a == b);  // b is replaced by a from now on, and the fact is about a
  EXPECT_EQ(expr_of(4 * floordiv(a, 4)), a.expr());
  EXPECT_EQ(mod(a * 3, 4).maybe_int(), std::optional<int64_t>(0));
}

TEST(ShapeEnv, TheDivisibilityGuardStillChecksEachCall) {
  ShapeEnv env;
  const SymInt s = env.create_size(16, "x.size(1)");
  const SymInt t = env.create_size(5, "x.size(2)");
  EXPECT_TRUE(mod(s, 4) == 0);
  EXPECT_TRUE(floordiv(s, 4) * 4 * t == s * t);
  const int64_t multiple[] = {20, 3};
  const int64_t not_multiple[] = {18, 3};
  EXPECT_TRUE(env.check(multiple));
  EXPECT_FALSE(env.check(not_multiple));
  EXPECT_EQ(env.first_failure(not_multiple), "Mod(x.size(1), 4) == 0 (2 vs 0)");
}

TEST(ShapeEnv, GuardIntSpecializesToTheExampleValue) {
  ShapeEnv env;
  const SymInt s = env.create_size(8, "x.size(0)");
  EXPECT_EQ((s * 3).guard_int(), 24);
  EXPECT_EQ(env.simplify(s.expr()), sym::Expr(8));
  const int64_t same[] = {8};
  const int64_t other[] = {9};
  EXPECT_TRUE(env.check(same));
  EXPECT_FALSE(env.check(other));
}

TEST(ShapeEnv, MarkDynamicBoundsAreTheRange) {
  ShapeEnv env;
  const SymInt s = env.create_size(8, "x.size(0)", 4, 16);
  EXPECT_TRUE(s <= 16);
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(env.format_guards(), std::vector<std::string>{"4 <= x.size(0) <= 16"});
  try {
    (void)env.create_size(32, "y.size(0)", 4, 16);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("y.size(0) was marked dynamic with max=16 but its size is 32"), std::string::npos)
        << e.what();
  }
}

TEST(ShapeEnv, PlainSymIntsComputeWithoutAnEnvironment) {
  const SymInt a = 6;
  const SymInt b = 4;
  EXPECT_EQ((a * b + floordiv(a, b) - mod(-a, b)).maybe_int(), std::optional<int64_t>(24 + 1 - 2));
  EXPECT_TRUE(a > b);
  EXPECT_EQ(a.env(), nullptr);
}

TEST(ShapeEnv, SymIntArithmeticBuildsExpressionsWithHints) {
  ShapeEnv env(ShapeEnv::Options{.duck_shape = false});
  const SymInt a = env.create_size(8, "x.size(0)");
  const SymInt b = env.create_size(3, "x.size(1)");
  const SymInt c = a * 2 + b;
  EXPECT_EQ(c.str(), "2*s0 + s1");
  EXPECT_EQ(c.hint(), 19);
  EXPECT_EQ(floordiv(c, 2).str(), "s0 + s1//2");
  EXPECT_EQ(floordiv(c, 2).hint(), 9);
  EXPECT_EQ(env.format_with_sources(c.expr()), "2*x.size(0) + x.size(1)");
}

TEST(ShapeEnv, TheDynamicLogNamesEachSymbolAndGuardWithTheUserLine) {
  set_logs("dynamic");
  testing::LogCapture logs;
  {
    ShapeEnv env;
    const support::UserLocScope at_user_line(support::UserLoc{"model.cpp", 12});
    const SymInt a = env.create_size(8, "x.size(0)");
    const SymInt b = env.create_size(16, "y.size(0)");
    (void)env.create_size(8, "z.size(0)");
    EXPECT_TRUE(a * 2 == b);
  }
  set_logs("");
  const std::string t = logs.text();
  EXPECT_NE(t.find("create_symbol s0 = 8 for x.size(0) [2, inf] at model.cpp:12"), std::string::npos) << t;
  EXPECT_NE(t.find("create_symbol s2 = 8 for z.size(0) (duck sized: the same symbol as s0) at model.cpp:12"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("eval 2*s0 == s1 [guard added] at model.cpp:12"), std::string::npos) << t;
  EXPECT_NE(t.find("set_replacement s1 = 2*s0"), std::string::npos) << t;
}

}  // namespace
}  // namespace ember::core
