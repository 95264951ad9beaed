// Every pointwise lowering compiled against eager: each row of ops/scalar_ops.def that
// inductor lowers (unary and binary, Tensor and Scalar overloads) and each op of the
// lowering table (where, clamp, gelu, _to_copy, clone), on odd sizes, on a transposed
// (non-contiguous) input, and broadcasting [7, 1] against [1, 13], in both supported
// dtypes (f32 and f64). One graph per case holds every op, so each case is one C++ compile.
// Every op must be generated code: none may fall back to an extern call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ember/dispatch.h"
#include "ember/ember.h"
#include "inductor/inductor.h"
#include "ops/registry.h"

namespace ember {
namespace {

struct OpCase {
  std::string name;  // for failure messages
  std::function<Tensor(const Tensor& x, const Tensor& y, const Tensor& mask)> fn;
};

Tensor call1(const std::string& op, Stack args) { return call_op(op, std::move(args)).at(0).to_tensor(); }

/// The ATen op of a binary row of scalar_ops.def ("add" -> "aten::add.Tensor").
std::string binary_tensor_op(const std::string& row) {
  for (const std::string& name : {"aten::" + row + ".Tensor", "aten::" + row + ".Tensor_Tensor", "aten::" + row})
    if (ops::registry().find(name)) return name;
  return "";
}
/// Its (Tensor self, Scalar other) overload: not pow.Scalar, whose base is the Scalar.
std::string binary_scalar_op(const std::string& row) {
  for (const std::string& name : {"aten::" + row + ".Scalar", "aten::" + row + ".Tensor_Scalar"}) {
    const ops::OpDef* op = ops::registry().find(name);
    if (op && op->schema.arguments[0].type.base == ops::BaseType::Tensor) return name;
  }
  return "";
}

/// The lowered rows, as lowering.cpp selects them (kinds whose result keeps the input's
/// floating type; the integer-only division helpers excluded).
std::vector<OpCase> lowered_ops() {
  std::vector<OpCase> out;
  const std::vector<std::string> kinds = {"FloatPromote", "FloatOnly", "Same", "SameNoBool", "Arith", "ArithNoBool"};
  auto lowered = [&](const std::string& kind) { return std::find(kinds.begin(), kinds.end(), kind) != kinds.end(); };
#define EMBER_UNARY(name, kind, expr)                                                                \
  if (lowered(#kind)) out.push_back({#name, [](const Tensor& x, const Tensor&, const Tensor&) { return call1("aten::" #name, {x}); }});
#define EMBER_BINARY(name, kind, expr)                                                                  \
  if (lowered(#kind) && std::string(#name) != "div_trunc" && std::string(#name) != "div_floor") {      \
    const std::string t = binary_tensor_op(#name), s = binary_scalar_op(#name);                         \
    if (!t.empty()) out.push_back({t, [t](const Tensor& x, const Tensor& y, const Tensor&) { return call1(t, {x, y}); }}); \
    if (!s.empty())                                                                                     \
      out.push_back({s, [s](const Tensor& x, const Tensor&, const Tensor&) { return call1(s, {x, Scalar(1.5)}); }});   \
  }
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
  using T = const Tensor&;
  out.push_back({"add.Tensor alpha", [](T x, T y, T) { return call1("aten::add.Tensor", {x, y, Scalar(-2.5)}); }});
  // where's condition is a bool input (a mask, as W5's causal mask): comparisons producing
  // bool are extern calls (docs/notes/inductor.md).
  out.push_back({"where.self", [](T x, T y, T m) { return where(m, x, y); }});
  out.push_back({"where.ScalarOther", [](T x, T, T m) { return where(m, x, Scalar(0.25)); }});
  out.push_back({"where.ScalarSelf", [](T, T y, T m) { return where(m, Scalar(-3.0), y); }});
  out.push_back({"clamp", [](T x, T, T) { return clamp(x, Scalar(-0.5), Scalar(0.75)); }});
  out.push_back({"clamp max", [](T x, T, T) { return clamp(x, std::nullopt, Scalar(0.1)); }});
  out.push_back({"gelu", [](T x, T, T) { return gelu(x); }});
  out.push_back({"gelu tanh", [](T x, T, T) { return gelu(x, "tanh"); }});
  out.push_back({"_to_copy", [](T x, T, T) { return x.to(x.dtype() == kFloat ? kDouble : kFloat).exp(); }});
  out.push_back({"clone", [](T x, T, T) { return x.clone() * 3; }});
  return out;
}

/// Equal within f32/f64 tolerance, NaN where eager has NaN, infinities equal.
void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const bool f32 = expected.dtype() == kFloat;
  const double rtol = f32 ? 1.3e-6 : 1e-7, atol = f32 ? 1e-5 : 1e-7;
  auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " at " << i << ": " << a[i] << " where eager has NaN";
    } else if (std::isinf(e[i])) {
      EXPECT_EQ(a[i], e[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(a[i], e[i], atol + rtol * std::abs(e[i])) << what << " at " << i;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

struct Layout {
  const char* name;
  std::function<std::pair<Tensor, Tensor>(ScalarType)> make;
};

class LoweringTest : public ::testing::TestWithParam<std::tuple<ScalarType, int>> {
 protected:
  void SetUp() override {
    cache_ = std::filesystem::temp_directory_path() / ("ember_lowering_test_" + std::to_string(getpid()));
    config().inductor.cache_dir = cache_.string();
  }
  void TearDown() override { std::filesystem::remove_all(cache_); }
  std::filesystem::path cache_;
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {"odd sizes [7, 13]", [](ScalarType t) { return std::make_pair(randn({7, 13}, t) * 2, randn({7, 13}, t) * 2); }},
      {"transposed", [](ScalarType t) { return std::make_pair(randn({13, 7}, t).t() * 1, randn({7, 13}, t) * 2); }},
      {"broadcast [7, 1] with [1, 13]",
       [](ScalarType t) { return std::make_pair(randn({7, 1}, t) * 2, randn({1, 13}, t) * 2); }},
  };
  return all;
}

TEST_P(LoweringTest, EveryPointwiseLoweringEqualsEager) {
  const auto [dtype, layout] = GetParam();
  manual_seed(7);
  auto [x, y] = layouts()[layout].make(dtype);
  if (layout == 1) x = x.t().contiguous().t();  // strides [1, 13]: read through the index map
  const std::vector<OpCase> ops = lowered_ops();
  ASSERT_GT(ops.size(), 40u);
  const Tensor mask = randn({7, 13}) > 0;
  auto all = [&ops](const Tensor& a, const Tensor& b, const Tensor& m) {
    std::vector<Tensor> outs;
    for (const OpCase& op : ops) outs.push_back(op.fn(a, b, m));
    return outs;
  };
  auto compiled = compile(all, {.backend = "inductor", .name = "every_lowering"});
  const std::vector<Tensor> got = compiled(x, y, mask);
  const std::vector<Tensor> want = all(x, y, mask);
  ASSERT_EQ(got.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) expect_close(got[i], want[i], ops[i].name + " (" + layouts()[layout].name + ")");
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty()) << "every op is generated code; extern: " << ::testing::PrintToString(r.extern_calls);
}

INSTANTIATE_TEST_SUITE_P(DtypesAndLayouts, LoweringTest,
                         ::testing::Combine(::testing::Values(kFloat, kDouble), ::testing::Values(0, 1, 2)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == kFloat ? "f32" : "f64") + "_layout" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace ember
