// graph/interpreter.h — running one Call node with the eager kernels, shared by the
// interpreter (run_graph) and the backends that run some nodes eagerly (inductor's extern
// calls and views); and whether running a graph would record autograd history.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/sym_expr.h"
#include "ember/graph.h"
#include "graph/symbols.h"

namespace ember::graph {

/// Node `n`'s size arguments (size lists, single sizes) holding symbols, resolved over the
/// value slots once: core::value_slots_expr goes through the shape environment's
/// replacements, too slow for a compiled wrapper to do at every call. Per argument of `n`:
/// its sizes' expressions (none for an argument without symbols) and the slots they name.
struct ResolvedSizes {
  struct Arg {
    bool single = false;  // a SymInt, not a list
    std::vector<core::sym::Expr> sizes;
    std::vector<int32_t> slots;
  };
  std::vector<Arg> args;
};
ResolvedSizes resolve_sizes(const Node& n);

/// Runs Call node `n` through the normal dispatch path: its arguments built from the
/// literals and `value_of`, its user line set (errors name it), its grad mode replayed.
/// Returns one tensor per output (undefined where the op returned None). A size list or a
/// SymInt argument holding symbols is evaluated at `symbol_values` (symbol id -> this
/// call's value; see symbol_values()), so the op receives this call's sizes; `resolved`
/// (resolve_sizes(n), made once by a caller that runs `n` at every call) saves resolving
/// the expressions again.
std::vector<Tensor> run_call_node(const Node& n, const std::function<const Tensor&(const ValueRef&)>& value_of,
                                  std::span<const int64_t> symbol_values = {}, const ResolvedSizes* resolved = nullptr);

/// Whether a literal argument of `g` is a size list or a single size holding symbols.
bool has_symbolic_lists(const Graph& g);
/// The values of `g`'s size symbols on a call with `inputs` (one per Graph::inputs()): each
/// symbol that is a size of an input, read from it (bind_symbols, read_symbols); kUnbound
/// for the others.
std::vector<int64_t> symbol_values(const Graph& g, const std::vector<Tensor>& inputs);

/// Why running `g` on `inputs` through the dispatcher (run_graph) would record autograd
/// history the caller can see — a result that requires grad, a graph input written from
/// a value that requires grad — or raise for an op without a derivative; nullopt when it
/// would not (grad mode off, no input requiring grad reaches a result: model.eval() with
/// argmax). A backend whose code records no history runs its code exactly when this is
/// nullopt (autograd_needs.cpp).
std::optional<std::string> why_autograd_records(const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace ember::graph
