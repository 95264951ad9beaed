// Tests of inductor's troubleshooting knobs: the TORCH_COMPILE_DEBUG trace directory (every
// file, switches, files kept when codegen fails), config().inductor.debug, the injected relu
// bugs, fallback_random, and two processes sharing the kernel cache.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

using testing::expect_close;
using testing::read_text;

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class TraceTest : public testing::CompileDirTest {
 protected:
  void enable_trace() {
    config().inductor.trace.enabled = true;
    config().inductor.trace.debug_dir = (root_ / "debug").string();
  }
  /// The one run directory, and the graph directories under its torchinductor/.
  fs::path run_dir() {
    const auto runs = entries(root_ / "debug" / "torch_compile_debug");
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? fs::path() : runs[0];
  }
  std::vector<fs::path> graph_dirs() {
    std::vector<fs::path> out;
    for (const fs::path& p : entries(run_dir() / "torchinductor"))
      if (fs::is_directory(p)) out.push_back(p);
    return out;
  }
};

/// The guide's model: Linear(10, 10) -> LayerNorm(10) -> ReLU.
void build_guide_model(nn::Sequential& model) {
  model.push_back(std::make_shared<nn::Linear>(10, 10));
  model.push_back(std::make_shared<nn::LayerNorm>(std::vector<int64_t>{10}));
  model.push_back(std::make_shared<nn::ReLU>());
}

bool close(const Tensor& a, const Tensor& b) {
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > 1e-5 + 1.3e-6 * std::abs(y[i])) return false;
  return true;
}

TEST_F(TraceTest, ATrainingGraphGetsForwardAndBackwardFoldersOfOneAotNumber) {
  enable_trace();
  nn::Sequential model;
  build_guide_model(model);
  auto compiled = compile([](nn::Sequential& m, const Tensor& x) { return m.forward(x).sum(); },
                          {.backend = "inductor", .name = "model"});
  compiled(model, ones({10, 10})).backward();  // the backward graph is compiled here
  std::vector<std::string> names;
  for (const fs::path& d : graph_dirs()) names.push_back(d.filename().string());
  ASSERT_EQ(names.size(), 2u);
  std::sort(names.begin(), names.end());
  std::smatch b, f;
  ASSERT_TRUE(std::regex_match(names[0], b, std::regex(R"(model__(\d+)_backward_(\d+)\.(\d+))"))) << names[0];
  ASSERT_TRUE(std::regex_match(names[1], f, std::regex(R"(model__(\d+)_forward_(\d+)\.(\d+))"))) << names[1];
  EXPECT_EQ(b[1].str(), f[1].str()) << "one AOT number for both graphs";
  const std::string aot_log = read_text(run_dir() / "torchinductor" / ("aot_model_" + f[1].str() + "_debug.log"));
  EXPECT_NE(aot_log.find("AOT forward graph model"), std::string::npos) << aot_log;
  EXPECT_NE(aot_log.find("AOT backward graph model"), std::string::npos) << aot_log;
  EXPECT_NE(aot_log.find("tangents_1"), std::string::npos) << aot_log;
}

TEST_F(TraceTest, TorchCompileDebugWritesEveryFileOfTheGuideModel) {
  enable_trace();
  nn::Sequential model;
  build_guide_model(model);
  auto compiled = compile([](nn::Sequential& m, const Tensor& x) { return m.forward(x); },
                          {.backend = "inductor", .name = "model"});
  NoGradGuard no_grad;
  Tensor x = ones({10, 10});
  Tensor y = compiled(model, x);
  EXPECT_TRUE(close(y, model.forward(x)));

  const fs::path run = run_dir();
  EXPECT_TRUE(std::regex_match(run.filename().string(), std::regex(R"(run_\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d_\d{6}-pid_)" +
                                                                   std::to_string(getpid()))))
      << run;
  const std::string dynamo_log = read_text(run / "torchdynamo" / "debug.log");
  EXPECT_NE(dynamo_log.find("Step 1: torchdynamo start tracing model"), std::string::npos) << dynamo_log;
  EXPECT_NE(dynamo_log.find("Step 2: done compiler function inductor"), std::string::npos) << dynamo_log;

  const auto dirs = graph_dirs();
  ASSERT_EQ(dirs.size(), 1u);
  std::smatch m;
  const std::string dname = dirs[0].filename().string();
  ASSERT_TRUE(std::regex_match(dname, m, std::regex(R"((\w+)__(\d+)_forward_(\d+)\.(\d+))"))) << dname;
  const fs::path aot_log = run / "torchinductor" / ("aot_" + m[1].str() + "_" + m[2].str() + "_debug.log");
  ASSERT_TRUE(fs::exists(aot_log)) << aot_log;
  EXPECT_NE(read_text(aot_log).find("aten::relu"), std::string::npos);

  const fs::path d = dirs[0];
  const std::string debug_log = read_text(d / "debug.log");
  EXPECT_NE(debug_log.find("Step 3: torchinductor compiling graph"), std::string::npos) << debug_log;
  EXPECT_NE(debug_log.find("Step 3: torchinductor done compiling graph"), std::string::npos) << debug_log;
  EXPECT_NE(debug_log.find("stage lowering: "), std::string::npos) << debug_log;
  EXPECT_NE(debug_log.find("stage code generation: "), std::string::npos) << debug_log;
  EXPECT_NE(debug_log.find("extern fallback: aten::"), std::string::npos) << "the Linear's GEMM\n" << debug_log;
  const std::string readable = read_text(d / "fx_graph_readable.txt");
  EXPECT_NE(readable.find("aten::relu"), std::string::npos) << readable;
  EXPECT_NE(read_text(d / "fx_graph_runnable.cpp").find("int main"), std::string::npos);
  const std::string transformed = read_text(d / "fx_graph_transformed.txt");
  EXPECT_NE(transformed.find("after inductor's graph passes"), std::string::npos) << transformed;
  EXPECT_NE(transformed.find(readable), std::string::npos)
      << "the Linear's addmm feeds layer norm, not a pointwise node: no pass changes the graph";
  const std::string pre = read_text(d / "ir_pre_fusion.txt");
  for (const char* marker :
       {": SchedulerNode(ComputedBuffer)", ": ExternKernelSchedulerNode(FallbackKernel)", ".writes = [MemoryDep('buf",
        ".unmet_dependencies = [", ".met_dependencies = [", ".group.device = cpu", ".group.iteration = ((10, 10), ())",
        ".sizes = ([10, 10], [])", "_loop_body:", "var_ranges = {c0: 10, c1: 10}", "op_relu(",
        "aten::native_layer_norm (layer_norm over the last dim)", ".group.iteration = ((10,), (10,))"})
    EXPECT_NE(pre.find(marker), std::string::npos) << marker << "\n" << pre;
  const std::string post = read_text(d / "ir_post_fusion.txt");
  EXPECT_NE(post.find("# kernel cpp_fused"), std::string::npos) << post;
  EXPECT_NE(post.find(".group.iteration"), std::string::npos) << post;
  EXPECT_NE(read_text(d / "output_code.cpp").find("extern \"C\" void cpp_fused_"), std::string::npos);
  EXPECT_FALSE(fs::exists(d / "graph_diagram.svg")) << "off by default";
  EXPECT_FALSE(fs::exists(d / "compile_profile.csv")) << "off by default";
  EXPECT_FALSE(fs::exists(d / "kernel_profile.txt")) << "off by default";
}

TEST_F(TraceTest, TraceSwitchesChooseTheFiles) {
  enable_trace();
  config().inductor.trace.ir_pre_fusion = false;
  config().inductor.trace.output_code = false;
  config().inductor.trace.fx_graph = false;
  config().inductor.trace.compile_profile = true;
  auto compiled = compile([](const Tensor& x) { return relu(x * 3 - 1); }, {.backend = "inductor"});
  compiled(randn({4, 5}));
  const auto dirs = graph_dirs();
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_FALSE(fs::exists(dirs[0] / "ir_pre_fusion.txt"));
  EXPECT_FALSE(fs::exists(dirs[0] / "output_code.cpp"));
  EXPECT_FALSE(fs::exists(dirs[0] / "fx_graph_readable.txt"));
  EXPECT_FALSE(fs::exists(dirs[0] / "fx_graph_runnable.cpp"));
  EXPECT_TRUE(fs::exists(dirs[0] / "ir_post_fusion.txt"));
  EXPECT_TRUE(fs::exists(dirs[0] / "fx_graph_transformed.txt"));
  const std::string profile = read_text(dirs[0] / "compile_profile.csv");
  EXPECT_NE(profile.find("lowering,"), std::string::npos) << profile;
  EXPECT_NE(profile.find("total,"), std::string::npos) << profile;
}

TEST_F(TraceTest, KernelProfileTimesEveryKernelAndExternCallOfEachCall) {
  enable_trace();
  config().inductor.trace.kernel_profile = true;
  auto fn = [](const Tensor& x, const Tensor& w) { return relu(mm(x * 2, w) + 1); };
  fs::path file;
  {
    auto compiled = compile(fn, {.backend = "inductor"});
    Tensor x = randn({64, 32}), w = randn({32, 48});
    for (int i = 0; i < 3; ++i) expect_close(compiled(x, w), fn(x, w), 1.3e-6, 1e-5);
    const auto dirs = graph_dirs();
    ASSERT_EQ(dirs.size(), 1u);
    file = dirs[0] / "kernel_profile.txt";
    // Written after calls 1, 2, 4, ...: after three calls the file holds two.
    const std::string after3 = read_text(file);
    EXPECT_NE(after3.find("kernel profile of graph"), std::string::npos) << after3;
    EXPECT_NE(after3.find(": 2 calls, 3 steps"), std::string::npos) << after3;
    EXPECT_NE(after3.find("kernel cpp_fused_mul_0"), std::string::npos) << after3;
    EXPECT_NE(after3.find("extern aten::mm (%mm)"), std::string::npos) << after3;
    EXPECT_NE(after3.find("kernel cpp_fused_add_relu_1"), std::string::npos) << after3;
    EXPECT_NE(after3.find("all steps"), std::string::npos) << after3;
  }
  // The compiled function is gone: the profile is written a last time with every call.
  const std::string last = read_text(file);
  EXPECT_NE(last.find(": 3 calls, 3 steps"), std::string::npos) << last;
}

TEST_F(TraceTest, InjectedCompileErrorNamesTheKernelKeepsTheFilesAndLeavesStep3Unfinished) {
  enable_trace();
  config().inductor.inject_relu_bug_TESTING_ONLY = "compile_error";
  testing::LogCapture logs("+dynamo,+inductor");
  auto compiled = compile([](const Tensor& x) { return relu(x + 2) * 5; }, {.backend = "inductor"});
  try {
    compiled(randn({3, 4}));
    FAIL() << "the injected compile error raised nothing";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("does not compile (kernel cpp_fused_"), std::string::npos) << what;
    EXPECT_NE(what.find("injected_relu_bug"), std::string::npos) << "the compiler's output: " << what;
  }
  const std::string log = logs.text();
  EXPECT_NE(log.find("Step 3: torchinductor compiling graph"), std::string::npos) << log;
  EXPECT_EQ(log.find("Step 3: torchinductor done compiling graph"), std::string::npos) << log;
  EXPECT_EQ(log.find("Step 2: done compiler function"), std::string::npos) << log;
  const auto dirs = graph_dirs();
  ASSERT_EQ(dirs.size(), 1u);
  for (const char* f : {"fx_graph_readable.txt", "fx_graph_runnable.cpp", "fx_graph_transformed.txt",
                        "ir_pre_fusion.txt", "ir_post_fusion.txt", "output_code.cpp", "debug.log"})
    EXPECT_TRUE(fs::exists(dirs[0] / f)) << f;
  EXPECT_NE(read_text(dirs[0] / "output_code.cpp").find("op_relu_injected_compile_error"), std::string::npos);
  EXPECT_EQ(read_text(dirs[0] / "debug.log").find("done compiling graph"), std::string::npos);
}

TEST_F(TraceTest, InjectedRuntimeErrorRaisesAfterTheReluKernel) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "runtime_error";
  auto compiled = compile([](const Tensor& x) { return relu(x - 1); }, {.backend = "inductor"});
  try {
    compiled(randn({3, 4}));
    FAIL() << "the injected runtime error raised nothing";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("injected runtime error after kernel cpp_fused_"), std::string::npos)
        << e.what();
  }
}

TEST_F(TraceTest, InjectedAccuracyBugMakesReluAddOneToPositives) {
  config().inductor.inject_relu_bug_TESTING_ONLY = "accuracy";
  auto compiled = compile([](const Tensor& x) { return relu(x * 1.5); }, {.backend = "inductor"});
  Tensor x = tensor({-2.0f, -0.5f, 0.5f, 2.0f});
  EXPECT_EQ(compiled(x).to_vector<float>(), (std::vector<float>{0.0f, 0.0f, 1.75f, 4.0f}));
  config().inductor.inject_relu_bug_TESTING_ONLY = "bogus";
  auto other = compile([](const Tensor& x) { return relu(x * 2.5); }, {.backend = "inductor"});
  EXPECT_THROW(other(x), Error) << "an unknown bug name is a ValueError";
}

TEST_F(TraceTest, InductorDebugPrintsStageTimesAndTheGeneratedCode) {
  config().inductor.debug = true;
  auto compiled = compile([](const Tensor& x) { return tanh(x) * 2; }, {.backend = "inductor"});
  ::testing::internal::CaptureStderr();
  compiled(randn({2, 3}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("stage lowering: "), std::string::npos) << err;
  EXPECT_NE(err.find("stage scheduling and fusion: "), std::string::npos) << err;
  EXPECT_NE(err.find("schedule of graph"), std::string::npos) << err;
  EXPECT_NE(err.find("extern \"C\" void cpp_fused_"), std::string::npos) << "the generated code: " << err;
}

TEST_F(TraceTest, CompiledDropoutEqualsEagerDropoutForTheSameSeed) {
  auto fn = [](const Tensor& x) { return dropout(x * 2, 0.5, true) + 1; };
  for (bool fallback : {true, false}) {
    config().inductor.fallback_random = fallback;
    auto compiled = compile(fn, {.backend = "inductor"});
    Tensor x = randn({64, 33});
    for (uint64_t seed : {7u, 8u}) {
      manual_seed(seed);
      Tensor c = compiled(x);
      manual_seed(seed);
      Tensor e = fn(x);
      EXPECT_EQ(c.to_vector<float>(), e.to_vector<float>()) << "fallback_random=" << fallback << " seed " << seed;
    }
  }
}

// Run by TwoProcessesCompilingTheSameGraphShareOneCacheEntry in two child processes.
TEST_F(TraceTest, CacheChildCompile) {
  const char* dir = std::getenv("EMBER_TRACE_TEST_CHILD_CACHE");
  if (!dir) GTEST_SKIP() << "runs only as a child of TwoProcessesCompilingTheSameGraphShareOneCacheEntry";
  config().inductor.cache_dir = dir;
  auto fn = [](const Tensor& x) { return sigmoid(x) * x + 0.25; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({17, 9});
  Tensor c = compiled(x), e = fn(x);
  ASSERT_TRUE(close(c, e));
}

TEST_F(TraceTest, TwoProcessesCompilingTheSameGraphShareOneCacheEntry) {
  const fs::path cache = root_ / "shared_cache";
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  const std::string child = "EMBER_TRACE_TEST_CHILD_CACHE='" + cache.string() + "' '" + exe +
                            "' --gtest_filter=TraceTest.CacheChildCompile --gtest_also_run_disabled_tests=0 >";
  const std::string cmd = "(" + child + "'" + (root_ / "a.out").string() + "' 2>&1; echo $? > '" +
                          (root_ / "a.rc").string() + "') & (" + child + "'" + (root_ / "b.out").string() +
                          "' 2>&1; echo $? > '" + (root_ / "b.rc").string() + "') & wait";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_text(root_ / "a.rc"), "0\n") << read_text(root_ / "a.out");
  EXPECT_EQ(read_text(root_ / "b.rc"), "0\n") << read_text(root_ / "b.out");
  EXPECT_NE(read_text(root_ / "a.out").find("[  PASSED  ] 1 test"), std::string::npos) << read_text(root_ / "a.out");
  EXPECT_NE(read_text(root_ / "b.out").find("[  PASSED  ] 1 test"), std::string::npos) << read_text(root_ / "b.out");
  int so = 0, sums = 0, cpp = 0, other = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    // include/<hash>/kernels/cpu/vec.h: the header the generated code includes, written once.
    if (e.path().lexically_relative(cache).begin()->string() == "include") continue;
    if (name.ends_with(".so"))
      ++so;
    else if (name.ends_with(".so.fnv"))
      ++sums;
    else if (name.ends_with(".cpp"))
      ++cpp;
    else
      ++other;
  }
  EXPECT_EQ(so, 1);
  EXPECT_EQ(sums, 1);
  EXPECT_EQ(cpp, 1);
  EXPECT_EQ(other, 0) << "no temp file is left behind";
  // The entry is valid: this process loads it without running the compiler.
  config().inductor.cache_dir = cache.string();
  const int64_t before = inductor::compiler_invocations();
  auto fn = [](const Tensor& x) { return sigmoid(x) * x + 0.25; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({17, 9});
  EXPECT_TRUE(close(compiled(x), fn(x)));
  EXPECT_EQ(inductor::compiler_invocations(), before);
  EXPECT_TRUE(inductor::last_compile_report().cache_hit);
}

}  // namespace
}  // namespace ember
