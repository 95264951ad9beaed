// aot/aot.h — the AOT stage between capture and a code generator (PyTorch's AOT autograd,
// for inference graphs so far): functionalization, then decomposition to the ops the code
// generator lowers well. The "inductor" and "aot_eager" backends run it first; the graph it
// returns is what TORCHDYNAMO_REPRO_AFTER=aot cuts. See Note [aot] (docs/notes/aot.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::aot {

/// Functionalization (functionalize.cpp). Requires: a verified graph. Guarantees: a
/// `copy_(dst, src)` whose dst is an intermediate (a Call's output that no view reads, not
/// an input) and whose src has dst's sizes, strides and dtype is gone: later readers of dst
/// (and of the copy_'s result) read src. Writes to graph inputs stay: the caller sees them.
/// `removed` counts the copies removed.
std::unique_ptr<Graph> functionalize(const Graph& g, size_t* removed = nullptr);

/// One row of the decomposition table: an op, when it is decomposed, into what.
struct DecompositionInfo {
  std::string op;
  std::string when;
  std::string into;
};

/// Decomposition (decompositions.cpp). Requires: a functional graph. Guarantees: every
/// node whose op has a row in the table and meets its condition is replaced by calls of
/// core ops with the same results (the same formula as the eager kernel where it matters
/// for rounding); other nodes are unchanged. `decomposed` counts the replaced nodes.
std::unique_ptr<Graph> decompose(const Graph& g, size_t* decomposed = nullptr);
/// The table, in order (for docs and `ember` tools).
std::vector<DecompositionInfo> decomposition_table();

/// The whole stage for an inference graph: functionalize, decompose, dead-code
/// elimination. Logs the result on the `aot_graphs` artifact ("aot forward graph") and a
/// summary at INFO on `aot`.
std::unique_ptr<Graph> prepare_inference_graph(const Graph& g);

/// aot_module: prepares `g` and hands the result to `inner` (the inductor's inner
/// compiler, or the interpreter for "aot_eager"), registered as the backend `inner_name`.
/// That hand-over is the cut of TORCHDYNAMO_REPRO_AFTER=aot (capture/repro_hooks.h): a
/// launcher written there names `inner_name`, which runs a prepared graph without this stage.
CompiledGraph aot_compile(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& inner,
                          const std::string& inner_name = "eager");

}  // namespace ember::aot
