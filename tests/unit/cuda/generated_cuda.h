// A graph given as text through the inductor's shared steps (graph passes, lowering,
// fusion) and the CUDA code generator, for the host tests of generated CUDA source; the
// compile mode in force on the thread (capture::CompileModeScope) sets its launch tuning.
// A graph over size symbols is generated over them, as the inductor compiles it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/graph.h"
#include "inductor/pipeline.h"
#include "inductor/symbolic.h"

namespace ember::inductor {

struct Generated {
  std::unique_ptr<Graph> graph;
  LoweredGraph lowered;
  std::vector<Kernel> kernels;
  CudaCode code;
};

inline Generated generate(const std::string& text) {
  Generated r;
  std::unique_ptr<Graph> parsed = parse_graph(text);
  r.graph = run_graph_passes(*parsed);
  r.lowered = lower(*r.graph);
  r.kernels = schedule(*r.graph, r.lowered);
  r.code = generate_cuda(r.lowered, r.kernels, has_symbols(*r.graph) ? bind_symbols(*r.graph).num_symbols : 0);
  return r;
}

}  // namespace ember::inductor
