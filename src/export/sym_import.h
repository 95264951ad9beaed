// export/sym_import.h — the symbolic shapes of a program exported with dynamic_shapes:
// PyTorch's size symbols (`s77`, in the input specs' sizes and the range constraints)
// become the symbols s0, s1, … of one Ember shape environment with their ranges, each read
// from the first user-input dim that is that symbol alone; the schema's expression strings
// (sympy's srepr: `Mul(Integer(2), Symbol('s27', positive=True, integer=True))`) become
// size expressions over them; and a call's user inputs are checked against the ranges and
// the relations the program's sizes imply. See Note [export], "Dynamic shapes".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "export/pt2_format.h"

namespace ember::exporting {

/// The symbols of one imported program.
struct ImportSymbols {
  std::shared_ptr<core::ShapeEnv> env;
  /// PyTorch's symbol name → Ember symbol id, and back.
  std::map<std::string, int32_t> ids;
  std::vector<std::string> names;
  /// Symbol id → (user input index, dim) it is read from on each call.
  std::vector<std::pair<size_t, size_t>> read_at;
  /// The user inputs' names, in signature order (for errors).
  std::vector<std::string> inputs;
};

/// The symbols of a program: null when it has no range constraints and no symbolic
/// user-input size (a static program). Raises for what cannot be imported: a range
/// constraint on a data-dependent (unbacked) symbol, an input size over a symbol that no
/// user-input dim holds alone, a malformed expression or range.
std::shared_ptr<const ImportSymbols> declare_symbols(const json& program, const json& graph, const json& signature,
                                                     const std::string& where);

/// A size expression of the schema (sympy's srepr, or plain text such as `s77`, `2*s77`)
/// over the declared symbols; raises naming `where` for text it cannot read.
core::sym::Expr parse_expr(const ImportSymbols& syms, const std::string& text, const std::string& where);

/// A schema.SymInt ({"as_int": 4} or {"as_expr": {"expr_str": …}}) as a SymInt.
core::SymInt sym_int_of(const ImportSymbols* syms, const json& j, const std::string& where);

/// The geometry of a schema.TensorMeta whose sizes, strides or offset may be expressions:
/// the example values in the plain fields (checked as json_to_meta checks static ones) and
/// the expressions in `sym`, which keeps the shape environment alive.
TensorMeta json_to_sym_meta(const ImportSymbols& syms, const json& j, const std::string& where);

/// Whether two geometries have the same sizes (over the symbols when either is symbolic).
bool same_sizes(const ImportSymbols* syms, const TensorMeta& a, const TensorMeta& b);

/// Checks a call's user inputs against the program's symbolic geometry: each symbol's
/// range, each dim whose size is an expression (two dims that must be equal, a dim that is
/// twice another), then the guards the import recorded. `metas` are the user inputs'
/// recorded geometry; raises naming the input, the dim, the range or relation and the value.
void check_symbolic_inputs(const ImportSymbols& syms, const std::vector<TensorMeta>& metas,
                           const std::vector<Tensor>& inputs);

/// "s0 in [2, 64] (s77 of the program, read from x.size(0))" lines, one per symbol.
std::vector<std::string> describe_symbols(const ImportSymbols& syms);

}  // namespace ember::exporting
