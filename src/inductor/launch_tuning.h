// inductor/launch_tuning.h — launch-configuration tuning of the CUDA code generator's
// kernels, in the manner of Triton's autotuner: per kernel a small set of candidate launch
// configurations (threads per block, elements per thread, rows per block) that one
// compiled kernel serves (it reads its configuration from blockDim and gridDim), timed with
// CUDA events at the wrapper's first call, the choice cached on disk beside the cubins and
// shown on TORCH_LOGS=autotuning. Internal to the inductor. See Note [inductor]
// (docs/notes/inductor.md), "Launch tuning".
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::inductor {

/// How many candidates a kernel gets:
///
/// | level   | when                                              | candidates                          |
/// |---------|---------------------------------------------------|-------------------------------------|
/// | Off     | inductor.autotune_launches is off                 | the heuristic's configuration only  |
/// | Default | compile mode "default" / "reduce-overhead"        | row kernels: 3 or 4; pointwise: 1   |
/// | Max     | "max-autotune*", or inductor.max_autotune         | pointwise: 12; row kernels: 5 or 6  |
enum class TuningLevel { Off, Default, Max };

/// The level of the compile under way on this thread (its compile mode and the config).
TuningLevel tuning_level();
const char* tuning_level_name(TuningLevel level);

/// What a kernel's launch configuration shapes. Each kind's kernel reads its configuration
/// at run time (blockDim.x, gridDim.x), so one compiled function serves every candidate:
///
/// | kind      | kernel                                  | tuned                                  |
/// |-----------|-----------------------------------------|----------------------------------------|
/// | Fixed     | split reductions, rows in registers     | nothing (the slots depend on the block) |
/// |           | a block per row                         |                                         |
/// | Pointwise | pointwise (grid-stride loop)            | threads per block, work items a thread  |
/// | WarpRows  | a warp per row                          | rows (warps) per block                  |
/// | WarpRegs  | a warp per row, the row in registers    | rows per block, at most 8 (256 threads: |
/// |           |                                         | the slots keep their registers)         |
/// | Columns   | a thread per row (column reductions)    | threads per block                       |
/// | BlockRows | a block per row, re-reading the row     | threads per row (= per block)           |
enum class TuneKind { Fixed, Pointwise, WarpRows, WarpRegs, Columns, BlockRows };
const char* tune_kind_name(TuneKind kind);

/// One candidate: the launch's block and grid, and what they mean for the kernel.
struct LaunchConfig {
  int block = 0;
  int64_t grid = 0;
  std::string what;  ///< "256 threads, 4 work items a thread"
  bool operator==(const LaunchConfig& o) const { return block == o.block && grid == o.grid; }
};

/// The candidates of a kernel of `kind` over `work` items (pointwise: threads' work items;
/// rows: rows) whose heuristic block is `heuristic_block`; the heuristic's configuration
/// first, no two alike. Fixed kernels and level Off give the heuristic's only.
std::vector<LaunchConfig> launch_candidates(TuneKind kind, int64_t work, int heuristic_block, TuningLevel level);

/// The grid of the heuristic's configuration (the first candidate) of a kernel of `kind`
/// over `work` items: what a kernel over size symbols is launched with at each call.
int64_t heuristic_grid(TuneKind kind, int64_t work, int heuristic_block);

/// The largest block any candidate of `kind` may have at `level` (the kernel's
/// __launch_bounds__): the heuristic's block when nothing is tuned.
int max_candidate_block(TuneKind kind, int heuristic_block, TuningLevel level);

/// What a tuning decided for one kernel: the candidates, each one's median time in ms
/// (empty when read from the cache without times), and the index of the one chosen.
struct TuningResult {
  std::string kernel;
  std::string device;
  std::vector<LaunchConfig> candidates;
  std::vector<double> ms;
  size_t choice = 0;
};

/// The cache file of a tuning: a versioned text file (one line per field and per
/// candidate, `block grid ms`), written atomically under <cubin cache dir>/tuning/.
std::string tuning_file_text(const TuningResult& r);
/// Parses a cache file for `expected` (its kernel, device and candidates): the result, or
/// nullopt with `why` saying what was wrong (a truncated or corrupt file, another
/// kernel's, other candidates).
std::optional<TuningResult> parse_tuning_file(const std::string& text, const TuningResult& expected, std::string& why);
/// The cache file of a kernel: keyed by a hash of its source (shapes are compiled in), its
/// symbol, the device's name, NVRTC's version and the candidates.
std::filesystem::path tuning_cache_path(const std::string& kernel_source, const TuningResult& expected);
/// The cached choice for `expected`, or nullopt (no file; a bad file is ignored with a
/// warning on `inductor`, never an error).
std::optional<TuningResult> read_tuning_cache(const std::filesystem::path& file, const TuningResult& expected);
/// Writes the choice (a cache that cannot be written only costs a tuning next time).
void write_tuning_cache(const std::filesystem::path& file, const TuningResult& r);

/// The text TORCH_LOGS=autotuning prints and the trace's launch_tuning.txt holds: the
/// kernel, each candidate with its time, and the choice (`from_cache`: read, not timed).
std::string tuning_log_text(const TuningResult& r, bool from_cache);

/// The bytes zeroed before each timed launch so that it reads its inputs from memory, not
/// from the L2 (twice the L2, as Triton's do_bench zeroes a buffer larger than any L2).
int64_t l2_flush_bytes(int64_t l2_bytes);

/// Times each candidate of `r` by running `launch(candidate)` on `stream`: a warm-up
/// launch, then `reps` times `flush()` (which queues the L2 flush on `stream`) and a launch
/// between two CUDA events of its own, so the flush is not timed; the median is the
/// candidate's time. Fills r.ms and r.choice (the fastest; the first of equals). Counts one
/// timing run.
void time_candidates(TuningResult& r, void* stream, const std::function<void(const LaunchConfig&)>& launch,
                     const std::function<void()>& flush, int reps = 5);

struct CudaLaunch;  // pipeline.h

/// The launch `l` of the function `fn` settles before its first launch on `stream`: the
/// cached choice, or each candidate timed (time_candidates) over the real inputs and
/// scratch outputs (`ptrs`: inputs then outputs, `out_bytes` each output's extent; the
/// candidates never write a buffer the graph reads, so kernels writing over their inputs
/// and graphs mutating theirs are safe), the choice cached, logged on `autotuning` and
/// appended to `trace_file`. Returns the candidate's index; -1 while `stream` captures a
/// CUDA graph (logged: the heuristic's launch is captured, tuning waits for a later
/// call); 0 when the timing fails (logged as a warning).
int choose_launch(const CudaLaunch& l, void* fn, std::vector<void*> ptrs, const std::vector<size_t>& out_bytes,
                  int aligned, int device, void* stream, const std::optional<std::filesystem::path>& trace_file);

/// How many kernels were timed (time_candidates) and how many choices were read from the
/// cache in this process, for tests.
int64_t launch_tunings_timed();
int64_t launch_tunings_from_cache();

}  // namespace ember::inductor
