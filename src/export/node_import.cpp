// export/node_import.cpp — one serialized node into the Ember graph (see node_import.h).
#include "export/node_import.h"

#include <cctype>
#include <functional>

#include "capture/graph_recorder.h"
#include "core/shape.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn.h"
#include "ember/ops/view.h"
#include "graph/text.h"
#include "ops/dispatch.h"
#include "ops/registry.h"
#include "ops/resize.h"

namespace ember::exporting {
namespace {

using ops::ArgType;
using ops::BaseType;

/// "%name (aten::foo.bar)" of a node, for messages.
std::string node_label(const json& node) {
  return "node %" + node.value("name", std::string("?")) + " (" + node.value("target", std::string("?")) + ")";
}

/// The first frame of the node's stack trace: the user's line that made it.
SourceLoc loc_of(const json& node) {
  if (!node.contains("metadata") || !node["metadata"].is_object()) return {};
  const json& md = node["metadata"];
  if (!md.contains("stack_trace") || !md["stack_trace"].is_string()) return {};
  const std::string st = md["stack_trace"].get<std::string>();
  const size_t f = st.find("File \"");
  if (f == std::string::npos) return {};
  const size_t end = st.find('"', f + 6);
  const size_t line = st.find(", line ", end == std::string::npos ? f : end);
  if (end == std::string::npos || line == std::string::npos) return {};
  return SourceLoc(st.substr(f + 6, end - f - 6), static_cast<uint32_t>(std::strtoul(st.c_str() + line + 7, nullptr, 10)));
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

/// The single key of a schema union ({"as_int": 3} → "as_int").
std::string union_kind(const json& j, const std::string& where) {
  EMBER_CHECK_VALUE(j.is_object() && j.size() == 1) << where << ": expected a one-field union, got " << j.dump();
  return j.begin().key();
}

/// An Ember example tensor on the meta device with `m`'s geometry, for meta functions.
/// With the value's symbolic geometry, so that meta functions compute over the symbols.
Tensor meta_tensor(const TensorMeta& m) {
  Tensor t =
      empty({storage_extent(m)}, TensorOptions(m.dtype).device(kMeta)).as_strided(m.sizes, m.strides, m.storage_offset);
  t.impl()->sym = m.sym;
  return t;
}

/// A schema.SymInt argument: a plain integer, or the name of a size a node computed.
core::SymInt sym_int_arg(const ImportScope& s, const json& a, const std::string& where) {
  const std::string k = union_kind(a, where);
  if (k == "as_int") return core::SymInt(a.at(k).get<int64_t>());
  EMBER_CHECK_VALUE(k == "as_name") << where << ": expected an int, got " << a.dump();
  const std::string name = a.at(k).get<std::string>();
  auto it = s.ints.find(name);
  EMBER_CHECK_VALUE(it != s.ints.end()) << where << ": the size %" << name << " is not defined by an earlier node";
  return it->second;
}

/// An argument that must be a plain integer (sym_size's dim): a symbolic one is refused.
int64_t static_int_arg(const ImportScope& s, const json& a, const std::string& where) {
  const core::SymInt v = sym_int_arg(s, a, where);
  EMBER_CHECK_VALUE(!v.is_symbolic()) << where << ": the integer " << v.str()
                                      << " is symbolic where a plain integer (a dim) is wanted";
  return v.hint();
}

bool sym_bool_arg(const ImportScope& s, const json& a, const std::string& where) {
  const std::string k = union_kind(a, where);
  if (k == "as_bool") return a.at(k).get<bool>();
  EMBER_CHECK_VALUE(k == "as_name") << where << ": expected a bool, got " << a.dump();
  auto it = s.bools.find(a.at(k).get<std::string>());
  EMBER_CHECK_VALUE(it != s.bools.end()) << where << ": %" << a.at(k).get<std::string>() << " is not defined by an earlier node";
  return it->second;
}

ValueRef tensor_ref(const ImportScope& s, const json& t, const std::string& where) {
  const std::string name = t.at("name").get<std::string>();
  auto it = s.values.find(name);
  EMBER_CHECK_VALUE(it != s.values.end()) << where << ": uses %" << name << ", which no earlier node defines";
  return it->second;
}

bool is_number_kind(const std::string& k) { return k == "as_int" || k == "as_float" || k == "as_bool"; }
bool is_tensor_type(const ArgType& t) { return t.base == BaseType::Tensor && !t.is_list; }

/// A Python number where the schema wants a Tensor (`x * 0.5` traced as mul.Tensor): a
/// 0-dim constant of the default dtype of its kind, which type promotion treats as the
/// wrapped number PyTorch made of it (a 0-dim tensor does not raise the other operand's
/// dtype within its category).
Arg wrapped_number(ImportScope& s, const std::string& k, const json& v) {
  const Scalar value = k == "as_float" ? Scalar(json_to_double(v)) : k == "as_int" ? Scalar(v.get<int64_t>())
                                                                                   : Scalar(v.get<bool>());
  const ScalarType dtype = k == "as_float" ? kFloat : k == "as_int" ? kInt64 : kBool;
  return Arg::of_value(s.graph->add_constant("_scalar", scalar_tensor(value, TensorOptions(dtype)))->out());
}

/// One serialized argument as the schema argument `type` wants it.
Arg convert_arg(ImportScope& s, const json& a, const ArgType& type, const std::string& where) {
  const std::string k = union_kind(a, where);
  const json& v = a.at(k);
  if (is_tensor_type(type) && is_number_kind(k)) return wrapped_number(s, k, v);
  if (k == "as_none") return Arg::of_literal(IValue());
  if (k == "as_tensor") return Arg::of_value(tensor_ref(s, v, where));
  if (k == "as_optional_tensor") {
    if (union_kind(v, where) == "as_none") return Arg::of_literal(IValue());
    return Arg::of_value(tensor_ref(s, v.at("as_tensor"), where));
  }
  if (k == "as_tensors" || k == "as_optional_tensors") {
    std::vector<std::optional<ValueRef>> refs;
    for (const json& e : v) {
      if (k == "as_tensors") {
        refs.push_back(tensor_ref(s, e, where));
      } else if (union_kind(e, where) == "as_none") {
        refs.push_back(std::nullopt);
      } else {
        refs.push_back(tensor_ref(s, e.at("as_tensor"), where));
      }
    }
    return Arg::of_values(std::move(refs));
  }
  if (k == "as_int" || k == "as_sym_int") {
    const core::SymInt i = k == "as_int" ? core::SymInt(v.get<int64_t>()) : sym_int_arg(s, v, where);
    // A symbolic value stays one where the schema takes a SymInt (slice's bounds, narrow's
    // length) or a Scalar (arange's end): the op's meta function computes over it, and one
    // that would read it as a plain number is refused after the fact (no_new_specialization).
    if (i.is_symbolic()) {
      EMBER_CHECK_VALUE(!type.is_list && (type.base == BaseType::SymInt || type.base == BaseType::Scalar))
          << where << ": the integer " << i.str() << " is symbolic where the schema wants " << type.str()
          << "; Ember's graphs hold symbolic integers only where an op takes a SymInt or a Scalar";
      return Arg::of_literal(IValue(ember::SymInt(i)));
    }
    if (type.base == BaseType::Scalar) return Arg::of_literal(Scalar(i.hint()));
    return Arg::of_literal(IValue(i.hint()));
  }
  if (k == "as_float" || k == "as_sym_float") {
    EMBER_CHECK_VALUE(k == "as_float" || union_kind(v, where) == "as_float")
        << where << ": a symbolic float cannot be imported (Ember has symbolic integer sizes only)";
    const double d = json_to_double(k == "as_float" ? v : v.at("as_float"));
    if (type.base == BaseType::Scalar) return Arg::of_literal(Scalar(d));
    return Arg::of_literal(IValue(d));
  }
  if (k == "as_bool" || k == "as_sym_bool") {
    const bool b = k == "as_bool" ? v.get<bool>() : sym_bool_arg(s, v, where);
    if (type.base == BaseType::Scalar) return Arg::of_literal(Scalar(b));
    return Arg::of_literal(IValue(b));
  }
  if (k == "as_ints" || k == "as_sym_ints") {
    core::SymInts l;
    for (const json& e : v) l.push_back(k == "as_ints" ? core::SymInt(e.get<int64_t>()) : sym_int_arg(s, e, where));
    if (!core::any_symbolic(l)) return Arg::of_literal(IValue(core::hints(l)));
    EMBER_CHECK_VALUE(type.base == BaseType::SymInt && type.is_list)
        << where << ": a list with symbolic sizes where the schema wants " << type.str()
        << "; Ember's graphs hold symbolic sizes in SymInt[] lists only";
    return Arg::of_literal(core::size_list_value(l));
  }
  if (k == "as_floats") {
    std::vector<double> l;
    for (const json& e : v) l.push_back(json_to_double(e));
    return Arg::of_literal(IValue(std::move(l)));
  }
  if (k == "as_bools" || k == "as_sym_bools") {
    std::vector<bool> l;
    for (const json& e : v) l.push_back(k == "as_bools" ? e.get<bool>() : sym_bool_arg(s, e, where));
    return Arg::of_literal(IValue(std::move(l)));
  }
  if (k == "as_string") return Arg::of_literal(IValue(v.get<std::string>()));
  if (k == "as_scalar_type") {
    const auto dt = dtype_of_code(v.get<int64_t>());
    EMBER_CHECK_TYPE(dt.has_value()) << where << ": dtype code " << v.dump() << " has no Ember dtype";
    return Arg::of_literal(IValue(*dt));
  }
  if (k == "as_memory_format") {
    const auto mf = memory_format_of_code(v.get<int64_t>());
    EMBER_CHECK_VALUE(mf.has_value()) << where << ": unknown memory format code " << v.dump();
    return Arg::of_literal(IValue(*mf));
  }
  if (k == "as_layout") {
    EMBER_CHECK_VALUE(v.get<int64_t>() == kStridedLayout) << where << ": layout code " << v.dump()
                                                          << " is not torch.strided, the one layout Ember has";
    return Arg::of_literal(IValue(std::string("strided")));
  }
  if (k == "as_device") return Arg::of_literal(IValue(json_to_device(v)));
  EMBER_FAIL_KIND(ErrorKind::TypeError) << where << ": arguments of kind '" << k << "' (" << a.dump().substr(0, 80)
                                        << ") cannot be imported";
  return {};
}

// --- nodes folded into sizes and checks, or dropped -----------------------------------

const json& input_named(const json& node, const char* name, const std::string& where) {
  for (const json& in : node.at("inputs"))
    if (in.at("name").get<std::string>() == name) return in.at("arg");
  EMBER_FAIL_KIND(ErrorKind::ValueError) << where << ": missing argument '" << name << "'";
  static const json none;
  return none;
}

/// The single output name of a node returning an int or a bool.
std::string scalar_output(const json& node, const std::string& where) {
  const json& outs = node.at("outputs");
  EMBER_CHECK_VALUE(outs.size() == 1) << where << ": expected one output, got " << outs.size();
  const std::string k = union_kind(outs[0], where);
  const json& o = outs[0].at(k);
  EMBER_CHECK_VALUE(o.is_object() && o.contains("as_name"))
      << where << ": expected a symbolic int or bool output, got " << outs[0].dump();
  return o.at("as_name").get<std::string>();
}

const TensorMeta& value_meta(const ImportScope& s, const json& node, const std::string& where) {
  const ValueRef v = tensor_ref(s, input_named(node, "self", where).at("as_tensor"), where);
  return v.node->meta().at(v.index);
}

using Folder = std::function<void(ImportScope&, const json& node, const std::string& where)>;

/// An operand of SymInt arithmetic: `{"as_sym_int": {"as_name": …}}` or a literal
/// `{"as_int": 4}`, as sym_int_arg and sym_bool_arg read them.
const json& operand(const json& arg, const std::string& where) {
  const std::string k = union_kind(arg, where);
  return k == "as_sym_int" || k == "as_sym_bool" ? arg.at(k) : arg;
}

void fold_int(ImportScope& s, const json& node, const std::string& where, const core::SymInt& value) {
  s.ints[scalar_output(node, where)] = value;
}

/// A value's sizes, strides and offset as SymInts (over the symbols when it has them).
core::SymInts sizes_of(const TensorMeta& m) { return m.sym ? m.sym->sizes : core::to_sym(m.sizes); }
core::SymInts strides_of(const TensorMeta& m) { return m.sym ? m.sym->strides : core::to_sym(m.strides); }

int64_t dim_arg(const ImportScope& s, const json& node, const TensorMeta& m, const std::string& where) {
  const int64_t dim = static_int_arg(s, input_named(node, "dim", where), where);
  const auto nd = static_cast<int64_t>(m.sizes.size());
  // sym_size and sym_stride read a dim: a 0-d tensor has none.
  EMBER_CHECK_INDEX(nd > 0 && dim >= -nd && dim < nd)
      << where << ": dim " << dim << " is out of range for a " << nd << "-d tensor";
  return core::wrap_dim(dim, nd);
}

/// _operator's integer arithmetic and comparisons and torch.sym_max/min, over SymInts:
/// plain values compute (Python's floor division and modulo), symbolic ones build
/// expressions, and a comparison of symbolic sizes answers with the example values and
/// records a guard that each call checks (Note [dynamic shapes]).
using SI = core::SymInt;
struct IntOpRow {
  const char* target;
  std::function<SI(const SI&, const SI&)> int_fn;
  std::function<bool(const SI&, const SI&)> bool_fn;
};
void check_divisor(const SI& b, const char* what) {
  EMBER_CHECK_VALUE(b.is_symbolic() || b.hint() != 0) << what << " by zero in the program's size arithmetic";
}
const std::vector<IntOpRow>& int_op_rows() {
  static const std::vector<IntOpRow> rows = {
      {"_operator.add", [](const SI& a, const SI& b) { return a + b; }, nullptr},
      {"_operator.sub", [](const SI& a, const SI& b) { return a - b; }, nullptr},
      {"_operator.mul", [](const SI& a, const SI& b) { return a * b; }, nullptr},
      {"_operator.floordiv",
       [](const SI& a, const SI& b) {
         check_divisor(b, "integer division");
         return core::floordiv(a, b);
       },
       nullptr},
      {"_operator.mod",
       [](const SI& a, const SI& b) {
         check_divisor(b, "modulo");
         return core::mod(a, b);
       },
       nullptr},
      {"torch.sym_max", [](const SI& a, const SI& b) { return core::sym_max(a, b); }, nullptr},
      {"torch.sym_min", [](const SI& a, const SI& b) { return core::sym_min(a, b); }, nullptr},
      {"_operator.eq", nullptr, [](const SI& a, const SI& b) { return a == b; }},
      {"_operator.ne", nullptr, [](const SI& a, const SI& b) { return a != b; }},
      {"_operator.lt", nullptr, [](const SI& a, const SI& b) { return a < b; }},
      {"_operator.le", nullptr, [](const SI& a, const SI& b) { return a <= b; }},
      {"_operator.gt", nullptr, [](const SI& a, const SI& b) { return a > b; }},
      {"_operator.ge", nullptr, [](const SI& a, const SI& b) { return a >= b; }},
  };
  return rows;
}

/// Targets that make no call (sizes, size arithmetic, checks), one row each.
const std::map<std::string, Folder>& folders() {
  static const std::map<std::string, Folder> table = {
      {"torch.ops.aten.sym_size.int",
       [](ImportScope& s, const json& n, const std::string& w) {
         const TensorMeta& m = value_meta(s, n, w);
         fold_int(s, n, w, core::current(sizes_of(m).at(static_cast<size_t>(dim_arg(s, n, m, w)))));
       }},
      {"torch.ops.aten.sym_stride.int",
       [](ImportScope& s, const json& n, const std::string& w) {
         const TensorMeta& m = value_meta(s, n, w);
         fold_int(s, n, w, core::current(strides_of(m).at(static_cast<size_t>(dim_arg(s, n, m, w)))));
       }},
      {"torch.ops.aten.sym_numel.default",
       [](ImportScope& s, const json& n, const std::string& w) {
         SI numel = 1;
         for (const SI& d : sizes_of(value_meta(s, n, w))) numel = numel * core::current(d);
         fold_int(s, n, w, numel);
       }},
      {"torch.ops.aten.sym_storage_offset.default",
       [](ImportScope& s, const json& n, const std::string& w) {
         const TensorMeta& m = value_meta(s, n, w);
         fold_int(s, n, w, m.sym ? core::current(m.sym->storage_offset) : SI(m.storage_offset));
       }},
      {"torch.ops.aten.sym_is_contiguous.default",
       [](ImportScope& s, const json& n, const std::string& w) {
         const TensorMeta& m = value_meta(s, n, w);
         // Over size symbols the answer could differ between calls: not folded to the example's.
         EMBER_CHECK_VALUE(!m.sym) << w << ": sym_is_contiguous of a value with dynamic sizes is not imported "
                                   << "(its answer may change with the sizes; Ember records no such relation)";
         std::string format = "contiguous_format";
         for (const json& in : n.at("inputs"))
           if (in.value("name", std::string()) == "memory_format" && in.at("arg").contains("as_memory_format")) {
             const auto mf = memory_format_of_code(in.at("arg").at("as_memory_format").get<int64_t>());
             EMBER_CHECK_VALUE(mf.has_value()) << w << ": unknown memory format code " << in.at("arg").dump();
             format = *mf;
           }
         s.bools[scalar_output(n, w)] = core::is_contiguous_as(m.sizes, m.strides, format);
       }},
      {"torch.sym_not",
       [](ImportScope& s, const json& n, const std::string& w) {
         const json& ins = n.at("inputs");
         EMBER_CHECK_VALUE(ins.size() == 1) << w << ": expected one operand, got " << ins.size();
         s.bools[scalar_output(n, w)] = !sym_bool_arg(s, operand(ins[0].at("arg"), w), w);
       }},
      // Checks what PyTorch checked when it traced; the recorded geometry is the value's,
      // so only a contradiction (its dtype) is an error.
      {"torch.ops.aten._assert_tensor_metadata.default",
       [](ImportScope& s, const json& n, const std::string& w) {
         const ValueRef v = tensor_ref(s, input_named(n, "a", w).at("as_tensor"), w);
         const TensorMeta& m = v.node->meta().at(v.index);
         for (const json& in : n.at("inputs")) {
           const std::string name = in.at("name").get<std::string>();
           const json& a = in.at("arg");
           if (name == "dtype" && a.contains("as_scalar_type")) {
             const auto dt = dtype_of_code(a.at("as_scalar_type").get<int64_t>());
             EMBER_CHECK_TYPE(dt == m.dtype) << w << ": the program asserts a dtype its value %"
                                             << v.node->name() << " (" << m.dtype << ") does not have";
           }
         }
       }},
      {"torch.ops.aten._assert_scalar.default",
       [](ImportScope& s, const json& n, const std::string& w) {
         const json& a = input_named(n, "self", w);
         const bool ok = a.contains("as_sym_bool") ? sym_bool_arg(s, a.at("as_sym_bool"), w)
                                                   : a.contains("as_bool") ? a.at("as_bool").get<bool>()
                                                                            : sym_int_arg(s, operand(a, w), w) != SI(0);
         std::string msg;
         for (const json& in : n.at("inputs"))
           if (in.at("name") == "assert_msg" && in.at("arg").contains("as_string"))
             msg = in.at("arg").at("as_string").get<std::string>();
         EMBER_CHECK_VALUE(ok) << w << ": the program's assertion fails for its example shapes: " << msg;
       }},
  };
  return table;
}

bool try_fold(ImportScope& s, const json& node, const std::string& target, const std::string& where) {
  auto it = folders().find(target);
  if (it != folders().end()) {
    it->second(s, node, where);
    return true;
  }
  for (const IntOpRow& row : int_op_rows()) {
    if (target != row.target) continue;
    const json& ins = node.at("inputs");
    EMBER_CHECK_VALUE(ins.size() == 2) << where << ": expected two operands, got " << ins.size();
    const SI a = sym_int_arg(s, operand(ins[0].at("arg"), where), where);
    const SI b = sym_int_arg(s, operand(ins[1].at("arg"), where), where);
    const std::string out = scalar_output(node, where);
    if (row.int_fn) s.ints[out] = row.int_fn(a, b);
    if (row.bool_fn) s.bools[out] = row.bool_fn(a, b);
    return true;
  }
  return false;
}

/// The output value names of a node, flattened (a list-returning op's list in order);
/// "" for an output that is None.
std::vector<std::string> output_names(const json& node, const std::string& where) {
  std::vector<std::string> names;
  for (const json& o : node.at("outputs")) {
    const std::string k = union_kind(o, where);
    if (k == "as_tensor") {
      names.push_back(o.at(k).at("name").get<std::string>());
    } else if (k == "as_tensors") {
      for (const json& t : o.at(k)) names.push_back(t.at("name").get<std::string>());
    } else if (k == "as_none" || (k == "as_optional_tensor" && o.at(k).contains("as_none"))) {
      names.emplace_back();
    } else if (k == "as_optional_tensor") {
      names.push_back(o.at(k).at("as_tensor").at("name").get<std::string>());
    } else {
      EMBER_FAIL_KIND(ErrorKind::TypeError) << where << ": outputs of kind '" << k << "' cannot be imported";
    }
  }
  return names;
}

/// The op a node calls: its target's, or the .Scalar overload when every tensor argument
/// given a Python number is a Scalar there (mul.Tensor(x, 0.5) → mul.Scalar), as the
/// scalar overloads are what those numbers mean.
const ops::OpDef* op_for(const json& node, const ops::OpDef* op) {
  const std::string suffix = ".Tensor";
  if (!op->name.ends_with(suffix)) return op;
  const ops::OpDef* alt = ops::registry().find(op->name.substr(0, op->name.size() - suffix.size()) + ".Scalar");
  if (alt == nullptr) return op;
  bool wrapped = false;
  for (const json& in : node.at("inputs")) {
    const std::string arg_name = in.at("name").get<std::string>();
    const int i = op->schema.index_of(arg_name), j = alt->schema.index_of(arg_name);
    if (i < 0) return op;
    const bool number = in.at("arg").is_object() && !in.at("arg").empty() && is_number_kind(in.at("arg").begin().key());
    if (!number || !is_tensor_type(op->schema.arguments[static_cast<size_t>(i)].type)) continue;
    if (j < 0 || alt->schema.arguments[static_cast<size_t>(j)].type.base != BaseType::Scalar) return op;
    wrapped = true;
  }
  return wrapped ? alt : op;
}

/// Requires Ember's geometry of output `k` (%name) to have the program's sizes and dtype,
/// when a later node or the signature reads it (unread outputs, such as batch norm's saved
/// statistics in eval, may differ).
void check_output(const ImportScope& s, const std::string& where, const std::string& op, const std::string& name,
                  size_t k, const TensorMeta& ember) {
  if (!s.used.contains(name)) return;
  const TensorMeta recorded = recorded_meta(s, name);
  EMBER_CHECK_VALUE(same_sizes(s.symbols, ember, recorded) && ember.dtype == recorded.dtype)
      << where << ": output " << k << " (%" << name << ") is " << graph_text::format_meta(recorded)
      << " in the program but Ember's " << op << " computes " << graph_text::format_meta(ember);
}

/// A composite op (one Ember defines by a decomposition) is recorded as the calls its
/// decomposition makes, as capture records it, so that backends see only ops they lower.
void expand_composite(ImportScope& s, const ops::OpDef& op, const std::vector<Arg>& args,
                      const std::vector<std::string>& outs, SourceLoc loc, const std::string& where) {
  capture::GraphRecorder rec(*s.graph);
  rec.set_origin(std::move(loc), true);
  Stack stack;
  for (const Arg& a : args) {
    if (a.kind == Arg::Kind::Literal) {
      stack.push_back(a.literal);
    } else if (a.kind == Arg::Kind::Value) {
      stack.emplace_back(rec.fake(a.value));
    } else {
      std::vector<std::optional<Tensor>> l;
      for (const auto& v : a.values) l.push_back(v ? std::optional<Tensor>(rec.fake(*v)) : std::nullopt);
      stack.emplace_back(std::move(l));
    }
  }
  // A Tensor[] argument holds no None: its list goes to the op as Tensor[].
  for (size_t i = 0; i < stack.size(); ++i) {
    if (!stack[i].is_optional_tensor_list() || op.schema.arguments[i].type.element_optional) continue;
    std::vector<Tensor> l;
    for (const auto& t : stack[i].to_optional_tensor_list()) l.push_back(*t);
    stack[i] = IValue(std::move(l));
  }
  std::vector<Tensor> results;
  for (const IValue& v : ops::call(op, stack)) {
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) results.push_back(t);
    } else {
      results.push_back(v.is_none() ? Tensor() : v.to_tensor());
    }
  }
  EMBER_CHECK_VALUE(results.size() == outs.size())
      << where << ": Ember's " << op.name << " has " << results.size() << " outputs, the program records "
      << outs.size();
  for (size_t k = 0; k < outs.size(); ++k) {
    if (outs[k].empty() || !results[k].defined()) continue;
    const ValueRef v = rec.value(results[k]);
    check_output(s, where, op.name, outs[k], k, v.node->meta().at(v.index));
    s.values[outs[k]] = v;
  }
}


/// resize_ functionalized, as PyTorch's functionalization does it (Note [resize_]): when
/// the new size fits in the value's own memory, the result is an as_strided view of it
/// (the elements resize_ keeps, at contiguous or channels_last strides); when it grows,
/// the value is padded with zeros to the bytes needed (resize_ leaves them uninitialized)
/// and viewed so. Every name of the old value then names the result, as eager's later
/// reads of the resized tensor see it. The program's inputs, views and symbolic sizes are
/// refused: the first would need a write back of geometry, the others storage the graph
/// does not describe.
void import_resize(ImportScope& s, const std::vector<Arg>& args, const std::vector<std::string>& outs, SourceLoc loc,
                   const std::string& where) {
  EMBER_CHECK_VALUE(args.size() == 3 && args[0].kind == Arg::Kind::Value && args[1].kind == Arg::Kind::Literal)
      << where << ": resize_ takes a tensor value and a size list";
  const ValueRef self = args[0].value;
  const IValue& size_arg = args[1].literal;
  // A list with a symbolic entry (is_sym_int_list) has sizes the graph cannot allocate
  // storage for ahead of the call.
  EMBER_CHECK_VALUE(size_arg.is_int_list() && !size_arg.is_sym_int_list())
      << where << ": resize_ to the size " << size_arg
      << " is not supported: only sizes known when the program is imported (export with static shapes)";
  const std::vector<int64_t> sizes = size_arg.to_int_list();
  try {
    ops::check_resize_arguments(sizes, args[2].literal);
  } catch (const Error& e) {
    EMBER_FAIL_KIND(ErrorKind::ValueError) << where << ": " << e.what();
  }
  const TensorMeta& m = self.node->meta().at(self.index);
  const ops::OpDef* maker = self.node->op();
  EMBER_CHECK_VALUE(self.node->kind() == NodeKind::Call && maker && maker->kind != ops::OpKind::View)
      << where << ": resize_ of %" << self.node->name()
      << (self.node->kind() == NodeKind::Call ? ", a view," : ", an input of the program,")
      << " is not supported: only a tensor the program makes (a clone, a new tensor) can be resized on import";

  capture::GraphRecorder rec(*s.graph);
  rec.set_origin(std::move(loc), true);
  const Tensor t = rec.fake(self);
  Tensor result = t;
  if (sizes != m.sizes || !args[2].literal.is_none()) {
    // The elements the value's memory holds: its extent from its storage offset.
    int64_t extent = m.storage_offset + 1;
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      if (m.sizes[d] == 0) extent = m.storage_offset;
      if (extent > m.storage_offset) extent += (m.sizes[d] - 1) * m.strides[d];
    }
    int64_t needed = 0;
    EMBER_CHECK_VALUE(!__builtin_add_overflow(m.storage_offset, core::numel_of(sizes), &needed))
        << where << ": resize_ to " << IntArrayRef(sizes) << " at storage offset " << m.storage_offset
        << " needs more elements than fit in memory";
    const std::vector<int64_t> strides = ops::resize_strides(sizes, args[2].literal);
    if (core::numel_of(sizes) == 0 || needed <= extent) {
      result = as_strided(t, sizes, strides, m.storage_offset);
    } else {
      EMBER_CHECK_VALUE(m.storage_offset == 0 && core::is_contiguous(m.sizes, m.strides))
          << where << ": resize_ grows %" << self.node->name() << ", which is not contiguous ("
          << graph_text::format_meta(m) << "); only a contiguous value can grow on import";
      const Tensor grown = constant_pad_nd(t.reshape({-1}), {0, needed - core::numel_of(m.sizes)}, 0);
      result = as_strided(grown, sizes, strides, 0);
    }
  }
  const ValueRef r = rec.value(result);
  for (auto& [name, v] : s.values)
    if (v == self) v = r;
  if (!outs.empty() && !outs[0].empty()) s.values[outs[0]] = r;
}

/// The first unbacked symbol (`u0`, `u12`: a value read from tensor data) in a size
/// expression's text, or "".
std::string unbacked_symbol_in(const std::string& text) {
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const bool starts = text[i] == 'u' && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1])));
    if (!starts || !std::isdigit(static_cast<unsigned char>(text[i + 1]))) continue;
    size_t end = i + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]))) return text.substr(i, end - i);
  }
  return "";
}

/// The unbacked symbol an output of a node introduces: a number it reads (`as_sym_int`,
/// `as_sym_float`, `as_sym_bool`) or a tensor size over one (nonzero's), or "".
std::string unbacked_output(const json& graph, const json& out) {
  const auto in_values = [&](const char* table, const std::string& name) -> std::string {
    if (!graph.contains(table) || !graph.at(table).contains(name)) return "";
    return unbacked_symbol_in(graph.at(table).at(name).dump());
  };
  for (const auto& [kind, table] : {std::pair{"as_sym_int", "sym_int_values"}, std::pair{"as_sym_float", "sym_float_values"},
                                    std::pair{"as_sym_bool", "sym_bool_values"}}) {
    if (out.contains(kind) && out.at(kind).contains("as_name")) {
      const std::string u = in_values(table, out.at(kind).at("as_name").get<std::string>());
      if (!u.empty()) return u;
    }
  }
  if (out.contains("as_tensor") && out.at("as_tensor").contains("name")) {
    const json& tv = graph.value("tensor_values", json::object());
    const std::string name = out.at("as_tensor").at("name").get<std::string>();
    if (tv.contains(name) && tv.at(name).contains("sizes")) return unbacked_symbol_in(tv.at(name).at("sizes").dump());
  }
  return "";
}

}  // namespace

void collect_tensor_names(const json& j, std::set<std::string>& out) {
  if (j.is_array()) {
    for (const json& e : j) collect_tensor_names(e, out);
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "as_tensor" && v.is_object() && v.contains("name") && v["name"].is_string()) {
        out.insert(v["name"].get<std::string>());
      } else if (k == "as_tensors" && v.is_array()) {
        for (const json& e : v)
          if (e.is_object() && e.contains("name") && e["name"].is_string()) out.insert(e["name"].get<std::string>());
      } else {
        collect_tensor_names(v, out);
      }
    }
  }
}

bool is_folded_target(const std::string& target) {
  if (folders().contains(target)) return true;
  for (const IntOpRow& row : int_op_rows())
    if (target == row.target) return true;
  return false;
}

TensorMeta recorded_meta(const ImportScope& scope, const std::string& name) {
  EMBER_CHECK_VALUE(scope.tensor_values->contains(name))
      << scope.where << ": the program records no geometry for the value %" << name;
  const json& j = scope.tensor_values->at(name);
  const std::string where = scope.where + ": value %" + name;
  return scope.symbols ? json_to_sym_meta(*scope.symbols, j, where) : json_to_meta(j, where);
}

std::optional<std::string> aten_name_of_target(const std::string& target) {
  static const std::string prefix = "torch.ops.aten.";
  if (target.rfind(prefix, 0) != 0) return std::nullopt;
  std::string rest = target.substr(prefix.size());
  const size_t dot = rest.rfind('.');
  if (dot == std::string::npos) return "aten::" + rest;
  const std::string overload = rest.substr(dot + 1);
  return "aten::" + rest.substr(0, dot) + (overload == "default" ? "" : "." + overload);
}

/// Refuses a node whose import fixed a dynamic size to its example value: Ember's op read
/// a symbolic argument or size as a plain integer (the shape environment gained a guard
/// `expr == constant`), where the program stays valid over the symbol's whole range.
void no_new_specialization(const ImportScope& s, size_t guards_before, const std::string& where) {
  const core::ShapeEnv& env = *s.symbols->env;
  for (size_t i = guards_before; i < env.guards().size(); ++i) {
    const core::ShapeGuard& g = env.guards()[i];
    const bool fixes = g.rel == core::Relation::Eq && (g.lhs.is_const() != g.rhs.is_const());
    EMBER_CHECK_VALUE(!fixes) << where << ": Ember's op reads a dynamic size as a plain integer here, which "
                              << "would fix it to its example value for every call (" << env.format(g.lhs) << " == "
                              << env.format(g.rhs) << "); the program is exported as valid over "
                              << "the symbol's whole range, so it cannot be imported with this op";
  }
}

void import_call(ImportScope& s, const json& node, const std::string& target, const std::string& where,
                 size_t guards_before);

void import_node(ImportScope& s, const json& node) {
  const std::string where = s.where + ": " + node_label(node);
  const std::string target = node.at("target").get<std::string>();
  if (try_fold(s, node, target, where)) return;
  const size_t guards_before = s.symbols ? s.symbols->env->guards().size() : 0;
  import_call(s, node, target, where, guards_before);
  if (s.symbols) no_new_specialization(s, guards_before, where);  // a composite's decomposition
}

/// A call of a Core ATen op: its arguments onto the schema, its outputs checked against
/// Ember's meta function, the node added to the graph.
void import_call(ImportScope& s, const json& node, const std::string& target, const std::string& where,
                 size_t guards_before) {
  const auto name = aten_name_of_target(target);
  EMBER_CHECK_VALUE(name.has_value()) << where << ": calls '" << target
                                      << "', which is not an ATen op; Ember imports Core ATen calls only";
  const ops::OpDef* op = ops::registry().find(*name);
  EMBER_CHECK_VALUE(op != nullptr) << where << ": calls " << *name
                                   << ", an op Ember does not have (`ember inspect` lists every op a program "
                                      "uses that Ember lacks)";
  op = op_for(node, op);
  const ops::Schema& schema = op->schema;

  // Named arguments onto the schema; omitted ones from its defaults.
  std::vector<std::optional<Arg>> slots(schema.arguments.size());
  for (const json& in : node.at("inputs")) {
    const std::string arg_name = in.at("name").get<std::string>();
    const int idx = schema.index_of(arg_name);
    EMBER_CHECK_VALUE(idx >= 0) << where << ": " << *name << " has no argument '" << arg_name << "' (schema "
                                << schema.str() << ")";
    const auto i = static_cast<size_t>(idx);
    EMBER_CHECK_VALUE(!slots[i]) << where << ": argument '" << arg_name << "' is given twice";
    slots[i] = convert_arg(s, in.at("arg"), schema.arguments[i].type, where + ", argument '" + arg_name + "'");
  }
  std::vector<Arg> args;
  Stack example;  // the arguments with meta tensors for values, for the meta function
  for (size_t i = 0; i < slots.size(); ++i) {
    const ops::Argument& sa = schema.arguments[i];
    if (!slots[i]) {
      EMBER_CHECK_VALUE(sa.default_value.has_value())
          << where << ": the required argument '" << sa.name << "' of " << schema.str() << " is missing";
      slots[i] = Arg::of_literal(*sa.default_value);
    }
    const Arg& a = *slots[i];
    auto tensor_of = [](const ValueRef& v) { return meta_tensor(v.node->meta().at(v.index)); };
    if (a.kind == Arg::Kind::Literal) {
      example.push_back(a.literal);
    } else if (a.kind == Arg::Kind::Value) {
      EMBER_CHECK_TYPE(sa.type.base == BaseType::Tensor && !sa.type.is_list)
          << where << ": argument '" << sa.name << "' is a tensor where the schema wants " << sa.type.str();
      example.emplace_back(tensor_of(a.value));
    } else if (sa.type.element_optional) {
      std::vector<std::optional<Tensor>> l;
      for (const auto& v : a.values) l.push_back(v ? std::optional<Tensor>(tensor_of(*v)) : std::nullopt);
      example.emplace_back(std::move(l));
    } else {
      EMBER_CHECK_TYPE(sa.type.base == BaseType::Tensor && sa.type.is_list)
          << where << ": argument '" << sa.name << "' is a list of tensors where the schema wants " << sa.type.str();
      std::vector<Tensor> l;
      for (const auto& v : a.values) {
        EMBER_CHECK_VALUE(v.has_value()) << where << ": argument '" << sa.name << "' holds None";
        l.push_back(tensor_of(*v));
      }
      example.emplace_back(std::move(l));
    }
  }
  ops::normalize_args(schema, example);
  for (size_t i = 0; i < slots.size(); ++i)
    args.push_back(slots[i]->kind == Arg::Kind::Literal ? Arg::of_literal(example[i]) : *slots[i]);

  const std::vector<std::string> outs = output_names(node, where);
  for (const std::string& o : outs)
    EMBER_CHECK_VALUE(o.empty() || !s.values.contains(o)) << where << ": the value %" << o << " is defined twice";
  if (op->kind == ops::OpKind::Composite) {
    expand_composite(s, *op, args, outs, loc_of(node), where);
    return;
  }
  if (op->resizes) {
    import_resize(s, args, outs, loc_of(node), where);
    return;
  }
  if (s.symbols != nullptr && op->name == "aten::scalar_tensor" && outs.size() == 1 && !outs[0].empty()) {
    // In a symbolic program, a 0-dim tensor of literals (Core ATen's `where(mask, x, -inf)` makes one): a
    // constant, as a Python number where a tensor is wanted becomes, so that no backend
    // sees a factory call (the inductor compiles a symbolic graph with one over its symbols).
    Stack call_args;
    for (const Arg& a : args) call_args.push_back(a.literal);
    const Tensor t = ops::call(*op, call_args).at(0).to_tensor();
    check_output(s, where, *name, outs[0], 0, TensorMeta{t.sizes().vec(), t.strides().vec(), t.dtype(), t.device(), 0});
    s.values[outs[0]] = s.graph->add_constant("_scalar", t)->out();
    return;
  }

  // Outputs: the program's recorded geometry, checked against Ember's meta function.
  std::vector<TensorMeta> metas;
  for (const std::string& o : outs) metas.push_back(o.empty() ? TensorMeta{} : recorded_meta(s, o));
  if (op->meta && op->kind != ops::OpKind::InPlace) {
    std::vector<TensorMeta> ember = op->meta(example);
    if (s.symbols) no_new_specialization(s, guards_before, where);  // before its sizes are compared
    EMBER_CHECK_VALUE(ember.size() == outs.size())
        << where << ": Ember's " << *name << " has " << ember.size() << " outputs, the program records " << outs.size();
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].empty()) continue;
      // Ember's strides are what its kernels write; sizes and dtype must agree.
      check_output(s, where, *name, outs[k], k, ember[k]);
      ember[k].device = metas[k].device;
      metas[k] = ember[k];
    }
  }
  for (size_t k = 0; k < outs.size(); ++k)
    if (outs[k].empty()) metas[k].undefined = true;
  // The program's node name when it is free, so that the graph reads like PyTorch's.
  const std::string node_name = node.value("name", std::string());
  Node* n = !node_name.empty() && s.graph->find(node_name) == nullptr && is_identifier(node_name)
                ? s.graph->add_named(NodeKind::Call, node_name, op->name, op, std::move(args), std::move(metas),
                                     loc_of(node), true)
                : s.graph->add_call(*op, std::move(args), std::move(metas), loc_of(node));
  for (size_t k = 0; k < outs.size(); ++k)
    if (!outs[k].empty()) s.values[outs[k]] = n->out(static_cast<uint32_t>(k));
}

void refuse_data_dependent_nodes(const json& graph, const std::string& where) {
  for (const json& node : graph.value("nodes", json::array())) {
    if (!node.is_object() || !node.contains("outputs") || !node.at("outputs").is_array()) continue;
    for (const json& out : node.at("outputs")) {
      const std::string u = out.is_object() ? unbacked_output(graph, out) : "";
      if (u.empty()) continue;
      const SourceLoc loc = loc_of(node);
      EMBER_FAIL_KIND(ErrorKind::ValueError)
          << where << ": " << node_label(node)
          << (loc.known() ? " at " + loc.str() : std::string())
          << " reads a value from tensor data (" << u
          << ", an unbacked symbol: `.item()`, `nonzero`, a size that depends on values); Ember imports programs "
             "whose sizes and numbers follow from the inputs' shapes only, so this program cannot be imported. "
             "Keep the data-dependent step outside the exported module, or pass the value as an input tensor";
    }
  }
}

}  // namespace ember::exporting
