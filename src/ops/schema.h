// ops/schema.h — ATen operator schemas: "add.Tensor(Tensor self, Tensor other, *,
// Scalar alpha=1) -> Tensor", parsed into typed arguments with defaults and alias
// annotations. Ember registers each op with ATen's exact schema text so that argument
// names and defaults match PyTorch (exported graphs name arguments that way).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/ivalue.h"

namespace ember::ops {

enum class BaseType {
  Tensor, Int, SymInt, Float, Bool, Scalar, Str, ScalarType, Layout, Device, MemoryFormat, Generator,
  SymBool,  // a result only: sym_is_contiguous's (a bool, or a size relation while tracing)
};

struct ArgType {
  BaseType base = BaseType::Tensor;
  bool optional = false;       // T?
  bool is_list = false;        // T[] / T[N]
  int64_t list_size = -1;      // N in T[N]
  bool element_optional = false;  // Tensor?[]
  std::string str() const;
};

struct Argument {
  std::string name;
  ArgType type;
  std::optional<IValue> default_value;
  bool kwarg_only = false;
  /// Alias set letter from "Tensor(a)" / "Tensor(a!)"; 0 when none.
  char alias_set = 0;
  /// "!" in the annotation: the op writes this argument.
  bool is_write = false;
};

struct Schema {
  /// "aten" for PyTorch's ops; "ember" for the few of Ember's own (Note [registry]).
  std::string ns = "aten";
  std::string name;      // "add"
  std::string overload;  // "Tensor" ("" for the default overload)
  std::vector<Argument> arguments;
  std::vector<Argument> returns;

  /// "aten::add.Tensor", "ember::_embedding_bag_checked_offsets".
  std::string qualified_name() const;
  /// The schema text in ATen's syntax (round-trips through parse_schema).
  std::string str() const;
  /// Index of the argument named `name`, or -1.
  int index_of(std::string_view arg_name) const;
  bool is_mutable() const;
};

/// Parses ATen schema syntax; raises ember::Error naming the position on bad text.
Schema parse_schema(std::string_view text);

/// Fills omitted trailing arguments from their defaults and checks each value against
/// the argument's type. Raises a TypeError naming the op and the argument.
void normalize_args(const Schema& schema, Stack& args);

}  // namespace ember::ops
