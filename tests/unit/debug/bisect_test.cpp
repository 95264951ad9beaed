// The compiler bisector: the first backend that fails, then the inductor subsystem and the
// decision that brings the failure in (each injected relu bug is traced to relu's
// lowering); a failing custom backend stops at the backend level; a graph that passes
// reports no failure; a fusion that brings a failure in is named; the knobs limit each
// subsystem by hand and log what they disable.
#include "debug/bisect.h"

#include "debug_helpers.h"
#include "inductor/inductor.h"
#include "inductor/pipeline.h"
#include "support/compile_helpers.h"

namespace ember::testing {
namespace {

/// x, y: f32[8, 16]; six pointwise ops, the third a relu.
std::unique_ptr<Graph> relu_graph() {
  auto g = std::make_unique<Graph>("fn");
  Node* x = g->add_placeholder("x", meta_of({8, 16}));
  Node* y = g->add_placeholder("y", meta_of({8, 16}));
  Node* mul = add_op(*g, "aten::mul.Tensor", {x, y});
  Node* add = add_op(*g, "aten::add.Tensor", {mul, x, Scalar(int64_t{1})});
  Node* relu = add_op(*g, "aten::relu", {add});
  Node* exp = add_op(*g, "aten::exp", {relu});
  Node* mul1 = add_op(*g, "aten::mul.Tensor", {exp, y});
  Node* tanh = add_op(*g, "aten::tanh", {mul1});
  g->set_output({tanh->out()});
  return g;
}

struct Bisected {
  debug::BisectResult result;
  std::string progress;
  int64_t compiler_runs = 0;
};

Bisected bisect_graph(const Graph& g, debug::BisectOptions options) {
  Bisected b;
  options.progress = [&](const std::string& line) { b.progress += line + "\n"; };
  const int64_t before = inductor::compiler_invocations();
  b.result = debug::bisect(g, debug::random_inputs(g, 0), options);
  b.compiler_runs = inductor::compiler_invocations() - before;
  return b;
}

class BisectTest : public ReproTest {};

/// Runs: eager, aot_eager, inductor (fails), fusions disabled (still fails), lowerings
/// disabled (passes), then the first 3, 1 and 2 of the 6 lowerings: relu, the third, is the
/// culprit. Graph passes have nothing to apply, so they cost no run.
void expect_relu_lowering(const Bisected& b, debug::Failure::Stage stage) {
  const debug::BisectResult& r = b.result;
  ASSERT_TRUE(r.failed) << b.progress;
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->stage, stage) << r.failure->str();
  EXPECT_EQ(r.backend, "inductor");
  EXPECT_EQ(r.last_passing, "aot_eager");
  EXPECT_EQ(r.subsystem, "lowerings") << b.progress;
  EXPECT_EQ(r.knob, "inductor.bisect_max_lowerings");
  EXPECT_EQ(r.decision, 3);
  EXPECT_EQ(r.what, "aten::relu (%relu)");
  EXPECT_EQ(r.ruled_out, std::vector<std::string>{"fusions"});
  EXPECT_EQ(r.runs, 8u) << b.progress;
  // Five inductor runs after the first; a compile each at most (the cache may hold some).
  EXPECT_LE(b.compiler_runs, 6) << b.progress;
  EXPECT_EQ(r.summary().rfind("inductor lowering #3: aten::relu (%relu) — with it the failure appears, without it the "
                              "graph passes (inductor.bisect_max_lowerings=3 fails, 2 passes)",
                              0),
            0u)
      << r.summary();
  EXPECT_NE(b.progress.find("run 1: eager (capture only): passes"), std::string::npos) << b.progress;
  EXPECT_NE(b.progress.find("run 3: inductor: fails"), std::string::npos) << b.progress;
  EXPECT_NE(b.progress.find("graph passes: none in this graph; nothing to disable"), std::string::npos) << b.progress;
  EXPECT_NE(b.progress.find("disabling fusions does not remove the failure"), std::string::npos) << b.progress;
  EXPECT_NE(b.progress.find("run 5: inductor with all 6 lowerings disabled (inductor.bisect_max_lowerings=0): passes"),
            std::string::npos)
      << b.progress;
  EXPECT_NE(b.progress.find("run 6: inductor with the first 3 of 6 lowerings (inductor.bisect_max_lowerings=3): fails"),
            std::string::npos)
      << b.progress;
  EXPECT_NE(b.progress.find("done after 8 runs: inductor lowering #3"), std::string::npos) << b.progress;
  // The knobs are the caller's again.
  EXPECT_EQ(config().inductor.bisect_max_lowerings, -1);
  EXPECT_EQ(config().inductor.bisect_max_fusions, -1);
}

TEST_F(BisectTest, AnAccuracyBugInReluIsTracedToReluLowering) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "accuracy";
  auto g = relu_graph();
  debug::BisectOptions options;
  options.accuracy = true;
  expect_relu_lowering(bisect_graph(*g, options), debug::Failure::Stage::Accuracy);
}

TEST_F(BisectTest, ACompileErrorInReluIsTracedToReluLowering) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "compile_error";
  auto g = relu_graph();
  expect_relu_lowering(bisect_graph(*g, {}), debug::Failure::Stage::Compile);
}

TEST_F(BisectTest, ARuntimeErrorInReluIsTracedToReluLowering) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "runtime_error";
  auto g = relu_graph();
  expect_relu_lowering(bisect_graph(*g, {}), debug::Failure::Stage::Run);
}

TEST_F(BisectTest, AFailingCustomBackendStopsAtTheBackendLevel) {
  register_backend("bisect_test_failing", [](Graph& g, const std::vector<Tensor>&) -> CompiledGraph {
    EMBER_CHECK(false) << "bisect_test_failing cannot compile graph " << g.name();
    return eager_backend(g);
  });
  EXPECT_EQ(debug::bisect_backends("bisect_test_failing"), (std::vector<std::string>{"eager", "bisect_test_failing"}));
  auto g = relu_graph();
  debug::BisectOptions options;
  options.backend = "bisect_test_failing";
  const Bisected b = bisect_graph(*g, options);
  ASSERT_TRUE(b.result.failed) << b.progress;
  EXPECT_EQ(b.result.backend, "bisect_test_failing");
  EXPECT_EQ(b.result.last_passing, "eager");
  EXPECT_EQ(b.result.subsystem, "");
  EXPECT_EQ(b.result.runs, 2u);
  EXPECT_EQ(b.compiler_runs, 0);
  EXPECT_EQ(b.result.summary(),
            "the failure appears with backend bisect_test_failing (eager passes): compile error (RuntimeError): "
            "bisect_test_failing cannot compile graph fn");
}

TEST_F(BisectTest, AFailureBroughtInByAFusionIsTracedToThatFusion) {
  // A backend through the inductor's steps (no AOT stage) that fails when one kernel
  // computes both %relu and %exp: the third fusion of the scheduler's backward walk.
  register_backend("bisect_test_fusion_bug", [](Graph& g, const std::vector<Tensor>& examples) -> CompiledGraph {
    CompiledGraph fn = inductor::compile_fx_inner(g, examples);
    for (const auto& [kernel, nodes] : inductor::last_compile_report().kernels) {
      const bool relu = std::find(nodes.begin(), nodes.end(), "relu") != nodes.end();
      const bool exp = std::find(nodes.begin(), nodes.end(), "exp") != nodes.end();
      EMBER_CHECK(!(relu && exp)) << "kernel " << kernel << " computes relu and exp together";
    }
    return fn;
  });
  auto g = relu_graph();
  debug::BisectOptions options;
  options.backend = "bisect_test_fusion_bug";
  const Bisected b = bisect_graph(*g, options);
  ASSERT_TRUE(b.result.failed) << b.progress;
  EXPECT_EQ(b.result.backend, "bisect_test_fusion_bug");
  EXPECT_EQ(b.result.subsystem, "fusions") << b.progress;
  EXPECT_EQ(b.result.knob, "inductor.bisect_max_fusions");
  EXPECT_EQ(b.result.decision, 3);
  EXPECT_EQ(b.result.what, "fused %relu into its users' kernel (root %tanh)");
  EXPECT_TRUE(b.result.ruled_out.empty());
  // eager, the backend, fusions disabled (5 of them), then the first 2 and 3.
  EXPECT_EQ(b.result.runs, 5u) << b.progress;
  EXPECT_LE(b.compiler_runs, 4);
  EXPECT_EQ(b.result.summary().rfind("bisect_test_fusion_bug fusion #3: fused %relu into its users' kernel (root "
                                     "%tanh) — with it the failure appears, without it the graph passes",
                                     0),
            0u)
      << b.result.summary();
}

TEST_F(BisectTest, AFailureOtherThanTheOneChasedCountsAsPassing) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "compile_error";
  auto g = relu_graph();
  debug::BisectOptions options;
  options.target = debug::Failure{debug::Failure::Stage::Run, ErrorKind::ValueError, "something else"};
  const Bisected b = bisect_graph(*g, options);
  EXPECT_FALSE(b.result.failed) << b.progress;
  EXPECT_EQ(b.result.runs, 3u);
  EXPECT_NE(b.progress.find("run 3: inductor: fails differently (compile error (RuntimeError): inductor: the "
                            "generated code of graph fn does not compile"),
            std::string::npos)
      << b.progress;
}

TEST_F(BisectTest, AGraphThatPassesEverywhereReportsNoFailure) {
  auto g = relu_graph();
  debug::BisectOptions options;
  options.accuracy = true;
  const Bisected b = bisect_graph(*g, options);
  EXPECT_FALSE(b.result.failed) << b.progress;
  EXPECT_FALSE(b.result.failure);
  EXPECT_EQ(b.result.runs, 3u);
  EXPECT_LE(b.compiler_runs, 1);
  EXPECT_EQ(b.result.summary(), "no failure: the graph passes with every backend tried");
  EXPECT_NE(b.progress.find("run 3: inductor: passes (matches eager)"), std::string::npos) << b.progress;
}

TEST_F(BisectTest, TheLoweringLimitTurnsLaterCallsIntoExternCallsAndLogsEach) {
  config().inductor.bisect_max_lowerings = 2;
  auto g = relu_graph();
  LogCapture logs("inductor");
  const std::vector<Tensor> inputs = debug::random_inputs(*g, 0);
  CompiledGraph fn = inductor::compile_fx_inner(*g, inputs);
  const inductor::CompileReport report = inductor::last_compile_report();
  EXPECT_EQ(report.extern_calls,
            (std::vector<std::string>{"aten::relu", "aten::exp", "aten::mul.Tensor", "aten::tanh"}));
  EXPECT_NE(logs.text().find("extern fallback: aten::relu (%relu): the compiler bisector's limit "
                             "inductor.bisect_max_lowerings=2 disables lowering #3; it runs its eager kernel"),
            std::string::npos)
      << logs.text();
  expect_close(fn(inputs)[0], run_graph(*g, inputs)[0]);
}

TEST_F(BisectTest, TheFusionLimitKeepsLaterNodesInKernelsOfTheirOwnAndLogsEach) {
  auto g = relu_graph();
  const std::vector<Tensor> inputs = debug::random_inputs(*g, 0);
  inductor::compile_fx_inner(*g, inputs);
  EXPECT_EQ(inductor::last_compile_report().kernels.size(), 1u);
  config().inductor.bisect_max_fusions = 1;
  LogCapture logs("fusion");
  CompiledGraph fn = inductor::compile_fx_inner(*g, inputs);
  // The walk goes backwards: %mul1 fuses into %tanh's kernel; the rest are kernels of their own.
  EXPECT_EQ(inductor::last_compile_report().kernels.size(), 5u);
  EXPECT_NE(logs.text().find("fused %mul_1 into its users' kernel (root %tanh)"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("materialized %exp: the compiler bisector's limit inductor.bisect_max_fusions=1 "
                             "disables fusion #2"),
            std::string::npos)
      << logs.text();
  expect_close(fn(inputs)[0], run_graph(*g, inputs)[0]);
}

TEST_F(BisectTest, TheGraphPassLimitLeavesLaterRewritesUndoneAndLogsEach) {
  // Two addmm, each read only by a relu: two rewrites of unfuse_bias_add_to_pointwise.
  Graph g("fn");
  Node* x = g.add_placeholder("x", meta_of({4, 8}));
  Node* w = g.add_placeholder("w", meta_of({8, 16}));
  Node* b = g.add_placeholder("b", meta_of({16}));
  Node* addmm = add_op(g, "aten::addmm", {b, x, w, Scalar(int64_t{1}), Scalar(int64_t{1})});
  Node* relu = add_op(g, "aten::relu", {addmm});
  Node* addmm1 = add_op(g, "aten::addmm", {b, x, w, Scalar(int64_t{1}), Scalar(int64_t{1})});
  Node* relu1 = add_op(g, "aten::relu", {addmm1});
  g.set_output({relu->out(), relu1->out()});
  auto count = [](const Graph& p, const std::string& target) {
    size_t n = 0;
    for (const auto& node : p.nodes()) n += node->target() == target;
    return n;
  };
  EXPECT_EQ(count(*inductor::run_graph_passes(g), "aten::addmm"), 0u);
  EXPECT_EQ(inductor::bisect_decisions(inductor::BisectSubsystem::GraphPasses),
            (std::vector<std::string>{"unfuse_bias_add_to_pointwise on aten::addmm (%addmm)",
                                      "unfuse_bias_add_to_pointwise on aten::addmm (%addmm_1)"}));
  config().inductor.bisect_max_graph_passes = 1;
  LogCapture logs("inductor");
  auto p = inductor::run_graph_passes(g);
  EXPECT_EQ(count(*p, "aten::addmm"), 1u) << *p;
  EXPECT_EQ(count(*p, "aten::mm"), 1u) << *p;
  EXPECT_NE(logs.text().find("graph pass skipped: unfuse_bias_add_to_pointwise on aten::addmm (%addmm_1): the "
                             "compiler bisector's limit inductor.bisect_max_graph_passes=1 disables graph pass "
                             "application #2"),
            std::string::npos)
      << logs.text();
}

TEST_F(BisectTest, EmberBisectNamesTheCulpritOnItsLastLine) {
  auto g = relu_graph();
  const std::filesystem::path file = dir / "graph.txt";
  {
    std::ofstream f(file);
    f << *g;
  }
  const CommandResult r = run_ember("EMBER_INJECT_RELU_BUG=runtime_error", "bisect " + file.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("ember bisect: run 1: eager (capture only): passes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nFOUND: inductor lowering #3: aten::relu (%relu) — with it the failure appears, without "
                          "it the graph passes"),
            std::string::npos)
      << r.output;
  const CommandResult usage = run_ember("", "bisect");
  EXPECT_EQ(usage.status, 2) << usage.output;
}

}  // namespace
}  // namespace ember::testing
