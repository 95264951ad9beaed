// ops/schema.cpp — a recursive-descent parser for ATen schema text.
#include "ops/schema.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace ember::ops {
namespace {

/// ATen prints a ScalarType default as c10's enum value (`randperm(…, ScalarType? dtype=4)`):
/// the dtypes Ember has, by that number.
constexpr std::pair<int, ScalarType> kC10ScalarTypes[] = {
    {0, kUInt8}, {1, kInt8}, {2, kInt16}, {3, kInt32}, {4, kInt64}, {5, kHalf},
    {6, kFloat}, {7, kDouble}, {11, kBool}, {15, kBFloat16}};

std::optional<ScalarType> c10_scalar_type(const std::string& code) {
  if (code.empty() || !std::isdigit(static_cast<unsigned char>(code[0]))) return std::nullopt;
  const long n = std::strtol(code.c_str(), nullptr, 10);
  for (const auto& [c10, t] : kC10ScalarTypes)
    if (c10 == n) return t;
  return std::nullopt;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Schema parse() {
    Schema schema;
    std::string full = ident();
    if (const size_t colons = full.find("::"); colons != std::string::npos) {
      schema.ns = full.substr(0, colons);
      full = full.substr(colons + 2);
    }
    if (peek() == '.') {
      ++pos_;
      schema.overload = ident();
    }
    schema.name = full;
    expect('(');
    bool kwarg_only = false;
    skip_ws();
    while (peek() != ')') {
      if (peek() == '*') {
        ++pos_;
        kwarg_only = true;
      } else {
        Argument a = argument(/*named=*/true);
        a.kwarg_only = kwarg_only;
        schema.arguments.push_back(std::move(a));
      }
      skip_ws();
      if (peek() == ',') ++pos_;
      skip_ws();
    }
    expect(')');
    skip_ws();
    expect('-');
    expect('>');
    skip_ws();
    if (peek() == '(') {
      ++pos_;
      skip_ws();
      while (peek() != ')') {
        schema.returns.push_back(argument(/*named=*/false));
        skip_ws();
        if (peek() == ',') ++pos_;
        skip_ws();
      }
      expect(')');
    } else {
      schema.returns.push_back(argument(/*named=*/false));
    }
    skip_ws();
    if (pos_ != s_.size()) fail("end of schema");
    return schema;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  [[noreturn]] void fail(const char* expected) {
    EMBER_FAIL() << "invalid schema: expected " << expected << " at position " << pos_ << " in '" << s_ << "'";
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) {
      char buf[2] = {c, 0};
      fail(buf);
    }
    ++pos_;
  }
  std::string ident() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                (s_[pos_] == ':' && pos_ + 1 < s_.size() && s_[pos_ + 1] == ':') ||
                                (pos_ > start && s_[pos_ - 1] == ':' && s_[pos_] == ':'))) {
      ++pos_;
    }
    if (start == pos_) fail("an identifier");
    return std::string(s_.substr(start, pos_ - start));
  }

  Argument argument(bool named) {
    Argument a;
    std::string base = ident();
    static const std::pair<const char*, BaseType> kTypes[] = {
        {"Tensor", BaseType::Tensor}, {"int", BaseType::Int}, {"SymInt", BaseType::SymInt},
        {"float", BaseType::Float}, {"bool", BaseType::Bool}, {"Scalar", BaseType::Scalar},
        {"str", BaseType::Str}, {"ScalarType", BaseType::ScalarType}, {"Layout", BaseType::Layout},
        {"Device", BaseType::Device}, {"MemoryFormat", BaseType::MemoryFormat},
        {"Generator", BaseType::Generator}, {"SymBool", BaseType::SymBool},
    };
    bool found = false;
    for (auto& [n, t] : kTypes) {
      if (base == n) {
        a.type.base = t;
        found = true;
      }
    }
    if (!found) fail("a type name");
    if (peek() == '(') {  // alias annotation
      ++pos_;
      a.alias_set = s_[pos_++];
      if (peek() == '!') {
        a.is_write = true;
        ++pos_;
      }
      while (pos_ < s_.size() && s_[pos_] != ')') ++pos_;  // "(a -> *)": the list's elements alias
      expect(')');
    }
    if (peek() == '?') {
      ++pos_;
      if (a.type.base == BaseType::Tensor && peek() == '[') a.type.element_optional = true;
      else a.type.optional = true;
    }
    if (peek() == '[') {
      ++pos_;
      a.type.is_list = true;
      if (std::isdigit(static_cast<unsigned char>(peek()))) a.type.list_size = number();
      expect(']');
      if (peek() == '?') {
        ++pos_;
        a.type.optional = true;
      }
    }
    skip_ws();
    if (named || std::isalpha(static_cast<unsigned char>(peek()))) {
      if (peek() != ',' && peek() != ')') a.name = ident();
    }
    skip_ws();
    if (peek() == '=') {
      ++pos_;
      a.default_value = default_value(a.type);
    }
    return a;
  }

  int64_t number() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    return std::strtoll(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr, 10);
  }

  IValue default_value(const ArgType& t) {
    skip_ws();
    size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size() && (depth > 0 || (s_[pos_] != ',' && s_[pos_] != ')'))) {
      if (s_[pos_] == '[') ++depth;
      if (s_[pos_] == ']') --depth;
      ++pos_;
    }
    std::string v(s_.substr(start, pos_ - start));
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
    if (v == "None") return IValue();
    if (v == "True") return IValue(true);
    if (v == "False") return IValue(false);
    if (v.front() == '"' || v.front() == '\'') return IValue(v.substr(1, v.size() - 2));
    if (t.is_list) {
      std::vector<int64_t> items;
      if (v.front() == '[') {
        std::string inner = v.substr(1, v.size() - 2);
        std::stringstream ss(inner);
        std::string item;
        while (std::getline(ss, item, ',')) items.push_back(std::strtoll(item.c_str(), nullptr, 10));
      } else {  // int[2] stride=1 means [1, 1]
        items.assign(static_cast<size_t>(std::max<int64_t>(t.list_size, 1)), std::strtoll(v.c_str(), nullptr, 10));
      }
      if (t.base == BaseType::Float) {  // float[N] defaults: a literal list of numbers
        std::vector<double> d;
        std::stringstream ss(v.front() == '[' ? v.substr(1, v.size() - 2) : v);
        std::string item;
        while (std::getline(ss, item, ',')) d.push_back(std::strtod(item.c_str(), nullptr));
        return IValue(d);
      }
      if (t.base == BaseType::Bool) {
        std::vector<bool> b;
        for (auto x : items) b.push_back(x != 0);
        return IValue(b);
      }
      return IValue(items);
    }
    if (t.base == BaseType::ScalarType) {
      auto dt = c10_scalar_type(v);
      if (!dt) dt = parse_dtype(v);
      if (!dt) fail("a dtype");
      return IValue(*dt);
    }
    if (t.base == BaseType::Device) return IValue(Device(v));
    bool is_float = v.find_first_of(".eE") != std::string::npos && v.find("inf") == std::string::npos;
    if (t.base == BaseType::Float || (t.base == BaseType::Scalar && is_float)) {
      double d = std::strtod(v.c_str(), nullptr);
      return t.base == BaseType::Scalar ? IValue(Scalar(d)) : IValue(d);
    }
    if (t.base == BaseType::Scalar) return IValue(Scalar(static_cast<int64_t>(std::strtoll(v.c_str(), nullptr, 10))));
    if (t.base == BaseType::Int || t.base == BaseType::SymInt) return IValue(static_cast<int64_t>(std::strtoll(v.c_str(), nullptr, 10)));
    if (t.base == BaseType::Layout || t.base == BaseType::MemoryFormat) return IValue(v);
    fail("a default value");
  }

  std::string_view s_;
  size_t pos_ = 0;
};

const char* base_name(BaseType t) {
  switch (t) {
    case BaseType::Tensor: return "Tensor";
    case BaseType::Int: return "int";
    case BaseType::SymInt: return "SymInt";
    case BaseType::Float: return "float";
    case BaseType::Bool: return "bool";
    case BaseType::Scalar: return "Scalar";
    case BaseType::Str: return "str";
    case BaseType::ScalarType: return "ScalarType";
    case BaseType::Layout: return "Layout";
    case BaseType::Device: return "Device";
    case BaseType::MemoryFormat: return "MemoryFormat";
    case BaseType::Generator: return "Generator";
    case BaseType::SymBool: return "SymBool";
  }
  return "?";
}

std::string format_default(const IValue& v) {
  std::ostringstream os;
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.to_bool() ? "True" : "False";
  if (v.is_string()) return "\"" + v.to_string_ref() + "\"";
  if (v.is_int_list()) {
    os << "[";
    const auto& l = v.to_int_list();
    for (size_t i = 0; i < l.size(); ++i) os << (i ? ", " : "") << l[i];
    os << "]";
    return os.str();
  }
  if (const auto* t = std::get_if<ScalarType>(&v.variant())) {
    for (const auto& [c10, s] : kC10ScalarTypes)
      if (s == *t) return std::to_string(c10);
    return std::string(scalar_type_name(*t));
  }
  os << v;
  return os.str();
}

std::string format_arg(const Argument& a) {
  std::string s = base_name(a.type.base);
  if (a.alias_set) {
    s += "(";
    s += a.alias_set;
    if (a.is_write) s += "!";
    s += ")";
  }
  if (a.type.element_optional) s += "?";
  if (a.type.is_list) s += a.type.list_size >= 0 ? "[" + std::to_string(a.type.list_size) + "]" : "[]";
  if (a.type.optional) s += "?";
  if (!a.name.empty()) s += " " + a.name;
  if (a.default_value) s += "=" + format_default(*a.default_value);
  return s;
}

bool type_matches(const ArgType& t, const IValue& v) {
  if (v.is_none()) return t.optional;
  if (t.is_list) {
    switch (t.base) {
      case BaseType::Tensor: return t.element_optional ? std::holds_alternative<std::vector<std::optional<Tensor>>>(v.variant()) : v.is_tensor_list();
      case BaseType::Bool: return std::holds_alternative<std::vector<bool>>(v.variant());
      case BaseType::Float: return v.is_double_list() || v.is_int_list();
      default: return v.is_int_list();
    }
  }
  switch (t.base) {
    case BaseType::Tensor: return v.is_tensor();
    case BaseType::Int:
    case BaseType::SymInt: return v.is_int();
    case BaseType::Float: return v.is_double() || v.is_int();
    case BaseType::Bool:
    case BaseType::SymBool: return v.is_bool();
    case BaseType::Scalar: return v.is_scalar() || v.is_int() || v.is_double() || v.is_bool();
    case BaseType::Str: return v.is_string();
    case BaseType::ScalarType: return std::holds_alternative<ScalarType>(v.variant());
    case BaseType::Device: return std::holds_alternative<Device>(v.variant());
    case BaseType::Layout:
    case BaseType::MemoryFormat:
    case BaseType::Generator: return v.is_string();
  }
  return false;
}

}  // namespace

std::string ArgType::str() const {
  Argument a;
  a.type = *this;
  return format_arg(a);
}

std::string Schema::qualified_name() const { return ns + "::" + name + (overload.empty() ? "" : "." + overload); }

std::string Schema::str() const {
  std::string s = (ns == "aten" ? "" : ns + "::") + name + (overload.empty() ? "" : "." + overload) + "(";
  bool kw = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i) s += ", ";
    if (arguments[i].kwarg_only && !kw) {
      s += "*, ";
      kw = true;
    }
    s += format_arg(arguments[i]);
  }
  s += ") -> ";
  if (returns.size() == 1 && returns[0].name.empty()) {
    s += format_arg(returns[0]);
  } else {
    s += "(";
    for (size_t i = 0; i < returns.size(); ++i) s += (i ? ", " : "") + format_arg(returns[i]);
    s += ")";
  }
  return s;
}

int Schema::index_of(std::string_view arg_name) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].name == arg_name) return static_cast<int>(i);
  return -1;
}

bool Schema::is_mutable() const {
  for (const auto& a : arguments)
    if (a.is_write) return true;
  return false;
}

Schema parse_schema(std::string_view text) { return Parser(text).parse(); }

void normalize_args(const Schema& schema, Stack& args) {
  EMBER_CHECK_TYPE(args.size() <= schema.arguments.size())
      << schema.qualified_name() << "() takes " << schema.arguments.size() << " arguments but " << args.size()
      << " were given";
  for (size_t i = args.size(); i < schema.arguments.size(); ++i) {
    const Argument& a = schema.arguments[i];
    EMBER_CHECK_TYPE(a.default_value.has_value())
        << schema.qualified_name() << "() missing required argument '" << a.name << "' (position " << i << ")";
    args.push_back(*a.default_value);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument& a = schema.arguments[i];
    EMBER_CHECK_TYPE(type_matches(a.type, args[i]))
        << schema.qualified_name() << "(): argument '" << a.name << "' (position " << i << ") must be "
        << a.type.str() << ", not " << args[i].type_name();
    // Normalize numeric spellings so kernels see one representation per type.
    if (a.type.is_list && a.type.base == BaseType::Float && args[i].is_int_list()) {
      const auto& ints = args[i].to_int_list();
      args[i] = IValue(std::vector<double>(ints.begin(), ints.end()));
    }
    if (!args[i].is_none() && !a.type.is_list) {
      if (a.type.base == BaseType::Float && args[i].is_int()) args[i] = IValue(static_cast<double>(args[i].to_int()));
      // A symbolic int stays one (arange's end over a size symbol; Note [dynamic shapes]):
      // an op that reads it as a Scalar specializes it then.
      if (a.type.base == BaseType::Scalar && !args[i].is_scalar() && !args[i].is_sym_int())
        args[i] = IValue(args[i].to_scalar());
    }
  }
}

}  // namespace ember::ops
