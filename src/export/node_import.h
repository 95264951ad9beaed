// export/node_import.h — one serialized node of an exported graph into the Ember graph:
// its target looked up in the registry (or folded, for the helpers that compute sizes:
// integers, or expressions over a dynamic program's symbols), its named arguments mapped onto the schema with omitted ones from defaults,
// its literals converted, its outputs' geometry from Ember's meta function checked against
// the program's. See Note [export], "Nodes".
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ember/graph.h"
#include "export/pt2_format.h"
#include "export/sym_import.h"

namespace ember::exporting {

/// What the nodes read and define while a graph is imported.
struct ImportScope {
  Graph* graph = nullptr;
  /// The program's recorded geometry of each tensor value ("tensor_values").
  const json* tensor_values = nullptr;
  /// Tensor values defined so far, by name.
  std::map<std::string, ValueRef> values;
  /// The program's size symbols (null for a static program).
  const ImportSymbols* symbols = nullptr;
  /// Sizes and the integers computed from them (sym_size and friends, SymInt arithmetic:
  /// plain under static shapes, expressions over the symbols otherwise), and booleans, by name.
  std::map<std::string, core::SymInt> ints;
  std::map<std::string, bool> bools;
  /// Names of the tensor values some node or the signature reads.
  std::set<std::string> used;
  /// Names the archive in errors.
  std::string where;
};

/// The recorded geometry of tensor value `name`.
TensorMeta recorded_meta(const ImportScope& scope, const std::string& name);

/// The tensor values a node reads (every "as_tensor" and list entry in its inputs).
void collect_tensor_names(const json& j, std::set<std::string>& out);

/// Imports one schema.Node: appends its call (a composite op: the calls of its
/// decomposition, recorded as capture records them), or folds it into `scope` (sym_size.int,
/// sym_numel, sym_stride.int, sym_storage_offset, integer arithmetic of _operator and torch.sym_*,
/// into SymInts over the program's symbols),
/// or checks and drops it (_assert_tensor_metadata, _assert_scalar). Raises naming the
/// node for unknown ops and unrepresentable arguments.
void import_node(ImportScope& scope, const json& node);

/// Raises naming the first node that reads a value from tensor data (an output over an
/// unbacked symbol `u0`: `_local_scalar_dense` of `.item()`, `nonzero`), with the user's line
/// from its stack trace: such values exist only when the program runs, and Ember's graphs
/// take sizes from the inputs' shapes only (see Note [export], "What is refused").
void refuse_data_dependent_nodes(const json& graph, const std::string& where);

/// Whether a target is one import_node folds or drops (sym_size.int, _assert_scalar, …).
bool is_folded_target(const std::string& target);

/// "torch.ops.aten.add.Tensor" → "aten::add.Tensor", ".default" → no overload; nullopt
/// for targets outside torch.ops.aten.
std::optional<std::string> aten_name_of_target(const std::string& target);

}  // namespace ember::exporting
