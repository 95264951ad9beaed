// Host tests of launch tuning (inductor/launch_tuning.cpp) and the compile modes that set
// its level (capture/compile_mode.cpp): the candidate sets per kernel kind and level, the
// cache file (round trip; a corrupt or truncated file, or one of the warm-L2 timing, is
// ignored with a warning), the L2 flush's size, the text
// TORCH_LOGS=autotuning prints, "max-autotune" and "max-autotune-no-cudagraphs" by name
// and bad names, and the kernels written for the widest candidate sets NVRTC-compiling for
// sm_90 with launch bounds that admit every candidate.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "capture/compile_mode.h"
#include "ember/config.h"
#include "ember/graph.h"
#include "generated_cuda.h"
#include "inductor/cudagraphs.h"
#include "inductor/launch_tuning.h"
#include "inductor/pipeline.h"
#include "kernels/cuda/nvrtc.h"
#include "nvrtc_fixture.h"
#include "support/log_capture.h"

namespace ember::inductor {
namespace {

std::set<std::pair<int, int64_t>> configs(const std::vector<LaunchConfig>& c) {
  std::set<std::pair<int, int64_t>> s;
  for (const LaunchConfig& x : c) s.insert({x.block, x.grid});
  return s;
}

TEST(LaunchCandidates, TheHeuristicsConfigurationComesFirstAndNoTwoAreAlike) {
  for (TuneKind kind : {TuneKind::Pointwise, TuneKind::WarpRows, TuneKind::WarpRegs, TuneKind::Columns,
                        TuneKind::BlockRows}) {
    for (TuningLevel level : {TuningLevel::Off, TuningLevel::Default, TuningLevel::Max}) {
      SCOPED_TRACE(std::string(tune_kind_name(kind)) + " at " + tuning_level_name(level));
      const int h = kind == TuneKind::WarpRows || kind == TuneKind::WarpRegs ? 128 : 256;
      const std::vector<LaunchConfig> c = launch_candidates(kind, 100000, h, level);
      ASSERT_FALSE(c.empty());
      EXPECT_EQ(c[0].block, h);
      EXPECT_EQ(configs(c).size(), c.size()) << "a candidate repeated";
      for (const LaunchConfig& x : c) {
        EXPECT_LE(x.block, max_candidate_block(kind, h, level)) << "launch bounds below a candidate's block";
        EXPECT_GT(x.grid, 0);
        EXPECT_FALSE(x.what.empty());
      }
    }
  }
}

TEST(LaunchCandidates, DefaultTunesRowKernelsLightlyAndMaxAutotuneTunesPointwiseToo) {
  // Pointwise: only max-autotune, 4 blocks x 1, 2, 4 work items a thread.
  EXPECT_EQ(launch_candidates(TuneKind::Pointwise, 1 << 20, 256, TuningLevel::Default).size(), 1u);
  const std::vector<LaunchConfig> pw = launch_candidates(TuneKind::Pointwise, 1 << 20, 256, TuningLevel::Max);
  EXPECT_EQ(pw.size(), 12u);
  EXPECT_TRUE(configs(pw).count({1024, (1 << 20) / 4096})) << "1024 threads, 4 items each";
  EXPECT_TRUE(configs(pw).count({128, (1 << 20) / 128}));
  EXPECT_EQ(max_candidate_block(TuneKind::Pointwise, 256, TuningLevel::Default), 256);
  EXPECT_EQ(max_candidate_block(TuneKind::Pointwise, 256, TuningLevel::Max), 1024);
  // A warp per row: 4 rows a block (heuristic), 1, 2 and 8 by default (a row a block was the
  // fastest for W2's softmax and W3's layer norm rows on an H200); 1 to 32 at max.
  EXPECT_EQ(configs(launch_candidates(TuneKind::WarpRows, 1000, 128, TuningLevel::Default)),
            (std::set<std::pair<int, int64_t>>{{128, 250}, {32, 1000}, {64, 500}, {256, 125}}));
  EXPECT_EQ(launch_candidates(TuneKind::WarpRows, 1000, 128, TuningLevel::Max).size(), 6u);
  EXPECT_EQ(configs(launch_candidates(TuneKind::WarpRegs, 8192, 128, TuningLevel::Default)),
            (std::set<std::pair<int, int64_t>>{{128, 2048}, {32, 8192}, {64, 4096}, {256, 1024}}));
  // Rows held in registers: at most 8 a block, so a lane keeps its registers for the slots.
  EXPECT_EQ(launch_candidates(TuneKind::WarpRegs, 1000, 128, TuningLevel::Max).size(), 4u);
  EXPECT_EQ(max_candidate_block(TuneKind::WarpRegs, 128, TuningLevel::Max), 256);
  // A block per row: the grid is the rows whatever the block.
  for (const LaunchConfig& c : launch_candidates(TuneKind::BlockRows, 77, 512, TuningLevel::Max)) EXPECT_EQ(c.grid, 77);
  EXPECT_EQ(configs(launch_candidates(TuneKind::BlockRows, 77, 512, TuningLevel::Default)),
            (std::set<std::pair<int, int64_t>>{{512, 77}, {256, 77}, {1024, 77}}));
  // Columns: 32 rows a block whatever its warps (which split each row).
  EXPECT_EQ(configs(launch_candidates(TuneKind::Columns, 4096, 256, TuningLevel::Default)),
            (std::set<std::pair<int, int64_t>>{{256, 128}, {128, 128}, {512, 128}}));
  // Off and Fixed: the heuristic's only.
  EXPECT_EQ(launch_candidates(TuneKind::WarpRows, 1000, 128, TuningLevel::Off).size(), 1u);
  EXPECT_EQ(launch_candidates(TuneKind::Fixed, 1000, 256, TuningLevel::Max).size(), 1u);
}

TEST(LaunchCandidates, SmallKernelsDropCandidatesWhoseThreadsWouldIdle) {
  // 40 work items: no block of 128 threads or more beyond the heuristic's 256.
  const std::vector<LaunchConfig> pw = launch_candidates(TuneKind::Pointwise, 40, 256, TuningLevel::Max);
  EXPECT_EQ(configs(pw), (std::set<std::pair<int, int64_t>>{{256, 1}}));
  // 3 rows a warp each: 1 or 2 rows per block (and the heuristic's 4).
  EXPECT_EQ(configs(launch_candidates(TuneKind::WarpRows, 3, 128, TuningLevel::Max)),
            (std::set<std::pair<int, int64_t>>{{128, 1}, {32, 3}, {64, 2}}));
}

TuningResult sample() {
  TuningResult r;
  r.kernel = "cuda_fused_add_0";
  r.device = "NVIDIA H100 80GB HBM3";
  r.candidates = launch_candidates(TuneKind::WarpRows, 1000, 128, TuningLevel::Default);
  r.ms = {0.0125, 0.0130, 0.0101, 0.02};
  r.choice = 2;
  return r;
}

TEST(LaunchTuningCache, TheFileRoundTrips) {
  const TuningResult r = sample();
  std::string why;
  const std::optional<TuningResult> back = parse_tuning_file(tuning_file_text(r), r, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->kernel, r.kernel);
  EXPECT_EQ(back->device, r.device);
  EXPECT_EQ(back->choice, 2u);
  ASSERT_EQ(back->candidates.size(), r.candidates.size());
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    EXPECT_TRUE(back->candidates[i] == r.candidates[i]);
    EXPECT_EQ(back->candidates[i].what, r.candidates[i].what);
    EXPECT_NEAR(back->ms[i], r.ms[i], 1e-6);
  }
}

TEST(LaunchTuningCache, EveryTruncationOfAFileIsRejectedWithoutACrash) {
  const TuningResult r = sample();
  const std::string text = tuning_file_text(r);
  for (size_t n = 0; n < text.size(); ++n) {
    std::string why;
    EXPECT_FALSE(parse_tuning_file(text.substr(0, n), r, why)) << "prefix of " << n << " bytes accepted";
    EXPECT_FALSE(why.empty()) << "prefix of " << n << " bytes";
  }
}

TEST(LaunchTuningCache, AFileOfOtherCandidatesOrABadChoiceIsRejected) {
  const TuningResult r = sample();
  std::string why;
  TuningResult other = r;
  other.candidates = launch_candidates(TuneKind::WarpRows, 1200, 128, TuningLevel::Default);
  EXPECT_FALSE(parse_tuning_file(tuning_file_text(other), r, why));
  EXPECT_NE(why.find("candidate line"), std::string::npos) << why;
  other = r;
  other.kernel = "cuda_fused_mul_1";
  EXPECT_FALSE(parse_tuning_file(tuning_file_text(other), r, why));
  EXPECT_NE(why.find("cuda_fused_mul_1"), std::string::npos) << why;
  std::string text = tuning_file_text(r);
  text.replace(text.find("choice 2"), 8, "choice 7");
  EXPECT_FALSE(parse_tuning_file(text, r, why));
  EXPECT_NE(why.find("'7'"), std::string::npos) << why;
  text.replace(text.find("choice 7"), 8, "choice x");
  EXPECT_FALSE(parse_tuning_file(text, r, why));
  EXPECT_FALSE(parse_tuning_file("\x01\xff garbage", r, why));
}

TEST(LaunchTuningCache, AChoiceTimedOverAWarmL2IsNotRead) {
  // Version 1 timed candidates back to back, each over inputs the previous launch left in
  // the L2; its choices are not the cold-L2 ones and must be timed again.
  const TuningResult r = sample();
  std::string text = tuning_file_text(r);
  ASSERT_EQ(text.rfind("ember launch tuning 2\n", 0), 0u) << text;
  text.replace(0, std::string("ember launch tuning 2").size(), "ember launch tuning 1");
  std::string why;
  EXPECT_FALSE(parse_tuning_file(text, r, why));
  EXPECT_NE(why.find("ember launch tuning 2"), std::string::npos) << why;
}

TEST(LaunchTuningFlush, TheFlushZeroesTwiceTheL2) {
  constexpr int64_t MiB = 1 << 20;
  EXPECT_EQ(l2_flush_bytes(50 * MiB), 100 * MiB);  // an H100's L2
  EXPECT_EQ(l2_flush_bytes(60 * MiB), 120 * MiB);
  EXPECT_EQ(l2_flush_bytes(0), 2 * MiB) << "a device reporting no L2 still gets a flush";
}

/// The cache lives beside the cubins: the NVRTC fixture (skipped in a build without CUDA)
/// points it at a fresh directory.
using LaunchTuningCacheFile = kernels::cuda::Nvrtc;

TEST_F(LaunchTuningCacheFile, AWrittenChoiceIsReadBackBesideTheCubins) {
  const TuningResult r = sample();
  const std::filesystem::path file = tuning_cache_path("kernel source", r);
  EXPECT_EQ(file.parent_path(), std::filesystem::path(kernels::cuda::cubin_cache_dir()) / "tuning");
  EXPECT_FALSE(read_tuning_cache(file, r)) << "no file yet";
  write_tuning_cache(file, r);
  const std::optional<TuningResult> back = read_tuning_cache(file, r);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->choice, 2u);
  // Another kernel source, device or candidate set is another file.
  TuningResult other = r;
  other.device = "NVIDIA H200";
  EXPECT_NE(tuning_cache_path("kernel source", other), file);
  EXPECT_NE(tuning_cache_path("other source", r), file);
}

TEST_F(LaunchTuningCacheFile, ACorruptOrTruncatedFileIsIgnoredWithAWarning) {
  const TuningResult r = sample();
  const std::filesystem::path file = tuning_cache_path("kernel source", r);
  write_tuning_cache(file, r);
  const std::string text = tuning_file_text(r);
  for (const std::string& bad : {text.substr(0, text.size() / 2), std::string("not a tuning file\n"), std::string()}) {
    {
      std::ofstream out(file, std::ios::trunc | std::ios::binary);
      out << bad;
    }
    testing::LogCapture logs("inductor");
    std::optional<TuningResult> got;
    EXPECT_NO_THROW(got = read_tuning_cache(file, r));
    EXPECT_FALSE(got);
    EXPECT_NE(logs.text().find("ignoring the launch tuning cache file"), std::string::npos) << logs.text();
    EXPECT_NE(logs.text().find(r.kernel), std::string::npos) << logs.text();
  }
}

TEST(LaunchTuningLog, TheTextNamesEachCandidateItsTimeAndTheChoice) {
  const TuningResult r = sample();
  const std::string text = tuning_log_text(r, false);
  EXPECT_NE(text.find("launch tuning of cuda_fused_add_0 on NVIDIA H100 80GB HBM3: 4 candidates"), std::string::npos)
      << text;
  EXPECT_NE(text.find("<<<250, 128>>> 4 rows (warps) per block: 0.0125 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("<<<1000, 32>>> 1 row (warp) per block: 0.0130 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("* <<<500, 64>>> 2 rows (warps) per block: 0.0101 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("chosen: <<<500, 64>>> 2 rows (warps) per block\n"), std::string::npos) << text;
  TuningResult first = r;
  first.choice = 0;
  EXPECT_NE(tuning_log_text(first, true).find("(cached choice)"), std::string::npos);
  EXPECT_NE(tuning_log_text(first, true).find("(the heuristic's)"), std::string::npos);
}

TEST(CompileMode, MaxAutotuneModesAreReadByTheirTorchCompileNames) {
  EXPECT_EQ(capture::parse_compile_mode("max-autotune"), capture::CompileMode::MaxAutotune);
  EXPECT_EQ(capture::parse_compile_mode("max-autotune-no-cudagraphs"), capture::CompileMode::MaxAutotuneNoCudagraphs);
  EXPECT_STREQ(capture::compile_mode_name(capture::CompileMode::MaxAutotuneNoCudagraphs), "max-autotune-no-cudagraphs");
  for (const char* bad : {"max_autotune", "max-autotune-no-cudagraph", "MAX-AUTOTUNE"}) {
    try {
      capture::parse_compile_mode(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("unknown mode \"") + bad + "\""), std::string::npos) << what;
      EXPECT_NE(what.find("\"default\", \"reduce-overhead\", \"max-autotune\", \"max-autotune-no-cudagraphs\""),
                std::string::npos)
          << what;
    }
  }
}

TEST(CompileMode, MaxAutotuneImpliesCudaGraphsAndMoreCandidates) {
  testing::reset_diagnostics();
  EXPECT_FALSE(cudagraphs_wanted());
  EXPECT_EQ(tuning_level(), TuningLevel::Default);
  {
    capture::CompileModeScope scope(capture::CompileMode::MaxAutotune);
    EXPECT_TRUE(cudagraphs_wanted());
    EXPECT_EQ(tuning_level(), TuningLevel::Max);
  }
  {
    capture::CompileModeScope scope(capture::CompileMode::MaxAutotuneNoCudagraphs);
    EXPECT_FALSE(cudagraphs_wanted());
    EXPECT_EQ(tuning_level(), TuningLevel::Max);
  }
  {
    capture::CompileModeScope scope(capture::CompileMode::ReduceOverhead);
    EXPECT_EQ(tuning_level(), TuningLevel::Default);
  }
  config().inductor.max_autotune = true;
  EXPECT_EQ(tuning_level(), TuningLevel::Max);
  config().inductor.autotune_launches = false;
  EXPECT_EQ(tuning_level(), TuningLevel::Off) << "the knob turns tuning off in every mode";
  testing::reset_diagnostics();
}

/// `text` generated under compile mode `mode`.
Generated generate_under(const std::string& text, capture::CompileMode mode) {
  capture::CompileModeScope scope(mode);
  return generate(text);
}

using LaunchTuningSource = kernels::cuda::Nvrtc;

TEST_F(LaunchTuningSource, MaxAutotuneKernelsAdmitEveryCandidateAndCompileForSm90) {
  // A vector pointwise kernel, a strided one, short rows (a warp per row), long rows
  // re-read (a block per row), a column reduction, a split reduction (fixed) and softmax
  // rows held in registers (a warp per row).
  const std::string text = R"(graph tuned {
  %x : f32[300, 257] device=cuda:0 = placeholder[x]
  %y : f16[64, 48] device=cuda:0 = placeholder[y]
  %r : f32[64, 20000] device=cuda:0 = placeholder[r]
  %c : f32[300, 2048] device=cuda:0 = placeholder[c]
  %s : f32[4, 65536] device=cuda:0 = placeholder[s]
  %mul : f32[300, 257] device=cuda:0 = aten::mul.Scalar(%x, 2)
  %t : f16[48, 64] strides=[1, 48] device=cuda:0 = aten::t(%y)
  %gelu : f16[48, 64] device=cuda:0 = aten::gelu(%t, "tanh")
  %sum : f32[300] device=cuda:0 = aten::sum.dim_IntList(%mul, [1], False, None)
  %sum_1 : f32[64] device=cuda:0 = aten::sum.dim_IntList(%r, [1], False, None)
  %sum_2 : f32[2048] device=cuda:0 = aten::sum.dim_IntList(%c, [0], False, None)
  %sum_3 : f32[4] device=cuda:0 = aten::sum.dim_IntList(%s, [1], False, None)
  %exp : f32[300, 257] device=cuda:0 = aten::exp(%x)
  %softmax : f32[300, 257] device=cuda:0 = aten::_softmax(%x, -1, False)
  return (%exp, %gelu, %sum, %sum_1, %sum_2, %sum_3, %softmax)
})";
  const Generated d = generate_under(text, capture::CompileMode::Default);
  const Generated m = generate_under(text, capture::CompileMode::MaxAutotune);
  ASSERT_EQ(d.code.launches.size(), m.code.launches.size());
  std::set<TuneKind> kinds;
  for (size_t k = 0; k < m.code.launches.size(); ++k) {
    const CudaLaunch& l = m.code.launches[k];
    SCOPED_TRACE(l.symbol + ": " + l.how);
    kinds.insert(l.tune);
    // The heuristic's launch is the same in both modes; max-autotune only adds candidates.
    EXPECT_EQ(l.block, d.code.launches[k].block);
    EXPECT_EQ(l.grid, d.code.launches[k].grid);
    if (l.tune == TuneKind::Fixed) {
      EXPECT_TRUE(l.candidates.empty());
      continue;
    }
    ASSERT_FALSE(l.candidates.empty());
    EXPECT_GE(l.candidates.size(), d.code.launches[k].candidates.size());
    EXPECT_EQ(l.candidates[0].block, l.block);
    EXPECT_EQ(l.candidates[0].grid, l.grid);
    // Its function admits the largest candidate's block.
    int widest = 0;
    for (const LaunchConfig& c : l.candidates) widest = std::max(widest, c.block);
    const std::string head = "__launch_bounds__(" + std::to_string(max_candidate_block(l.tune, l.block, TuningLevel::Max)) +
                             ") " + l.symbol + "(";
    EXPECT_NE(m.code.source.find(head), std::string::npos) << head;
    EXPECT_GE(max_candidate_block(l.tune, l.block, TuningLevel::Max), widest);
    EXPECT_FALSE(l.kernel_hash.empty());
  }
  EXPECT_EQ(kinds, (std::set<TuneKind>{TuneKind::Pointwise, TuneKind::WarpRows, TuneKind::WarpRegs, TuneKind::BlockRows,
                                        TuneKind::Columns, TuneKind::Fixed}))
      << "every kind of kernel in the graph";
  EXPECT_NE(m.code.source.find("t += static_cast<IDX>(gridDim.x) * blockDim.x"), std::string::npos)
      << "pointwise kernels loop over their work items by the launch's size";
  EXPECT_NE(launch_plan_text(m.kernels, m.code).find("launch candidates (pointwise)"), std::string::npos);
  EXPECT_NO_THROW(kernels::cuda::compile_cubin(d.code.source, "sm_90")) << d.code.source;
  EXPECT_NO_THROW(kernels::cuda::compile_cubin(m.code.source, "sm_90")) << m.code.source;
}

}  // namespace
}  // namespace ember::inductor
