// export/sym_import.cpp — PyTorch's size symbols and expressions into Ember's shape
// environment, and the check of a call's sizes against them (see sym_import.h).
#include "export/sym_import.h"

#include <cctype>

namespace ember::exporting {
namespace {

namespace sym = core::sym;

/// Reads sympy's srepr of an integer expression: Symbol('s77', …), Integer(3), Add, Mul,
/// Pow (a non-negative integer exponent), FloorDiv, CleanDiv, Mod, PythonMod, Max, Min.
class SreprReader {
 public:
  SreprReader(const ImportSymbols& syms, const std::string& text, const std::string& where)
      : syms_(syms), text_(text), where_(where) {}

  sym::Expr read() {
    sym::Expr e = expr(0);
    skip_space();
    if (pos_ != text_.size()) fail("the end of the expression");
    return e;
  }

 private:
  /// One row per function of the srepr an exported program's sizes use.
  using Fold = sym::Expr (*)(const sym::Expr&, const sym::Expr&);
  struct FunctionRow {
    const char* name;
    Fold fold;      // applied left to right over the arguments
    bool binary;    // exactly two arguments
  };
  static const std::vector<FunctionRow>& functions() {
    static const std::vector<FunctionRow> rows = {
        {"Add", [](const sym::Expr& a, const sym::Expr& b) { return a + b; }, false},
        {"Mul", [](const sym::Expr& a, const sym::Expr& b) { return a * b; }, false},
        {"FloorDiv", [](const sym::Expr& a, const sym::Expr& b) { return sym::floordiv(a, b); }, true},
        {"CleanDiv", [](const sym::Expr& a, const sym::Expr& b) { return sym::floordiv(a, b); }, true},
        {"Mod", [](const sym::Expr& a, const sym::Expr& b) { return sym::mod(a, b); }, true},
        {"PythonMod", [](const sym::Expr& a, const sym::Expr& b) { return sym::mod(a, b); }, true},
        {"Max", [](const sym::Expr& a, const sym::Expr& b) { return sym::max(a, b); }, false},
        {"Min", [](const sym::Expr& a, const sym::Expr& b) { return sym::min(a, b); }, false},
    };
    return rows;
  }

  [[noreturn]] void fail(const std::string& expected) const {
    EMBER_FAIL_KIND(ErrorKind::ValueError) << where_ << ": cannot read the size expression '"
                                           << text_.substr(0, 120) << "': expected " << expected << " at character "
                                           << pos_;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("'") + c + "'");
  }
  std::string identifier() {
    skip_space();
    const size_t at = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (at == pos_ || std::isdigit(static_cast<unsigned char>(text_[at]))) fail("a name");
    return text_.substr(at, pos_ - at);
  }
  int64_t integer() {
    skip_space();
    const size_t at = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ == at || (pos_ == at + 1 && text_[at] == '-') || pos_ - at > 18) fail("an integer of at most 18 digits");
    return std::stoll(text_.substr(at, pos_ - at));
  }
  /// Skips `name=value` keyword arguments (Symbol's assumptions).
  void skip_keywords() {
    while (consume(',')) {
      identifier();
      expect('=');
      identifier();
    }
  }

  sym::Expr expr(int depth) {
    if (depth > 64) fail("an expression nested at most 64 deep");
    skip_space();
    if (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-'))
      return integer();
    const std::string name = identifier();
    if (name == "Symbol") {
      expect('(');
      skip_space();
      const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
      if (quote != '\'' && quote != '"') fail("the symbol's quoted name");
      const size_t close = text_.find(quote, pos_ + 1);
      if (close == std::string::npos) fail("the closing quote of the symbol's name");
      const std::string sym_name = text_.substr(pos_ + 1, close - pos_ - 1);
      pos_ = close + 1;
      skip_keywords();
      expect(')');
      return symbol(sym_name);
    }
    if (name == "Integer") {
      expect('(');
      const int64_t v = integer();
      expect(')');
      return v;
    }
    if (name == "Pow") {
      expect('(');
      const sym::Expr base = expr(depth + 1);
      expect(',');
      const sym::Expr exponent = expr(depth + 1);
      expect(')');
      if (!exponent.is_const() || exponent.value() < 0 || exponent.value() > 8)
        fail("a power with an integer exponent in [0, 8]");
      sym::Expr out = 1;
      for (int64_t k = 0; k < exponent.value(); ++k) out = out * base;
      return out;
    }
    for (const FunctionRow& row : functions()) {
      if (name != row.name) continue;
      expect('(');
      std::vector<sym::Expr> args{expr(depth + 1)};
      while (consume(',')) args.push_back(expr(depth + 1));
      expect(')');
      if (row.binary && args.size() != 2) fail(std::string(row.name) + " of two arguments");
      sym::Expr out = args[0];
      for (size_t i = 1; i < args.size(); ++i) out = row.fold(out, args[i]);
      return out;
    }
    if (consume('(')) fail("an integer function (Add, Mul, Pow, FloorDiv, CleanDiv, Mod, PythonMod, Max, Min)");
    return symbol(name);  // a bare name: plain text's `s77`
  }

  sym::Expr symbol(const std::string& name) const {
    auto it = syms_.ids.find(name);
    if (it != syms_.ids.end()) return sym::Expr::symbol(it->second);
    const bool unbacked = name.size() > 1 && name[0] == 'u' && std::isdigit(static_cast<unsigned char>(name[1]));
    EMBER_FAIL_KIND(ErrorKind::ValueError)
        << where_ << ": the size expression '" << text_.substr(0, 120) << "' names " << name
        << (unbacked ? ", a size computed from data (an unbacked symbol); Ember imports sizes read from the inputs only"
                     : ", which is no user input's dim: Ember reads each size symbol from an input dim that is that "
                       "symbol alone");
  }

  const ImportSymbols& syms_;
  const std::string& text_;
  const std::string& where_;
  size_t pos_ = 0;
};

/// The expression text of a schema.SymInt, or nullopt for a plain integer.
std::optional<std::string> expr_text(const json& j, const std::string& where) {
  if (j.contains("as_int")) return std::nullopt;
  EMBER_CHECK_VALUE(j.contains("as_expr") && j.at("as_expr").contains("expr_str") &&
                    j.at("as_expr").at("expr_str").is_string())
      << where << ": expected a size {\"as_int\": …} or {\"as_expr\": {\"expr_str\": …}}, got " << j.dump().substr(0, 120);
  return j.at("as_expr").at("expr_str").get<std::string>();
}

/// The PyTorch symbol `text` is alone (`Symbol('s77', …)` or `s77`), or "".
std::string bare_symbol(const std::string& text) {
  static const std::string open = "Symbol('";
  std::string name = text;
  if (text.rfind(open, 0) == 0) {
    const size_t close = text.find('\'', open.size());
    if (close == std::string::npos || text.find(')', close) != text.size() - 1) return "";
    name = text.substr(open.size(), close - open.size());
  }
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "";
  return !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) ? name : "";
}

/// A range constraint's bound: an integer, or null for an unbounded end.
int64_t bound(const json& j, int64_t unbounded, const std::string& where) {
  if (j.is_null()) return unbounded;
  EMBER_CHECK_VALUE(j.is_number_integer()) << where << ": a range bound must be an integer or null, got " << j.dump();
  return j.get<int64_t>();
}

sym::Range range_of(const json& ranges, const std::string& name, const std::string& where) {
  sym::Range r{2, sym::Range::kInfinity};
  if (!ranges.contains(name)) return r;
  const json& c = ranges.at(name);
  const std::string w = where + ": the range constraint of " + name;
  EMBER_CHECK_VALUE(c.is_object()) << w << " is not an object: " << c.dump().substr(0, 80);
  const int64_t lo = bound(c.value("min_val", json()), 0, w);
  const int64_t hi = bound(c.value("max_val", json()), sym::Range::kInfinity, w);
  // Sizes 0 and 1 are specialized (Note [dynamic shapes]): a symbol's values start at 2.
  r.lo = std::max<int64_t>(lo, 2);
  r.hi = hi;
  EMBER_CHECK_VALUE(r.lo <= r.hi) << w << " is [" << lo << ", " << hi
                                  << "], which holds no size of at least 2 (the sizes a dynamic dim takes in Ember)";
  return r;
}

}  // namespace

sym::Expr parse_expr(const ImportSymbols& syms, const std::string& text, const std::string& where) {
  return syms.env->simplify(SreprReader(syms, text, where).read());
}

core::SymInt sym_int_of(const ImportSymbols* syms, const json& j, const std::string& where) {
  const auto text = expr_text(j, where);
  if (!text) return core::SymInt(j.at("as_int").get<int64_t>());
  EMBER_CHECK_VALUE(syms != nullptr) << where << ": the size " << *text
                                     << " is symbolic, but the program declares no dynamic dims";
  const sym::Expr e = parse_expr(*syms, *text, where);
  return core::SymInt(e, e.is_const() ? e.value() : syms->env->hint(e), syms->env.get());
}

std::shared_ptr<const ImportSymbols> declare_symbols(const json& program, const json& graph, const json& signature,
                                                     const std::string& where) {
  const json& ranges = program.value("range_constraints", json::object());
  EMBER_CHECK_VALUE(ranges.is_object()) << where << ": range_constraints is not an object";
  auto syms = std::make_shared<ImportSymbols>();
  std::vector<const json*> sizes;
  for (const json& spec : signature.at("input_specs")) {
    if (!spec.contains("user_input") || !spec.at("user_input").at("arg").contains("as_tensor")) continue;
    syms->inputs.push_back(spec.at("user_input").at("arg").at("as_tensor").at("name").get<std::string>());
    sizes.push_back(&graph.at("tensor_values").at(syms->inputs.back()).at("sizes"));
  }
  bool symbolic = !ranges.empty();
  for (const json* s : sizes)
    for (const json& d : *s) symbolic = symbolic || !d.contains("as_int");
  if (!symbolic) return nullptr;
  syms->env = std::make_shared<core::ShapeEnv>();
  // Each symbol is read from the first user-input dim that is that symbol alone.
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t d = 0; d < sizes[i]->size(); ++d) {
      const std::string w = where + ": input '" + syms->inputs[i] + "' dim " + std::to_string(d);
      const auto text = expr_text(sizes[i]->at(d), w);
      const std::string name = text ? bare_symbol(*text) : "";
      if (name.empty() || syms->ids.contains(name)) continue;
      const json& e = sizes[i]->at(d).at("as_expr");
      EMBER_CHECK_VALUE(e.contains("hint") && e.at("hint").is_object() && e.at("hint").contains("as_int") &&
                        e.at("hint").at("as_int").is_number_integer())
          << w << ": the dynamic dim " << name << " records no integer example value (hint)";
      const int64_t hint = e.at("hint").at("as_int").get<int64_t>();
      const sym::Range range = range_of(ranges, name, where);
      EMBER_CHECK_VALUE(range.contains(hint)) << w << ": the example value " << hint << " of " << name
                                              << " lies outside its range " << core::ShapeEnv::format_range(range);
      syms->ids[name] = static_cast<int32_t>(syms->names.size());
      syms->names.push_back(name);
      syms->read_at.emplace_back(i, d);
      syms->env->restore_symbol(syms->inputs[i] + ".size(" + std::to_string(d) + ")", hint, range);
    }
  }
  // Every other symbolic input size must be an expression over those symbols.
  for (size_t i = 0; i < sizes.size(); ++i)
    for (size_t d = 0; d < sizes[i]->size(); ++d)
      sym_int_of(syms.get(), sizes[i]->at(d), where + ": input '" + syms->inputs[i] + "' dim " + std::to_string(d));
  for (const auto& [name, range] : ranges.items()) {
    if (syms->ids.contains(name)) continue;
    // A derived dim's range (`2*s77`) follows from its symbol's; anything else names a
    // size the inputs do not give.
    parse_expr(*syms, name, where + ": the range constraint of '" + name + "'");
  }
  return syms;
}

TensorMeta json_to_sym_meta(const ImportSymbols& syms, const json& j, const std::string& where) {
  json plain = j;
  core::SymInts sizes, strides;
  auto read = [&](const char* field, core::SymInts* out) {
    const json& list = j.at(field);
    EMBER_CHECK_VALUE(list.is_array()) << where << ": " << field << " is not a list";
    for (size_t d = 0; d < list.size(); ++d) {
      const core::SymInt v = sym_int_of(&syms, list[d], where + ": " + field + " of dim " + std::to_string(d));
      plain[field][d] = json{{"as_int", v.hint()}};
      out->push_back(v);
    }
  };
  read("sizes", &sizes);
  read("strides", &strides);
  const core::SymInt offset = sym_int_of(&syms, j.at("storage_offset"), where + ": the storage offset");
  plain["storage_offset"] = json{{"as_int", offset.hint()}};
  const TensorMeta m = json_to_meta(plain, where);  // the checks of static geometry, on the example values
  return core::make_meta(sizes, strides, offset, m.dtype, m.device);
}

bool same_sizes(const ImportSymbols* syms, const TensorMeta& a, const TensorMeta& b) {
  if ((!a.sym && !b.sym) || syms == nullptr) return a.sizes == b.sizes;
  const core::SymInts sa = a.sym ? a.sym->sizes : core::to_sym(a.sizes);
  const core::SymInts sb = b.sym ? b.sym->sizes : core::to_sym(b.sizes);
  if (sa.size() != sb.size()) return false;
  for (size_t d = 0; d < sa.size(); ++d)
    if (syms->env->simplify(core::current(sa[d]).expr()) != syms->env->simplify(core::current(sb[d]).expr()))
      return false;
  return true;
}

void check_symbolic_inputs(const ImportSymbols& syms, const std::vector<TensorMeta>& metas,
                           const std::vector<Tensor>& inputs) {
  const core::ShapeEnv& env = *syms.env;
  std::vector<int64_t> values(env.num_symbols());
  auto label = [&](size_t i, size_t d) {
    return "input '" + (i < syms.inputs.size() ? syms.inputs[i] : std::to_string(i)) + "' dim " + std::to_string(d);
  };
  // The program's own symbols; one a compile added to the environment later is read by
  // no input (its value stays 0 here, and no input size refers to it).
  for (size_t id = 0; id < values.size() && id < syms.read_at.size(); ++id) {
    const auto [i, d] = syms.read_at[id];
    values[id] = inputs.at(i).size(static_cast<int64_t>(d));
    const core::SymbolInfo& s = env.symbol(static_cast<int32_t>(id));
    EMBER_CHECK_VALUE(s.range.contains(values[id]))
        << label(i, d) << " of the exported program is " << values[id] << ", outside the range "
        << core::ShapeEnv::format_range(s.range) << " of its dynamic dim " << syms.names[id] << " (Ember's "
        << sym::default_symbol_name(static_cast<int32_t>(id)) << ")"
        << (values[id] < 2 && s.range.lo == 2 ? "; sizes 0 and 1 of a dynamic dim are not imported" : "");
  }
  auto pytorch_names = [&](int32_t id) {
    return static_cast<size_t>(id) < syms.names.size() ? syms.names[static_cast<size_t>(id)]
                                                          : sym::default_symbol_name(id);
  };
  for (size_t i = 0; i < metas.size() && i < inputs.size(); ++i) {
    if (!metas[i].sym) continue;
    for (size_t d = 0; d < metas[i].sym->sizes.size(); ++d) {
      const sym::Expr e = core::current(metas[i].sym->sizes[d]).expr();
      const int64_t want = sym::evaluate(e, values);
      const int64_t got = inputs[i].size(static_cast<int64_t>(d));
      if (want == got) continue;
      std::string rel = sym::to_string(e, pytorch_names);
      if (e.is_const() && metas[i].sym->sizes[d].is_symbolic())
        rel += " (a compile of the program specialized this dynamic dim: its backend compiles for fixed sizes)";
      if (!e.is_const()) {
        rel += " (";
        for (int32_t id : sym::free_symbols(e)) {
          const auto [j, k] = syms.read_at.at(static_cast<size_t>(id));
          rel += (rel.back() == '(' ? "" : ", ") + pytorch_names(id) + " = " + label(j, k) + " = " +
                 std::to_string(values[static_cast<size_t>(id)]);
        }
        rel += ")";
      }
      EMBER_FAIL_KIND(ErrorKind::ValueError) << label(i, d) << " of the exported program is " << got
                                             << ", but the program requires it to equal " << rel << " = " << want;
    }
  }
  EMBER_CHECK_VALUE(env.check(values)) << "the exported program's sizes break a relation it was traced with: "
                                       << env.first_failure(values);
}

std::vector<std::string> describe_symbols(const ImportSymbols& syms) {
  std::vector<std::string> out;
  for (size_t id = 0; id < syms.names.size(); ++id) {
    const core::SymbolInfo& s = syms.env->symbol(static_cast<int32_t>(id));
    out.push_back(sym::default_symbol_name(static_cast<int32_t>(id)) + " = " + syms.names[id] + " in " +
                  core::ShapeEnv::format_range(s.range) + ", read from " + s.source);
  }
  return out;
}

}  // namespace ember::exporting
