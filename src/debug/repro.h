// debug/repro.h — repros, minifier launchers and the failures they carry (Note [minifier],
// docs/notes/minifier.md).
//
// A repro file is text: `#` comment lines (what the file is, how to run it, the Ember
// version, compiler, flags, CPU and GPU), `key: value` lines (kind, backend, repro_after,
// check, failure, tolerance, config, inputs), then `graph:` and the graph's text. Its
// inputs (and constants) are a safetensors file beside it, or generated from the recorded
// geometry and a seed. A launcher is the same file with `kind: launcher`: `ember minify`
// takes it. A repro also gets a standalone `<stem>.cpp` (the graph through the public API,
// compiled with the backend and checked).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/compile.h"

namespace ember::debug {

/// A failure the minifier chases: where it happened, the error's kind and first line.
struct Failure {
  enum class Stage { Compile, Run, Accuracy };
  Stage stage = Stage::Compile;
  ErrorKind kind = ErrorKind::RuntimeError;
  /// The first line of the error message, or same()'s verdict for Accuracy.
  std::string message;

  /// The message with what changes as a graph shrinks masked: each word holding a digit,
  /// '/', '%' or '"' becomes `*` (runs of them one `*`): names of kernels, nodes, files,
  /// sizes, counts. Two failures are the same when stage, kind and pattern agree.
  std::string pattern() const;
  bool same_as(const Failure& other) const;
  /// "compile error (RuntimeError): …", "run error (…): …", "accuracy: …".
  std::string str() const;
  static const char* stage_name(Stage s);
};

/// The failure an error raised at `stage` stands for.
Failure failure_of(Failure::Stage stage, const Error& e);

// --- training graphs (gradients.cpp) ----------------------------------------------------

/// Whether some input requires grad: then a check runs forward and backward.
bool needs_gradients(const std::vector<Tensor>& inputs);

/// `value` in `m`'s geometry (with_geometry, recording no history), a leaf that requires
/// grad when `value` does.
Tensor input_copy(const Tensor& value, const TensorMeta& m);

/// Runs `fn` on `inputs` with grad mode on, then backward from fixed gradients of its
/// outputs that require grad (autograd::grad, so no .grad is touched): its outputs
/// (detached), then one gradient per input that requires grad (zeros where none reaches
/// it). `inputs` should be fresh leaves (input_copy).
std::vector<Tensor> run_forward_backward(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                         const std::vector<Tensor>& inputs);
/// run_forward_backward of the interpreter on `g`.
std::vector<Tensor> run_graph_with_gradients(const Graph& g, const std::vector<Tensor>& inputs);
/// The same in float64 (floating inputs and constants widened, the same output
/// gradients); nullopt (logged at INFO on `dynamo`) when that run fails.
std::optional<std::vector<Tensor>> run_graph_fp64_with_gradients(const Graph& g, const std::vector<Tensor>& inputs);

/// same()'s verdict over run_forward_backward's results, in the graph's words: "output k"
/// past the graph's outputs becomes "gradient of input %x (input i)".
std::string gradient_named(const std::string& why, const Graph& g, const std::vector<Tensor>& inputs);

/// Compiles and runs a graph with a backend and says how it fails, if it does. When an
/// input requires grad (a training graph's launcher), the graph is compiled with those
/// inputs under grad mode and run forward and backward (run_forward_backward): an error
/// of the backward graph's compile or run is a run failure, and `accuracy` compares the
/// gradients too.
struct Checker {
  Backend backend;
  /// Compare with eager against an fp64 reference (same()), after compiling and running.
  bool accuracy = false;
  double tolerance = 1e-3;
  /// Compiles tried so far (each call is one).
  mutable size_t compiles = 0;
  /// nullopt when the graph compiles, runs and (with `accuracy`) passes same().
  std::optional<Failure> operator()(const Graph& g, const std::vector<Tensor>& inputs) const;
};

/// Everything a repro or launcher file holds.
struct Repro {
  std::string kind = "repro";  ///< "repro" or "launcher"
  std::shared_ptr<Graph> graph;
  /// One per Graph::inputs(), with the recorded geometry. Constants live in graph.
  std::vector<Tensor> inputs;
  std::string backend;
  std::string repro_after;  ///< "dynamo", "aot", or "" (a graph given to `ember minify`)
  bool accuracy = false;
  std::optional<Failure> failure;
  double tolerance = 1e-3;
  /// Knobs in force when it was written that differ from their defaults (name, value).
  std::vector<std::pair<std::string, std::string>> config;
  /// Inputs that require grad are flagged on the tensors themselves (`requires_grad:` in
  /// the file lists their indices): a training graph, checked forward and backward.
  /// Where the inputs came from when read: a safetensors path, or "random (seed N)".
  std::string inputs_source;
};

/// The paths write_repro wrote.
struct WrittenRepro {
  std::string file;    ///< <dir>/<stem>.txt
  std::string inputs;  ///< <dir>/<stem>.safetensors
  std::string cpp;     ///< <dir>/<stem>.cpp (repros only; empty for launchers)
};

/// Writes `r` into `dir` (created) as <stem>.txt and <stem>.safetensors, and for a repro
/// also <stem>.cpp. Raises ember::Error naming the path when a file cannot be written.
WrittenRepro write_repro(const Repro& r, const std::string& dir, const std::string& stem);

/// Reads a repro or launcher file, or a plain graph text file (then: no backend, no
/// failure, random inputs of seed 0). Malformed files raise ember::Error (ValueError)
/// naming the file and line.
Repro read_repro(const std::string& path);

/// The standalone program of a repro (<stem>.cpp): `inputs_path` holds its inputs.
std::string repro_cpp(const Repro& r, const std::string& inputs_path);

/// "ember 0.1.0 | compiler … | flags … | cpu: … | gpu: none", one line each.
std::vector<std::string> machine_header();

/// Knobs that differ from their defaults, except where repros go and the repro knobs
/// themselves (a launcher must not write launchers when it runs).
std::vector<std::pair<std::string, std::string>> config_to_record();

/// Sets `config` for the scope's duration; restores the previous values after.
class ScopedConfig {
 public:
  explicit ScopedConfig(const std::vector<std::pair<std::string, std::string>>& config);
  ~ScopedConfig();
  ScopedConfig(const ScopedConfig&) = delete;
  ScopedConfig& operator=(const ScopedConfig&) = delete;

 private:
  void restore();
  std::vector<std::pair<std::string, std::string>> saved_;
};

/// A fresh directory <base_dir>/minifier/<graph>_pid<pid>_<n>.
std::string new_output_dir(const std::string& graph_name);

/// Inputs of `g`'s recorded geometry, random from `seed` (as to_runnable_cpp makes them).
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed);

/// `value` in a tensor of `m`'s sizes, strides and offset (a copy unless it already has them).
Tensor with_geometry(const Tensor& value, const TensorMeta& m);

// --- the minifier (minifier.cpp) ------------------------------------------------------

struct MinifyOptions {
  /// Stop after this many compiles (0: no limit), keeping the best graph so far.
  size_t max_compiles = 0;
  /// After the nodes, try smaller sizes for the inputs.
  bool shrink_inputs = true;
  /// Set from another thread or a signal handler: stop, keeping the best graph so far.
  const std::atomic<bool>* interrupt = nullptr;
  /// One line per step (default: stderr).
  std::function<void(const std::string&)> progress;
  /// Called with each smaller graph that still fails (write it, so an interrupted or
  /// killed minifier still leaves its best).
  std::function<void(const Graph&, const std::vector<Tensor>&)> on_improved;
};

struct MinifyResult {
  std::unique_ptr<Graph> graph;
  std::vector<Tensor> inputs;
  size_t original_calls = 0;
  size_t compiles = 0;
  bool interrupted = false;
};

/// Delta debugging over `g`'s nodes while `target` persists (checked with `check`):
/// cut suffixes, drop outputs, turn nodes' outputs into inputs, consolidate inputs whose
/// producers read only inputs, drop unused inputs; then smaller input sizes. Raises
/// ember::Error when `g` does not fail as `target` to begin with.
MinifyResult minify(const Graph& g, const std::vector<Tensor>& inputs, const Checker& check, const Failure& target,
                    const MinifyOptions& options = {});

/// Minifies the launcher `r` with `backend`, writing the best repro so far into `out_dir`
/// (repro.txt, repro.safetensors, repro.cpp) as it improves; returns the result.
MinifyResult minify_repro(const Repro& r, const Backend& backend, const std::string& out_dir,
                          const MinifyOptions& options = {});

/// Installs the REPRO_AFTER wrapper into capture (repro_after.cpp); once.
void install_repro_wrapper();

}  // namespace ember::debug
