// GPU tests of launch tuning (inductor/launch_tuning.cpp, Note [inductor], "Launch
// tuning"): every candidate launch configuration of pointwise, warp-row, block-row and
// column kernels gives eager CUDA's results (each forced through the cache file); a second
// compile reads the cached choice and times nothing; kernels whose outputs go over their
// inputs, and functions that mutate their inputs, give eager's results after tuning; under
// "max-autotune" (CUDA graphs) tuning runs at the warm-up call, before the capture, and
// the replays equal eager; the trace directory records the choices; each timed launch
// follows an L2 flush, the warm-up launch none.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/cuda.h"
#include "core/cuda_runtime.h"
#include "ember/compile.h"
#include "ember/config.h"
#include "ember/ember.h"
#include "gpu_helpers.h"
#include "inductor/launch_tuning.h"
#include "kernels/cuda/nvrtc.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember::gpu_test {
namespace {

Tensor on_gpu(IntArrayRef sizes, ScalarType dtype, uint64_t seed = 7) {
  return random_values(sizes, dtype, -2, 2, seed).cuda();
}

const CompileOptions kMaxNoGraphs{.backend = "inductor", .mode = "max-autotune-no-cudagraphs"};

/// A fresh inductor cache per test (CompileDirTest), on a GPU.
class LaunchTuning : public testing::CompileDirTest, public ::testing::WithParamInterface<ScalarType> {
 protected:
  void SetUp() override {
    CompileDirTest::SetUp();
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  }
  static std::filesystem::path tuning_dir() {
    return std::filesystem::path(kernels::cuda::cubin_cache_dir()) / "tuning";
  }
  static std::vector<std::filesystem::path> tuning_files() {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(tuning_dir(), ec)) files.push_back(e.path());
    return files;
  }
};

/// A cache file's candidate lines ("block grid ms"), and the file with its choice set to `i`.
std::vector<std::pair<int, int64_t>> candidates_in(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::pair<int, int64_t>> out;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("candidates ", 0) == 0) {
      n = std::stoul(line.substr(11));
      for (size_t i = 0; i < n && std::getline(in, line); ++i) {
        std::istringstream l(line);
        int block = 0;
        int64_t grid = 0;
        l >> block >> grid;
        out.emplace_back(block, grid);
      }
    }
  }
  return out;
}

std::string with_choice(const std::string& text, size_t i) {
  const size_t at = text.find("\nchoice ");
  return text.substr(0, at) + "\nchoice " + std::to_string(i) + "\nend\n";
}

/// `fn` compiled under max-autotune without CUDA graphs equals eager at its first call
/// (tuning); then, for each candidate index i, every kernel's cache file is made to choose
/// its candidate i (its last when it has fewer), a fresh compile reads those choices
/// (timing nothing, the log showing the choice) and equals eager.
template <typename Fn, typename... Args>
void expect_every_candidate_equals_eager(const std::filesystem::path& dir, Fn fn, const Args&... args) {
  const Tensor want = fn(args...).cpu();
  const Tolerance tol = compiled_tolerance(want.dtype());
  {
    auto compiled = compile(fn, kMaxNoGraphs);
    EXPECT_EQ(mismatch(compiled(args...), want, tol), "") << "the tuning call";
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) files.push_back(e.path());
  ASSERT_FALSE(files.empty()) << "no kernel was tuned";
  std::vector<std::string> texts;
  size_t most = 0;
  for (const auto& f : files) {
    texts.push_back(testing::read_text(f));
    most = std::max(most, candidates_in(texts.back()).size());
  }
  ASSERT_GT(most, 1u);
  for (size_t i = 0; i < most; ++i) {
    SCOPED_TRACE("candidate " + std::to_string(i));
    std::vector<std::string> chosen;
    for (size_t f = 0; f < files.size(); ++f) {
      const auto c = candidates_in(texts[f]);
      const size_t pick = std::min(i, c.size() - 1);
      std::ofstream(files[f], std::ios::trunc) << with_choice(texts[f], pick);
      chosen.push_back("chosen: <<<" + std::to_string(c[pick].second) + ", " + std::to_string(c[pick].first) + ">>>");
    }
    testing::LogCapture logs("autotuning");
    const int64_t timed = inductor::launch_tunings_timed();
    auto compiled = compile(fn, kMaxNoGraphs);
    EXPECT_EQ(mismatch(compiled(args...), want, tol), "");
    EXPECT_EQ(inductor::launch_tunings_timed(), timed) << "the choices come from the cache";
    for (const std::string& c : chosen) EXPECT_NE(logs.text().find(c), std::string::npos) << c << "\n" << logs.text();
  }
}

TEST_P(LaunchTuning, EveryPointwiseCandidateEqualsEager) {
  const ScalarType t = GetParam();
  // Contiguous (vector kernel) and transposed (strided kernel) inputs.
  auto w1 = [](const Tensor& x) {
    return sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), std::nullopt, Scalar(10));
  };
  expect_every_candidate_equals_eager(tuning_dir(), w1, on_gpu({301, 257}, t));
  std::filesystem::remove_all(tuning_dir());
  expect_every_candidate_equals_eager(tuning_dir(), w1, on_gpu({640, 96}, t).t());
}

TEST_P(LaunchTuning, EveryRowCandidateEqualsEager) {
  const ScalarType t = GetParam();
  // A warp per row (rows per block), a block per row re-reading its row (threads per
  // row), a thread per column (threads per block).
  expect_every_candidate_equals_eager(
      tuning_dir(), [](const Tensor& x) { return softmax(x, -1) * 3 + sum(x * x, {1}, true); }, on_gpu({300, 257}, t));
  std::filesystem::remove_all(tuning_dir());
  expect_every_candidate_equals_eager(
      tuning_dir(), [](const Tensor& x) { return sum(x * x, {1}) * 0.5 + amax(x, {1}); }, on_gpu({96, 20000}, t));
  std::filesystem::remove_all(tuning_dir());
  expect_every_candidate_equals_eager(
      tuning_dir(), [](const Tensor& x) { return sum(x, {0}, true) + 1; }, on_gpu({300, 2048}, t));
}

TEST_P(LaunchTuning, ASecondCompileReadsTheCachedChoiceWithoutTiming) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& x) { return sum(exp(x) * 2, {1}) + 1; };  // a row kernel: tuned in "default"
  const Tensor x = on_gpu({4096, 512}, t);
  const Tensor want = f(x).cpu();
  const int64_t timed0 = inductor::launch_tunings_timed(), cached0 = inductor::launch_tunings_from_cache();
  {
    testing::LogCapture logs("autotuning");
    auto first = compile(f, {.backend = "inductor"});
    EXPECT_EQ(mismatch(first(x), want, compiled_tolerance(t)), "");
    (void)first(x);
    EXPECT_EQ(inductor::launch_tunings_timed(), timed0 + 1) << "one row kernel, timed once\n" << logs.text();
    EXPECT_NE(logs.text().find("launch tuning of cuda_"), std::string::npos) << logs.text();
    EXPECT_NE(logs.text().find(" ms\n"), std::string::npos) << logs.text();
  }
  EXPECT_EQ(tuning_files().size(), 1u);
  testing::LogCapture logs("autotuning");
  auto second = compile(f, {.backend = "inductor"});
  EXPECT_EQ(mismatch(second(x), want, compiled_tolerance(t)), "");
  EXPECT_EQ(inductor::launch_tunings_timed(), timed0 + 1) << "no timing runs";
  EXPECT_EQ(inductor::launch_tunings_from_cache(), cached0 + 1);
  EXPECT_NE(logs.text().find("(cached choice)"), std::string::npos) << logs.text();
}

TEST_P(LaunchTuning, ACorruptCacheFileIsTunedAgainWithAWarning) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& x) { return sum(x, {1}) * 2; };
  const Tensor x = on_gpu({2048, 300}, t);
  (void)compile(f, {.backend = "inductor"})(x);
  ASSERT_EQ(tuning_files().size(), 1u);
  std::ofstream(tuning_files()[0], std::ios::trunc) << "ember launch tuning 1\nkernel cuda_";
  testing::LogCapture logs("inductor");
  const int64_t timed = inductor::launch_tunings_timed();
  EXPECT_EQ(mismatch(compile(f, {.backend = "inductor"})(x), f(x).cpu(), compiled_tolerance(t)), "");
  EXPECT_EQ(inductor::launch_tunings_timed(), timed + 1);
  EXPECT_NE(logs.text().find("ignoring the launch tuning cache file"), std::string::npos) << logs.text();
}

TEST_P(LaunchTuning, KernelsWritingOverTheirInputsGiveEagerResultsAfterTuning) {
  const ScalarType t = GetParam();
  // relu(a) * 2 + 1 may write over the product `a` (it dies there): the candidates must not.
  const Tensor w = on_gpu({128, 128}, t, 3) * 0.1;
  auto f = [](const Tensor& x, const Tensor& w) {
    const Tensor a = matmul(x, w);
    const Tensor b = relu(a) * 2 + 1;
    return matmul(b, w) + sum(b, {1}, true);
  };
  const Tensor x = on_gpu({256, 128}, t);
  auto compiled = compile(f, kMaxNoGraphs);
  for (int call = 0; call < 2; ++call)
    EXPECT_EQ(mismatch(compiled(x, w), f(x, w).cpu(), compiled_tolerance(t)), "") << "call " << call + 1;
}

TEST_P(LaunchTuning, FunctionsMutatingTheirInputsGiveEagerResultsAfterTuning) {
  const ScalarType t = GetParam();
  auto f = [](Tensor x, Tensor acc) {
    x.mul_(0.5).add_(1);      // a pointwise update of an input (bounded over the calls)
    acc.add_(sum(x, {1}));    // an accumulation into an input
    return softmax(x, -1);
  };
  const Tensor x0 = on_gpu({64, 1000}, t), acc0 = on_gpu({64}, t, 9);
  Tensor xe = x0.clone(), ae = acc0.clone(), xc = x0.clone(), ac = acc0.clone();
  auto compiled = compile(f, kMaxNoGraphs);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call + 1));
    const Tensor want = f(xe, ae);
    const Tensor got = compiled(xc, ac);
    EXPECT_EQ(mismatch(got, want.cpu(), compiled_tolerance(t)), "");
    EXPECT_EQ(mismatch(xc, xe.cpu(), compiled_tolerance(t)), "") << "the mutated input";
    EXPECT_EQ(mismatch(ac, ae.cpu(), compiled_tolerance(t)), "") << "the accumulated input";
  }
}

TEST_P(LaunchTuning, MaxAutotuneTunesAtTheWarmUpAndRecordsTheGraphAfter) {
  const ScalarType t = GetParam();
  auto f = [](const Tensor& x) { return softmax(x * 2, -1) + sum(exp(x), {1}, true) * 0.01 + x; };
  auto compiled = compile(f, {.backend = "inductor", .mode = "max-autotune"});
  testing::LogCapture logs("autotuning,cudagraphs");
  for (uint64_t call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call + 1));
    const Tensor x = on_gpu({128, 1000}, t, 100 + call);
    EXPECT_EQ(mismatch(compiled(x), f(x).cpu(), compiled_tolerance(t)), "");
  }
  const std::string text = logs.text();
  const size_t tuned = text.find("launch tuning of"), recorded = text.find("recorded a CUDA graph");
  ASSERT_NE(tuned, std::string::npos) << text;
  ASSERT_NE(recorded, std::string::npos) << text;
  EXPECT_LT(tuned, recorded) << "tuning runs at the warm-up call, before the capture\n" << text;
  EXPECT_EQ(text.find("launch tuning of", recorded), std::string::npos) << "nothing tuned during or after capture\n"
                                                                          << text;
  EXPECT_EQ(text.find("deferred"), std::string::npos) << text;
  EXPECT_EQ(testing::count_of(text, "recorded a CUDA graph"), 1u) << text;
}

TEST_P(LaunchTuning, TheTraceDirectoryRecordsTheChoices) {
  namespace fs = std::filesystem;
  const ScalarType t = GetParam();
  config().inductor.trace.enabled = true;
  config().inductor.trace.debug_dir = (root_ / "trace").string();
  auto f = [](const Tensor& x) { return sum(x, {1}) + amax(x * 2, {1}); };
  const Tensor x = on_gpu({1024, 700}, t);
  EXPECT_EQ(mismatch(compile(f, {.backend = "inductor"})(x), f(x).cpu(), compiled_tolerance(t)), "");
  std::string text;
  for (const auto& run : fs::directory_iterator(root_ / "trace" / "torch_compile_debug"))
    for (const auto& g : fs::directory_iterator(run.path() / "torchinductor"))
      if (fs::exists(g.path() / "launch_tuning.txt")) text += testing::read_text(g.path() / "launch_tuning.txt");
  EXPECT_NE(text.find("launch tuning of cuda_"), std::string::npos) << text;
  EXPECT_NE(text.find("chosen: <<<"), std::string::npos) << text;
}

/// time_candidates' order of work on the stream: per candidate one untimed warm-up launch,
/// then each timed launch right after a flush of the L2 (a flush that is not timed).
TEST(LaunchTuningTiming, EveryTimedLaunchFollowsAFlushAndTheWarmUpDoesNot) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const int device = core::cuda_rt::current_device();
  void* stream = core::cuda::current_stream_handle(device);
  const auto bytes = static_cast<size_t>(inductor::l2_flush_bytes(core::cuda_rt::l2_cache_bytes(device)));
  void* buffer = core::cuda::device_alloc(bytes, device);
  inductor::TuningResult r;
  r.kernel = "order";
  r.candidates = {{128, 4, "a"}, {256, 2, "b"}};
  std::string order;
  inductor::time_candidates(
      r, stream, [&](const inductor::LaunchConfig& c) { order += c.what; },
      [&] {
        order += "F";
        core::cuda_rt::memset_async(buffer, 0, bytes, stream);
      },
      3);
  core::cuda::device_free(buffer);
  EXPECT_EQ(order, "aFaFaFabFbFbFb") << "candidate a: warm-up, three flushed launches; then b";
  ASSERT_EQ(r.ms.size(), 2u);
  for (double ms : r.ms) EXPECT_GE(ms, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LaunchTuning, ::testing::Values(kFloat, kHalf, kBFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace ember::gpu_test
