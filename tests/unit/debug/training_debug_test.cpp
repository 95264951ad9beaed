// The troubleshooting tools on training functions: TORCHDYNAMO_REPRO_LEVEL=4 after dynamo
// runs the compiled function forward and backward and compares its gradients with eager's
// against a float64 run (an injected relu bug that leaves the forward's output alone but
// not the gradients is found, its launcher lists the inputs that require grad); the
// compiler bisector traces such a launcher, or a backward graph's launcher after aot, to
// relu's lowering in the forward or the backward graph. See Note [minifier], "Training
// graphs".
#include "debug/bisect.h"
#include "debug_helpers.h"
#include "support/compile_helpers.h"

namespace ember::testing {
namespace {

namespace fs = std::filesystem;

/// (relu(x) * w).sum(): w's gradient is relu(x) (the output's gradient is 1); the forward
/// output reads relu(x) only where w is nonzero.
Tensor relu_times_w(const Tensor& x, const Tensor& w) { return (relu(x) * w).sum(); }

/// x: f32[6, 10]; w zero wherever x > 0, so that `accuracy` (relu gives x + 1 for x > 0)
/// leaves the output exact and changes w's gradient there.
std::pair<Tensor, Tensor> relu_inputs() {
  manual_seed(3);
  Tensor x = randn({6, 10});
  Tensor w = where(x > 0, zeros({6, 10}), randn({6, 10}));
  w.requires_grad_();
  return {x, w};
}

class TrainingDebugTest : public ReproTest {};

TEST_F(TrainingDebugTest, Level4AfterDynamoComparesTheGradientsOfATrainingFunction) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 4;
  config().inductor.inject_relu_bug_TESTING_ONLY = "accuracy";
  auto [x, w] = relu_inputs();
  {
    // Without the check the bug goes unseen in the output: the compiled forward is exact.
    config().dynamo.repro_level = 2;
    auto plain = compile(relu_times_w, {.backend = "inductor", .name = "unchecked"});
    EXPECT_EQ(plain(x, w).item<double>(), relu_times_w(x, w).item<double>());
    config().dynamo.repro_level = 4;
  }
  auto f = compile(relu_times_w, {.backend = "inductor", .name = "fn"});
  std::string error;
  try {
    f(x, w);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("Accuracy failed for graph fn"), std::string::npos) << error;
  EXPECT_NE(error.find("forward and backward: its outputs and the gradients of its inputs"), std::string::npos)
      << error;
  EXPECT_NE(error.find("gradient of input %"), std::string::npos) << error;
  EXPECT_NE(error.find("(input 1)"), std::string::npos) << "w is input 1\n" << error;
  EXPECT_FALSE(w.grad().defined()) << "the check leaves the caller's .grad alone";
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const fs::path launcher = dirs[0] / "minifier_launcher.txt";
  const std::string text = read_file(launcher);
  EXPECT_NE(text.find("check: accuracy\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requires_grad: 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("failure: accuracy gradient of input %"), std::string::npos) << text;
  // The launcher reads back with w requiring grad, and reproduces in another process.
  const debug::Repro r = debug::read_repro(launcher.string());
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_FALSE(r.inputs[0].requires_grad());
  EXPECT_TRUE(r.inputs[1].requires_grad());
  CommandResult run = run_ember("", "repro '" + launcher.string() + "'");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("the same failure as recorded"), std::string::npos) << run.output;
}

TEST_F(TrainingDebugTest, Level4AfterDynamoPassesACorrectTrainingFunctionAndLeavesItsGradientsAlone) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 4;
  manual_seed(0);
  Tensor w = randn({16}).requires_grad_(), b = randn({16}).requires_grad_();
  auto fn = [&](const Tensor& x) {
    return (gelu(layer_norm(x, {16}, w, b, 1e-5), "tanh") * softmax(x, -1)).relu().sum();
  };
  const Tensor x = randn({5, 16});
  fn(x).backward();
  const Tensor gw = w.grad().clone(), gb = b.grad().clone();
  w.mutable_grad() = Tensor();
  b.mutable_grad() = Tensor();
  LogCapture logs;
  compile(fn, {.backend = "inductor", .name = "fine"})(x).backward();
  expect_close(w.grad(), gw, 1e-5, 1e-5, "w.grad");
  expect_close(b.grad(), gb, 1e-5, 1e-5, "b.grad");
  EXPECT_TRUE(repro_dirs(dir).empty());
  EXPECT_EQ(logs.text().find("accuracy cannot be checked"), std::string::npos) << logs.text();
}

struct Bisected {
  debug::BisectResult result;
  std::string progress;
};

Bisected bisect_launcher(const fs::path& launcher) {
  const debug::Repro r = debug::read_repro(launcher.string());
  debug::ScopedConfig knobs(r.config);
  Bisected b;
  debug::BisectOptions options;
  options.backend = r.backend;
  options.accuracy = r.accuracy;
  options.tolerance = r.tolerance;
  options.target = r.failure;
  options.progress = [&](const std::string& line) { b.progress += line + "\n"; };
  b.result = debug::bisect(*r.graph, r.inputs, options);
  return b;
}

/// Writes the level-4 launcher of relu_times_w (the accuracy bug) after `cut`, with the
/// partitioner `partitioner`; returns the launcher of the graph that failed.
fs::path relu_launcher(const fs::path& dir, const std::string& cut, const std::string& partitioner) {
  config().dynamo.repro_after = cut;
  config().dynamo.repro_level = 4;
  config().aot.partitioner = partitioner;
  config().inductor.inject_relu_bug_TESTING_ONLY = "accuracy";
  auto [x, w] = relu_inputs();
  auto f = compile(relu_times_w, {.backend = "inductor", .name = "fn"});
  try {
    f(x, w).backward();
  } catch (const Error&) {
  }
  config().dynamo.repro_after = "";
  config().inductor.inject_relu_bug_TESTING_ONLY = "";
  const auto dirs = repro_dirs(dir);
  EXPECT_EQ(dirs.size(), 1u);
  return dirs.empty() ? fs::path() : dirs[0] / "minifier_launcher.txt";
}

/// Bisects relu_times_w's training launcher after dynamo (forward and backward, gradients
/// compared) made with `partitioner`: relu's lowering in graph `graph` is the culprit.
void expect_relu_lowering_in(const fs::path& dir, const std::string& partitioner, const std::string& graph) {
  const fs::path launcher = relu_launcher(dir, "dynamo", partitioner);
  ASSERT_FALSE(launcher.empty());
  const Bisected b = bisect_launcher(launcher);
  ASSERT_TRUE(b.result.failed) << b.progress;
  EXPECT_EQ(b.result.backend, "inductor") << b.progress;
  EXPECT_EQ(b.result.last_passing, "aot_eager") << b.progress;
  EXPECT_EQ(b.result.subsystem, "lowerings") << b.progress;
  EXPECT_EQ(b.result.what, "aten::relu (%relu) in graph " + graph) << b.progress;
  EXPECT_NE(b.result.summary().find("in graph " + graph + " — with it the failure appears"), std::string::npos)
      << b.result.summary();
  EXPECT_NE(b.progress.find("a training graph: run forward and backward"), std::string::npos) << b.progress;
}

// The default partitioner saves relu(x) for w's gradient: the forward graph computes it
// wrong, the backward reads it.
TEST_F(TrainingDebugTest, BisectingATrainingFunctionFindsReluInTheForwardGraph) {
  expect_relu_lowering_in(dir, "default", "fn");
}

// The min-cut partitioner saves x instead and recomputes relu(x) in the backward graph:
// the forward's output and saved values are exact, the gradients are not.
TEST_F(TrainingDebugTest, BisectingATrainingFunctionFindsReluInTheBackwardGraph) {
  expect_relu_lowering_in(dir, "min_cut", "fn_backward");
}

// After aot, level 4 checks each graph on its own: with min-cut the forward graph passes
// and the backward graph's launcher (backend inductor_inner) bisects to relu's lowering —
// in process and with `ember bisect`.
TEST_F(TrainingDebugTest, ABackwardGraphsLauncherBisectsToTheFailingLowering) {
  const fs::path launcher = relu_launcher(dir, "aot", "min_cut");
  ASSERT_FALSE(launcher.empty());
  const std::string text = read_file(launcher);
  EXPECT_NE(text.find("graph fn_backward {"), std::string::npos) << text;
  EXPECT_NE(text.find("backend: inductor_inner\n"), std::string::npos) << text;
  const Bisected b = bisect_launcher(launcher);
  ASSERT_TRUE(b.result.failed) << b.progress;
  EXPECT_EQ(b.result.backend, "inductor_inner") << b.progress;
  EXPECT_EQ(b.result.subsystem, "lowerings") << b.progress;
  EXPECT_EQ(b.result.what, "aten::relu (%relu)") << b.progress;
  CommandResult run = run_ember("", "bisect '" + launcher.string() + "'");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("FOUND: inductor_inner lowering #"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("aten::relu (%relu)"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace ember::testing
