// graph/printer.cpp — the readable text of a graph (format in graph/text.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/shape.h"
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "graph/text.h"
#include "ops/registry.h"

namespace ember {
namespace graph_text {
namespace {

struct ShortName {
  ScalarType type;
  const char* name;
};
constexpr ShortName kShortNames[] = {
    {kFloat, "f32"}, {kDouble, "f64"}, {kHalf, "f16"}, {kBFloat16, "bf16"}, {kInt64, "i64"},
    {kInt32, "i32"}, {kInt16, "i16"},  {kInt8, "i8"},   {kUInt8, "u8"},     {kBool, "b8"},
    {kComplexFloat, "c64"}, {kComplexDouble, "c128"},
};

std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  // Shortest text that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string format_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

template <typename T, typename F>
std::string format_list(const std::vector<T>& items, F&& each) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += each(items[i]);
  }
  return out + "]";
}

/// A size, stride or offset as the environment knows it now: `s0*16`, or `8`.
std::string sym_text(const core::SymInt& s) { return core::current(s).str(); }

bool same_value(const core::SymInt& a, const core::SymInt& b) {
  return core::current(a).expr() == core::current(b).expr();
}

/// format_meta of a value with symbolic geometry: the same fields, over the symbols.
std::string format_sym_meta(const TensorMeta& m) {
  const core::SymGeometry& g = *m.sym;
  std::string out(short_dtype(m.dtype));
  out += format_list(g.sizes, sym_text);
  const core::SymInts contiguous = core::sym_contiguous_strides(g.sizes);
  bool is_contiguous = true;
  for (size_t d = 0; d < g.strides.size(); ++d) is_contiguous = is_contiguous && same_value(g.strides[d], contiguous[d]);
  if (!is_contiguous) out += " strides=" + format_list(g.strides, sym_text);
  if (!same_value(g.storage_offset, 0)) {
    // An expression with spaces is parenthesized: the offset is not inside a list.
    const std::string offset = sym_text(g.storage_offset);
    out += " offset=" + (offset.find(' ') == std::string::npos ? offset : "(" + offset + ")");
  }
  if (!m.device.is_cpu()) out += " device=" + m.device.str();
  return out;
}

}  // namespace

std::string format_sizes(const TensorMeta& m) {
  if (m.sym) return format_list(m.sym->sizes, sym_text);
  return format_list(m.sizes, [](int64_t v) { return std::to_string(v); });
}

const core::ShapeEnv* shape_env_of(const Graph& g) {
  // Only a value still symbolic counts: a graph whose symbols were all specialized prints
  // (and parses back) as a static graph.
  auto env_of = [](const core::SymInt& s) { return core::current(s).env(); };
  for (const auto& n : g.nodes()) {
    for (const TensorMeta& m : n->meta()) {
      if (!m.sym) continue;
      for (const core::SymInt& s : m.sym->sizes)
        if (const core::ShapeEnv* env = env_of(s)) return env;
      for (const core::SymInt& s : m.sym->strides)
        if (const core::ShapeEnv* env = env_of(s)) return env;
      if (const core::ShapeEnv* env = env_of(m.sym->storage_offset)) return env;
    }
  }
  return nullptr;
}

std::vector<std::string> symbol_lines(const Graph& g) {
  std::vector<std::string> out;
  const core::ShapeEnv* env = shape_env_of(g);
  if (!env) return out;
  for (size_t i = 0; i < env->num_symbols(); ++i) {
    const core::SymbolInfo& s = env->symbol(static_cast<int32_t>(i));
    out.push_back("symbol " + core::sym::default_symbol_name(static_cast<int32_t>(i)) + " = " +
                  std::to_string(s.hint) + " for " + s.source + " " + core::ShapeEnv::format_range(s.range));
  }
  for (size_t k = 0; k < env->num_unbacked(); ++k) {
    const int32_t id = core::sym::kUnbackedBase + static_cast<int32_t>(k);
    const core::SymbolInfo& u = env->symbol(id);
    out.push_back("symbol " + core::sym::default_symbol_name(id) + " for " + u.source + " " +
                  core::ShapeEnv::format_range(u.range));
  }
  for (const core::ShapeGuard& guard : env->guards())
    out.push_back("guard " + env->format(guard.lhs) + " " + core::relation_text(guard.rel) + " " +
                  env->format(guard.rhs));
  return out;
}

std::string_view short_dtype(ScalarType t) {
  for (const auto& s : kShortNames)
    if (s.type == t) return s.name;
  EMBER_INTERNAL_ASSERT(false) << "no short name for dtype " << t;
}

std::optional<ScalarType> parse_short_dtype(std::string_view s) {
  for (const auto& n : kShortNames)
    if (n.name == s) return n.type;
  return std::nullopt;
}

std::string format_meta(const TensorMeta& m) {
  if (m.undefined) return "None";
  if (m.sym) return format_sym_meta(m);
  std::ostringstream os;
  os << short_dtype(m.dtype) << IntArrayRef(m.sizes);
  if (m.strides != core::contiguous_strides(m.sizes)) os << " strides=" << IntArrayRef(m.strides);
  if (m.storage_offset != 0) os << " offset=" << m.storage_offset;
  if (!m.device.is_cpu()) os << " device=" << m.device;
  return os.str();
}

std::string format_literal(const IValue& v) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, None>) {
          return "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return format_double(x);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          if (x.is_bool()) return x.to_bool() ? "True" : "False";
          if (x.is_integral()) return std::to_string(x.to_long());
          return format_double(x.to_double());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return format_list(x, [](int64_t i) { return std::to_string(i); });
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          return format_list(x, [](double d) { return format_double(d); });
        } else if constexpr (std::is_same_v<T, SymInt>) {
          return x.str();  // over the graph's size symbols: s0 - 1 (Note [dynamic shapes])
        } else if constexpr (std::is_same_v<T, SymIntList>) {
          // Entries over the graph's size symbols: [1, s0, 12, 64] (Note [dynamic shapes]).
          return format_list(x.values, [](const SymInt& s) { return s.str(); });
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          std::vector<int> as_int(x.begin(), x.end());
          return format_list(as_int, [](int b) { return std::string(b ? "True" : "False"); });
        } else if constexpr (std::is_same_v<T, std::string>) {
          return format_string(x);
        } else if constexpr (std::is_same_v<T, ScalarType>) {
          return "torch." + std::string(dtype_name(x));
        } else if constexpr (std::is_same_v<T, Device>) {
          return "device(\"" + x.str() + "\")";
        } else {
          EMBER_INTERNAL_ASSERT(false) << "a " << v.type_name() << " cannot be a literal argument of a graph";
        }
      },
      v.variant());
}

std::string format_ref(const ValueRef& v) {
  std::string out = "%" + v.node->name();
  if (v.node->num_outputs() > 1) out += "." + std::to_string(v.index);
  return out;
}

std::string tabular(const Graph& g) {
  auto name_of = [](const ValueRef& v) {
    std::string out = v.node->name();
    if (v.node->num_outputs() > 1) out += "." + std::to_string(v.index);
    return out;
  };
  std::vector<std::array<std::string, 5>> rows = {{"opcode", "name", "target", "args", "kwargs"}};
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    std::string args = "(";
    for (size_t i = 0; i < n.args().size(); ++i) {
      const Arg& a = n.args()[i];
      if (i) args += ", ";
      switch (a.kind) {
        case Arg::Kind::Literal:
          args += format_literal(a.literal);
          break;
        case Arg::Kind::Value:
          args += name_of(a.value);
          break;
        case Arg::Kind::ValueList:
          args += "[";
          for (size_t k = 0; k < a.values.size(); ++k)
            args += (k ? ", " : "") + (a.values[k] ? name_of(*a.values[k]) : std::string("None"));
          args += "]";
          break;
      }
    }
    switch (n.kind()) {
      case NodeKind::Placeholder:
        rows.push_back({"placeholder", n.name(), n.target(), "()", "{}"});
        break;
      case NodeKind::Attribute:
      case NodeKind::Constant:
        rows.push_back({"get_attr", n.name(), n.target(), "()", "{}"});
        break;
      case NodeKind::Call:
        rows.push_back({"call_function", n.name(), n.target(), args + ")", "{}"});
        break;
      case NodeKind::Output:
        rows.push_back({"output", "output", "output", "(" + args + (n.args().size() == 1 ? ",)" : ")") + ",)", "{}"});
        break;
    }
  }
  std::array<size_t, 5> width{};
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  auto line = [&](const std::array<std::string, 5>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      text += cells[c];
      if (c + 1 < cells.size()) text.append(width[c] - cells[c].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(rows[0]);
  line({std::string(width[0], '-'), std::string(width[1], '-'), std::string(width[2], '-'), std::string(width[3], '-'),
        std::string(width[4], '-')});
  for (size_t i = 1; i < rows.size(); ++i) line(rows[i]);
  return out;
}

}  // namespace graph_text

std::string to_string(const Graph& g) {
  using namespace graph_text;
  std::ostringstream os;
  os << "graph " << g.name() << " {\n";
  for (const std::string& line : symbol_lines(g)) os << "  " << line << "\n";
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (n.kind() == NodeKind::Output) {
      os << "  return (";
      for (size_t i = 0; i < n.args().size(); ++i) os << (i ? ", " : "") << format_ref(n.args()[i].value);
      os << ")\n";
      continue;
    }
    os << "  %" << n.name() << " : ";
    if (n.meta().size() == 1) {
      os << format_meta(n.meta()[0]);
    } else {
      os << "(";
      for (size_t i = 0; i < n.meta().size(); ++i) os << (i ? ", " : "") << format_meta(n.meta()[i]);
      os << ")";
    }
    os << " = ";
    switch (n.kind()) {
      case NodeKind::Placeholder: os << "placeholder[" << n.target() << "]"; break;
      case NodeKind::Attribute: os << "get_attr[" << n.target() << "]"; break;
      case NodeKind::Constant: os << "constant[" << n.target() << "]"; break;
      case NodeKind::Call: {
        os << n.target() << "(";
        for (size_t i = 0; i < n.args().size(); ++i) {
          const Arg& a = n.args()[i];
          if (i) os << ", ";
          switch (a.kind) {
            case Arg::Kind::Literal: os << format_literal(a.literal); break;
            case Arg::Kind::Value: os << format_ref(a.value); break;
            case Arg::Kind::ValueList:
              os << "[";
              for (size_t k = 0; k < a.values.size(); ++k)
                os << (k ? ", " : "") << (a.values[k] ? format_ref(*a.values[k]) : "None");
              os << "]";
              break;
          }
        }
        os << ")";
        if (!n.grad_enabled()) os << " {no_grad}";
        break;
      }
      case NodeKind::Output: break;
    }
    if (n.loc().known()) os << "  # " << n.loc().str();
    os << "\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace ember
