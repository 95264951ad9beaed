// The minifier: delta debugging over nodes, then input sizes, keeping a step only while the
// same failure persists; progress, interruption, and the failure pattern.
#include <atomic>

#include "debug_helpers.h"

namespace ember::testing {
namespace {

using debug::Checker;
using debug::Failure;

/// A cheap backend: compiling a graph with a relu raises "relu in graph of N ops (kernel
/// k_N)"; one with a sin but no relu raises a different error kind; others run eagerly.
Backend picky_backend(int* compiles) {
  return [compiles](Graph& g, const std::vector<Tensor>&) -> CompiledGraph {
    ++*compiles;
    bool relu = false, sin = false;
    for (const auto& n : g.nodes()) {
      relu = relu || n->target() == "aten::relu";
      sin = sin || n->target() == "aten::sin";
    }
    EMBER_CHECK(!relu) << "relu in graph of " << g.op_count() << " ops (kernel k_" << g.op_count() << ")";
    EMBER_CHECK_VALUE(!sin) << "sin without relu";
    return eager_backend(g);
  };
}

std::vector<std::string> targets(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes())
    if (n->kind() == NodeKind::Call) out.push_back(n->target());
  return out;
}

TEST_F(ReproTest, PatternMasksNamesNumbersAndPaths) {
  Failure a{Failure::Stage::Compile, ErrorKind::RuntimeError,
            "inductor: the generated code of graph fn does not compile (kernel cpp_fused_mul_relu_0, cpp_fused_1); "
            "its files are in /tmp/x"};
  Failure b{Failure::Stage::Compile, ErrorKind::RuntimeError,
            "inductor: the generated code of graph fn does not compile (kernel cpp_fused_relu_0); its files are in "
            "/tmp/y/z"};
  EXPECT_EQ(a.pattern(), "inductor: the generated code of graph fn does not compile (kernel * its files are in *");
  EXPECT_TRUE(a.same_as(b));
  Failure other_kind = b;
  other_kind.kind = ErrorKind::ValueError;
  EXPECT_FALSE(a.same_as(other_kind));
  Failure other_stage = b;
  other_stage.stage = Failure::Stage::Run;
  EXPECT_FALSE(a.same_as(other_stage));
}

TEST_F(ReproTest, CompileErrorMinifiesToTheFailingNodeAndNotToADifferentError) {
  auto g = ten_op_graph();
  int compiles = 0;
  Checker check{picky_backend(&compiles)};
  const std::vector<Tensor> inputs = debug::random_inputs(*g, 0);
  const std::optional<Failure> target = check(*g, inputs);
  ASSERT_TRUE(target);
  std::vector<std::string> progress;
  debug::MinifyOptions options;
  options.progress = [&](const std::string& line) { progress.push_back(line); };
  debug::MinifyResult m = debug::minify(*g, inputs, check, *target, options);
  // The relu alone: cutting to the sin before it fails differently (ValueError), and the
  // sin becomes an input instead.
  EXPECT_EQ(targets(*m.graph), std::vector<std::string>{"aten::relu"}) << *m.graph;
  EXPECT_EQ(m.original_calls, 10u);
  ASSERT_EQ(m.graph->inputs().size(), 1u);
  EXPECT_LT(m.inputs[0].numel(), 8 * 16);  // sizes shrank too
  EXPECT_EQ(m.compiles, static_cast<size_t>(compiles) - 1);
  std::string text;
  for (const auto& l : progress) text += l + "\n";
  EXPECT_NE(text.find("fails differently (compile error (ValueError): sin without relu)"), std::string::npos) << text;
  EXPECT_NE(text.find("ops left, "), std::string::npos) << text;
  EXPECT_NE(text.find("done: 1 of 10 ops left"), std::string::npos) << text;
  // The result still fails the same way.
  std::optional<Failure> again = check(*m.graph, m.inputs);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->same_as(*target)) << again->str();
}

TEST_F(ReproTest, InductorAccuracyBugMinifiesToTheReluWithSmallerInputs) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "accuracy";
  auto g = ten_op_graph();
  Checker check{lookup_backend("inductor"), /*accuracy=*/true, 1e-3};
  const std::vector<Tensor> inputs = debug::random_inputs(*g, 0);
  const std::optional<Failure> target = check(*g, inputs);
  ASSERT_TRUE(target);
  ASSERT_EQ(target->stage, Failure::Stage::Accuracy);
  debug::MinifyOptions options;
  options.progress = [](const std::string&) {};
  debug::MinifyResult m = debug::minify(*g, inputs, check, *target, options);
  EXPECT_EQ(targets(*m.graph), std::vector<std::string>{"aten::relu"}) << *m.graph;
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_LT(m.inputs[0].numel(), 8 * 16) << *m.graph;
  EXPECT_LE(m.compiles, 20u);  // ~1 s each with inductor: the strategy keeps this small
  // Without the bug the minified graph passes: it isolates the bug, not something else.
  config().inductor.inject_relu_bug_TESTING_ONLY = "";
  EXPECT_FALSE(check(*m.graph, m.inputs));
}

TEST_F(ReproTest, InterruptedMinifierKeepsTheBestGraphSoFar) {
  auto g = ten_op_graph();
  int compiles = 0;
  Checker check{picky_backend(&compiles)};
  const std::vector<Tensor> inputs = debug::random_inputs(*g, 0);
  const Failure target = *check(*g, inputs);
  std::atomic<bool> stop{false};
  size_t improved = 0, best_ops = 0;
  debug::MinifyOptions options;
  options.progress = [](const std::string&) {};
  options.interrupt = &stop;
  options.on_improved = [&](const Graph& best, const std::vector<Tensor>&) {
    ++improved;
    best_ops = best.op_count();
    stop = true;  // as Ctrl-C would, after the first step that shrank the graph
  };
  debug::MinifyResult m = debug::minify(*g, inputs, check, target, options);
  EXPECT_TRUE(m.interrupted);
  EXPECT_EQ(improved, 1u);
  EXPECT_EQ(m.graph->op_count(), best_ops);
  EXPECT_LT(best_ops, 10u);
  EXPECT_TRUE(check(*m.graph, m.inputs)->same_as(target));
}

TEST_F(ReproTest, MaxCompilesStopsTheMinifier) {
  auto g = ten_op_graph();
  int compiles = 0;
  Checker check{picky_backend(&compiles)};
  const std::vector<Tensor> inputs = debug::random_inputs(*g, 0);
  const Failure target = *check(*g, inputs);
  debug::MinifyOptions options;
  options.progress = [](const std::string&) {};
  options.max_compiles = 3;
  debug::MinifyResult m = debug::minify(*g, inputs, check, target, options);
  EXPECT_EQ(m.compiles, 3u);
}

TEST_F(ReproTest, AGraphThatDoesNotFailAsExpectedIsAnError) {
  auto g = ten_op_graph();
  Checker check{[](Graph& graph, const std::vector<Tensor>&) { return eager_backend(graph); }};
  Failure target{Failure::Stage::Compile, ErrorKind::RuntimeError, "boom"};
  try {
    debug::minify(*g, debug::random_inputs(*g, 0), check, target);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fail as expected: expected compile error (RuntimeError): boom, "
                                         "got no failure"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ReproTest, AStdExceptionFromABackendIsTheSameFailureInTheCheckerAsInTheProgram) {
  // A custom backend's std::runtime_error: compile() reports it as
  // "std::runtime_error: <what>", and a repro recorded there must match in `ember repro`.
  Backend throwing = [](Graph&, const std::vector<Tensor>&) -> CompiledGraph {
    throw std::runtime_error("my backend cannot compile relu");
  };
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 1;
  auto f = compile([](const Tensor& x) { return relu(x); }, {.custom_backend = throwing, .name = "thrower"});
  EXPECT_THROW(f(ones({4})), BackendCompilerFailed);
  config().dynamo.repro_after = "";
  const std::vector<std::filesystem::path> dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  debug::Repro r = debug::read_repro((dirs[0] / "repro.txt").string());
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->message, "std::runtime_error: my backend cannot compile relu");
  const std::optional<Failure> f2 = Checker{throwing}(*r.graph, r.inputs);
  ASSERT_TRUE(f2.has_value());
  EXPECT_TRUE(f2->same_as(*r.failure)) << f2->str() << " vs recorded " << r.failure->str();
}

}  // namespace
}  // namespace ember::testing
