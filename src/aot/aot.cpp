// aot/aot.cpp — the AOT stage in order (functionalize → decompose → dead-code elimination)
// and aot_compile, which hands its result to an inner compiler. See Note [aot]
// (docs/notes/aot.md).
#include "aot/aot.h"

#include <chrono>

#include "capture/repro_hooks.h"
#include "support/logging.h"

namespace ember::aot {

std::unique_ptr<Graph> prepare_inference_graph(const Graph& g) {
  const auto start = std::chrono::steady_clock::now();
  EMBER_LOG(aot, INFO) << "aot: preparing graph " << g.name() << " (" << g.op_count() << " ops) for inference";
  size_t copies = 0, decomposed = 0;
  std::unique_ptr<Graph> functional = functionalize(g, &copies);
  std::unique_ptr<Graph> out = decompose(*functional, &decomposed);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EMBER_LOG(aot, INFO) << "aot: graph " << g.name() << ": " << copies << " copy_ of intermediates removed, "
                       << decomposed << " nodes decomposed, " << out->op_count() << " ops (" << ms << " ms)";
  EMBER_LOG_ARTIFACT(aot_graphs) << "aot forward graph " << g.name() << ":\n" << *out;
  return out;
}

CompiledGraph aot_compile(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& inner,
                          const std::string& inner_name) {
  // Inner compilers may keep a reference to the graph (eager_backend does): it lives as
  // long as the compiled function.
  std::shared_ptr<Graph> prepared = prepare_inference_graph(g);
  CompiledGraph compiled = capture::compile_with_repro(*prepared, example_inputs, inner, inner_name, "aot");
  return [prepared, compiled = std::move(compiled)](const std::vector<Tensor>& inputs) { return compiled(inputs); };
}

}  // namespace ember::aot
