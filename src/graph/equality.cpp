// graph/equality.cpp — structural equality of graphs, the check behind the round-trip
// guarantee (parse_graph(to_string(g)) equals g) and behind golden tests of passes.
#include <cmath>
#include <sstream>

#include "graph/text.h"
#include "ops/registry.h"

namespace ember {
namespace {

const char* kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Placeholder: return "placeholder";
    case NodeKind::Attribute: return "get_attr";
    case NodeKind::Constant: return "constant";
    case NodeKind::Call: return "call";
    case NodeKind::Output: return "output";
  }
  return "?";
}

bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

/// Same type and same value (NaN equals NaN, -0.0 differs from 0.0: both print differently).
bool same_literal(const IValue& a, const IValue& b) {
  if (a.variant().index() != b.variant().index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b.variant());
        if constexpr (std::is_same_v<T, double>) {
          return same_double(x, y);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          if (x.type() != y.type()) return false;
          return x.is_floating_point() ? same_double(x.to_double(), y.to_double()) : x.to_long() == y.to_long();
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return x.is_same(y);
        } else if constexpr (std::is_same_v<T, SymInt>) {
          return identical(x, y);  // equal expressions; comparing sizes would record a guard
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (!x[i].is_same(y[i])) return false;
          return true;
        } else if constexpr (std::is_same_v<T, std::vector<std::optional<Tensor>>>) {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i) {
            if (x[i].has_value() != y[i].has_value() || (x[i] && !x[i]->is_same(*y[i]))) return false;
          }
          return true;
        } else {
          return x == y;
        }
      },
      a.variant());
}

std::string describe_literal(const IValue& v) {
  if (v.is_tensor() || v.is_tensor_list() ||
      std::holds_alternative<std::vector<std::optional<Tensor>>>(v.variant())) {
    return std::string("a ") + v.type_name();
  }
  std::string text = graph_text::format_literal(v);
  return text + " (" + v.type_name() + ")";
}

bool same_ref(const ValueRef& a, const ValueRef& b) {
  return a.node && b.node && a.node->name() == b.node->name() && a.index == b.index;
}

std::string describe_ref(const ValueRef& v) {
  return v.node ? "%" + v.node->name() + "." + std::to_string(v.index) : "no value";
}

std::string describe_arg(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Literal: return describe_literal(a.literal);
    case Arg::Kind::Value: return describe_ref(a.value);
    case Arg::Kind::ValueList: {
      std::string s = "[";
      for (size_t i = 0; i < a.values.size(); ++i)
        s += (i ? ", " : "") + (a.values[i] ? describe_ref(*a.values[i]) : std::string("None"));
      return s + "]";
    }
  }
  return "?";
}

bool same_arg(const Arg& a, const Arg& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Arg::Kind::Literal: return same_literal(a.literal, b.literal);
    case Arg::Kind::Value: return same_ref(a.value, b.value);
    case Arg::Kind::ValueList:
      if (a.values.size() != b.values.size()) return false;
      for (size_t i = 0; i < a.values.size(); ++i) {
        if (a.values[i].has_value() != b.values[i].has_value()) return false;
        if (a.values[i] && !same_ref(*a.values[i], *b.values[i])) return false;
      }
      return true;
  }
  return false;
}

std::string describe_metas(const std::vector<TensorMeta>& ms) {
  std::string s = "(";
  for (size_t i = 0; i < ms.size(); ++i) {
    // Unlike the text format, strides, offset and device are spelled out so a difference shows.
    const TensorMeta& m = ms[i];
    std::ostringstream os;
    os << (i ? ", " : "") << graph_text::short_dtype(m.dtype) << IntArrayRef(m.sizes)
       << " strides=" << IntArrayRef(m.strides) << " offset=" << m.storage_offset << " device=" << m.device;
    s += os.str();
  }
  return s + ")";
}

/// Why two nodes differ, or "" when they do not.
std::string node_difference(const Node& a, const Node& b) {
  if (a.kind() != b.kind()) return std::string("kind ") + kind_name(a.kind()) + " vs " + kind_name(b.kind());
  if (a.name() != b.name()) return "name %" + a.name() + " vs %" + b.name();
  if (a.target() != b.target()) return "target '" + a.target() + "' vs '" + b.target() + "'";
  if (a.op() != b.op()) {
    return "op " + (a.op() ? a.op()->name : std::string("none")) + " vs " + (b.op() ? b.op()->name : "none");
  }
  if (a.args().size() != b.args().size()) {
    return "argument count " + std::to_string(a.args().size()) + " vs " + std::to_string(b.args().size());
  }
  for (size_t i = 0; i < a.args().size(); ++i) {
    if (same_arg(a.args()[i], b.args()[i])) continue;
    std::string which = "argument " + std::to_string(i);
    if (a.op() && i < a.op()->schema.arguments.size()) which += " (" + a.op()->schema.arguments[i].name + ")";
    return which + ": " + describe_arg(a.args()[i]) + " vs " + describe_arg(b.args()[i]);
  }
  if (a.meta() != b.meta()) return "geometry " + describe_metas(a.meta()) + " vs " + describe_metas(b.meta());
  for (size_t i = 0; i < a.meta().size(); ++i) {
    if (!a.meta()[i].sym && !b.meta()[i].sym) continue;
    // Equal example values; the symbolic geometry (not part of TensorMeta's ==) may differ.
    const std::string ta = graph_text::format_meta(a.meta()[i]), tb = graph_text::format_meta(b.meta()[i]);
    if (ta != tb) return "geometry of output " + std::to_string(i) + ": " + ta + " vs " + tb;
  }
  if (a.loc() != b.loc()) return "location " + a.loc().str() + " vs " + b.loc().str();
  if (a.grad_enabled() != b.grad_enabled()) {
    return std::string("grad mode ") + (a.grad_enabled() ? "enabled" : "no_grad") + " vs " +
           (b.grad_enabled() ? "enabled" : "no_grad");
  }
  return "";
}

}  // namespace

bool structurally_equal(const Graph& a, const Graph& b, std::string* why) {
  const std::vector<std::string> sa = graph_text::symbol_lines(a), sb = graph_text::symbol_lines(b);
  for (size_t i = 0; i < std::max(sa.size(), sb.size()); ++i) {
    if (i < sa.size() && i < sb.size() && sa[i] == sb[i]) continue;
    if (why) {
      *why = "size symbols: " + (i < sa.size() ? "'" + sa[i] + "'" : std::string("none")) + " vs " +
             (i < sb.size() ? "'" + sb[i] + "'" : std::string("none"));
    }
    return false;
  }
  const auto& na = a.nodes();
  const auto& nb = b.nodes();
  for (size_t i = 0; i < std::min(na.size(), nb.size()); ++i) {
    std::string diff = node_difference(*na[i], *nb[i]);
    if (diff.empty()) continue;
    if (why) *why = "node " + std::to_string(i) + " (%" + na[i]->name() + "): " + diff;
    return false;
  }
  if (na.size() != nb.size()) {
    if (why) {
      const auto& longer = na.size() > nb.size() ? na : nb;
      const size_t common = std::min(na.size(), nb.size());
      *why = "node count " + std::to_string(na.size()) + " vs " + std::to_string(nb.size()) + ": the " +
             (na.size() > nb.size() ? "first" : "second") + " graph goes on with %" + longer[common]->name();
    }
    return false;
  }
  return true;
}

}  // namespace ember
