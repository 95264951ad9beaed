// support/config_knobs.cpp — THE knob registry: one row per knob of ember::Config (plus
// TORCH_LOGS), with its names, environment variables and meaning. `ember config` prints
// this table and a test checks that it covers every row. To add a knob: add the field to
// include/ember/config.h and a row here (docs/diagnostics.md).
#include "support/config_knobs.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "ember/logging.h"

namespace ember::support {

#define EMBER_FIELD(path) [](Config& c) -> FieldRef { return &c.path; }

const std::vector<Knob>& knob_table() {
  static const std::vector<Knob> table = {
      {.name = "logs",
       .aliases = {},
       .env = {"TORCH_LOGS"},
       .field = nullptr,
       .meaning = "log levels of components and artifacts, e.g. \"+dynamo,guards\" (TORCH_LOGS=help lists the "
                  "names; ember::set_logs in C++)"},
      {.name = "dynamo.cache_size_limit",
       .aliases = {"dynamo.recompile_limit"},
       .env = {"TORCHDYNAMO_CACHE_SIZE_LIMIT"},
       .field = EMBER_FIELD(dynamo.cache_size_limit),
       .meaning = "compiled versions kept per function; past it the function runs eagerly and a warning names "
                  "the failing guard",
       .min = 0},
      {.name = "dynamo.verbose",
       .aliases = {},
       .env = {"TORCHDYNAMO_VERBOSE"},
       .field = EMBER_FIELD(dynamo.verbose),
       .meaning = "errors show Ember's internal stack and the user's full stack instead of a summary"},
      {.name = "dynamo.log_level",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(dynamo.log_level),
       .meaning = "level of the dynamo log component where TORCH_LOGS does not name dynamo",
       .choices = {"DEBUG", "INFO", "WARNING", "ERROR"},
       .after_set = [] { logging::apply_config(); }},
      {.name = "dynamo.base_dir",
       .aliases = {},
       .env = {"EMBER_BASE_DIR"},
       .field = EMBER_FIELD(dynamo.base_dir),
       .meaning = "where repros, minifier launchers and execution records are written",
       .default_note = "(current directory)"},
      {.name = "dynamo.replay_record_enabled",
       .aliases = {},
       .env = {"TORCH_COMPILE_REPLAY_RECORD"},
       .field = EMBER_FIELD(dynamo.replay_record_enabled),
       .meaning = "on an error during capture, write an execution record of the frame; ember::replay re-runs it"},
      {.name = "dynamo.replay_record",
       .aliases = {},
       .env = {"EMBER_REPLAY"},
       .field = EMBER_FIELD(dynamo.replay_record),
       .meaning = "an execution record to replay: the first call of its function re-runs the recorded frame, says "
                  "what it raised and ends the program (1: an error, 0: none); set by `ember replay FILE`"},
      {.name = "dynamo.debug_function",
       .aliases = {},
       .env = {"TORCHDYNAMO_DEBUG_FUNCTION"},
       .field = EMBER_FIELD(dynamo.debug_function),
       .meaning = "compile only functions of this name; the others run eagerly"},
      {.name = "dynamo.repro_after",
       .aliases = {},
       .env = {"TORCHDYNAMO_REPRO_AFTER"},
       .field = EMBER_FIELD(dynamo.repro_after),
       .meaning = "where the minifier cuts: the captured graph (dynamo, any backend) or the graph after AOT "
                  "autograd (aot)",
       .choices = {"", "dynamo", "aot"}},
      {.name = "dynamo.repro_level",
       .aliases = {},
       .env = {"TORCHDYNAMO_REPRO_LEVEL"},
       .field = EMBER_FIELD(dynamo.repro_level),
       .meaning = "1: on failure write a repro; 2: a minifier launcher; 3: the launcher before the backend runs; "
                  "4: also check accuracy against eager",
       .min = 1,
       .max = 4},
      {.name = "dynamo.repro_tolerance",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(dynamo.repro_tolerance),
       .meaning = "accuracy tolerance of TORCHDYNAMO_REPRO_LEVEL=4 (compiled vs eager, fp64 reference)"},
      {.name = "dynamo.suppress_errors",
       .aliases = {},
       .env = {"TORCHDYNAMO_SUPPRESS_ERRORS"},
       .field = EMBER_FIELD(dynamo.suppress_errors),
       .meaning = "a compile error falls back to eager with a warning instead of raising"},
      {.name = "dynamo.capture_dynamic_output_shape_ops",
       .aliases = {},
       .env = {"TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS"},
       .field = EMBER_FIELD(dynamo.capture_dynamic_output_shape_ops),
       .meaning = "ops whose output size depends on data (nonzero, masked_select, a bool-mask index) stay in the "
                  "graph with an unbacked size symbol u0, u1, … instead of breaking it"},
      {.name = "aot.partitioner",
       .aliases = {},
       .env = {"EMBER_AOT_PARTITIONER"},
       .field = EMBER_FIELD(aot.partitioner),
       .meaning = "how training graphs are split: min_cut recomputes cheap pointwise chains in the backward, "
                  "default saves every value the backward reads",
       .choices = {"min_cut", "default"}},
      {.name = "aot.layout_optimization",
       .aliases = {},
       .env = {"EMBER_AOT_LAYOUT_OPTIMIZATION"},
       .field = EMBER_FIELD(aot.layout_optimization),
       .meaning = "training graphs run 2-D float32 CPU convolutions over channels_last activations; outputs and "
                  "gradients keep eager's strides"},
      {.name = "aot.inference_layout_optimization",
       .aliases = {},
       .env = {"EMBER_AOT_INFERENCE_LAYOUT_OPTIMIZATION"},
       .field = EMBER_FIELD(aot.inference_layout_optimization),
       .meaning = "inference graphs run 2-D float32 CPU convolutions over channels_last activations; outputs "
                  "keep eager's strides"},
      {.name = "inductor.debug",
       .aliases = {},
       .env = {"EMBER_INDUCTOR_DEBUG"},
       .field = EMBER_FIELD(inductor.debug),
       .meaning = "print inductor's debug information and the generated code"},
      {.name = "inductor.fallback_random",
       .aliases = {},
       .env = {"EMBER_FALLBACK_RANDOM"},
       .field = EMBER_FIELD(inductor.fallback_random),
       .meaning = "random ops in compiled code give exactly eager's numbers"},
      {.name = "inductor.cudagraphs",
       .aliases = {"inductor.triton.cudagraphs"},
       .env = {"TORCHINDUCTOR_CUDAGRAPHS"},
       .field = EMBER_FIELD(inductor.cudagraphs),
       .meaning = "replay graphs compiled for CUDA as CUDA graphs, as compile mode \"reduce-overhead\" does"},
      {.name = "inductor.autotune_launches",
       .aliases = {},
       .env = {"EMBER_AUTOTUNE_LAUNCHES"},
       .field = EMBER_FIELD(inductor.autotune_launches),
       .meaning = "time a few launch configurations of each generated CUDA kernel at its first call and keep the fastest"},
      {.name = "inductor.max_autotune",
       .aliases = {},
       .env = {"TORCHINDUCTOR_MAX_AUTOTUNE"},
       .field = EMBER_FIELD(inductor.max_autotune),
       .meaning = "more launch configurations per generated CUDA kernel, as compile mode \"max-autotune\" gives"},
      {.name = "inductor.freezing",
       .aliases = {},
       .env = {"TORCHINDUCTOR_FREEZING"},
       .field = EMBER_FIELD(inductor.freezing),
       .meaning = "inference graphs take module parameters as constants: weight-only calls folded, GEMM weights "
                  "packed once with their epilogue fused; assumes parameters do not change after the compile"},
      {.name = "inductor.inject_relu_bug_TESTING_ONLY",
       .aliases = {},
       .env = {"EMBER_INJECT_RELU_BUG"},
       .field = EMBER_FIELD(inductor.inject_relu_bug_TESTING_ONLY),
       .meaning = "inject a bug into relu's generated code, to test the minifier",
       .choices = {"", "compile_error", "runtime_error", "accuracy"}},
      {.name = "inductor.bisect_max_graph_passes",
       .aliases = {},
       .env = {"EMBER_BISECT_MAX_GRAPH_PASSES"},
       .field = EMBER_FIELD(inductor.bisect_max_graph_passes),
       .meaning = "compiler bisector: apply only the first N graph pass applications of each compile (-1: all)",
       .min = -1},
      {.name = "inductor.bisect_max_lowerings",
       .aliases = {},
       .env = {"EMBER_BISECT_MAX_LOWERINGS"},
       .field = EMBER_FIELD(inductor.bisect_max_lowerings),
       .meaning = "compiler bisector: lower only the first N calls of each compile; the rest run their eager "
                  "kernels (-1: all)",
       .min = -1},
      {.name = "inductor.bisect_max_fusions",
       .aliases = {},
       .env = {"EMBER_BISECT_MAX_FUSIONS"},
       .field = EMBER_FIELD(inductor.bisect_max_fusions),
       .meaning = "compiler bisector: make only the first N fusions of each compile; the rest stay separate "
                  "kernels (-1: all)",
       .min = -1},
      {.name = "inductor.cache_dir",
       .aliases = {},
       .env = {"TORCHINDUCTOR_CACHE_DIR"},
       .field = EMBER_FIELD(inductor.cache_dir),
       .meaning = "cache of compiled kernels",
       .default_note = "<temp dir>/torchinductor_<user>"},
      {.name = "inductor.precompiled_prelude_dir",
       .aliases = {},
       .env = {"EMBER_PRECOMPILED_PRELUDE_DIR"},
       .field = EMBER_FIELD(inductor.precompiled_prelude_dir),
       .meaning = "the generated code's precompiled prelude: '' the build's (GCC), 'off' none, or a directory "
                  "holding ember_inductor_prelude.h and its .gch",
       .default_note = "(the build's)"},
      {.name = "inductor.compile_threads",
       .aliases = {},
       .env = {"TORCHINDUCTOR_COMPILE_THREADS"},
       .field = EMBER_FIELD(inductor.compile_threads),
       .meaning = "C++ compiler processes compiling one graph's kernels side by side, in units of whole "
                  "kernels (0: the cores this process may run on, at most 32, one below 4 cores; n > 0: n)",
       .min = 0},
      {.name = "inductor.cpp_opt_level",
       .aliases = {},
       .env = {"EMBER_INDUCTOR_CPP_OPT_LEVEL"},
       .field = EMBER_FIELD(inductor.cpp_opt_level),
       .meaning = "the optimization level generated C++ is compiled at (-O<n>)",
       .min = 0,
       .max = 3},
      {.name = "inductor.trace.enabled",
       .aliases = {},
       .env = {"TORCH_COMPILE_DEBUG"},
       .field = EMBER_FIELD(inductor.trace.enabled),
       .meaning = "write the trace directory torch_compile_debug/run_<time>-pid_<pid>/"},
      {.name = "inductor.trace.debug_dir",
       .aliases = {},
       .env = {"TORCH_COMPILE_DEBUG_DIR"},
       .field = EMBER_FIELD(inductor.trace.debug_dir),
       .meaning = "the directory that holds torch_compile_debug/",
       .default_note = "(current directory)"},
      {.name = "inductor.trace.debug_log",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.debug_log),
       .meaning = "trace directory: debug.log with the compile's DEBUG log lines"},
      {.name = "inductor.trace.fx_graph",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.fx_graph),
       .meaning = "trace directory: fx_graph_readable.txt and the standalone fx_graph_runnable.cpp"},
      {.name = "inductor.trace.fx_graph_transformed",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.fx_graph_transformed),
       .meaning = "trace directory: fx_graph_transformed.txt, the graph after inductor's graph passes"},
      {.name = "inductor.trace.ir_pre_fusion",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.ir_pre_fusion),
       .meaning = "trace directory: ir_pre_fusion.txt"},
      {.name = "inductor.trace.ir_post_fusion",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.ir_post_fusion),
       .meaning = "trace directory: ir_post_fusion.txt"},
      {.name = "inductor.trace.output_code",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.output_code),
       .meaning = "trace directory: output_code.cpp, the generated code"},
      {.name = "inductor.trace.graph_diagram",
       .aliases = {},
       .env = {"INDUCTOR_POST_FUSION_SVG"},
       .field = EMBER_FIELD(inductor.trace.graph_diagram),
       .meaning = "trace directory: graph_diagram.svg of the fused graph"},
      {.name = "inductor.trace.compile_profile",
       .aliases = {},
       .env = {},
       .field = EMBER_FIELD(inductor.trace.compile_profile),
       .meaning = "trace directory: a profile of the compile itself"},
      {.name = "inductor.trace.kernel_profile",
       .aliases = {},
       .env = {"EMBER_KERNEL_PROFILE"},
       .field = EMBER_FIELD(inductor.trace.kernel_profile),
       .meaning = "trace directory: kernel_profile.txt, each kernel's and extern call's time and GB/s"},
      {.name = "backends.cuda.matmul.allow_tf32",
       .aliases = {},
       .env = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"},
       .field = EMBER_FIELD(backends.cuda.matmul.allow_tf32),
       .meaning = "float32 matrix products on CUDA (mm, bmm, addmm, matmul, linear) may use TF32 tensor cores"},
      {.name = "backends.cudnn.allow_tf32",
       .aliases = {},
       .env = {"EMBER_CUDNN_ALLOW_TF32"},
       .field = EMBER_FIELD(backends.cudnn.allow_tf32),
       .meaning = "float32 convolutions on CUDA (cuDNN) may use TF32 tensor cores"},
  };
  return table;
}

#undef EMBER_FIELD

namespace {

std::string current_directory() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::current_path(ec);
  return ec ? std::string(".") : p.string();
}

// Python's tempfile.gettempdir() and getpass.getuser(), which PyTorch's default uses.
std::string temp_directory() {
  for (const char* var : {"TMPDIR", "TEMP", "TMP"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return "/tmp";
}

std::string user_name() {
  for (const char* var : {"LOGNAME", "USER", "LNAME", "USERNAME"})
    if (const char* v = std::getenv(var); v && *v) return v;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_name) return pw->pw_name;
  return std::to_string(getuid());
}

}  // namespace

Config default_config() {
  Config c;
  c.dynamo.base_dir = current_directory();
  c.inductor.trace.debug_dir = current_directory();
  c.inductor.cache_dir = (std::filesystem::path(temp_directory()) / ("torchinductor_" + user_name())).string();
  return c;
}

}  // namespace ember::support
