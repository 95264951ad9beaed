// examples/toy_compiler.h — the troubleshooting guide's toy_compiler: a backend that
// refuses graphs containing relu (as a compiler with a bug would), and otherwise runs
// the graph eagerly. Used by guide_backend_error.cpp and by the toy_backend library.
#pragma once

#include <ember/ember.h>

#include <stdexcept>

inline ember::CompiledGraph toy_compiler(ember::Graph& graph, const std::vector<ember::Tensor>&) {
  for (const auto& node : graph.nodes())
    if (node->target() == "aten::relu") throw std::runtime_error("toy_compiler: relu is not supported");
  return ember::eager_backend(graph);
}
