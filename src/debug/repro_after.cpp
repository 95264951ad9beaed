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

std::vector<Tensor> copies_of(const Graph& g, const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  const std::vector<Node*> ins = g.inputs();
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size() && i < ins.size(); ++i)
    out.push_back(with_geometry(inputs[i], ins[i]->meta().at(0)));
  return out;
}

std::string where(const std::string& cut) { return "TORCHDYNAMO_REPRO_AFTER=" + cut; }

CompiledGraph wrap(Graph& g, const std::vector<Tensor>& examples, const Backend& compiler,
                   const std::string& compiler_name, const std::string& cut) {
  if (t_inside > 0) return compiler(g, examples);
  const int64_t level = config().dynamo.repro_level;
  // The graph and inputs as the compiler receives them (it may rewrite the graph).
  Repro r;
  r.graph = g.clone();
  r.inputs = copies_of(g, examples);
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
    // (PyTorch's run_fwd_maybe_bwd).
    stage = Failure::Stage::Run;
    NoGradGuard no_grad;
    outputs = compiled(copies_of(*r.graph, r.inputs));
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
    try {
      NoGradGuard no_grad;
      ref = run_graph(*r.graph, copies_of(*r.graph, r.inputs));
    } catch (const Error& e) {
      EMBER_LOG(dynamo, WARNING) << where(cut) << ": graph " << g.name()
                                 << " fails eagerly, so its accuracy cannot be checked: " << e.message();
      return compiled;
    }
    const std::vector<Tensor> fp64 = run_graph_fp64(*r.graph, copies_of(*r.graph, r.inputs)).value_or(ref);
    SameOptions options;
    options.tol = r.tolerance;
    const SameResult verdict = same(ref, outputs, fp64, options);
    if (!verdict) {
      r.accuracy = true;
      r.failure = Failure{Failure::Stage::Accuracy, ErrorKind::RuntimeError, verdict.why};
      const std::string launcher = write_launcher("accuracy failed");
      EMBER_FAIL() << "Accuracy failed for graph " << g.name() << " compiled by " << compiler_name << " (" << where(cut)
                   << ", compared with eager against a float64 run): " << verdict.why
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
