// TORCHDYNAMO_REPRO_AFTER / TORCHDYNAMO_REPRO_LEVEL: what each level writes, where, and
// when; repro files read back, and malformed ones name the file and line.
#include "debug_helpers.h"
#include "ember/build_info.h"
#include "core/shape_env.h"
#include "graph/text.h"
#include "support/compile_helpers.h"

namespace ember::testing {
namespace {

namespace fs = std::filesystem;

Tensor user_fn(const Tensor& x, const Tensor& y) {
  Tensor a = sin(x * y + x);
  Tensor b = cos(y);
  return tanh(exp(a.relu() * b) - y);
}

/// Compiling a graph with a relu raises; others run eagerly.
CompiledGraph no_relu_backend(Graph& g, const std::vector<Tensor>&) {
  for (const auto& n : g.nodes())
    EMBER_CHECK(n->target() != "aten::relu") << "relu in graph of " << g.op_count() << " ops";
  return eager_backend(g);
}

std::string call_and_get_error(const CompileOptions& options) {
  auto f = compile(user_fn, options);
  try {
    f(randn({4, 8}), randn({4, 8}));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(ReproTest, Level1WritesAReproOfTheFailingGraph) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 1;
  LogCapture logs;
  const std::string error = call_and_get_error({.custom_backend = no_relu_backend, .name = "fn"});
  ASSERT_NE(error.find("relu in graph of"), std::string::npos) << error;
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const fs::path repro = dirs[0] / "repro.txt";
  EXPECT_TRUE(fs::exists(dirs[0] / "repro.safetensors"));
  EXPECT_TRUE(fs::exists(dirs[0] / "repro.cpp"));
  EXPECT_FALSE(fs::exists(dirs[0] / "minifier_launcher.txt"));
  const std::string text = read_file(repro);
  for (const char* want : {"kind: repro\n", "backend: custom\n", "repro_after: dynamo\n", "check: error\n",
                           "failure: compile RuntimeError relu in graph of 9 ops\n", "inputs: repro.safetensors\n",
                           "aten::relu(", "# ember 0.1.0\n", "# compiler: ", "# cpu: "})
    EXPECT_NE(text.find(want), std::string::npos) << want << " not in\n" << text;
  EXPECT_NE(error.find("TORCHDYNAMO_REPRO_LEVEL=1 wrote a repro of this graph: " + repro.string()), std::string::npos)
      << error;
  EXPECT_NE(logs.text().find("repro written to " + repro.string()), std::string::npos) << logs.text();
  // It reads back: the same graph and the inputs of the call.
  debug::Repro r = debug::read_repro(repro.string());
  EXPECT_EQ(r.graph->op_count(), 9u);
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].sizes().vec(), (std::vector<int64_t>{4, 8}));
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->message, "relu in graph of 9 ops");
}

TEST_F(ReproTest, Level2WritesALauncherAndAfterDynamoMinifiesAtOnce) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 2;
  LogCapture logs;
  const std::string error = call_and_get_error({.custom_backend = no_relu_backend, .name = "fn"});
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const fs::path launcher = dirs[0] / "minifier_launcher.txt";
  ASSERT_TRUE(fs::exists(launcher));
  EXPECT_TRUE(fs::exists(dirs[0] / "minifier_launcher.safetensors"));
  EXPECT_FALSE(fs::exists(dirs[0] / "repro.txt"));
  const std::string text = read_file(launcher);
  EXPECT_NE(text.find("kind: launcher\n"), std::string::npos) << text;
  EXPECT_NE(text.find("`ember minify " + launcher.string() + "`"), std::string::npos) << text;
  EXPECT_NE(error.find("wrote a minifier launcher: " + launcher.string()), std::string::npos) << error;
  EXPECT_NE(logs.text().find("run `ember minify " + launcher.string() + "`"), std::string::npos) << logs.text();
  // The minifier ran: its repro is the relu alone.
  const fs::path minified = dirs[0] / "minified" / "repro.txt";
  ASSERT_TRUE(fs::exists(minified)) << logs.text();
  EXPECT_NE(error.find("Minified repro: " + minified.string()), std::string::npos) << error;
  debug::Repro m = debug::read_repro(minified.string());
  EXPECT_EQ(m.graph->op_count(), 1u) << *m.graph;
  EXPECT_EQ(m.graph->nodes().at(1)->target(), "aten::relu") << *m.graph;
  EXPECT_NE(logs.text().find("[minifier] "), std::string::npos);
}

TEST_F(ReproTest, Level3WritesTheLauncherBeforeTheBackendRuns) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 3;
  bool launcher_existed = false;
  auto f = compile([](const Tensor& x) { return sin(x) * 2; },
                   {.custom_backend =
                        [&](Graph& g, const std::vector<Tensor>&) {
                          const auto dirs = repro_dirs(dir);
                          launcher_existed = dirs.size() == 1 && fs::exists(dirs[0] / "minifier_launcher.txt");
                          return eager_backend(g);
                        },
                    .name = "fn"});
  f(randn({3}));
  EXPECT_TRUE(launcher_existed);
  const std::string text = read_file(repro_dirs(dir).at(0) / "minifier_launcher.txt");
  EXPECT_NE(text.find("kind: launcher\n"), std::string::npos);
  EXPECT_EQ(text.find("failure:"), std::string::npos) << "no failure is known yet:\n" << text;
}

TEST_F(ReproTest, Level4WritesALauncherOnAnAccuracyFailure) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 4;
  // A backend whose results are off by 0.1.
  Backend off = [](Graph& g, const std::vector<Tensor>&) -> CompiledGraph {
    return [&g](const std::vector<Tensor>& in) {
      std::vector<Tensor> out = run_graph(g, in);
      for (Tensor& t : out) t = t + 0.1;
      return out;
    };
  };
  const std::string error = call_and_get_error({.custom_backend = off, .name = "fn"});
  EXPECT_NE(error.find("Accuracy failed for graph"), std::string::npos) << error;
  EXPECT_NE(error.find("RMSE(compiled, fp64)"), std::string::npos) << error;
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const std::string text = read_file(dirs[0] / "minifier_launcher.txt");
  EXPECT_NE(text.find("check: accuracy\n"), std::string::npos) << text;
  EXPECT_NE(text.find("failure: accuracy output 0: RMSE"), std::string::npos) << text;
  // A correct backend passes level 4 without writing anything.
  auto g = compile([](const Tensor& x) { return sin(x); }, {.backend = "eager", .name = "fine"});
  g(randn({3}));
  EXPECT_EQ(repro_dirs(dir).size(), 1u);
}

TEST_F(ReproTest, AfterAotTheLauncherHoldsTheGraphInductorReceives) {
  config().dynamo.repro_after = "aot";
  config().dynamo.repro_level = 2;
  config().inductor.inject_relu_bug_TESTING_ONLY = "compile_error";
  const std::string error = call_and_get_error({.backend = "inductor", .name = "fn"});
  EXPECT_NE(error.find("does not compile"), std::string::npos) << error;
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const fs::path launcher = dirs[0] / "minifier_launcher.txt";
  const std::string text = read_file(launcher);
  EXPECT_NE(text.find("backend: inductor_inner\n"), std::string::npos) << text;
  EXPECT_NE(text.find("repro_after: aot\n"), std::string::npos) << text;
  EXPECT_NE(text.find("config: inductor.inject_relu_bug_TESTING_ONLY=compile_error\n"), std::string::npos) << text;
  EXPECT_NE(text.find("failure: compile RuntimeError inductor: the generated code of graph fn does not compile"),
            std::string::npos)
      << text;
  EXPECT_FALSE(fs::exists(dirs[0] / "minified")) << "only REPRO_AFTER=dynamo minifies at once";
  // `ember repro` re-runs it with the recorded knobs and sees the same failure.
  CommandResult r = run_ember("", "repro '" + launcher.string() + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("FAILS: compile error (RuntimeError): inductor: the generated code"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the same failure as recorded"), std::string::npos) << r.output;
}

TEST_F(ReproTest, AfterAotATrainingGraphGetsALauncherForItsForwardAndOneForItsBackward) {
  config().dynamo.repro_after = "aot";
  config().dynamo.repro_level = 3;  // a launcher before each compile
  Tensor w = randn({8});
  w.requires_grad_();
  auto f = compile([&w](const Tensor& x) { return (x * w).tanh().sum(); }, {.backend = "inductor", .name = "fn"});
  f(randn({4, 8})).backward();  // the backward graph is compiled here
  EXPECT_TRUE(w.grad().defined());
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 2u);
  std::string forward, backward;
  for (const fs::path& d : dirs) {
    const std::string text = read_file(d / "minifier_launcher.txt");
    EXPECT_NE(text.find("backend: inductor_inner\n"), std::string::npos) << text;
    EXPECT_NE(text.find("repro_after: aot\n"), std::string::npos) << text;
    (text.find("graph fn_backward {") != std::string::npos ? backward : forward) = text;
  }
  EXPECT_NE(forward.find("graph fn {"), std::string::npos) << forward;
  EXPECT_NE(backward.find("tangents_1"), std::string::npos) << backward;
}

TEST_F(ReproTest, Level4AfterAotChecksATrainingGraphsForwardAndBackwardGraphsWithoutFalseAlarms) {
  config().dynamo.repro_after = "aot";
  config().dynamo.repro_level = 4;
  Tensor w = randn({8});
  w.requires_grad_();
  auto fn = [&w](const Tensor& x) { return (x * w).tanh().sum(); };
  Tensor x = randn({4, 8});
  fn(x).backward();
  const Tensor expected = w.grad().clone();
  w.mutable_grad() = Tensor();
  // The forward and the backward graph are each compared with eager and a float64 run
  // (the backward's outputs are the gradients); correct graphs pass and nothing is written.
  LogCapture logs;
  compile(fn, {.backend = "inductor", .name = "fine"})(x).backward();
  expect_close(w.grad(), expected);
  EXPECT_TRUE(repro_dirs(dir).empty());
  EXPECT_EQ(logs.text().find("accuracy cannot be checked"), std::string::npos) << logs.text();
}

TEST_F(ReproTest, MalformedReproFilesNameTheFileAndLine) {
  auto g = ten_op_graph();
  debug::Repro r;
  r.graph = std::shared_ptr<Graph>(g.release());
  r.inputs = debug::random_inputs(*r.graph, 0);
  r.backend = "eager";
  const std::string path = debug::write_repro(r, dir.string(), "repro").file;
  std::string text = read_file(path);
  auto rewrite = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    const std::string bad = (dir / "bad.txt").string();
    std::ofstream(bad) << t;
    try {
      debug::read_repro(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto line_of = [&](const std::string& needle) {
    return std::to_string(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(text.find(needle)), '\n') + 1);
  };
  const std::string bad = (dir / "bad.txt").string();
  EXPECT_EQ(rewrite("check: error", "check: maybe")
                .rfind(bad + ":" + line_of("check: error") + ": expected 'check: error' or 'check: accuracy'", 0),
            0u)
      << rewrite("check: error", "check: maybe");
  const std::string op_error = rewrite("aten::exp(", "aten::expp(");
  EXPECT_EQ(op_error.rfind(bad + ":" + line_of("aten::exp(") + ": expected a registered op", 0), 0u) << op_error;
  const std::string missing = rewrite("inputs: repro.safetensors", "inputs: nowhere.safetensors");
  EXPECT_NE(missing.find("its inputs file " + (dir / "nowhere.safetensors").string() + " cannot be read"),
            std::string::npos)
      << missing;
  EXPECT_NE(rewrite("graph:\n", "").find("expected 'graph:' before the graph's text"), std::string::npos);
}

/// A repro of ten_op_graph written to `dir`; returns its text and the path of its file.
std::pair<std::string, std::string> written_repro(const std::filesystem::path& dir) {
  debug::Repro r;
  r.graph = std::shared_ptr<Graph>(ten_op_graph().release());
  r.inputs = debug::random_inputs(*r.graph, 0);
  r.backend = "eager";
  const std::string path = debug::write_repro(r, dir.string(), "repro").file;
  return {read_file(path), path};
}

/// read_repro's message for `text` written beside the repro (so its inputs file is found).
std::string repro_error(const std::filesystem::path& dir, const std::string& text) {
  const std::string bad = (dir / "bad.txt").string();
  std::ofstream(bad) << text;
  try {
    debug::read_repro(bad);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(ReproTest, AReproKeyGivenTwiceIsRejectedNamingBothLines) {
  auto [text, path] = written_repro(dir);
  const size_t at = text.find("check: error\n");
  const auto line = std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(at), '\n') + 1;
  text.insert(at, "check: accuracy\n");  // the second would silently win
  const std::string msg = repro_error(dir, text);
  EXPECT_EQ(msg.rfind((dir / "bad.txt").string() + ":" + std::to_string(line + 1) +
                          ": expected one 'check:' line (line " + std::to_string(line) + " gives it already)",
                      0),
            0u)
      << msg;
}

TEST_F(ReproTest, AReproConfigLineIsCheckedWhereItIsWritten) {
  auto [text, path] = written_repro(dir);
  const size_t at = text.find("inputs: ");
  const auto line = std::to_string(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(at), '\n') + 1);
  const std::string bad = (dir / "bad.txt").string();
  std::string unknown = text;
  unknown.insert(at, "config: dynamo.no_such_knob=1\n");
  const std::string expected = bad + ":" + line + ": expected a knob that exists and a valid value for it (";
  EXPECT_EQ(repro_error(dir, unknown).rfind(expected + "unknown config knob 'dynamo.no_such_knob'", 0), 0u)
      << repro_error(dir, unknown);
  std::string bad_value = text;
  bad_value.insert(at, "config: dynamo.cache_size_limit=many\n");
  EXPECT_EQ(repro_error(dir, bad_value).rfind(expected + "config.dynamo.cache_size_limit: expected", 0), 0u)
      << repro_error(dir, bad_value);
  EXPECT_EQ(config_get("dynamo.cache_size_limit"), "8") << "checking a value leaves the knob as it was";
}

TEST_F(ReproTest, AReproInputsFileWithAStrayTensorIsRejected) {
  auto [text, path] = written_repro(dir);
  const std::string inputs = (dir / "repro.safetensors").string();
  std::map<std::string, Tensor> tensors = load_safetensors(inputs);
  tensors["input.7"] = ones({2});  // the graph has two inputs
  save_safetensors(tensors, inputs);
  const std::string msg = repro_error(dir, text);
  EXPECT_EQ(msg.rfind(inputs + ": tensor 'input.7' belongs to no input or constant of graph fn", 0), 0u) << msg;
}

TEST_F(ReproTest, ARandomSeedMustFollowRandomAndABlank) {
  auto [text, path] = written_repro(dir);
  const size_t at = text.find("inputs: repro.safetensors");
  text.replace(at, std::string("inputs: repro.safetensors").size(), "inputs: randomX42");
  // "randomX42" used to read as seed 42; it names a file that does not exist.
  EXPECT_NE(repro_error(dir, text).find("its inputs file " + (dir / "randomX42").string() + " cannot be read"),
            std::string::npos)
      << repro_error(dir, text);
}

TEST_F(ReproTest, AReproOfADynamicGraphKeepsItsSymbolsAndRunsAtTheExampleSizes) {
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 3;  // a launcher of every graph, before the backend runs
  auto fn = compile(user_fn, {.backend = "eager", .name = "fn", .arg_names = {"x", "y"}, .dynamic = true});
  Tensor x = randn({6, 8}), y = randn({6, 8});
  expect_identical(fn(x, y), user_fn(x, y));
  const auto dirs = repro_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const fs::path launcher = dirs[0] / "minifier_launcher.txt";
  const std::string text = read_file(launcher);
  for (const char* want : {"  symbol s0 = 6 for x.size(0) [2, inf]\n", "  symbol s1 = 8 for x.size(1) [2, inf]\n",
                           "  guard s2 == s0\n", "  %x : f32[s0, s1] = placeholder[x]\n",
                           "  %y : f32[s0, s1] = placeholder[y]\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want << " not in\n" << text;

  // Read back: the symbols, and inputs of the recorded example sizes; it compiles and runs.
  debug::Repro r = debug::read_repro(launcher.string());
  const core::ShapeEnv* env = graph_text::shape_env_of(*r.graph);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->num_symbols(), 4u);
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].sizes().vec(), (std::vector<int64_t>{6, 8}));
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    debug::Checker check{lookup_backend(backend), /*accuracy=*/true};
    const std::optional<debug::Failure> failure = check(*r.graph, r.inputs);
    EXPECT_FALSE(failure) << backend << ": " << failure->str();
  }
  expect_identical(run_graph(*r.graph, r.inputs).at(0), user_fn(x, y));

  // As a standalone program: its inputs marked dynamic as the symbols were, it compiles the
  // graph again at the example sizes and runs.
  r.kind = "repro";
  const debug::WrittenRepro w = debug::write_repro(r, (dir / "program").string(), "repro");
  const std::string cpp = read_file(w.cpp);
  EXPECT_NE(cpp.find("ember::mark_dynamic(in.back(), 0, 2, std::nullopt);  // s0\n"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("ember::mark_dynamic(in.back(), 1, 2, std::nullopt);  // s1\n"), std::string::npos) << cpp;
  const fs::path exe = dir / "program" / "repro";
  CommandResult built = run_command(build_info::compile_command(w.cpp, exe.string()));
  ASSERT_EQ(built.status, 0) << built.output << "\n" << cpp;
  CommandResult ran = run_command("env OMP_NUM_THREADS=2 '" + exe.string() + "'");
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_NE(ran.output.find("not reproduced: backend eager compiles and runs"), std::string::npos) << ran.output;
  // Told other sizes, it makes its inputs at them (random values) instead of reading the file.
  EXPECT_NE(cpp.find("in.push_back(resized ? make_input({ks[0], ks[1]}, {ks[1], 1}, 0, ember::ScalarType::Float)"),
            std::string::npos)
      << cpp;
  ran = run_command("env OMP_NUM_THREADS=2 '" + exe.string() + "' s0=9 s1=5");
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_NE(ran.output.find("not reproduced: backend eager compiles and runs"), std::string::npos) << ran.output;
  ran = run_command("env OMP_NUM_THREADS=2 '" + exe.string() + "' s7=9");
  EXPECT_NE(ran.status, 0) << ran.output;
  EXPECT_NE(ran.output.find("expected s<k>=<size> with k < 4"), std::string::npos) << ran.output;
}

}  // namespace
}  // namespace ember::testing
