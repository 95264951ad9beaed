// debug/repro_after.cpp — the TORCHDYNAMO_REPRO_AFTER wrapper around a compiler at a cut
// (capture/repro_hooks.h): what each TORCHDYNAMO_REPRO_LEVEL writes, and when. See
// Note [minifier] (docs/notes/minifier.md), "Levels".
#include <mutex>

#include "capture/repro_hooks.h"
#include "debug/repro.h"
#include "ember/config.h"
#include "ember/debug.h"
#include "ember/ember.h"
#include "support/logging.h"

namespace ember::debug {
namespace {

/// The minifier's own compiles (and a launcher's) never write repros of their own.
thread_local int t_inside = 0;

struct Inside {
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
};

/// Copies of `inputs` in `g`'s recorded geometry; with `training`, leaves that require grad
/// where the inputs do.
std::vector<Tensor> copies_of(const Graph& g, const std::vector<Tensor>& inputs, bool training) {
  const std::vector<Node*> ins = g.inputs();
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size() && i < ins.size(); ++i) {
    Tensor c = input_copy(inputs[i], ins[i]->meta().at(0));
    out.push_back(training ? c : c.detach());
  }
  return out;
}

std::string where(const std::string& cut) { return "TORCHDYNAMO_REPRO_AFTER=" + cut; }

CompiledGraph wrap(Graph& g, const std::vector<Tensor>& examples, const Backend& compiler,
                   const std::string& compiler_name, const std::string& cut) {
  if (t_inside > 0) return compiler(g, examples);
  const int64_t level = config().dynamo.repro_level;
  // A training graph after dynamo (grad mode on, an input that requires grad) is checked
  // as the whole function it is: forward and backward, its gradients compared too. The
  // graphs after aot are each one half of that and are checked on their own.
  const bool training = cut == "dynamo" && is_grad_enabled() && needs_gradients(examples);
  // The graph and inputs as the compiler receives them (it may rewrite the graph).
  Repro r;
  r.graph = g.clone();
  r.inputs = copies_of(g, examples, training);
  r.backend = compiler_name;
  r.repro_after = cut;
  r.tolerance = config().dynamo.repro_tolerance;
  r.config = config_to_record();
  std::string dir;
  auto out_dir = [&] {
    if (dir.empty()) dir = new_output_dir(g.name());
    return dir;
  };
  auto write_launcher = [&](const char* why) {
    Repro l = r;
    l.kind = "launcher";
    const WrittenRepro w = write_repro(l, out_dir(), "minifier_launcher");
    EMBER_LOG(dynamo, WARNING) << where(cut) << " TORCHDYNAMO_REPRO_LEVEL=" << level << ": " << why
                               << "; minifier launcher of graph " << g.name() << " written to " << w.file
                               << " (inputs: " << w.inputs << "); run `ember minify " << w.file << "`";
    return w.file;
  };

  if (level == 3) write_launcher("before the backend runs");

  Failure::Stage stage = Failure::Stage::Compile;
  CompiledGraph compiled;
  std::vector<Tensor> outputs;
  try {
    Inside inside;  // a nested cut (aot inside a dynamo backend) is not wrapped twice
    compiled = compiler(g, examples);
    // Run it once on copies of the inputs, so that a run error is caught here too
    // (PyTorch's run_fwd_maybe_bwd: a training graph forward and backward, which compiles
    // its backward graph).
    stage = Failure::Stage::Run;
    if (training) {
      outputs = run_forward_backward(compiled, copies_of(*r.graph, r.inputs, true));
    } else {
      NoGradGuard no_grad;
      outputs = compiled(copies_of(*r.graph, r.inputs, false));
    }
  } catch (const Error& e) {
    r.failure = failure_of(stage, e);
    std::string note;
    if (level == 1) {
      const WrittenRepro w = write_repro(r, out_dir(), "repro");
      EMBER_LOG(dynamo, WARNING) << where(cut) << " TORCHDYNAMO_REPRO_LEVEL=1: graph " << g.name() << " failed to "
                                 << Failure::stage_name(stage) << "; repro written to " << w.file << " (inputs "
                                 << w.inputs << ", program " << w.cpp << "); run `ember repro " << w.file << "`";
      note = "TORCHDYNAMO_REPRO_LEVEL=1 wrote a repro of this graph: " + w.file;
    } else {
      const std::string launcher = write_launcher(
          stage == Failure::Stage::Compile ? "the backend failed to compile" : "the compiled graph failed to run");
      note = "TORCHDYNAMO_REPRO_LEVEL=" + std::to_string(level) + " wrote a minifier launcher: " + launcher;
      if (cut == "dynamo") {
        // After dynamo, a backend error runs the minifier at once (the troubleshooting guide).
        const std::string minified = out_dir() + "/minified";
        EMBER_LOG(dynamo, WARNING) << where(cut) << ": running the minifier on graph " << g.name() << " ("
                                   << r.graph->op_count() << " ops); the best repro so far is kept in " << minified;
        try {
          Inside inside;
          MinifyOptions options;
          options.progress = [](const std::string& line) { EMBER_LOG(dynamo, WARNING) << "[minifier] " << line; };
          MinifyResult m = minify_repro(r, compiler, minified, options);
          EMBER_LOG(dynamo, WARNING) << where(cut) << ": minified repro of graph " << g.name() << " ("
                                     << m.graph->op_count() << " of " << m.original_calls << " ops, " << m.compiles
                                     << " compiles) written to " << minified << "/repro.txt; run `ember repro "
                                     << minified << "/repro.txt`";
          note += "\nMinified repro: " + minified + "/repro.txt";
        } catch (const Error& me) {
          EMBER_LOG(dynamo, WARNING) << where(cut) << ": the minifier stopped: " << me.what();
        }
      }
    }
    throw Error(e.kind(), e.message() + "\n\n" + note, e.context());
  }

  if (level == 4) {
    std::vector<Tensor> ref;
    auto inputs = [&] { return copies_of(*r.graph, r.inputs, training); };
    try {
      if (training) {
        ref = run_graph_with_gradients(*r.graph, inputs());
      } else {
        NoGradGuard no_grad;
        ref = run_graph(*r.graph, inputs());
      }
    } catch (const Error& e) {
      EMBER_LOG(dynamo, WARNING) << where(cut) << ": graph " << g.name()
                                 << " fails eagerly, so its accuracy cannot be checked: " << e.message();
      return compiled;
    }
    const std::vector<Tensor> fp64 =
        (training ? run_graph_fp64_with_gradients(*r.graph, inputs()) : run_graph_fp64(*r.graph, inputs())).value_or(ref);
    SameOptions options;
    options.tol = r.tolerance;
    const SameResult verdict = same(ref, outputs, fp64, options);
    if (!verdict) {
      const std::string why = training ? gradient_named(verdict.why, *r.graph, r.inputs) : verdict.why;
      r.accuracy = true;
      r.failure = Failure{Failure::Stage::Accuracy, ErrorKind::RuntimeError, why};
      const std::string launcher = write_launcher("accuracy failed");
      EMBER_FAIL() << "Accuracy failed for graph " << g.name() << " compiled by " << compiler_name << " (" << where(cut)
                   << ", compared with eager against a float64 run"
                   << (training ? ", forward and backward: its outputs and the gradients of its inputs" : "")
                   << "): " << why
                   << "\n\nTORCHDYNAMO_REPRO_LEVEL=4 wrote a minifier launcher: " << launcher << "\nRun `ember minify "
                   << launcher << "` to shrink it.";
    }
  }
  return compiled;
}

}  // namespace

void install_repro_wrapper() {
  static std::once_flag once;
  std::call_once(once, [] { capture::set_repro_wrapper(wrap); });
}

}  // namespace ember::debug
