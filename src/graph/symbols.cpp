// graph/symbols.cpp — the symbol table of a graph over size symbols (graph/symbols.h).
#include "graph/symbols.h"

#include <set>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "graph/text.h"

namespace ember::graph {

SymbolTable bind_symbols(const Graph& g) {
  SymbolTable table;
  const core::ShapeEnv* env = graph_text::shape_env_of(g);
  if (!env) return table;
  table.num_symbols = core::value_slot_count(*env);
  const auto backed = static_cast<int32_t>(env->num_symbols());
  std::set<int32_t> bound;
  size_t input = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    const bool is_input = n.kind() == NodeKind::Placeholder || n.kind() == NodeKind::Attribute;
    if (!is_input && n.kind() != NodeKind::Call) continue;
    for (size_t o = 0; o < n.meta().size(); ++o) {
      if (!n.meta()[o].sym || (is_input && o > 0)) continue;
      const core::SymInts& sizes = n.meta()[o].sym->sizes;
      for (size_t d = 0; d < sizes.size(); ++d) {
        const core::sym::Expr e = core::value_slots_expr(sizes[d]);
        if (e.kind() != core::sym::Kind::Symbol) continue;
        const int32_t id = e.symbol_id();
        if (is_input && bound.insert(id).second) table.bindings.push_back({id, input, d});
        if (!is_input && id >= backed && bound.insert(id).second) table.from_outputs.push_back({id, i, o, d});
      }
    }
    if (is_input) ++input;
  }
  return table;
}

void read_symbols(const SymbolTable& table, const std::vector<Tensor>& inputs, std::vector<int64_t>& values) {
  values.assign(table.num_symbols, kUnbound);
  for (const SymbolBinding& b : table.bindings)
    if (b.input < inputs.size() && static_cast<int64_t>(b.dim) < inputs[b.input].dim())
      values[static_cast<size_t>(b.symbol)] = inputs[b.input].size(static_cast<int64_t>(b.dim));
}

void read_output_symbols(const SymbolTable& table, size_t node, const std::vector<Tensor>& outputs,
                         std::vector<int64_t>& values) {
  for (const OutputBinding& b : table.from_outputs)
    if (b.node == node) values[static_cast<size_t>(b.symbol)] = outputs.at(b.output).size(static_cast<int64_t>(b.dim));
}

}  // namespace ember::graph
