// graph/symbols.h — where a graph over size symbols finds each symbol's value on a call:
// an input's size, or (a data-dependent size) the size of an output of the call computing
// it. Shared by everything that runs such a graph: the interpreter, the inductor's wrapper
// and the runnable programs. See Note [dynamic shapes].
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

#include "ember/graph.h"

namespace ember::graph {

/// A value slot no input or output of the call has given a value (yet).
inline constexpr int64_t kUnbound = INT64_MIN;

/// Symbol slot `symbol`'s value is input `input`'s size(dim) (Graph::inputs() order).
struct SymbolBinding {
  int32_t symbol = 0;
  size_t input = 0;
  size_t dim = 0;
};
/// A data-dependent size: slot `symbol` is output `output`'s size(dim) of the call at node
/// index `node`, read once that call has run.
struct OutputBinding {
  int32_t symbol = 0;
  size_t node = 0;
  size_t output = 0;
  size_t dim = 0;
};
struct SymbolTable {
  /// One slot per symbol of the environment, the unbacked ones after the input ones
  /// (core::value_slot_count; core::value_slots_expr's ids index it).
  size_t num_symbols = 0;
  std::vector<SymbolBinding> bindings;
  std::vector<OutputBinding> from_outputs;
};
/// Each slot's first bare appearance as an input's size, or, for a data-dependent size,
/// as a size of an output of a call; empty for a static graph. A slot that appears only
/// inside expressions is left unbound.
SymbolTable bind_symbols(const Graph& g);
/// The slots' values on a call with `inputs` (kUnbound for those no input gives).
void read_symbols(const SymbolTable& table, const std::vector<Tensor>& inputs, std::vector<int64_t>& values);
/// Reads the data-dependent sizes the call at node index `node` computed (its `outputs`).
void read_output_symbols(const SymbolTable& table, size_t node, const std::vector<Tensor>& outputs,
                         std::vector<int64_t>& values);

}  // namespace ember::graph
