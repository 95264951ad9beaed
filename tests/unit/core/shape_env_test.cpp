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
