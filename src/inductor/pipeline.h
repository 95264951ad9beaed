// inductor/pipeline.h — the steps of the inductor CPU backend, in pipeline order, each with
// what it requires and what it guarantees. compile_graph.cpp runs them in one function.
// See Note [inductor] (docs/notes/inductor.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "inductor/ir.h"
#include "inductor/launch_tuning.h"

namespace ember::inductor {

/// The subsystems the compiler bisector bisects by count (bisect_limits.cpp), in pipeline
/// order. See Note [minifier], "The compiler bisector".
enum class BisectSubsystem { GraphPasses, Lowerings, Fusions };

/// "graph passes", "lowerings", "fusions"; the knob is `inductor.bisect_max_<name>`
/// with `_` for the space ("inductor.bisect_max_graph_passes").
const char* bisect_subsystem_name(BisectSubsystem s);
/// One decision of `s`: "graph pass application", "lowering", "fusion".
const char* bisect_decision_noun(BisectSubsystem s);
std::string bisect_limit_knob(BisectSubsystem s);
/// The knob's field in config() (-1: no limit), to read or set.
int64_t& bisect_limit(BisectSubsystem s);

/// Starts counting `s`'s decisions for one compile of graph `graph` (each step calls it
/// when it begins: run_graph_passes, lower, schedule), forgetting those of the previous
/// compile on this thread — unless a BisectSpan is open: then counting goes on across the
/// compiles (a training graph's forward and backward) and each decision names its graph.
void bisect_begin(BisectSubsystem s, const std::string& graph = "");

/// While alive, the decisions of every compile on this thread are counted as one sequence
/// (from the bisect_begin before it), each described with " in graph <name>": the compiler
/// bisector numbers a training function's forward and backward decisions together.
class BisectSpan {
 public:
  BisectSpan();
  ~BisectSpan();
  BisectSpan(const BisectSpan&) = delete;
  BisectSpan& operator=(const BisectSpan&) = delete;
};

/// Counts one decision of `s` (described by `what`, e.g. "aten::relu (%relu)") and says
/// whether it is applied: the first config().inductor.bisect_max_<s> decisions of the
/// compile are (all of them when the limit is -1), the rest are not.
bool bisect_allows(BisectSubsystem s, const std::string& what);

/// Whether the compiler bisector counts decisions now: a limit is set, or a BisectSpan is
/// open on this thread. Compiling ahead (compile_fx_ahead) is off then, since the count
/// follows the order in which graphs are compiled.
bool bisect_active();

/// One decision the limit disabled, for the log line of the step that asked:
/// "the compiler bisector's limit inductor.bisect_max_lowerings=2 disables lowering #3".
std::string bisect_disabled_reason(BisectSubsystem s);

/// The decisions of `s` counted on this thread since its last bisect_begin, applied or not,
/// in order (decision #k is element k - 1).
const std::vector<std::string>& bisect_decisions(BisectSubsystem s);

/// Freezing's steps (inductor.freezing, Note [freezing]) are in inductor/freezing.h:
/// freeze_parameters before the graph passes, plan_frozen_linears after lowering.

/// Graph passes (graph_passes.cpp), run on the graph the AOT stage produced. Requires: a
/// functional graph. Guarantees: the same results; `addmm` read only by pointwise nodes is
/// `mm` plus a bias add those nodes can fuse (unfuse_bias_add_to_pointwise). Logs the
/// result on the `post_grad_graphs` artifact.
std::unique_ptr<Graph> run_graph_passes(const Graph& g);

/// Training-graph passes (graph_passes.cpp), run by the AOT stage on a training graph's
/// prepared forward graph before its joint graph is traced (aot_compile's before_joint),
/// `requires_grad[i]` whether forward input i requires grad. Requires: a functional
/// forward graph. Guarantees: the same results; attention written out is the fused
/// `_scaled_dot_product_flash_attention_for_cpu` (fuse_attention) where its mask cannot
/// require grad (the fused op has no gradient for it), and that op's derivative row then
/// puts its backward op in the joint graph. Returns null when nothing changed.
std::unique_ptr<Graph> run_training_graph_passes(const Graph& forward, const std::vector<bool>& requires_grad);

/// Host constants (host_constants.cpp), for a graph mixing devices. A call whose result
/// lives on a CUDA device and whose tensor arguments are all *host constants* — CPU values
/// computed from the graph's constants by pure calls (factories such as ones, arange, full,
/// then triu, comparisons, …; no input, nothing random, static sizes) — is computed once,
/// now, and becomes a graph constant on that device; the CPU values only it read go. W5's
/// causal mask (`triu(ones([T, T]), 1).to(cuda)` built inside the traced function) is one.
/// Returns the rewritten graph, or null when there is nothing to fold; `folded` gets
/// "%<node> (<op>)" for each call folded. Logs each at INFO on `inductor`.
std::unique_ptr<Graph> fold_host_constants(const Graph& g, std::vector<std::string>& folded);
/// fold_host_constants' analysis: the host constants of `g` and the calls it folds.
struct HostConstants {
  std::set<const Node*> host;
  std::set<const Node*> copies;
};
HostConstants find_host_constants(const Graph& g);

/// Lowering (lowering.cpp). Requires: a verified graph. Guarantees: every Call node has a
/// role; a Row node reduces any non-empty set of dims (softmax/layer norm: the last) of a
/// non-empty f32/f64 input, read through its index map; a Pointwise node's body reads only graph values (inputs, views,
/// other nodes) through index maps over its own sizes, and computes in its output dtype (f32/f64), or, for a
/// comparison (PointwiseNode::mask), in its inputs' one floating dtype, giving a bool mask. Calls with no
/// lowering become Extern, logged at INFO on `inductor`.
LoweredGraph lower(const Graph& g);

/// Whether lower() makes `n` a Pointwise node (graph passes ask before rewriting for fusion).
bool lowers_as_pointwise(const Node& n);

/// Every lowering (pointwise and row), by the full overload name of the op it lowers
/// ("aten::div.Tensor_mode"), with the schema arguments its rule reads; a call whose
/// other arguments differ from their defaults is an extern call. Ops not listed are never
/// lowered. See Note [inductor], "Lowering by overload".
std::vector<std::pair<std::string, std::vector<std::string>>> lowering_table();

/// The C++ definition of a scalar function a body calls (`op_sigmoid`), rendered from
/// the row of ops/scalar_ops.def (or the lowering table) it names; "" for built-ins.
std::string scalar_function_definition(const std::string& fn);

/// Scheduling and fusion (scheduler.cpp). Guarantees: every Pointwise and Row node belongs
/// to one kernel; a node is inlined into a kernel only when all of its pointwise users are
/// pointwise nodes of that kernel over the same sizes and dtype, reading it elementwise, or
/// (prologue) that kernel's row node reading it elementwise as its input, with no impure
/// call between them; a node also read outside the kernel (graph output, extern call,
/// view, other kernels) is then stored by a pointwise kernel as an extra output, only when
/// every such reader runs after the kernel; a row node joins the kernel of its users
/// (epilogue) only when they are all pointwise over its output 0's sizes and dtype — or,
/// for a keepdim reduction over the last dim (row_shaped_epilogue), over its input's sizes
/// — in one kernel that has no row node (or, row-shaped, whose row it joins as a further
/// sum or mean: joins_rows), no extra outputs and no mask as its root; sibling pointwise kernels (same sizes
/// and dtype, a common input) merge, running at the earlier one's position when everything
/// the later one reads is computed before it, or at the later one's when it reads nothing
/// of the earlier one and nothing reads the earlier one's outputs before it; never with
/// an impure call between. Kernels are ordered by the position they run at (Kernel::run_at).
/// Writes the `schedule` and `fusion` artifacts.
std::vector<Kernel> schedule(const Graph& g, const LoweredGraph& lowered);

/// Whether a kernel whose pointwise nodes are over `r`'s input sizes may compute `r` in
/// its row loop and evaluate them in its last pass (a row-shaped epilogue): `r` reduces
/// the last dim only (of size > 1), keeping it as size 1, so its users read one value per
/// row. Codegen then runs it as a row kernel (never a column kernel).
bool row_shaped_epilogue(const RowNode& r);
/// Whether reduction `r` may join, as a further pass, a kernel whose row `first` has a
/// row-shaped epilogue (`first` a reduction, not softmax or layer norm): a sum or mean over
/// the same rows, of the same dtype.
bool joins_rows(const RowNode& first, const RowNode& r);

/// Code generation (codegen_cpp.cpp). One C++ translation unit for all kernels; each
/// kernel is an `extern "C" void <name>(void* const* buffers)` taking its inputs (in the
/// order codegen stores in Kernel::inputs) then its outputs (Kernel::outputs' order, or the
/// row node's).
std::string generate_cpp(const LoweredGraph& lowered, std::vector<Kernel>& kernels);

/// generate_cpp's translation unit in pieces: `head` (the prelude and the scalar functions
/// the kernels call), each kernel's definition (in `kernels`' order), and `tail` (the
/// namespace's end). Any subset of the kernels between head and tail is a unit of its own
/// (load_or_build_units).
struct CppParts {
  std::string head;
  std::vector<std::string> kernels;
  std::string tail;
  /// The whole unit: head, every kernel, tail (generate_cpp's text).
  std::string text() const;
};
CppParts generate_cpp_parts(const LoweredGraph& lowered, std::vector<Kernel>& kernels);

/// The start of every generated translation unit (codegen_prelude.cpp): a banner line,
/// the prelude header's text (inductor/cpp_prelude.h: includes and the helpers kernels
/// call, ld/st, row_sum, row_minmax, col_sum, softmax passes, ...), then the opening of
/// namespace ember::vec, which the generated code closes.
const std::string& cpp_prelude();
/// Its parts: the banner line and the prelude header's text.
const char* cpp_prelude_banner();
const char* cpp_prelude_header();

/// How the wrapper launches one generated CUDA kernel (codegen_cuda*.cpp): its symbol, an
/// exact 1-D grid of `block`-thread blocks, and its arguments — the kernel's buffer
/// pointers (Kernel::inputs, then its outputs), then, when `aligned_check`, an int saying
/// whether every buffer is 16-byte aligned (the vector path's condition; the wrapper
/// computes it per call from the pointers).
struct CudaLaunch {
  std::string symbol;
  int64_t grid = 1;
  int block = 128;
  bool aligned_check = false;
  /// One line for the trace's launch plan ("grid 4096 x 128, a warp per row").
  std::string how;
  /// A split reduction: `split_symbol` runs first (grid split_grid x split_block), writing
  /// per-part results into a workspace of `workspace_bytes` from the caching allocator;
  /// both kernels take the buffers, then the workspace.
  std::string split_symbol;
  int64_t split_grid = 0;
  int split_block = 0;
  size_t workspace_bytes = 0;
  /// Launch tuning (launch_tuning.h): what the configuration shapes, and the candidates
  /// the kernel's one compiled function serves, the heuristic's (grid, block above) first;
  /// empty for a Fixed kernel. `kernel_hash`: a hash of the kernel's source, part of the
  /// tuning cache's key.
  TuneKind tune = TuneKind::Fixed;
  std::vector<LaunchConfig> candidates;
  std::string kernel_hash;
  /// Per input buffer: a CPU scalar of the graph, passed by value (its bytes copied from
  /// host memory at the launch) instead of as a device pointer (is_host_scalar).
  std::vector<bool> by_value;
  /// A kernel compiled over size symbols: it takes the call's symbol values (the wrapper's
  /// ks, as ember_dev::Sizes) after its other arguments, and its grid is the heuristic's
  /// for `work` (the launch's work items: pointwise threads, or rows) evaluated at each
  /// call; `grid` and `block` above are those of the example sizes. Its launch is not
  /// tuned (the candidates' times hold for one size).
  bool takes_sizes = false;
  core::sym::Expr work;
};

/// A CPU scalar (a 0-dim CPU tensor) read by a kernel of a graph for a CUDA device: PyTorch
/// allows them beside CUDA tensors, and the kernel takes its value as an argument.
inline bool is_host_scalar(const TensorMeta& m) {
  return !m.undefined && m.device.type == DeviceType::CPU && m.sizes.empty();
}

/// Whether buffer `b` of `l` is a CPU scalar passed by value.
inline bool passed_by_value(const CudaLaunch& l, size_t b) { return b < l.by_value.size() && l.by_value[b]; }

/// The launch argument of buffer `b` of `l`, whose data pointer is `ptr`: the address of
/// the pointer, or for a CPU scalar passed by value the address of its value.
inline void* kernel_arg(const CudaLaunch& l, size_t b, void*& ptr) {
  return passed_by_value(l, b) ? ptr : static_cast<void*>(&ptr);
}

/// The CUDA code of a graph: one translation unit for all its kernels (NVRTC-compiled for
/// the device's architecture), and one launch per kernel, in `kernels`' order.
struct CudaCode {
  std::string source;
  std::vector<CudaLaunch> launches;
};

/// Renames the scheduler's kernels (cpp_fused_<ops>_<k>) for CUDA (cuda_fused_<ops>_<k>);
/// generate_cuda does it too, so a trace written before it shows the same names.
void name_cuda_kernels(std::vector<Kernel>& kernels);

/// Code generation for a graph whose tensors live on a CUDA device (codegen_cuda.cpp):
/// the same kernels `schedule` made, as CUDA C++ (pointwise kernels with 16-byte vector
/// accesses where contiguous and aligned; row kernels a warp per row for short rows, a
/// block per row otherwise). Fills Kernel::inputs and may_alias_output as generate_cpp does.
/// In a graph compiled over size symbols (`num_slots` > 0: the wrapper's value slots,
/// SymbolTable::num_symbols) a kernel whose sizes are symbolic takes their values as a
/// last argument by value, computes its bounds and offsets from them, and its launch's
/// grid is computed per call (CudaLaunch::work).
CudaCode generate_cuda(const LoweredGraph& lowered, std::vector<Kernel>& kernels, size_t num_slots = 0);

/// The launch plan as readable text (output_code.cu's closing comment and the trace).
std::string launch_plan_text(const std::vector<Kernel>& kernels, const CudaCode& code);

/// A loaded shared library of generated code (cpp_builder.cpp), or several
/// (load_or_build_units).
struct LoadedCode {
  void* handle = nullptr;
  std::vector<void*> handles;
  std::string so_path;
  bool cache_hit = false;
  /// The address of each symbol asked for, in order (null for one the library lacks).
  std::vector<void*> symbols;
};

/// Builds `source` with the system compiler (build_info's, -O3 -march=native -fopenmp
/// -shared -fPIC) into config().inductor.cache_dir, keyed by a hash of source, compiler
/// and flags, dlopens it and looks up `symbols`. A cached library whose checksum sidecar
/// does not match, or that dlopen rejects, is rebuilt. Writes are atomic (temp name, then
/// rename). Times the phases "C++ compile" (the compiler's CPU time included) and "load"
/// (compile_times()).
LoadedCode load_or_build(const std::string& source, const std::vector<std::string>& symbols);

/// Starts building `source` as load_or_build would, on a thread of its own, unless the
/// cache already holds it or a build of it is under way: the compiler runs while the
/// caller goes on, and the load_or_build of the same source (same cache directory) waits
/// for it instead of running the compiler again, raising its error if it failed.
void start_build(const std::string& source);

/// Builds and loads `parts` (kernel k's function named `symbols[k]`) as load_or_build
/// does, split into translation units of whole kernels, in order, balanced by the length of
/// their text, compiled by compiler processes running side by side: as many units as
/// compile_units_allowed() gives, and no more than leaves each at least kMinUnitBytes of kernel text (below that,
/// a unit's fixed cost, the precompiled prelude's load, outweighs what it takes off the
/// others). Each unit is a
/// library (and cache entry) of its own. `so_path` is the first unit's; `cache_hit`: every
/// unit's library was in the cache. See Note [inductor], "Parallel compile".
LoadedCode load_or_build_units(const CppParts& parts, const std::vector<std::string>& symbols);

/// Starts building `parts` as load_or_build_units would, each unit as start_build does.
void start_build_units(const CppParts& parts);

/// The compiler processes one graph's units may take (config inductor.compile_threads): n
/// when it is n > 0; when 0, automatic_compile_units of the CPUs this thread may run on.
int64_t compile_units_allowed();

/// Automatic compiler processes for `cores` CPUs: one below kMinCoresToSplit (with two
/// cores, a second unit's own compiler time, about 0.2 s, was never paid back: the other
/// core runs the program or the other graph's compile), else the cores, at most 32.
int64_t automatic_compile_units(int64_t cores);
inline constexpr int64_t kMinCoresToSplit = 4;

/// The kernel text below which load_or_build_units does not split a unit further.
inline constexpr size_t kMinUnitBytes = 4096;

/// How many times this process has run the C++ compiler for generated code.
int64_t compiler_invocations();

/// The directory whose precompiled prelude (ember_inductor_prelude.h and its .gch) the
/// next compile uses: config inductor.precompiled_prelude_dir, by default the build's
/// (GCC only); none when it is "off", lacks the .gch, holds another prelude, or a unit
/// failed with it in this process (Note [inductor], "The precompiled prelude").
std::optional<std::filesystem::path> precompiled_prelude_dir();

}  // namespace ember::inductor
