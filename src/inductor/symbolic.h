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

/// Where a compiled symbolic graph reads its symbols: symbol `symbol`'s value is input
/// `input`'s size(dim).
struct SymbolBinding {
  int32_t symbol = 0;
  size_t input = 0;
  size_t dim = 0;
};
/// A data-dependent size: symbol slot `symbol` (core::value_slots_expr) is output
/// `output`'s size(dim) of the call at node index `node`, read when that call has run.
struct OutputBinding {
  int32_t symbol = 0;
  size_t node = 0;
  size_t output = 0;
  size_t dim = 0;
};
struct SymbolTable {
  /// One slot per symbol of the environment, the unbacked ones after the input ones
  /// (core::value_slot_count; slots index it; unbound slots stay 0).
  size_t num_symbols = 0;
  std::vector<SymbolBinding> bindings;
  std::vector<OutputBinding> from_outputs;
};
/// The binding table of graph `g`, whose every symbol must be a bare input size or a bare
/// size of the output of the call that computes it (why_not_symbolic).
SymbolTable bind_symbols(const Graph& g);
/// Reads the symbols' values from `inputs` into `values` (num_symbols of them).
void read_symbols(const SymbolTable& table, const std::vector<Tensor>& inputs, std::vector<int64_t>& values);
/// Reads the data-dependent sizes that the call at node index `node` computed (its
/// `outputs`) into `values`.
void read_output_symbols(const SymbolTable& table, size_t node, const std::vector<Tensor>& outputs,
                         std::vector<int64_t>& values);

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
