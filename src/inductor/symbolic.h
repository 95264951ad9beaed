// inductor/symbolic.h — the inductor over size symbols: whether a graph traced with
// symbols compiles once for every size or is specialized to its example sizes, where the
// wrapper reads each symbol's value on a call, the C text of a size expression in a
// generated kernel, and a value's geometry evaluated at a call's symbol values. See Note
// [dynamic shapes] ("The inductor over symbolic graphs") and Note [inductor].
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/sym_expr.h"
#include "ember/graph.h"
#include "graph/symbols.h"

namespace ember::inductor {

/// A value's sizes / strides as the shape environment knows them now (constants where
/// static); for a static value, its plain sizes / strides as constants.
std::vector<core::sym::Expr> sym_sizes_of(const TensorMeta& m);
std::vector<core::sym::Expr> sym_strides_of(const TensorMeta& m);
/// Whether any size, stride or the offset of `m` is still symbolic.
bool has_symbols(const TensorMeta& m);
/// Whether any value of `g` is still symbolic.
bool has_symbols(const Graph& g);

/// Why graph `g` (given to "inductor" with size symbols, before the AOT stage) cannot be
/// compiled over its symbols; empty when it can. See symbolic.cpp for the rule.
std::string why_not_symbolic(const Graph& g, const std::vector<Tensor>& examples);
/// Specializes every symbol of `g`'s shape environment to its example value (guards of the
/// entry being traced), logging why on `dynamic`; afterwards `g` is a static graph.
void specialize_symbols(const Graph& g, const std::string& why);

/// Where the wrapper reads each symbol's value on a call (graph/symbols.h).
using graph::bind_symbols;
using graph::OutputBinding;
using graph::read_output_symbols;
using graph::read_symbols;
using graph::SymbolBinding;
using graph::SymbolTable;

/// A symbolic value's sizes, strides and offset as expressions over the call's value slots,
/// resolved once (core::value_slots_expr simplifies through the environment's replacements,
/// too slow for a wrapper to do at every call: most of a dynamic `x + 1`'s time).
struct SlotGeometry {
  std::vector<core::sym::Expr> sizes, strides;
  core::sym::Expr offset;
};
SlotGeometry slot_geometry(const TensorMeta& m);
/// `m`, whose geometry over the value slots is `g`, evaluated at `values` into `out`,
/// reusing its vectors' storage (the wrapper's per-call scratch: no allocation once they
/// are as long as the graph's longest geometry).
void evaluate_meta_into(const TensorMeta& m, const SlotGeometry& g, std::span<const int64_t> values, TensorMeta& out);

/// The C++ text of a size expression in a kernel (core::sym::c_expr).
using core::sym::c_expr;
using core::sym::CDialect;

}  // namespace ember::inductor
