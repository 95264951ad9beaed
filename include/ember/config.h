// ember/config.h — the knobs of the troubleshooting toolkit, as C++ fields
// (`ember::config().dynamo.verbose = true`) and by name (`config_set("dynamo.verbose", "1")`).
//
// Every knob is one row of one registry (src/support/config_knobs.cpp) with its C++
// name, environment variables (PyTorch's names), type, default and meaning; `ember
// config` prints them all. The environment is read on the first call to config().
// Set knobs before compiling; the config is not synchronized across threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

struct Config {
  /// torch._dynamo.config: graph capture.
  struct Dynamo {
    /// Compiled versions kept per function before it falls back to eager (a warning names
    /// the failing guard). TORCHDYNAMO_CACHE_SIZE_LIMIT; also called `recompile_limit`.
    int64_t cache_size_limit = 8;
    /// Errors show Ember's internal stack and the user's full stack. TORCHDYNAMO_VERBOSE.
    bool verbose = false;
    /// Level of the dynamo log component when TORCH_LOGS does not name it:
    /// "DEBUG", "INFO", "WARNING" or "ERROR". After assigning the field directly, call
    /// ember::logging::apply_config() (config_set does it).
    std::string log_level = "WARNING";
    /// Where repros, minifier launchers and execution records are written.
    /// The current directory when the config is first read (as PyTorch's base_dir).
    std::string base_dir;
    /// On an error during capture, write an execution record of the frame (function,
    /// inputs) to base_dir; ember::replay(record) re-runs that frame. TORCH_COMPILE_REPLAY_RECORD.
    bool replay_record_enabled = false;
    /// An execution record to replay: the program's first call of the recorded function
    /// re-runs that frame with the recorded inputs and config instead, prints the outcome
    /// and ends the program (status 1 when the frame raises an error, 0 when it does not).
    /// `ember replay FILE` runs the recording program with it set. EMBER_REPLAY.
    std::string replay_record;
    /// Compile only functions of this name; others run eagerly. TORCHDYNAMO_DEBUG_FUNCTION.
    std::string debug_function;
    /// Where the minifier cuts: "" (off), "dynamo" (the captured graph, any backend) or
    /// "aot" (the graph after AOT autograd, inductor). TORCHDYNAMO_REPRO_AFTER.
    std::string repro_after;
    /// 1: on failure write a repro; 2: on failure write a minifier launcher; 3: write the
    /// launcher before the backend runs; 4: also check accuracy against eager.
    /// TORCHDYNAMO_REPRO_LEVEL.
    int64_t repro_level = 2;
    /// Accuracy tolerance of REPRO_LEVEL=4 (compiled vs eager with an fp64 reference).
    double repro_tolerance = 1e-3;
    /// A compile error falls back to eager with a warning instead of raising.
    /// TORCHDYNAMO_SUPPRESS_ERRORS.
    bool suppress_errors = false;
    /// Ops whose output size depends on data (`nonzero`, `masked_select`, indexing with a
    /// bool mask) stay in the graph, their size an unbacked symbol u0, u1, …, instead of
    /// breaking it. TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS. See Note [dynamic shapes].
    bool capture_dynamic_output_shape_ops = false;
  } dynamo;

  /// torch._functorch's AOT autograd: training graphs.
  struct Aot {
    /// What the backward reads: "min_cut" (recompute cheap pointwise chains when that
    /// saves bytes) or "default" (save every forward value a formula reads; for bisecting).
    /// EMBER_AOT_PARTITIONER.
    std::string partitioner = "min_cut";
    /// Layout optimization of training graphs: 2-D float32 CPU convolutions run over
    /// channels_last activations inside the graph, outputs and gradients keep eager's
    /// strides (PyTorch inductor's layout_optimization). EMBER_AOT_LAYOUT_OPTIMIZATION.
    bool layout_optimization = false;
    /// Layout optimization of inference graphs: the same rewrite, outputs keeping eager's
    /// strides; on, as PyTorch inductor's layout_optimization (Note [aot], "Layout
    /// optimization"). EMBER_AOT_INFERENCE_LAYOUT_OPTIMIZATION.
    bool inference_layout_optimization = true;
  } aot;

  /// torch._inductor.config: the code generator.
  struct Inductor {
    /// Print debug information and the generated code.
    bool debug = false;
    /// Random ops in compiled code give exactly eager's numbers (slower).
    bool fallback_random = false;
    /// Replay every graph compiled for a CUDA device as a CUDA graph, as compile mode
    /// "reduce-overhead" does for its function (torch._inductor.config.triton.cudagraphs).
    /// TORCHINDUCTOR_CUDAGRAPHS.
    bool cudagraphs = false;
    /// Time a few launch configurations of each generated CUDA kernel at the compiled
    /// graph's first call and keep the fastest (Note [inductor], "Launch tuning").
    /// EMBER_AUTOTUNE_LAUNCHES.
    bool autotune_launches = true;
    /// More candidates per generated CUDA kernel (pointwise kernels too), as compile mode
    /// "max-autotune" gives (torch._inductor.config.max_autotune). TORCHINDUCTOR_MAX_AUTOTUNE.
    bool max_autotune = false;
    /// Freezing (torch._inductor.config.freezing): an inference graph's module parameters
    /// are taken as constants — the calls computed from them alone folded at compile time,
    /// each float32 GEMM weight packed once into oneDNN's blocked layout with the GEMM's
    /// epilogue (bias, ReLU/GELU, adds) run inside it (Note [freezing]). Assumes the
    /// parameters' values do not change after the compile: a parameter replaced by another
    /// tensor recompiles (guards), one changed in place is not seen. Training graphs ignore
    /// it. TORCHINDUCTOR_FREEZING.
    bool freezing = false;
    /// A bug injected on purpose into relu's generated code, to test the minifier:
    /// "", "compile_error", "runtime_error" or "accuracy".
    std::string inject_relu_bug_TESTING_ONLY;
    /// The compiler bisector's limits (Note [minifier], "The compiler bisector"): each
    /// compile applies only the first N decisions of a subsystem and disables the rest,
    /// logging each one it disables; -1: no limit. Graph pass applications (a disabled one
    /// leaves its nodes as they are). EMBER_BISECT_MAX_GRAPH_PASSES.
    int64_t bisect_max_graph_passes = -1;
    /// Lowerings of calls to pointwise or row nodes (a disabled one is an extern call of
    /// its eager kernel, as an op without a lowering). EMBER_BISECT_MAX_LOWERINGS.
    int64_t bisect_max_lowerings = -1;
    /// Fusions of the scheduler, vertical and sibling (a disabled one leaves the node or
    /// kernel a kernel of its own). EMBER_BISECT_MAX_FUSIONS.
    int64_t bisect_max_fusions = -1;
    /// Cache of compiled kernels. TORCHINDUCTOR_CACHE_DIR; by default
    /// <temp dir>/torchinductor_<user>, set when the config is first read.
    std::string cache_dir;
    /// Where the generated code's precompiled prelude is (Note [inductor], "The
    /// precompiled prelude"): "" for the one the build made (GCC only), "off" for none
    /// (each unit parses the prelude), or a directory holding ember_inductor_prelude.h and
    /// its .gch. EMBER_PRECOMPILED_PRELUDE_DIR.
    std::string precompiled_prelude_dir;
    /// How many C++ compiler processes one graph's kernels may be compiled by, side by
    /// side (Note [inductor], "Parallel compile"): 0 (the default) for as many as the cores
    /// this process may run on, as PyTorch's inductor decides (at most 32, and one unit
    /// below 4 cores, where a further unit's own compiler time is not paid back); n > 0 for
    /// n. TORCHINDUCTOR_COMPILE_THREADS.
    int64_t compile_threads = 0;
    /// The optimization level generated C++ is compiled at (-O<n>, 0 to 3; Note [inductor],
    /// "Optimization level"). 2: measured as fast as 3 on W1–W9 and 10–20% quicker to
    /// compile for graphs of many kernels. EMBER_INDUCTOR_CPP_OPT_LEVEL.
    int64_t cpp_opt_level = 2;
    /// The trace directory (TORCH_COMPILE_DEBUG=1) and what it holds.
    struct Trace {
      /// Write torch_compile_debug/run_<time>-pid_<pid>/. TORCH_COMPILE_DEBUG.
      bool enabled = false;
      /// The directory holding torch_compile_debug/. TORCH_COMPILE_DEBUG_DIR; the current
      /// directory when the config is first read.
      std::string debug_dir;
      bool debug_log = true;             ///< debug.log: the DEBUG log lines of the compile
      bool fx_graph = true;              ///< fx_graph_readable.txt, fx_graph_runnable.cpp
      bool fx_graph_transformed = true;  ///< fx_graph_transformed.txt
      bool ir_pre_fusion = true;         ///< ir_pre_fusion.txt
      bool ir_post_fusion = true;        ///< ir_post_fusion.txt
      bool output_code = true;           ///< output_code.cpp
      bool graph_diagram = false;        ///< graph_diagram.svg. INDUCTOR_POST_FUSION_SVG
      bool compile_profile = false;      ///< compile_profile.csv: each stage's time
      /// kernel_profile.txt: each kernel's and extern call's time and GB/s over the calls
      /// so far (timing every step of every call).
      bool kernel_profile = false;
    } trace;
  } inductor;

  /// torch.backends: how the CUDA libraries compute (Note [cuda], "GEMM and convolution").
  struct Backends {
    struct Cuda {
      struct Matmul {
        /// float32 matrix products (mm, bmm, addmm, matmul, linear) on CUDA may round their
        /// inputs to TF32 (10-bit mantissa) for tensor cores. Off, as
        /// torch.backends.cuda.matmul.allow_tf32. TORCH_ALLOW_TF32_CUBLAS_OVERRIDE.
        bool allow_tf32 = false;
      } matmul;
    } cuda;
    struct Cudnn {
      /// float32 convolutions on CUDA may use TF32. On, as torch.backends.cudnn.allow_tf32.
      /// EMBER_CUDNN_ALLOW_TF32.
      bool allow_tf32 = true;
    } cudnn;
  } backends;
};

/// The process's config. The first call applies the environment; a bad value is said
/// once, as a WARNING naming the variable, what it expects, what it got and the default
/// that knob keeps (config_environment_problems() lists them). It never raises: a typo in
/// the environment must not stop a program.
Config& config();

/// Sets a knob by name: its C++ name ("dynamo.cache_size_limit"), an alias
/// ("dynamo.recompile_limit") or an environment name ("TORCHDYNAMO_CACHE_SIZE_LIMIT"),
/// from text as the environment would give it. Raises ember::Error (ValueError) for an
/// unknown name or a bad value.
void config_set(std::string_view name, std::string_view value);

/// A knob's current value as text (bools as "true"/"false").
std::string config_get(std::string_view name);

/// Resets every knob to its default and applies the environment again (TORCH_LOGS
/// included), saying each bad value as config() does; those knobs keep their defaults.
void config_reload_from_env();

/// What the last read of the environment found wrong, one line each ("invalid environment:
/// TORCHDYNAMO_REPRO_LEVEL: expected an integer from 1 to 4, got "9" (using the default,
/// 2)"), TORCH_LOGS included; empty when every variable was good. Tools that would rather
/// stop (the `ember` CLI exits with status 2) check it.
std::vector<std::string> config_environment_problems();

/// One knob of the registry, as `ember config` lists it.
struct KnobInfo {
  std::string name;                         ///< C++ name, as config_set takes it
  std::vector<std::string> aliases;         ///< other C++ names
  std::vector<std::string> env;             ///< environment variables, PyTorch's first
  std::string type;                         ///< "bool", "int", "float", "str", or the choices "'' | dynamo | aot"
  std::string default_value;                ///< as config_get prints it, or how it is found (below)
  bool default_depends_on_machine = false;  ///< default_value says how it is found: "(current directory)"
  std::string meaning;
};

/// Every knob, in registry order.
std::vector<KnobInfo> config_knobs();

/// The aligned table `ember config` prints: environment name, C++ name, type, default,
/// current value, meaning. With `markdown`, a Markdown table of the same columns.
std::string config_table(bool markdown = false);

}  // namespace ember
