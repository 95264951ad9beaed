// graph/runnable.cpp — to_runnable_cpp: a graph as a standalone C++ program that uses only
// Ember's public API (the counterpart of PyTorch's fx_graph_runnable). It calls each op by
// name through ember::call_op, makes inputs from a fixed seed and prints a checksum per
// output, so a graph can be re-run, bisected or shared without the code that captured it.
// See Note [graph] (docs/notes/graph.md), "Runnable programs".
#include "graph/runnable.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/shape.h"
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/random.h"
#include "graph/symbols.h"
#include "graph/text.h"
#include "ops/registry.h"

namespace ember {
namespace {

/// Constants with more elements are not written out (see Note [graph]).
constexpr int64_t kMaxLiteralElements = 1024;

// Identifiers of the program itself, which a node's variable must not shadow.
const std::set<std::string> kReservedNames = {
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    // the program's own names
    "ember",
    "std",
    "main",
    "forward",
    "make_input",
    "random_values",
    "storage_size",
    "restrided",
    "print_summary",
    "outputs",
    "k",
    "no_grad",
    "int64_t",
    "size_t",
    "printf",
    "NULL",
    "EOF",
    "assert",
    "errno",
};

const char* enum_name(ScalarType t) {
  switch (t) {
    case kBool:
      return "Bool";
    case kUInt8:
      return "UInt8";
    case kInt8:
      return "Int8";
    case kInt16:
      return "Int16";
    case kInt32:
      return "Int32";
    case kInt64:
      return "Int64";
    case kHalf:
      return "Half";
    case kBFloat16:
      return "BFloat16";
    case kFloat:
      return "Float";
    case kDouble:
      return "Double";
    case kComplexFloat:
      return "ComplexFloat";
    case kComplexDouble:
      return "ComplexDouble";
  }
  return "Float";
}

std::string dtype_expr(ScalarType t) { return std::string("ember::ScalarType::") + enum_name(t); }

std::string int_expr(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "std::numeric_limits<int64_t>::min()";
  return std::to_string(v);
}

std::string int_list_expr(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + int_expr(v[i]);
  return s + "}";
}

/// The shortest decimal that reads back to `d` as a T (float or double), as a C++ literal.
template <typename T>
std::string float_expr(T d) {
  const char* type = std::is_same_v<T, float> ? "float" : "double";
  if (std::isnan(d)) return std::string("std::numeric_limits<") + type + ">::quiet_NaN()";
  if (std::isinf(d)) return std::string(d > 0 ? "" : "-") + "std::numeric_limits<" + type + ">::infinity()";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(d));
    if (static_cast<T>(std::strtod(buf, nullptr)) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (std::is_same_v<T, float>) s += "f";
  return s;
}

std::string string_expr(const std::string& s) {
  std::string out = "std::string(\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f || c == '?') {
      // Octal escapes stop after three digits (hex ones would swallow what follows); '?'
      // is escaped so that no "??x" trigraph forms.
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\")";
}

/// A size as C++ over the program's `ks` (a symbol's value slot) when it holds symbols,
/// else its digits.
std::string sym_int_expr(const SymInt& s) {
  return s.is_symbolic() ? core::sym::c_expr(core::value_slots_expr(*s.sym())) : int_expr(s.hint());
}

std::string literal_expr(const IValue& v) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, None>) {
          return "ember::None{}";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return "int64_t{" + int_expr(x) + "}";
        } else if constexpr (std::is_same_v<T, double>) {
          return float_expr(x);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          if (x.is_bool()) return std::string("ember::Scalar(") + (x.to_bool() ? "true" : "false") + ")";
          if (x.is_integral()) return "ember::Scalar(int64_t{" + int_expr(x.to_long()) + "})";
          return "ember::Scalar(" + float_expr(x.to_double()) + ")";
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return "std::vector<int64_t>" + int_list_expr(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          std::string s = "std::vector<double>{";
          for (size_t i = 0; i < x.size(); ++i) s += std::string(i ? ", " : "") + float_expr(x[i]);
          return s + "}";
        } else if constexpr (std::is_same_v<T, SymInt>) {
          return "int64_t{" + sym_int_expr(x) + "}";  // at this run's symbol values
        } else if constexpr (std::is_same_v<T, SymIntList>) {
          std::string s = "std::vector<int64_t>{";
          for (size_t i = 0; i < x.values.size(); ++i) s += (i ? ", " : "") + sym_int_expr(x.values[i]);
          return s + "}";
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          std::string s = "std::vector<bool>{";
          for (size_t i = 0; i < x.size(); ++i) s += std::string(i ? ", " : "") + (x[i] ? "true" : "false");
          return s + "}";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return string_expr(x);
        } else if constexpr (std::is_same_v<T, ScalarType>) {
          return dtype_expr(x);
        } else if constexpr (std::is_same_v<T, Device>) {
          return "ember::Device(\"" + x.str() + "\")";
        } else {
          EMBER_FAIL_KIND(ErrorKind::ValueError)
              << "to_runnable_cpp: a " << v.type_name() << " literal argument cannot be written as C++";
        }
      },
      v.variant());
}

/// The element values of a small CPU constant, as `ember::tensor<T>({…}, sizes, dtype)`.
std::string constant_literal(const Tensor& t) {
  std::ostringstream os;
  const std::string sizes = "std::vector<int64_t>" + int_list_expr(t.sizes().vec());
  auto join = [&](const auto& values, auto&& each) {
    os << "{";
    for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << each(values[i]);
    os << "}";
  };
  const ScalarType dt = t.dtype();
  if (dt == kBool) {
    os << "ember::tensor<bool>(std::vector<bool>";
    join(t.to_vector<bool>(), [](bool b) { return b ? "true" : "false"; });
  } else if (dt == kDouble) {
    os << "ember::tensor<double>(std::vector<double>";
    join(t.to_vector<double>(), [](double d) { return float_expr(d); });
  } else if (is_floating_point(dt)) {
    os << "ember::tensor<float>(std::vector<float>";
    join(t.to_vector<float>(), [](float f) { return float_expr(f); });
  } else {
    os << "ember::tensor<int64_t>(std::vector<int64_t>";
    join(t.to_vector<int64_t>(), [](int64_t i) { return int_expr(i); });
  }
  os << ", " << sizes << ", " << dtype_expr(dt) << ")";
  // tensor() reads empty sizes as "1-D": a 0-dim constant is reshaped to [].
  if (t.dim() == 0) os << ".reshape(std::vector<int64_t>{})";
  return os.str();
}

bool is_contiguous_meta(const TensorMeta& m) {
  return m.storage_offset == 0 && m.strides == core::contiguous_strides(m.sizes);
}

/// A symbolic geometry's entries as C++ over the program's `ks`.
std::string sym_list_expr(const std::vector<core::SymInt>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + core::sym::c_expr(core::value_slots_expr(v[i]));
  return s + "}";
}

/// make_input of `m`'s geometry: its digits, or over `ks` when it holds symbols (the
/// program's inputs are then made at the symbol values of the run).
std::string make_input_expr(const TensorMeta& m) {
  if (m.sym)
    return "make_input(" + sym_list_expr(m.sym->sizes) + ", " + sym_list_expr(m.sym->strides) + ", " +
           core::sym::c_expr(core::value_slots_expr(m.sym->storage_offset)) + ", " + dtype_expr(m.dtype) + ")";
  return "make_input(" + int_list_expr(m.sizes) + ", " + int_list_expr(m.strides) + ", " + int_expr(m.storage_offset) +
         ", " + dtype_expr(m.dtype) + ")";
}

class Writer {
 public:
  Writer(const Graph& g, const RunnableOptions& options) : g_(g), options_(options) {
    for (const auto& n : g.nodes()) var_[n.get()] = fresh_var(n->name());
    bind_symbols();
  }

  std::string program() {
    std::ostringstream os;
    header(os);
    os << kHelpers;
    symbols(os);
    forward(os);
    if (!options_.main_source.empty()) forward_list(os);
    os << "}  // namespace\n\n";
    if (options_.main_source.empty()) {
      main_fn(os);
    } else {
      os << options_.main_source;
    }
    return os.str();
  }

 private:
  /// A graph over size symbols: the program keeps their values in `ks` (one per value slot:
  /// the input symbols, then the data-dependent sizes). forward() sets each where the graph's
  /// symbol table reads it (graph/symbols.h): from an input's size, a data-dependent one
  /// from the output of the op computing it, so that the program runs at the sizes of the
  /// inputs it is given.
  void bind_symbols() {
    env_ = graph_text::shape_env_of(g_);
    if (!env_) return;
    const graph::SymbolTable table = graph::bind_symbols(g_);
    slots_ = table.num_symbols;
    auto line = [](int32_t slot, const std::string& tensor, size_t dim) {
      return "  ks[" + std::to_string(slot) + "] = " + tensor + ".size(" + std::to_string(dim) + ");";
    };
    const std::vector<Node*> inputs = g_.inputs();
    for (const graph::SymbolBinding& b : table.bindings)
      from_inputs_.push_back(line(b.symbol, var_.at(inputs[b.input]), b.dim));
    for (const graph::OutputBinding& b : table.from_outputs) {
      Node* n = g_.nodes()[b.node].get();
      after_[n].push_back(line(b.symbol, ref_expr(n->out(static_cast<uint32_t>(b.output))), b.dim));
    }
  }

  /// The symbols' values (`ks`) and the command line that sets the input symbols.
  void symbols(std::ostream& os) const {
    if (!env_) return;
    const size_t inputs = env_->num_symbols();
    os << "/// The graph's size symbols by value slot: s0 ... s" << inputs - 1
       << (env_->num_unbacked() ? ", then the data-dependent u0 ..." : "")
       << ". forward() reads each from the size of an input\n"
       << "/// (or of the output of the op computing it); main() makes the inputs at the values its\n"
       << "/// arguments give (`s0=12`), else at the example values below.\n"
       << "int64_t ks[" << std::max<size_t>(slots_, 1) << "] = {";
    for (size_t i = 0; i < slots_; ++i)
      os << (i ? ", " : "") << (i < inputs ? env_->symbol(static_cast<int32_t>(i)).hint : 0);
    os << "};\n\n"
       << "/// Sets an input symbol from a command-line argument `s<k>=<size>`.\n"
       << "[[maybe_unused]] void set_symbol(const std::string& arg) {\n"
       << "  const size_t eq = arg.find('=');\n"
       << "  char* end = nullptr;\n"
       << "  long long k = -1, value = -1;\n"
       << "  if (eq != std::string::npos && arg.size() > 1 && arg[0] == 's') k = std::strtoll(arg.c_str() + 1, &end, "
          "10);\n"
       << "  if (k >= 0 && end == arg.c_str() + eq) value = std::strtoll(arg.c_str() + eq + 1, &end, 10);\n"
       << "  if (k < 0 || k >= " << inputs << " || value < 0 || *end != '\\0') {\n"
       << "    std::fprintf(stderr, \"expected s<k>=<size> with k < " << inputs
       << " (the graph's input symbols), got '%s'\\n\", arg.c_str());\n"
       << "    std::exit(2);\n"
       << "  }\n"
       << "  ks[k] = value;\n"
       << "}\n\n";
  }

  std::string fresh_var(const std::string& name) {
    std::string v;
    for (char c : name) v += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (v.empty() || std::isdigit(static_cast<unsigned char>(v[0]))) v.insert(v.begin(), 'v');
    // Names with "__" or "_X" at the front are the implementation's.
    if (v.size() >= 2 && v[0] == '_' && (v[1] == '_' || std::isupper(static_cast<unsigned char>(v[1])))) {
      v.insert(v.begin(), 'v');
    }
    while (kReservedNames.contains(v) || used_.contains(v)) v += '_';
    used_.insert(v);
    return v;
  }

  const ops::OpDef* op_of(const Node& n) const { return n.kind() == NodeKind::Call ? n.op() : nullptr; }
  static bool returns_list(const ops::OpDef& op) {
    return !op.schema.returns.empty() && op.schema.returns[0].type.is_list;
  }
  /// Whether the node's variable is a Stack (several returned values).
  static bool holds_stack(const Node& n) {
    return n.kind() == NodeKind::Call && !returns_list(*n.op()) && n.op()->schema.returns.size() != 1;
  }

  std::string ref_expr(const ValueRef& v) const {
    const std::string& var = var_.at(v.node);
    if (v.node->kind() != NodeKind::Call) return var;
    if (returns_list(*v.node->op())) return var + ".at(" + std::to_string(v.index) + ")";
    if (holds_stack(*v.node)) return var + ".at(" + std::to_string(v.index) + ").to_tensor()";
    return var;
  }

  std::string arg_expr(const Node& n, size_t i) const {
    const Arg& a = n.args()[i];
    switch (a.kind) {
      case Arg::Kind::Literal:
        return literal_expr(a.literal);
      case Arg::Kind::Value:
        return ref_expr(a.value);
      case Arg::Kind::ValueList: {
        const bool optional = i < n.op()->schema.arguments.size() && n.op()->schema.arguments[i].type.element_optional;
        std::string s = optional ? "std::vector<std::optional<ember::Tensor>>{" : "std::vector<ember::Tensor>{";
        for (size_t k = 0; k < a.values.size(); ++k) {
          s += k ? ", " : "";
          s += a.values[k] ? ref_expr(*a.values[k]) : std::string("std::nullopt");
        }
        return s + "}";
      }
    }
    return "";
  }

  void header(std::ostream& os) const {
    if (!options_.header_comment.empty()) {
      std::istringstream comment(options_.header_comment);
      for (std::string line; std::getline(comment, line);) os << (line.empty() ? "//" : "// " + line) << "\n";
      os << "//\n";
    } else {
      header_comment(os);
    }
    std::istringstream text(to_string(g_));
    for (std::string line; std::getline(text, line);) os << "//   " << line << "\n";
    os << "\n"
       << "#include <cstdint>\n#include <cstdio>\n#include <cstdlib>\n#include <limits>\n#include <optional>\n"
       << "#include <string>\n"
       << "#include <vector>\n\n#include <ember/ember.h>\n\nnamespace {\n\n";
  }

  void header_comment(std::ostream& os) const {
    os << "// fx_graph_runnable for graph " << g_.name() << ", written by ember::to_runnable_cpp.\n"
       << "// A standalone program: it rebuilds the graph below through Ember's public API (each op\n"
       << "// called by name), makes inputs with the recorded sizes, strides and dtypes (random values,\n"
       << "// seed 0), runs the graph and prints each output's sizes, dtype and checksum (the sum of\n"
       << "// its elements as double).\n"
       << "//\n"
       << "// Build it like any Ember program: the compiler, flags, include directory and libraries are\n"
       << "// in the generated header ember/build_info.h (see docs/notes/graph.md).\n"
       << "//\n";
  }

  static constexpr const char* kHelpers = R"(/// Elements a strided tensor reaches in its storage.
int64_t storage_size(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset) {
  int64_t n = offset + 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return offset;
    n += (sizes[d] - 1) * strides[d];
  }
  return n;
}

/// `n` random values: normal for floating dtypes, integers in [0, 10), or booleans.
ember::Tensor random_values(int64_t n, ember::ScalarType dtype) {
  if (ember::is_floating_point(dtype)) return ember::randn({n}, dtype);
  if (dtype == ember::kBool) return ember::lt(ember::rand({n}), 0.5);
  return ember::floor(ember::mul(ember::rand({n}), 10)).to(dtype);
}

/// An input with the recorded geometry, its storage filled with random values.
[[maybe_unused]] ember::Tensor make_input(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                          int64_t offset, ember::ScalarType dtype) {
  return random_values(storage_size(sizes, strides, offset), dtype).as_strided(sizes, strides, offset);
}

/// `values` copied into a tensor of the recorded geometry.
[[maybe_unused]] ember::Tensor restrided(const ember::Tensor& values, const std::vector<int64_t>& strides,
                                         int64_t offset) {
  std::vector<int64_t> sizes = values.sizes().vec();
  ember::Tensor out = ember::empty({storage_size(sizes, strides, offset)}, values.dtype());
  out = out.as_strided(sizes, strides, offset);
  out.copy_(values);
  return out;
}

void print_summary(size_t k, const ember::Tensor& t) {
  std::string sizes;
  for (int64_t s : t.sizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
  const double checksum = t.to(ember::kDouble).sum().item<double>();
  const std::string_view dtype = ember::dtype_name(t.dtype());
  std::printf("output %zu: sizes=[%s] dtype=%.*s checksum=%.17g\n", k, sizes.c_str(), static_cast<int>(dtype.size()),
              dtype.data(), checksum);
}

)";

  void constant(std::ostream& os, const Node& n) const {
    const TensorMeta& m = n.meta().at(0);
    const auto it = g_.constants().find(n.target());
    const std::string& var = var_.at(&n);
    // The value is written out only when it is at hand and has the recorded sizes and dtype.
    const bool known = it != g_.constants().end() && it->second.defined() && it->second.is_cpu() &&
                       it->second.sizes() == IntArrayRef(m.sizes) && it->second.dtype() == m.dtype;
    const int64_t numel = core::numel_of(m.sizes);
    if (!known || numel > kMaxLiteralElements) {
      os << "  // constant " << n.target() << " (" << graph_text::format_meta(m) << "): "
         << (known ? std::to_string(numel) + " elements, too many to write out"
                   : std::string("its value is not part of this graph"))
         << "; random values of its geometry stand in for it.\n";
      os << "  ember::Tensor " << var << " = " << make_input_expr(m) << ";\n";
      return;
    }
    os << "  // constant " << n.target() << " (" << graph_text::format_meta(m) << ")\n";
    std::string value = constant_literal(it->second);
    if (!is_contiguous_meta(m)) {
      value = "restrided(" + value + ", " + int_list_expr(m.strides) + ", " + int_expr(m.storage_offset) + ")";
    }
    os << "  ember::Tensor " << var << " = " << value << ";\n";
  }

  void call(std::ostream& os, const Node& n) const {
    const ops::OpDef& op = *n.op();
    std::string expr = "ember::call_op(\"" + op.name + "\", {";
    for (size_t i = 0; i < n.args().size(); ++i) expr += (i ? ", " : "") + arg_expr(n, i);
    expr += "})";
    std::string decl;
    if (returns_list(op)) {
      decl = "std::vector<ember::Tensor> " + var_.at(&n);
      expr += ".at(0).to_tensor_list()";
    } else if (holds_stack(n)) {
      decl = "ember::Stack " + var_.at(&n);
    } else {
      decl = "ember::Tensor " + var_.at(&n);
      expr += ".at(0).to_tensor()";
    }
    if (!n.grad_enabled()) expr = "[&] {\n    ember::NoGradGuard no_grad;\n    return " + expr + ";\n  }()";
    os << "  " << decl << " = " << expr << ";";
    if (n.loc().known()) os << "  // " << n.loc().str();
    os << "\n";
  }

  void forward(std::ostream& os) const {
    os << "std::vector<ember::Tensor> forward(";
    bool first = true;
    for (const Node* in : g_.inputs()) {
      os << (first ? "" : ", ") << "const ember::Tensor& " << var_.at(in);
      first = false;
    }
    os << ") {\n";
    for (const std::string& line : from_inputs_) os << line << "\n";
    for (const auto& np : g_.nodes()) {
      const Node& n = *np;
      if (n.kind() == NodeKind::Constant) constant(os, n);
      if (n.kind() == NodeKind::Call) call(os, n);
      if (auto it = after_.find(&n); it != after_.end())
        for (const std::string& line : it->second) os << line << "\n";
    }
    os << "  return {";
    const std::vector<ValueRef> outs = g_.outputs();
    for (size_t i = 0; i < outs.size(); ++i) os << (i ? ", " : "") << ref_expr(outs[i]);
    os << "};\n}\n\n";
  }

  /// forward() taking the inputs as one vector, in Graph::inputs() order.
  void forward_list(std::ostream& os) const {
    os << "/// forward() with its inputs in a vector, in the graph's input order.\n"
       << "[[maybe_unused]] std::vector<ember::Tensor> forward_list(const std::vector<ember::Tensor>& in) {\n"
       << "  return forward(";
    for (size_t i = 0; i < g_.inputs().size(); ++i) os << (i ? ", " : "") << "in.at(" << i << ")";
    os << ");\n}\n\n";
  }

  void main_fn(std::ostream& os) const {
    if (env_)
      os << "int main(int argc, char** argv) {\n  for (int a = 1; a < argc; ++a) set_symbol(argv[a]);\n"
         << "  ember::manual_seed(0);\n";
    else
      os << "int main() {\n  ember::manual_seed(0);\n";
    std::string args;
    for (const Node* in : g_.inputs()) {
      const TensorMeta& m = in->meta().at(0);
      os << "  ember::Tensor " << var_.at(in) << " = " << make_input_expr(m) << ";  // "
         << (in->kind() == NodeKind::Attribute ? "get_attr " : "placeholder ") << in->target();
      if (!m.device.is_cpu()) os << ", recorded on " << m.device << ", made on cpu";
      os << "\n";
      args += (args.empty() ? "" : ", ") + var_.at(in);
    }
    os << "  const std::vector<ember::Tensor> outputs = forward(" << args << ");\n"
       << "  for (size_t k = 0; k < outputs.size(); ++k) print_summary(k, outputs[k]);\n"
       << "  return 0;\n}\n";
  }

  const Graph& g_;
  const RunnableOptions& options_;
  std::map<const Node*, std::string> var_;
  std::set<std::string> used_;
  // Over size symbols (bind_symbols): the environment, its value slots, and the lines that
  // set `ks` at forward()'s start and after the op computing a data-dependent size.
  const core::ShapeEnv* env_ = nullptr;
  size_t slots_ = 0;
  std::vector<std::string> from_inputs_;
  std::map<const Node*, std::vector<std::string>> after_;
};

}  // namespace

std::string to_runnable_cpp(const Graph& g, const RunnableOptions& options) { return Writer(g, options).program(); }

namespace graph {
std::string make_input_cpp(const TensorMeta& m) { return make_input_expr(m); }
bool runnable_has_symbols(const Graph& g) { return graph_text::shape_env_of(g) != nullptr; }
}  // namespace graph

Tensor runnable_input(const TensorMeta& m) {
  // make_input of the generated program (Writer::kHelpers), step for step.
  int64_t n = m.storage_offset + 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) {
      n = m.storage_offset;
      break;
    }
    n += (m.sizes[d] - 1) * m.strides[d];
  }
  Tensor values;
  if (is_floating_point(m.dtype)) {
    values = randn({n}, m.dtype);
  } else if (m.dtype == kBool) {
    values = lt(rand({n}), 0.5);
  } else {
    values = floor(mul(rand({n}), 10)).to(m.dtype);
  }
  return values.as_strided(m.sizes, m.strides, m.storage_offset);
}

}  // namespace ember
