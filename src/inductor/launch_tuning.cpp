// inductor/launch_tuning.cpp — launch-configuration tuning (launch_tuning.h): the
// candidate sets by kernel kind and level, the timing with CUDA events over scratch
// outputs, the on-disk cache of choices and its log text.
#include "inductor/launch_tuning.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "capture/compile_mode.h"
#include "core/cuda.h"
#include "core/cuda_runtime.h"
#include "ember/config.h"
#include "ember/error.h"
#include "inductor/pipeline.h"
#include "kernels/cuda/nvrtc.h"
#include "support/disk_cache.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

std::atomic<int64_t> g_timed{0};
std::atomic<int64_t> g_from_cache{0};

// Version 2: candidates timed from a cold L2 (version 1 timed them back to back, over
// inputs the previous launch had left in the L2). The header is part of the file's key,
// so a version-1 choice is never read.
constexpr const char* kFileHeader = "ember launch tuning 2";

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up_warp(int64_t n) { return std::max<int64_t>(32, ceil_div(n, 32) * 32); }

/// One kind's rule: the heuristic's setting first, then the others of the level.
///
/// | kind      | setting          | Default          | Max                        |
/// |-----------|------------------|------------------|----------------------------|
/// | Pointwise | block x items    | —                | {128..1024} x {1, 2, 4}    |
/// | WarpRows  | rows per block   | 1, 2, 8          | 1, 2, 8, 16, 32            |
/// | WarpRegs  | rows per block   | 1, 2, 8          | 1, 2, 8                    |
/// | Columns   | warps per 32 rows| 4, 16 (128, 512) | 2, 4, 16, 32 (64 … 1024)   |
/// | BlockRows | threads per row  | h / 2, 2 h       | 128, 256, 512, 1024        |
struct Setting {
  int block;
  int64_t items;  // work items a thread (pointwise), 1 otherwise
};

std::vector<Setting> settings(TuneKind kind, int h, TuningLevel level) {
  std::vector<Setting> s = {{h, 1}};
  if (level == TuningLevel::Off || kind == TuneKind::Fixed) return s;
  const bool max = level == TuningLevel::Max;
  switch (kind) {
    case TuneKind::Pointwise:
      if (!max) break;
      for (int b : {128, 256, 512, 1024})
        for (int64_t u : {1, 2, 4}) s.push_back({b, u});
      break;
    case TuneKind::WarpRows:
      for (int r : max ? std::vector<int>{1, 2, 8, 16, 32} : std::vector<int>{1, 2, 8}) s.push_back({32 * r, 1});
      break;
    case TuneKind::WarpRegs:
      for (int r : {1, 2, 8}) s.push_back({32 * r, 1});
      break;
    case TuneKind::Columns:
      for (int b : max ? std::vector<int>{64, 128, 512, 1024} : std::vector<int>{128, 512}) s.push_back({b, 1});
      break;
    case TuneKind::BlockRows:
      if (max) {
        for (int b : {128, 256, 512, 1024}) s.push_back({b, 1});
      } else {
        s.push_back({std::max(128, h / 2), 1});
        s.push_back({std::min(1024, h * 2), 1});
      }
      break;
    case TuneKind::Fixed: break;
  }
  return s;
}

std::string what_of(TuneKind kind, const Setting& s) {
  switch (kind) {
    case TuneKind::Pointwise:
      return std::to_string(s.block) + " threads, " + std::to_string(s.items) + " work item" + (s.items > 1 ? "s" : "") +
             " a thread";
    case TuneKind::WarpRows:
    case TuneKind::WarpRegs:
      return s.block == 32 ? "1 row (warp) per block" : std::to_string(s.block / 32) + " rows (warps) per block";
    case TuneKind::Columns: return std::to_string(s.block / 32) + " warps per 32 rows";
    case TuneKind::BlockRows: return std::to_string(s.block) + " threads per row";
    case TuneKind::Fixed: break;
  }
  return std::to_string(s.block) + " threads";
}

int64_t grid_of(TuneKind kind, int64_t work, const Setting& s) {
  switch (kind) {
    case TuneKind::Pointwise:
      return ceil_div(work, s.block * s.items);
    case TuneKind::WarpRows:
    case TuneKind::WarpRegs:
      return ceil_div(work, s.block / 32);
    case TuneKind::Columns:
      return ceil_div(work, 32);  // 32 rows a block
    case TuneKind::BlockRows:
    case TuneKind::Fixed:
      return work;
  }
  return work;
}

}  // namespace

int64_t heuristic_grid(TuneKind kind, int64_t work, int heuristic_block) {
  return grid_of(kind, work, Setting{heuristic_block, 1});
}

TuningLevel tuning_level() {
  if (!config().inductor.autotune_launches) return TuningLevel::Off;
  const capture::CompileMode mode = capture::current_compile_mode();
  const bool max = mode == capture::CompileMode::MaxAutotune || mode == capture::CompileMode::MaxAutotuneNoCudagraphs ||
                   config().inductor.max_autotune;
  return max ? TuningLevel::Max : TuningLevel::Default;
}

const char* tuning_level_name(TuningLevel level) {
  switch (level) {
    case TuningLevel::Off: return "off";
    case TuningLevel::Default: return "default";
    case TuningLevel::Max: return "max-autotune";
  }
  return "?";
}

const char* tune_kind_name(TuneKind kind) {
  switch (kind) {
    case TuneKind::Fixed: return "fixed";
    case TuneKind::Pointwise: return "pointwise";
    case TuneKind::WarpRows: return "a warp per row";
    case TuneKind::WarpRegs: return "a warp per row in registers";
    case TuneKind::Columns: return "32 rows a block (columns)";
    case TuneKind::BlockRows: return "a block per row";
  }
  return "?";
}

std::vector<LaunchConfig> launch_candidates(TuneKind kind, int64_t work, int heuristic_block, TuningLevel level) {
  std::vector<LaunchConfig> out;
  const std::vector<Setting> all = settings(kind, heuristic_block, level);
  for (size_t i = 0; i < all.size(); ++i) {
    const Setting& s = all[i];
    LaunchConfig c;
    c.block = s.block;
    c.what = what_of(kind, s);
    c.grid = grid_of(kind, work, s);
    // Beyond the heuristic's: no candidate whose threads (warps, for rows) mostly idle.
    const bool warps = kind == TuneKind::WarpRows || kind == TuneKind::WarpRegs;
    const int64_t used = warps ? work * 32 : work;
    const bool idle = kind != TuneKind::BlockRows && c.block > round_up_warp(used);
    if (i > 0 && (idle || c.grid <= 0)) continue;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
  }
  return out;
}

int max_candidate_block(TuneKind kind, int heuristic_block, TuningLevel level) {
  int m = 0;
  for (const Setting& s : settings(kind, heuristic_block, level)) m = std::max(m, s.block);
  return m;
}

std::string tuning_file_text(const TuningResult& r) {
  std::ostringstream os;
  os << kFileHeader << "\nkernel " << r.kernel << "\ndevice " << r.device << "\ncandidates " << r.candidates.size()
     << "\n";
  char buf[64];
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.6f", i < r.ms.size() ? r.ms[i] : -1.0);
    os << r.candidates[i].block << " " << r.candidates[i].grid << " " << buf << "\n";
  }
  os << "choice " << r.choice << "\nend\n";
  return os.str();
}

std::optional<TuningResult> parse_tuning_file(const std::string& text, const TuningResult& expected, std::string& why) {
  std::istringstream in(text);
  std::string line;
  auto field = [&](const std::string& name, std::string& value) {
    if (!std::getline(in, line) || line.rfind(name + " ", 0) != 0) {
      why = "expected the line '" + name + " …', found " + (in ? "'" + line + "'" : std::string("the end of the file"));
      return false;
    }
    value = line.substr(name.size() + 1);
    return true;
  };
  if (!std::getline(in, line) || line != kFileHeader) {
    why = "it does not start with '" + std::string(kFileHeader) + "'";
    return std::nullopt;
  }
  TuningResult r;
  std::string count;
  if (!field("kernel", r.kernel) || !field("device", r.device) || !field("candidates", count)) return std::nullopt;
  if (r.kernel != expected.kernel || r.device != expected.device) {
    why = "it is the tuning of " + r.kernel + " on " + r.device + ", not of " + expected.kernel + " on " + expected.device;
    return std::nullopt;
  }
  if (count != std::to_string(expected.candidates.size())) {
    why = "it has " + count + " candidates, the kernel " + std::to_string(expected.candidates.size());
    return std::nullopt;
  }
  for (const LaunchConfig& want : expected.candidates) {
    LaunchConfig c;
    double ms = 0;
    std::string rest;
    if (!std::getline(in, line) || !(std::istringstream(line) >> c.block >> c.grid >> ms) || !(c == want)) {
      why = "candidate line '" + line + "' is not " + std::to_string(want.block) + " " + std::to_string(want.grid) + " <ms>";
      return std::nullopt;
    }
    c.what = want.what;
    r.candidates.push_back(std::move(c));
    r.ms.push_back(ms);
  }
  std::string choice, end;
  if (!field("choice", choice)) return std::nullopt;
  size_t used = 0;
  unsigned long index = 0;
  try {
    index = std::stoul(choice, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != choice.size() || index >= r.candidates.size()) {
    why = "its choice '" + choice + "' is not a candidate's index";
    return std::nullopt;
  }
  if (!std::getline(in, end) || end != "end" || text.back() != '\n') {
    why = "it is truncated (no 'end' line)";
    return std::nullopt;
  }
  r.choice = index;
  return r;
}

std::filesystem::path tuning_cache_path(const std::string& kernel_source, const TuningResult& expected) {
  std::string version;
  try {
    version = kernels::cuda::nvrtc_version();
  } catch (const std::exception&) {
    version = "none";
  }
  std::string key = std::string(kFileHeader) + "\n" + kernel_source + "\n" + expected.kernel + "\n" + expected.device +
                    "\n" + version + "\n";
  for (const LaunchConfig& c : expected.candidates) key += std::to_string(c.block) + "x" + std::to_string(c.grid) + ";";
  return std::filesystem::path(kernels::cuda::cubin_cache_dir()) / "tuning" / (support::hash_text(key) + ".txt");
}

std::optional<TuningResult> read_tuning_cache(const std::filesystem::path& file, const TuningResult& expected) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return std::nullopt;
  std::string why;
  std::optional<TuningResult> r = parse_tuning_file(support::read_file(file), expected, why);
  if (!r)
    EMBER_LOG(inductor, WARNING) << "inductor: ignoring the launch tuning cache file " << file.string() << " of kernel "
                                 << expected.kernel << ": " << why << "; the kernel is tuned again";
  return r;
}

void write_tuning_cache(const std::filesystem::path& file, const TuningResult& r) {
  try {
    std::filesystem::create_directories(file.parent_path());
    support::write_atomically(file, tuning_file_text(r), "inductor: the launch tuning cache");
  } catch (const std::exception& e) {
    EMBER_LOG(inductor, INFO) << "inductor: the launch tuning of " << r.kernel << " is not cached: " << e.what();
  }
}

std::string tuning_log_text(const TuningResult& r, bool from_cache) {
  std::ostringstream os;
  os << "launch tuning of " << r.kernel << " on " << r.device << (from_cache ? " (cached choice)" : "") << ": "
     << r.candidates.size() << " candidates\n";
  char buf[64];
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const LaunchConfig& c = r.candidates[i];
    const bool timed = i < r.ms.size() && r.ms[i] >= 0;
    std::snprintf(buf, sizeof buf, "%.4f ms", timed ? r.ms[i] : 0.0);
    os << "  " << (i == r.choice ? "* " : "  ") << "<<<" << c.grid << ", " << c.block << ">>> " << c.what << ": "
       << (timed ? buf : "not timed") << "\n";
  }
  const LaunchConfig& chosen = r.candidates.at(r.choice);
  os << "  chosen: <<<" << chosen.grid << ", " << chosen.block << ">>> " << chosen.what
     << (r.choice == 0 ? " (the heuristic's)" : "") << "\n";
  return os.str();
}

int64_t l2_flush_bytes(int64_t l2_bytes) { return 2 * std::max<int64_t>(l2_bytes, 1 << 20); }

void time_candidates(TuningResult& r, void* stream, const std::function<void(const LaunchConfig&)>& launch,
                     const std::function<void()>& flush, int reps) {
  namespace rt = core::cuda_rt;
  EMBER_INTERNAL_ASSERT(!r.candidates.empty() && reps > 0) << "inductor: nothing to time for " << r.kernel;
  struct Events {
    std::vector<void*> e;
    ~Events() {
      for (void* x : e) rt::event_destroy(x);
    }
  } events;
  // A start and a stop event per timed launch: the flush between two launches is not timed.
  for (int i = 0; i < 2 * reps; ++i) events.e.push_back(rt::event_create(true));
  r.ms.assign(r.candidates.size(), 0.0);
  for (size_t c = 0; c < r.candidates.size(); ++c) {
    launch(r.candidates[c]);  // warm-up
    for (int i = 0; i < reps; ++i) {
      flush();
      rt::event_record(events.e[static_cast<size_t>(2 * i)], stream);
      launch(r.candidates[c]);
      rt::event_record(events.e[static_cast<size_t>(2 * i + 1)], stream);
    }
    rt::event_synchronize(events.e.back());
    std::vector<double> t;
    for (int i = 0; i < reps; ++i)
      t.push_back(rt::event_elapsed_ms(events.e[static_cast<size_t>(2 * i)], events.e[static_cast<size_t>(2 * i + 1)]));
    std::sort(t.begin(), t.end());
    r.ms[c] = t[t.size() / 2];
  }
  r.choice = 0;
  for (size_t c = 1; c < r.ms.size(); ++c)
    if (r.ms[c] < r.ms[r.choice]) r.choice = c;
  g_timed.fetch_add(1, std::memory_order_relaxed);
}

int choose_launch(const CudaLaunch& l, void* fn, std::vector<void*> ptrs, const std::vector<size_t>& out_bytes,
                  int aligned, int device, void* stream, const std::optional<std::filesystem::path>& trace_file) {
  if (core::cuda_rt::stream_is_capturing(stream)) {
    EMBER_LOG_ARTIFACT(autotuning) << "launch tuning of " << l.symbol << " deferred: its first launch is being captured "
                                   << "into a CUDA graph; the heuristic's launch is captured";
    return -1;
  }
  TuningResult r;
  r.kernel = l.symbol;
  r.device = core::cuda_rt::device_name(device);
  r.candidates = l.candidates;
  const std::filesystem::path file = tuning_cache_path(l.kernel_hash, r);
  bool from_cache = false;
  if (std::optional<TuningResult> cached = read_tuning_cache(file, r)) {
    r = std::move(*cached);
    from_cache = true;
    g_from_cache.fetch_add(1, std::memory_order_relaxed);
  } else {
    struct Scratch {
      std::vector<void*> blocks;
      ~Scratch() {
        for (void* b : blocks) core::cuda::device_free(b);
      }
    } scratch;
    const size_t first_out = ptrs.size() - out_bytes.size();
    for (size_t o = 0; o < out_bytes.size(); ++o) {
      scratch.blocks.push_back(core::cuda::device_alloc(std::max<size_t>(out_bytes[o], 16), device));
      ptrs[first_out + o] = scratch.blocks.back();
    }

    std::vector<void*> args;
    for (size_t b = 0; b < ptrs.size(); ++b) args.push_back(kernel_arg(l, b, ptrs[b]));
    if (l.aligned_check) args.push_back(&aligned);
    try {
      // Inside the try: a device too full for the flush buffer keeps the heuristic's launch.
      const auto flush_bytes = static_cast<size_t>(l2_flush_bytes(core::cuda_rt::l2_cache_bytes(device)));
      scratch.blocks.push_back(core::cuda::device_alloc(flush_bytes, device));
      void* flush_buffer = scratch.blocks.back();
      time_candidates(
          r, stream,
          [&](const LaunchConfig& c) {
            kernels::cuda::launch_kernel(fn, static_cast<unsigned>(c.grid), static_cast<unsigned>(c.block), args.data(),
                                         stream);
          },
          [&] { core::cuda_rt::memset_async(flush_buffer, 0, flush_bytes, stream); });
    } catch (const std::exception& e) {
      EMBER_LOG(inductor, WARNING) << "inductor: the launch tuning of " << l.symbol << " failed (" << e.what()
                                   << "); it keeps the heuristic's launch";
      return 0;
    }
    write_tuning_cache(file, r);
  }
  const std::string text = tuning_log_text(r, from_cache);
  EMBER_LOG_ARTIFACT(autotuning) << text;
  if (trace_file) std::ofstream(*trace_file, std::ios::app) << text;
  return static_cast<int>(r.choice);
}

int64_t launch_tunings_timed() { return g_timed.load(std::memory_order_relaxed); }
int64_t launch_tunings_from_cache() { return g_from_cache.load(std::memory_order_relaxed); }

}  // namespace ember::inductor
