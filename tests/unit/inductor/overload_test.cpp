// Lowering by overload: graphs that name an op's exact overload, as parsed graph text, a
// repro or an imported program does, compile to what the overload means. Lowerings are
// keyed by the full overload name and list the arguments they read; any other argument
// away from its default sends the call to its eager kernel (Note [inductor], "Lowering by
// overload"). Each graph costs one C++ compile, so each test compiles one.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "inductor/pipeline.h"
#include "ops/registry.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;
using OverloadTest = testing::CompileDirTest;

/// Compiles `g` with the "inductor" backend and runs it on `inputs`.
std::vector<Tensor> run_inductor(Graph& g, const std::vector<Tensor>& inputs) {
  register_builtin_backends();
  return lookup_backend("inductor")(g, inputs)(inputs);
}

TEST_F(OverloadTest, DivRoundingModesNamedInGraphTextComputeWhatTheyMean) {
  // Before lowerings were keyed by overload, every one of these lowered as true division.
  std::unique_ptr<Graph> g = parse_graph(R"(graph modes {
  %x : f32[6, 7] = placeholder[x]
  %y : f32[6, 7] = placeholder[y]
  %trunc : f32[6, 7] = aten::div.Tensor_mode(%x, %y, "trunc")
  %floor : f32[6, 7] = aten::div.Tensor_mode(%x, %y, "floor")
  %none : f32[6, 7] = aten::div.Tensor_mode(%x, %y, None)
  %strunc : f32[6, 7] = aten::div.Scalar_mode(%x, 0.7, "trunc")
  %sfloor : f32[6, 7] = aten::div.Scalar_mode(%x, -0.7, "floor")
  %dtrunc : f32[6, 7] = aten::_div_trunc(%x, %y)
  return (%trunc, %floor, %none, %strunc, %sfloor, %dtrunc)
})");
  testing::LogCapture logs("inductor");
  const Tensor x = randn({6, 7}) * 5, y = randn({6, 7});
  const std::vector<Tensor> got = run_inductor(*g, {x, y});
  ASSERT_EQ(got.size(), 6u);
  expect_close(got[0], div(x, y, "trunc"), 0, 0, "div.Tensor_mode trunc");
  expect_close(got[1], div(x, y, "floor"), 0, 0, "div.Tensor_mode floor");
  expect_close(got[2], div(x, y), 0, 0, "div.Tensor_mode None");
  expect_close(got[3], div(x, Scalar(0.7), "trunc"), 0, 0, "div.Scalar_mode trunc");
  expect_close(got[4], div(x, Scalar(-0.7), "floor"), 0, 0, "div.Scalar_mode floor");
  expect_close(got[5], div(x, y, "trunc"), 0, 0, "_div_trunc");
  // trunc and None are generated code; floor (fmod-based, as eager) runs its eager kernel.
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(std::count(r.extern_calls.begin(), r.extern_calls.end(), "aten::div.Tensor_mode"), 1) << logs.text();
  EXPECT_EQ(std::count(r.extern_calls.begin(), r.extern_calls.end(), "aten::div.Scalar_mode"), 1) << logs.text();
  EXPECT_NE(logs.text().find("extern fallback: aten::div.Tensor_mode (%floor): rounding_mode=\"floor\" is not lowered"),
            std::string::npos)
      << logs.text();
}

TEST_F(OverloadTest, ANumberRaisedToATensorIsGeneratedCode) {
  // pow.Scalar (a number's power by a tensor): a capturable AdamW's bias correction
  // 1 - beta ** step, fused into the update that divides by it instead of an eager call.
  std::unique_ptr<Graph> g = parse_graph(R"(graph bias_correction {
  %m : f32[64] = placeholder[m]
  %step : f32[] = placeholder[step]
  %pow : f32[] = aten::pow.Scalar(0.9, %step)
  %neg : f32[] = aten::neg(%pow)
  %bc : f32[] = aten::add.Scalar(%neg, 1, 1)
  %update : f32[64] = aten::div.Tensor(%m, %bc)
  return (%update, %pow)
})");
  testing::LogCapture logs("inductor");
  const Tensor m = randn({64}), step = scalar_tensor(Scalar(7.0), kFloat);
  const std::vector<Tensor> got = run_inductor(*g, {m, step});
  ASSERT_EQ(got.size(), 2u);
  const Tensor pow_want = pow(Scalar(0.9), step);
  expect_close(got[1], pow_want, 1e-6, 0, "pow.Scalar");
  expect_close(got[0], m / (1.0 - pow_want), 1e-6, 1e-7, "the update");
  EXPECT_TRUE(inductor::last_compile_report().extern_calls.empty()) << logs.text();
}

TEST_F(OverloadTest, AnArgumentALoweringDoesNotReadSendsTheCallToItsEagerKernel) {
  // Hand-built: reductions with dtype=, alpha and correction/keepdim that lowerings read.
  Graph g("args");
  Node* x = g.add_placeholder("x", testing::meta_of({5, 9}));
  Node* y = g.add_placeholder("y", testing::meta_of({5, 9}));
  Node* sum64 = testing::add_op(g, "aten::sum.dim_IntList", {x, std::vector<int64_t>{1}, false, kDouble});
  Node* mean64 = testing::add_op(g, "aten::mean", {x, kDouble});
  Node* var0 = testing::add_op(g, "aten::var.correction", {x, std::vector<int64_t>{0}, Scalar(0), true});
  Node* sub_node = testing::add_op(g, "aten::sub.Tensor", {x, y, Scalar(-2.5)});
  Node* add_node = testing::add_op(g, "aten::add.Scalar", {x, Scalar(3), Scalar(0.5)});
  g.set_output({sum64->out(), mean64->out(), var0->out(), sub_node->out(), add_node->out()});
  testing::LogCapture logs("inductor");
  const Tensor a = randn({5, 9}), b = randn({5, 9});
  const std::vector<Tensor> got = run_inductor(g, {a, b});
  expect_close(got[0], sum(a, {1}, false, kDouble), 1e-7, 1e-7, "sum dtype=f64");
  expect_close(got[1], mean(a, kDouble), 1e-7, 1e-7, "mean dtype=f64");
  expect_close(got[2], var(a, std::vector<int64_t>{0}, Scalar(0), true), 1.3e-6, 1e-5, "var correction=0 keepdim");
  expect_close(got[3], sub(a, b, Scalar(-2.5)), 1.3e-6, 1e-5, "sub alpha");
  expect_close(got[4], add(a, Scalar(3), Scalar(0.5)), 1.3e-6, 1e-5, "add.Scalar alpha");
  EXPECT_NE(logs.text().find(
                "extern fallback: aten::sum.dim_IntList (%sum): its argument dtype=torch.float64 is not lowered"),
            std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("extern fallback: aten::mean (%mean): its argument dtype=torch.float64 is not lowered"),
            std::string::npos)
      << logs.text();
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.extern_calls, (std::vector<std::string>{"aten::sum.dim_IntList", "aten::mean"}))
      << "var, sub and add read every argument they were given: " << logs.text();
}

TEST(OverloadTable, EveryLoweringNamesARegisteredOverloadAndArgumentsOfItsSchema) {
  const auto table = inductor::lowering_table();
  ASSERT_FALSE(table.empty());
  for (const auto& [name, reads] : table) {
    const ops::OpDef* op = ops::registry().find(name);
    ASSERT_NE(op, nullptr) << name << " is not a registered op";
    EXPECT_EQ(op->name, name) << "lowerings name ops by their full overload";
    for (const std::string& a : reads) EXPECT_GE(op->schema.index_of(a), 0) << name << " has no argument " << a;
    // An argument the rule does not read must have a default, or the lowering never applies.
    for (const auto& arg : op->schema.arguments) {
      const bool read = std::find(reads.begin(), reads.end(), arg.name) != reads.end();
      EXPECT_TRUE(read || arg.default_value.has_value())
          << name << ": unread argument " << arg.name << " has no default";
    }
  }
  // Overloads that share a base name with a lowered op but mean something else are absent.
  auto listed = [&](const std::string& n) {
    return std::any_of(table.begin(), table.end(), [&](const auto& e) { return e.first == n; });
  };
  EXPECT_TRUE(listed("aten::div.Tensor_mode"));
  EXPECT_FALSE(listed("aten::_div_floor"));
  EXPECT_FALSE(listed("aten::clamp.Tensor"));
  EXPECT_FALSE(listed("aten::add_.Tensor")) << "in-place overloads are extern calls";
}

}  // namespace
}  // namespace ember
