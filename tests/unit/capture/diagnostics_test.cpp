// Tests of the diagnostics around compile(): step logs that locate a failure, verbose
// errors, compile_times(), CompileProfiler, execution records and replay, the function
// filter, and config.dynamo.log_level.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/graph_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::error_of;

class DiagnosticsCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::reset_diagnostics();
    stderr_was_ = logging::set_stderr_enabled(false);
  }
  void TearDown() override {
    testing::reset_diagnostics();
    logging::set_stderr_enabled(stderr_was_);
  }
  bool stderr_was_ = true;
};

const Backend kBroken = [](Graph&, const std::vector<Tensor>&) -> CompiledGraph {
  EMBER_FAIL() << "the backend fails on purpose";
};

TEST_F(DiagnosticsCompileTest, AFailureInCaptureLeavesStep1StartedButNotDone) {
  set_logs("dynamo");
  testing::LogCapture logs;
  auto f = compile(
      [](const Tensor& x) {
        EMBER_CHECK(!is_compiling()) << "capture fails here";
        return x;
      },
      {.name = "fails_in_step1"});
  f(ones({1}));
  const std::string t = logs.text();
  EXPECT_NE(t.find("Step 1: torchdynamo start tracing fails_in_step1"), std::string::npos) << t;
  EXPECT_EQ(t.find("Step 1: torchdynamo done tracing fails_in_step1"), std::string::npos) << t;
  EXPECT_EQ(t.find("Step 2:"), std::string::npos) << t;
}

TEST_F(DiagnosticsCompileTest, AFailureInTheBackendLeavesStep2StartedButNotDone) {
  set_logs("dynamo");
  testing::LogCapture logs;
  auto f = compile([](const Tensor& x) { return x + 1; }, {.custom_backend = kBroken, .name = "fails_in_step2"});
  EXPECT_THROW(f(ones({1})), BackendCompilerFailed);
  const std::string t = logs.text();
  EXPECT_NE(t.find("Step 1: torchdynamo start tracing fails_in_step2"), std::string::npos) << t;
  EXPECT_NE(t.find("Step 2: calling compiler function custom"), std::string::npos) << t;
  EXPECT_EQ(t.find("Step 2: done compiler function"), std::string::npos) << t;
  EXPECT_EQ(t.find("Step 1: torchdynamo done tracing"), std::string::npos) << t;
}

TEST_F(DiagnosticsCompileTest, LogLevelConfigShowsStepsAtInfo) {
  config().dynamo.log_level = "INFO";
  logging::apply_config();
  testing::LogCapture logs;
  compile([](const Tensor& x) { return x * 2; }, {.name = "at_info"})(ones({1}));
  EXPECT_NE(logs.text().find("Step 1: torchdynamo start tracing at_info"), std::string::npos) << logs.text();
}

TEST_F(DiagnosticsCompileTest, VerboseErrorsCarryTheInternalStackOtherwiseAHint) {
  auto f = compile([](const Tensor& x) { return x + 1; }, {.custom_backend = kBroken});
  std::string short_msg = error_of([&] { f(ones({1})); });
  EXPECT_NE(short_msg.find("Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace"), std::string::npos) << short_msg;
  EXPECT_EQ(short_msg.find("Internal stack"), std::string::npos) << short_msg;

  config().dynamo.verbose = true;
  auto g = compile([](const Tensor& x) { return x + 1; }, {.custom_backend = kBroken});
  std::string long_msg = error_of([&] { g(ones({1})); });
  EXPECT_NE(long_msg.find("Internal stack (most recent call first):"), std::string::npos) << long_msg;
  EXPECT_NE(long_msg.find("#0 "), std::string::npos) << long_msg;
  EXPECT_EQ(long_msg.find("Set TORCHDYNAMO_VERBOSE=1"), std::string::npos) << long_msg;
}

TEST_F(DiagnosticsCompileTest, CompileTimesCountPhasesPerFunction) {
  reset_compile_times();
  auto f = compile([](const Tensor& x) { return x.exp(); }, {.name = "timed"});
  f(ones({2}));
  f(ones({3}));
  f(ones({2}));
  bool capture = false, backend = false;
  for (const CompileTimeRow& r : compile_times_rows()) {
    if (r.function != "timed") continue;
    if (r.phase == "capture (Step 1)") {
      capture = true;
      EXPECT_EQ(r.count, 2);
    }
    if (r.phase == "backend compile (Step 2)") {
      backend = true;
      EXPECT_EQ(r.count, 2);
      EXPECT_GE(r.total_seconds, 0.0);
    }
  }
  EXPECT_TRUE(capture);
  EXPECT_TRUE(backend);
  const std::string table = compile_times();
  EXPECT_NE(table.find("function"), std::string::npos) << table;
  EXPECT_NE(table.find("timed"), std::string::npos) << table;
  EXPECT_NE(table.find("average"), std::string::npos) << table;
}

TEST_F(DiagnosticsCompileTest, CompileProfilerReportsRecompilationsWithTheirGuardsAndAdvice) {
  config().dynamo.cache_size_limit = 3;
  CompileProfiler prof;
  auto f = compile([](const Tensor& x) { return x.relu() + 1; },
                   {.custom_backend = prof.backend(), .name = "changing", .arg_names = {"x"}, .dynamic = false});
  for (int64_t n = 1; n <= 5; ++n) f(ones({n}));
  const auto stats = prof.stats().at("changing");
  EXPECT_EQ(stats.graph_op_counts.size(), 3u);
  ASSERT_EQ(stats.recompiles.size(), 2u);
  EXPECT_EQ(stats.recompiles[0].front(), "tensor 'x' size mismatch at index 0. expected 1, actual 2");
  EXPECT_EQ(stats.cache_limit_hits, 2u);
  const std::string r = prof.report();
  EXPECT_NE(r.find("Function 'changing'"), std::string::npos) << r;
  EXPECT_NE(r.find("recompilations: 2"), std::string::npos) << r;
  EXPECT_NE(r.find("cache_size_limit (3) reached: 2 calls ran eagerly"), std::string::npos) << r;
  EXPECT_NE(r.find("argument 'x' changed shape in 2 recompilation(s)"), std::string::npos) << r;
  // The advice says why the graphs stayed static and what makes sizes symbolic.
  EXPECT_NE(r.find("its graphs stay static (CompileOptions::dynamic = false"), std::string::npos) << r;
  EXPECT_NE(r.find("mark_dynamic(x, dim) or CompileOptions::dynamic = true makes sizes symbolic"), std::string::npos)
      << r;
  EXPECT_EQ(r.find("not supported"), std::string::npos) << r;
  EXPECT_EQ(r.find("takes symbolic sizes"), std::string::npos) << r;
}

// The profiler's backend takes size symbols, so by default automatic dynamic shapes make
// the changing size symbolic at the first recompilation, and the report shows the graph
// over it and says so.
TEST_F(DiagnosticsCompileTest, CompileProfilerShowsAutomaticDynamicShapesMakingTheChangingSizeSymbolic) {
  CompileProfiler prof;
  auto f = compile([](const Tensor& x) { return x.relu() + 1; },
                   {.custom_backend = prof.backend(), .name = "growing", .arg_names = {"x"}});
  for (int64_t n = 2; n <= 9; ++n) f(ones({n, 3}));
  const auto stats = prof.stats().at("growing");
  ASSERT_EQ(stats.graph_op_counts.size(), 2u);
  EXPECT_TRUE(stats.symbolic_inputs[0].empty());
  EXPECT_EQ(stats.symbolic_inputs[1], (std::vector<std::string>{"x [s0, 3]"}));
  EXPECT_EQ(stats.recompiles.size(), 1u);
  const std::string r = prof.report();
  EXPECT_NE(r.find("graph 2 takes symbolic sizes: x [s0, 3]"), std::string::npos) << r;
  EXPECT_NE(r.find("automatic dynamic shapes made the sizes that changed symbolic (graph 2: x [s0, 3])"),
            std::string::npos)
      << r;
}

TEST_F(DiagnosticsCompileTest, CompileProfilerAdvisesOnANumberThatKeepsChanging) {
  CompileProfiler prof;
  auto f = compile([](const Tensor& x, double s) { return x * s; },
                   {.custom_backend = prof.backend(), .name = "scaled", .arg_names = {"x", "s"}});
  for (double s : {1.0, 2.0, 3.0}) f(ones({2}), s);
  const std::string r = prof.report();
  EXPECT_NE(r.find("1. 's' == 1.0 (actual 2.0)"), std::string::npos) << r;
  EXPECT_NE(r.find("argument 's' changed value in 2 recompilation(s)"), std::string::npos) << r;
}

TEST_F(DiagnosticsCompileTest, ExecutionRecordReplaysTheSameError) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember_record_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  config().dynamo.base_dir = dir.string();
  config().dynamo.replay_record_enabled = true;
  testing::LogCapture logs;
  auto f = compile(
      [](const Tensor& x, double scale) {
        if (is_compiling() && x.size(0) == 3) {
          EMBER_FAIL() << "capture of a 3-element input fails (scale " << scale << ")";
        }
        return x * scale;
      },
      {.name = "recorded"});
  f(ones({3}), 2.5);  // capture fails, the call runs eagerly, the record is written
  std::vector<std::filesystem::path> records;
  for (const auto& e : std::filesystem::directory_iterator(dir / "replay")) records.push_back(e.path());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(logs.text().find(records[0].string()), std::string::npos) << "the log says where the record is";
  config().dynamo.replay_record_enabled = false;
  std::string msg = error_of([&] { replay(records[0].string()); });
  EXPECT_NE(msg.find("capture of a 3-element input fails (scale 2.5)"), std::string::npos) << msg;
  std::string missing = error_of([&] { replay((dir / "nope.safetensors").string()); });
  EXPECT_NE(missing.find("nope.safetensors"), std::string::npos) << missing;
  std::filesystem::remove_all(dir);
}

/// A function whose capture fails while `g_capture_fails` is set (eager runs it fine).
bool g_capture_fails = true;
Tensor fails_in_capture(const Tensor& x) {
  if (is_compiling() && g_capture_fails) {
    EMBER_FAIL() << "capture of this frame fails";
  }
  return x * 2;
}

/// Writes the execution record of one failed capture of fails_in_capture under `dir`.
template <typename F>
std::string record_one_failure(const std::filesystem::path& dir, F& f) {
  std::filesystem::remove_all(dir);
  config().dynamo.base_dir = dir.string();
  config().dynamo.replay_record_enabled = true;
  f(ones({3}));
  config().dynamo.replay_record_enabled = false;
  std::vector<std::filesystem::path> records;
  for (const auto& e : std::filesystem::directory_iterator(dir / "replay")) records.push_back(e.path());
  EXPECT_EQ(records.size(), 1u);
  return records.empty() ? "" : records[0].string();
}

TEST_F(DiagnosticsCompileTest, ExecutionRecordNamesTheProgramItsDirectoryAndArguments) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember_record_program_" + std::to_string(getpid()));
  auto f = compile(fails_in_capture, {.name = "recorded_program"});
  const std::map<std::string, std::string> meta = load_safetensors_metadata(record_one_failure(dir, f));
  EXPECT_EQ(meta.at("program"), std::filesystem::read_symlink("/proc/self/exe").string());
  EXPECT_EQ(meta.at("cwd"), std::filesystem::current_path().string());
  ASSERT_GE(std::stoi(meta.at("argc")), 1);
  EXPECT_NE(meta.at("argv.0").find("test_capture"), std::string::npos) << meta.at("argv.0");
  std::filesystem::remove_all(dir);
}

TEST_F(DiagnosticsCompileTest, EmberReplayRunsTheRecordedFrameAtTheFirstCallAndEndsTheProgram) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember_record_at_call_" + std::to_string(getpid()));
  auto f = compile(fails_in_capture, {.name = "replayed_at_call"});
  auto other = compile([](const Tensor& x) { return x + 1; }, {.name = "not_recorded"});
  const std::string record = record_one_failure(dir, f);
  config().dynamo.replay_record = record;  // EMBER_REPLAY, as `ember replay` sets it
  // Another function runs as usual; the recorded one replays its frame and ends the program.
  EXPECT_EQ(other(ones({2})).sum().item<float>(), 4.f);
  EXPECT_EXIT(f(zeros({7})), ::testing::ExitedWithCode(1),
              "the recorded frame of replayed_at_call \\(.*diagnostics_test.cpp:[0-9]+\\)\n"
              ".*the frame raised RuntimeError: capture of this frame fails\n.*the same error as recorded");
  g_capture_fails = false;  // "fixed": the frame now captures
  EXPECT_EXIT(f(zeros({7})), ::testing::ExitedWithCode(0), "the frame ran without error: it no longer fails");
  g_capture_fails = true;
  config().dynamo.replay_record = (dir / "missing.record.safetensors").string();
  EXPECT_EXIT(f(zeros({7})), ::testing::ExitedWithCode(2), "cannot replay EMBER_REPLAY=.*missing.record.safetensors");
  config().dynamo.replay_record = "";
  std::filesystem::remove_all(dir);
}

TEST_F(DiagnosticsCompileTest, DebugFunctionCompilesOnlyThatFunction) {
  setenv("TORCHDYNAMO_DEBUG_FUNCTION", "wanted", 1);
  config_reload_from_env();
  int compiles = 0;
  Backend counting = [&compiles](Graph& g, const std::vector<Tensor>&) {
    testing::expect_round_trip(g);
    ++compiles;
    return eager_backend(g);
  };
  auto wanted = compile([](const Tensor& x) { return x + 1; }, {.custom_backend = counting, .name = "wanted"});
  auto other = compile([](const Tensor& x) { return x + 2; }, {.custom_backend = counting, .name = "other"});
  EXPECT_EQ(other(zeros({1})).item<float>(), 2.f);
  EXPECT_EQ(compiles, 0);
  EXPECT_EQ(wanted(zeros({1})).item<float>(), 1.f);
  EXPECT_EQ(compiles, 1);
  unsetenv("TORCHDYNAMO_DEBUG_FUNCTION");
}

TEST_F(DiagnosticsCompileTest, VerboseWontConvertQuotesOnlyTheUserFileAndPutsTheStackAfter) {
  config().dynamo.verbose = true;
  testing::LogCapture logs;
  const int line = __LINE__ + 3;
  auto f = compile(
      [](const Tensor& x) {
        if (is_compiling()) (void)(x + ones({5}));  // fails while tracing only
        return x + 1;
      },
      {.name = "verbose_wont_convert"});
  f(ones({2}));
  const std::string t = logs.text();
  const std::string frame =
      "   File \"" + std::string(__FILE__) + "\", line " + std::to_string(line) + ", in verbose_wont_convert\n";
  EXPECT_NE(t.find(frame), std::string::npos) << t;
  const size_t stack = t.find("Internal stack (most recent call first):");
  EXPECT_NE(stack, std::string::npos) << t;
  EXPECT_GT(stack, t.find(frame)) << "the internal stack follows the user frame" << t;
  EXPECT_EQ(t.find("Set TORCHDYNAMO_VERBOSE=1"), std::string::npos) << t;
}

TEST_F(DiagnosticsCompileTest, DebugFunctionThatMatchesNothingSaysSoOnce) {
  setenv("TORCHDYNAMO_DEBUG_FUNCTION", "fowrard", 1);
  config_reload_from_env();
  testing::LogCapture logs;
  auto forward = compile([](const Tensor& x) { return x + 1; }, {.name = "forward"});
  auto loss = compile([](const Tensor& x) { return x.sum(); }, {.name = "loss"});
  for (int i = 0; i < 3; ++i) {
    forward(ones({2}));
    loss(ones({2}));
  }
  const std::string t = logs.text();
  const std::string said = "TORCHDYNAMO_DEBUG_FUNCTION=\"fowrard\" has matched no compiled function";
  ASSERT_NE(t.find(said), std::string::npos) << t;
  EXPECT_EQ(t.find(said), t.rfind(said)) << "said once: " << t;
  EXPECT_NE(t.find("'forward'"), std::string::npos) << "names the functions it did not match: " << t;
  unsetenv("TORCHDYNAMO_DEBUG_FUNCTION");
}

}  // namespace
}  // namespace ember
