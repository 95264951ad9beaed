// graph/interpreter.h — running one Call node with the eager kernels, shared by the
// interpreter (run_graph) and the backends that run some nodes eagerly (inductor's extern
// calls and views).
#pragma once

#include <functional>
#include <vector>

#include "ember/graph.h"

namespace ember::graph {

/// Runs Call node `n` through the normal dispatch path: its arguments built from the
/// literals and `value_of`, its user line set (errors name it), its grad mode replayed.
/// Returns one tensor per output (undefined where the op returned None).
std::vector<Tensor> run_call_node(const Node& n, const std::function<const Tensor&(const ValueRef&)>& value_of);

}  // namespace ember::graph
