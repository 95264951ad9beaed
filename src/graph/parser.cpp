// graph/parser.cpp — reads the text to_string writes (format in graph/text.h) back into a
// Graph: the other half of the round-trip guarantee (Note [graph]). Every malformed input
// raises a ValueError naming the line, what was expected and the text found there.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/shape.h"
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "graph/text.h"
#include "ops/registry.h"

namespace ember {
namespace {

/// One literal or value reference as written, before the schema gives it a type.
struct Lit {
  enum class Kind { None, Bool, Int, Float, Str, Dtype, Device, Ref, List, Sym };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  ScalarType dtype = kFloat;
  Device device;
  ValueRef ref;
  std::vector<Lit> items;
  core::SymInt sym;  // Sym: a size expression in a SymInt[] list
  std::string text;  // as written, for messages
};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Edit distance counting a swap of neighbours as one edit (optimal string alignment),
/// for suggesting op names.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

/// Registry names close to an unknown one: its other overloads, else names a typo away.
std::string close_op_names(std::string_view name) {
  std::string base(name);
  if (const size_t colons = base.find("::"); colons != std::string::npos) base = base.substr(colons + 2);
  base = base.substr(0, base.find('.'));
  // Long names are cut so that the distance matrix stays small.
  if (base.size() > 64) base.resize(64);
  std::string same_base;
  std::vector<std::pair<size_t, std::string>> near;
  for (const ops::OpDef* op : ops::registry().all()) {
    if (op->schema.name == base) {
      same_base += "\n  " + op->name;
    } else if (!base.empty()) {
      const size_t d = edit_distance(op->schema.name, base);
      if (d <= 2) near.emplace_back(d, op->name);
    }
  }
  if (!same_base.empty()) return "; overloads that exist:" + same_base;
  if (near.empty()) return " (see `ember ops` for the list)";
  std::sort(near.begin(), near.end());
  std::string out = "; did you mean:";
  for (size_t i = 0; i < std::min<size_t>(near.size(), 5); ++i) out += "\n  " + near[i].second;
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) {
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      start = end + 1;
    }
  }

  std::unique_ptr<Graph> parse() {
    next_content_line();
    if (at_eof()) fail_line("'graph <name> {'", "end of text");
    std::unique_ptr<Graph> g = header();
    symbols();
    bool closed = false;
    while (!closed) {
      next_content_line();
      if (at_eof()) fail_line("a node, 'return (…)' or '}'", "end of text");
      start_line();
      skip_spaces();
      if (rest().starts_with("}") && rest().find_first_not_of(" \t", 1) == std::string_view::npos) {
        closed = true;
      } else if (g->output_node()) {
        fail("'}' after the return line");
      } else if (rest().starts_with("return")) {
        output(*g);
      } else {
        node(*g);
      }
    }
    ++line_no_;
    next_content_line();
    if (!at_eof()) {
      start_line();
      fail("end of text after '}'");
    }
    return g;
  }

 private:
  // --- lines and the cursor ---------------------------------------------------------
  bool at_eof() const { return line_no_ >= lines_.size(); }
  void next_content_line() {
    while (!at_eof() && lines_[line_no_].find_first_not_of(" \t") == std::string_view::npos) ++line_no_;
  }
  void start_line() {
    line_ = lines_[line_no_];
    pos_ = 0;
  }
  std::string_view rest() const { return line_.substr(pos_); }
  char peek() const { return pos_ < line_.size() ? line_[pos_] : '\0'; }
  bool done() const { return pos_ >= line_.size(); }
  void skip_spaces() {
    while (!done() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
  }
  bool consume(std::string_view s) {
    if (!rest().starts_with(s)) return false;
    pos_ += s.size();
    return true;
  }
  void expect(std::string_view s, std::string_view what) {
    if (!consume(s)) fail(what);
  }

  static std::string quote(std::string_view s) {
    if (s.empty()) return "end of line";
    std::string out = "'";
    const size_t n = std::min<size_t>(s.size(), 40);
    for (size_t i = 0; i < n; ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
    if (s.size() > n) out += "...";
    return out + "'";
  }
  [[noreturn]] void fail_line(std::string_view expected, std::string_view found) {
    EMBER_FAIL_KIND(ErrorKind::ValueError) << "graph text line " << line_no_ + 1 << ": expected " << expected
                                           << ", found " << found;
  }
  /// Raises naming what was expected and the text at the cursor.
  [[noreturn]] void fail(std::string_view expected) { fail_line(expected, quote(rest())); }
  /// Raises about text read earlier on this line (`found` as written).
  [[noreturn]] void fail_at(std::string_view expected, std::string_view found) { fail_line(expected, quote(found)); }

  // --- tokens -------------------------------------------------------------------------
  std::string_view ident(std::string_view what) {
    const size_t start = pos_;
    while (!done() && is_ident_char(line_[pos_])) ++pos_;
    if (start == pos_) fail(what);
    return line_.substr(start, pos_ - start);
  }

  int64_t integer(std::string_view what) {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (!done() && std::isdigit(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    std::string_view tok = line_.substr(start, pos_ - start);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (tok.empty() || ec != std::errc() || end != tok.data() + tok.size()) {
      pos_ = start;
      fail(ec == std::errc::result_out_of_range ? std::string(what) + " (within 64 bits)" : what);
    }
    return v;
  }

  // --- size symbols (the header of a graph traced with dynamic shapes) ---------------
  /// `symbol s0 = 8 for x.size(0) [2, inf]` and `guard Mod(s0, 4) == 0` lines, in order.
  void symbols() {
    for (;;) {
      next_content_line();
      if (at_eof()) return;
      start_line();
      skip_spaces();
      if (consume("symbol ")) {
        symbol();
      } else if (consume("guard ")) {
        guard();
      } else {
        return;
      }
      ++line_no_;
    }
  }

  void symbol() {
    if (!env_) env_ = std::make_shared<core::ShapeEnv>();
    skip_spaces();
    const std::string_view name = ident("a symbol name");
    // `symbol u0 for aten::nonzero [0, inf]`: a data-dependent size has no example value.
    const bool unbacked = !name.empty() && name[0] == 'u';
    const std::string expected_name =
        unbacked ? core::sym::default_symbol_name(core::sym::kUnbackedBase + static_cast<int32_t>(env_->num_unbacked()))
                 : core::sym::default_symbol_name(static_cast<int32_t>(env_->num_symbols()));
    if (name != expected_name) fail_at("symbol " + expected_name + " (symbols are numbered in order)", name);
    skip_spaces();
    size_t hint_at = pos_;
    int64_t hint = 0;
    if (!unbacked) {
      expect("=", "'=' after the symbol name");
      skip_spaces();
      hint_at = pos_;
      hint = integer("the symbol's example value (an integer)");
      skip_spaces();
    }
    expect("for ", unbacked ? "'for OP [LO, HI]' after a data-dependent symbol's name"
                            : "'for SOURCE [LO, HI]' after the example value");
    const size_t open = line_.rfind(" [");
    if (open == std::string_view::npos || open < pos_) fail("a source and its range '[LO, HI]'");
    const std::string source(line_.substr(pos_, open - pos_));
    pos_ = open + 1;
    const core::sym::Range range = symbol_range();
    if (unbacked) {
      if (range.lo < 0) fail_at("a range of sizes (from 0 up)", line_.substr(open + 1));
      env_->restore_unbacked(source, range);
      return;
    }
    if (!range.contains(hint)) {
      fail_at("an example value inside the range " + core::ShapeEnv::format_range(range),
              line_.substr(hint_at, open - hint_at));
    }
    env_->restore_symbol(source, hint, range);
  }

  /// `[LO, HI]` ending the line.
  core::sym::Range symbol_range() {
    expect("[", "'[' opening the range");
    core::sym::Range range;
    range.lo = range_end("the range's lower end (an integer or -inf)");
    skip_spaces();
    expect(",", "',' in the range");
    skip_spaces();
    range.hi = range_end("the range's upper end (an integer or inf)");
    expect("]", "']' closing the range");
    skip_spaces();
    if (!done()) fail("end of line after the range");
    return range;
  }

  int64_t range_end(std::string_view what) {
    if (consume("-inf")) return core::sym::Range::kMinusInfinity;
    if (consume("inf")) return core::sym::Range::kInfinity;
    return integer(what);
  }

  void guard() {
    if (!env_) fail_line("'symbol …' lines before a guard", quote(line_));
    skip_spaces();
    static constexpr std::pair<const char*, core::Relation> kRelations[] = {
        {" == ", core::Relation::Eq}, {" != ", core::Relation::Ne}, {" <= ", core::Relation::Le},
        {" < ", core::Relation::Lt}};
    for (const auto& [text, rel] : kRelations) {
      const size_t at = line_.find(text, pos_);
      if (at == std::string_view::npos) continue;
      const core::sym::Expr lhs = expression(line_.substr(pos_, at - pos_));
      const core::sym::Expr rhs = expression(line_.substr(at + std::string_view(text).size()));
      pos_ = line_.size();
      env_->restore_guard(rel, lhs, rhs);
      return;
    }
    fail("a guard 'LHS REL RHS' (REL one of ==, !=, <=, <)");
  }

  /// A size expression over the header's symbols.
  core::sym::Expr expression(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    const size_t n = env_ ? env_->num_symbols() : 0;
    const size_t nu = env_ ? env_->num_unbacked() : 0;
    try {
      return core::sym::parse(text, [n, nu](std::string_view name) -> int32_t {
        for (size_t i = 0; i < n; ++i)
          if (name == core::sym::default_symbol_name(static_cast<int32_t>(i))) return static_cast<int32_t>(i);
        for (size_t k = 0; k < nu; ++k) {
          const int32_t id = core::sym::kUnbackedBase + static_cast<int32_t>(k);
          if (name == core::sym::default_symbol_name(id)) return id;
        }
        return -1;
      });
    } catch (const Error& e) {
      fail_at("a size expression over the symbols of the header (" + e.message() + ")", text);
    }
  }

  // --- geometry -----------------------------------------------------------------------
  /// An integer, or with a `symbol` header also a size expression (`s0*16`,
  /// `Mod(s0, 8)`): up to a ',' or ']' outside parentheses in a list, up to a space, ','
  /// or ')' outside parentheses elsewhere.
  core::SymInt size_value(std::string_view what, bool in_list) {
    if (!env_) return integer(what);
    const size_t start = pos_;
    int depth = 0;
    for (; !done(); ++pos_) {
      const char c = line_[pos_];
      if (c == '(') {
        ++depth;
      } else if (c == ')' && depth > 0) {
        --depth;
      } else if (depth == 0 && (c == ',' || c == ']' || c == ')' || (!in_list && (c == ' ' || c == '\t')))) {
        break;
      }
    }
    std::string_view token = line_.substr(start, pos_ - start);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (token.empty()) fail(std::string(what) + " or a size expression");
    const core::sym::Expr e = env_->simplify(expression(token));
    try {
      return core::SymInt(e, env_->placeholder_hint(e), env_.get());
    } catch (const Error& err) {
      fail_at("a size expression defined at the symbols' example values (" + err.message() + ")", token);
    }
  }

  core::SymInts size_list(std::string_view what) {
    expect("[", what);
    core::SymInts out;
    skip_spaces();
    if (consume("]")) return out;
    for (;;) {
      skip_spaces();
      out.push_back(size_value(std::string("an integer in ") + std::string(what), /*in_list=*/true));
      skip_spaces();
      if (consume("]")) return out;
      expect(",", "',' or ']'");
    }
  }

  TensorMeta meta() {
    if (consume("None")) {  // an output the call does not compute
      TensorMeta m;
      m.undefined = true;
      return m;
    }
    const size_t start = pos_;
    while (!done() && std::isalnum(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    std::string_view dt = line_.substr(start, pos_ - start);
    auto dtype = graph_text::parse_short_dtype(dt);
    if (!dtype) {
      pos_ = start;
      fail("a dtype (f32, f64, f16, bf16, i64, i32, i16, i8, u8, b8)");
    }
    const core::SymInts sizes = size_list("sizes '[…]' after the dtype");
    for (const core::SymInt& s : sizes)
      if (s.hint() < 0) fail_at("sizes >= 0", line_.substr(start, pos_ - start));
    core::SymInts strides;
    core::SymInt offset = 0;
    Device device;
    bool has_strides = false, has_offset = false, has_device = false;
    for (;;) {
      const size_t before = pos_;
      skip_spaces();
      if (!has_strides && consume("strides=")) {
        has_strides = true;
        const size_t at = pos_;
        strides = size_list("strides '[…]'");
        if (strides.size() != sizes.size())
          fail_at("as many strides as sizes (" + std::to_string(sizes.size()) + ")", line_.substr(at, pos_ - at));
        for (const core::SymInt& s : strides)
          if (s.hint() < 0) fail_at("strides >= 0", line_.substr(at, pos_ - at));
      } else if (!has_offset && consume("offset=")) {
        has_offset = true;
        const size_t at = pos_;
        offset = size_value("an integer offset", /*in_list=*/false);
        if (offset.hint() < 0) fail_at("an offset >= 0", line_.substr(at, pos_ - at));
      } else if (!has_device && consume("device=")) {
        has_device = true;
        const size_t at = pos_;
        while (!done() && (is_ident_char(line_[pos_]) || line_[pos_] == ':')) ++pos_;
        device = device_of(line_.substr(at, pos_ - at), at);
      } else {
        pos_ = before;
        break;
      }
    }
    // Contiguous strides are products of sizes: they must fit in 64 bits.
    int64_t span = 1;
    for (const core::SymInt& s : sizes) {
      if (__builtin_mul_overflow(span, std::max<int64_t>(s.hint(), 1), &span))
        fail_at("sizes whose product fits in 64 bits", line_.substr(start, pos_ - start));
    }
    if (!has_strides) strides = core::sym_contiguous_strides(sizes);
    // The graph's values keep the shape environment their expressions refer to alive
    // (core::share_geometry).
    TensorMeta m = core::make_meta(sizes, strides, offset, *dtype, device);
    // Every reader of a graph (the interpreter, runnable programs, repros' inputs) sizes
    // the storage as offset + sum((size - 1) * stride) + 1 elements: its bytes must fit
    // in 64 bits too, or they would silently wrap.
    bool empty = false;
    for (int64_t s : m.sizes) empty = empty || s == 0;
    int64_t extent = m.storage_offset, term = 0;
    bool wraps = __builtin_add_overflow(extent, empty ? 0 : 1, &extent);
    for (size_t d = 0; d < m.sizes.size() && !empty && !wraps; ++d) {
      wraps =
          __builtin_mul_overflow(m.sizes[d] - 1, m.strides[d], &term) || __builtin_add_overflow(extent, term, &extent);
    }
    if (wraps || __builtin_mul_overflow(extent, static_cast<int64_t>(element_size(m.dtype)), &term))
      fail_at("a geometry whose storage (offset + sum((size-1)*stride) + 1 elements) fits in 64-bit byte offsets",
              line_.substr(start, pos_ - start));
    return m;
  }

  /// "cpu", "meta", "cuda", "cuda:1" — strictly, unlike Device's constructor.
  Device device_of(std::string_view spec, size_t at) {
    std::string_view kind = spec.substr(0, spec.find(':'));
    int index = -1;
    if (kind.size() < spec.size()) {
      std::string_view num = spec.substr(kind.size() + 1);
      auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
      if (num.empty() || ec != std::errc() || end != num.data() + num.size() || index < 0 || index > 127) {
        pos_ = at;
        fail("a device index in 0..127");
      }
    }
    DeviceType type;
    if (kind == "cpu") {
      type = DeviceType::CPU;
    } else if (kind == "meta") {
      type = DeviceType::Meta;
    } else if (kind == "cuda") {
      type = DeviceType::CUDA;
    } else {
      pos_ = at;
      fail("a device (cpu, meta, cuda, cuda:N)");
    }
    return Device(type, static_cast<int8_t>(index));
  }

  std::vector<TensorMeta> metas() {
    std::vector<TensorMeta> out;
    if (!consume("(")) {
      out.push_back(meta());
      return out;
    }
    skip_spaces();
    if (consume(")")) return out;
    for (;;) {
      skip_spaces();
      out.push_back(meta());
      skip_spaces();
      if (consume(")")) return out;
      expect(",", "',' or ')' in the list of output geometries");
    }
  }

  // --- values and literals ------------------------------------------------------------
  ValueRef ref() {
    const size_t start = pos_;
    expect("%", "a value (%name)");
    std::string name(ident("a value name after '%'"));
    auto it = defined_.find(name);
    if (it == defined_.end()) {
      fail_at("a value defined on an earlier line", line_.substr(start, pos_ - start));
    }
    Node* n = it->second;
    if (n->kind() == NodeKind::Output) fail_at("a value, not the output node", line_.substr(start, pos_ - start));
    ValueRef v{n, 0};
    if (peek() == '.') {
      ++pos_;
      const int64_t k = integer("an output index after '.'");
      if (n->num_outputs() < 2 || k < 0 || static_cast<uint64_t>(k) >= n->num_outputs()) {
        fail_at(n->num_outputs() < 2 ? "%" + name + " without an index (it has one output)"
                                     : "an output index below " + std::to_string(n->num_outputs()),
                line_.substr(start, pos_ - start));
      }
      v.index = static_cast<uint32_t>(k);
    } else if (n->num_outputs() != 1) {
      fail_at("%" + name + ".k: it has " + std::to_string(n->num_outputs()) + " outputs",
              line_.substr(start, pos_ - start));
    }
    return v;
  }

  std::string string_literal() {
    expect("\"", "'\"'");
    std::string out;
    for (;;) {
      if (done()) fail("a closing '\"'");
      char c = line_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      switch (peek()) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        default: fail("an escape (\\\", \\\\, \\n, \\t)");
      }
      ++pos_;
    }
  }

  /// A number: an integer, or a float (with '.', 'e', inf or nan).
  Lit number() {
    Lit l;
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (consume("inf") || consume("nan")) {
      l.kind = Lit::Kind::Float;
      const bool neg = line_[start] == '-';
      l.d = line_[pos_ - 1] == 'f' ? (neg ? -HUGE_VAL : HUGE_VAL) : std::nan("");
      if (neg && line_[pos_ - 1] == 'n') l.d = -l.d;
    } else {
      while (!done() && (std::isdigit(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '.' ||
                         line_[pos_] == 'e' || line_[pos_] == 'E' ||
                         ((line_[pos_] == '-' || line_[pos_] == '+') && pos_ > start &&
                          (line_[pos_ - 1] == 'e' || line_[pos_ - 1] == 'E')))) {
        ++pos_;
      }
      std::string_view tok = line_.substr(start, pos_ - start);
      const bool is_float = tok.find_first_of(".eE") != std::string_view::npos;
      std::from_chars_result r{};
      if (is_float) {
        l.kind = Lit::Kind::Float;
        r = std::from_chars(tok.data(), tok.data() + tok.size(), l.d);
      } else {
        l.kind = Lit::Kind::Int;
        r = std::from_chars(tok.data(), tok.data() + tok.size(), l.i);
      }
      if (tok.empty() || r.ec != std::errc() || r.ptr != tok.data() + tok.size()) {
        pos_ = start;
        fail(r.ec == std::errc::result_out_of_range ? "a number within range" : "a number");
      }
    }
    l.text = std::string(line_.substr(start, pos_ - start));
    return l;
  }

  /// Whether the list element or argument at pos_ (up to a ',', ']' or, for an argument,
  /// the call's ')' outside parentheses) is a size expression over the header's symbols
  /// (`s0`, `12*s0`, `s0 - 1`, `Mod(s0, 8)`) rather than a number: a symbol, an operator or
  /// a parenthesis, which no number holds.
  bool is_size_expression(bool in_list) const {
    if (!in_list) {  // an argument: only what can start an expression (not None, torch.…, device(…))
      const char c = peek();
      if (!(c == 's' || c == 'u' || c == 'M' || c == '(' || c == '-' || std::isdigit(static_cast<unsigned char>(c))))
        return false;
    }
    int depth = 0;
    for (size_t p = pos_; p < line_.size(); ++p) {
      const char c = line_[p];
      if (depth == 0 && (c == ',' || c == ']' || (!in_list && c == ')'))) return false;
      if (c == '(') ++depth;
      if (c == ')') --depth;
      const char next = p + 1 < line_.size() ? line_[p + 1] : '\0';
      if ((c == 's' || c == 'u') && std::isdigit(static_cast<unsigned char>(next))) return true;  // s0, u0
      if (c == 'M' && (next == 'o' || next == 'i' || next == 'a')) return true;                   // Mod, Min, Max
      if (c == '*' || c == '/' || c == '%' || c == '(') return true;
      if ((c == '+' || c == '-') && p > pos_ && line_[p - 1] == ' ') return true;
    }
    return false;
  }

  /// One argument: a literal, a value, or a list of them (lists do not nest).
  Lit literal(bool in_list) {
    const size_t start = pos_;
    Lit l;
    const char c = peek();
    if (c == '%') {
      l.kind = Lit::Kind::Ref;
      l.ref = ref();
    } else if (c == '[' && !in_list) {
      ++pos_;
      l.kind = Lit::Kind::List;
      skip_spaces();
      if (!consume("]")) {
        for (;;) {
          skip_spaces();
          l.items.push_back(literal(/*in_list=*/true));
          skip_spaces();
          if (consume("]")) break;
          expect(",", "',' or ']' in a list");
        }
      }
    } else if (c == '"') {
      l.kind = Lit::Kind::Str;
      l.s = string_literal();
    } else if (env_ && is_size_expression(in_list)) {
      // A SymInt[] element or a SymInt argument; an argument ends at ',' or ')' as an element
      // ends at ',' or ']' (size_value's list rule).
      l.kind = Lit::Kind::Sym;
      l.sym = size_value(in_list ? "a list element" : "an argument", /*in_list=*/true);
    } else if (c == '-' || c == '.' || std::isdigit(static_cast<unsigned char>(c)) || rest().starts_with("inf") ||
               rest().starts_with("nan")) {
      l = number();
    } else if (consume("None")) {
      l.kind = Lit::Kind::None;
    } else if (consume("True") || consume("False")) {
      l.kind = Lit::Kind::Bool;
      l.b = line_[start] == 'T';
    } else if (consume("torch.")) {
      const size_t at = pos_;
      std::string_view name = ident("a dtype name after 'torch.'");
      auto dt = parse_dtype(name);
      if (!dt) {
        pos_ = at;
        fail("a dtype name (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool)");
      }
      l.kind = Lit::Kind::Dtype;
      l.dtype = *dt;
    } else if (consume("device(")) {
      const size_t at = pos_;
      std::string spec = string_literal();
      l.kind = Lit::Kind::Device;
      l.device = device_of(spec, at);
      expect(")", "')' after the device");
    } else {
      fail(in_list ? "a list element (a value %name, None or a literal)"
                   : "an argument (a value %name, a list, None, True/False, a number, a string, torch.<dtype> or "
                     "device(\"…\"))");
    }
    if (l.text.empty()) l.text = std::string(line_.substr(start, pos_ - start));
    return l;
  }

  // --- arguments against the schema -----------------------------------------------------
  [[noreturn]] void bad_arg(const ops::OpDef& op, size_t i, const Lit& l) {
    const ops::Argument& a = op.schema.arguments[i];
    fail_at(a.type.str() + " for argument '" + a.name + "' (position " + std::to_string(i) + ") of " + op.name,
            l.text);
  }

  Arg convert(const ops::OpDef& op, size_t i, const Lit& l) {
    const ops::ArgType& t = op.schema.arguments[i].type;
    using K = Lit::Kind;
    if (l.kind == K::None) {
      if (!t.optional) bad_arg(op, i, l);
      return Arg::of_literal(IValue());
    }
    if (t.base == ops::BaseType::Tensor) {
      if (!t.is_list) {
        if (l.kind != K::Ref) bad_arg(op, i, l);
        return Arg::of_value(l.ref);
      }
      if (l.kind != K::List) bad_arg(op, i, l);
      std::vector<std::optional<ValueRef>> values;
      for (const Lit& e : l.items) {
        if (e.kind == K::Ref) {
          values.emplace_back(e.ref);
        } else if (e.kind == K::None && t.element_optional) {
          values.emplace_back(std::nullopt);
        } else {
          bad_arg(op, i, l);
        }
      }
      return Arg::of_values(std::move(values));
    }
    if (t.is_list) {
      if (l.kind != K::List) bad_arg(op, i, l);
      if (t.base == ops::BaseType::Bool) {
        std::vector<bool> out;
        for (const Lit& e : l.items) {
          if (e.kind != K::Bool) bad_arg(op, i, l);
          out.push_back(e.b);
        }
        return Arg::of_literal(IValue(std::move(out)));
      }
      if (t.base == ops::BaseType::Float) {
        std::vector<double> out;
        for (const Lit& e : l.items) {
          if (e.kind != K::Float && e.kind != K::Int) bad_arg(op, i, l);
          out.push_back(e.kind == K::Float ? e.d : static_cast<double>(e.i));
        }
        return Arg::of_literal(IValue(std::move(out)));
      }
      // Every other list type is an int list (ops/schema.cpp); a SymInt[] list may hold size
      // expressions (Note [dynamic shapes]).
      std::vector<SymInt> out;
      for (const Lit& e : l.items) {
        if (e.kind == K::Sym && t.base == ops::BaseType::SymInt) {
          out.emplace_back(e.sym);
        } else if (e.kind == K::Int) {
          out.emplace_back(e.i);
        } else {
          bad_arg(op, i, l);
        }
      }
      return Arg::of_literal(IValue(out));
    }
    switch (t.base) {
      case ops::BaseType::Int:
        if (l.kind == K::Int) return Arg::of_literal(IValue(l.i));
        break;
      case ops::BaseType::SymInt:
        if (l.kind == K::Int) return Arg::of_literal(IValue(l.i));
        if (l.kind == K::Sym) return Arg::of_literal(IValue(SymInt(l.sym)));
        break;
      case ops::BaseType::Float:
        if (l.kind == K::Float) return Arg::of_literal(IValue(l.d));
        if (l.kind == K::Int) return Arg::of_literal(IValue(static_cast<double>(l.i)));
        break;
      case ops::BaseType::Bool:
      case ops::BaseType::SymBool:
        if (l.kind == K::Bool) return Arg::of_literal(IValue(l.b));
        break;
      case ops::BaseType::Scalar:
        if (l.kind == K::Int) return Arg::of_literal(IValue(Scalar(l.i)));
        if (l.kind == K::Float) return Arg::of_literal(IValue(Scalar(l.d)));
        if (l.kind == K::Bool) return Arg::of_literal(IValue(Scalar(l.b)));
        if (l.kind == K::Sym) return Arg::of_literal(IValue(SymInt(l.sym)));  // arange's end over a symbol
        break;
      case ops::BaseType::ScalarType:
        if (l.kind == K::Dtype) return Arg::of_literal(IValue(l.dtype));
        break;
      case ops::BaseType::Device:
        if (l.kind == K::Device) return Arg::of_literal(IValue(l.device));
        break;
      case ops::BaseType::Str:
      case ops::BaseType::Layout:
      case ops::BaseType::MemoryFormat:
      case ops::BaseType::Generator:
        if (l.kind == K::Str) return Arg::of_literal(IValue(l.s));
        break;
      case ops::BaseType::Tensor: break;
    }
    bad_arg(op, i, l);
  }

  // --- lines ------------------------------------------------------------------------------
  std::unique_ptr<Graph> header() {
    start_line();
    skip_spaces();
    expect("graph ", "'graph <name> {'");
    std::string_view r = rest();
    if (r.empty() || r.back() != '{') fail_at("'{' at the end of the graph line", r);
    r.remove_suffix(1);
    if (!r.empty() && r.back() == ' ') r.remove_suffix(1);
    ++line_no_;
    return std::make_unique<Graph>(std::string(r));
  }

  std::string_view node_name() {
    expect("%", "'%name : …' (a node), 'return (…)' or '}'");
    std::string_view name = ident("a node name after '%'");
    if (defined_.contains(std::string(name))) fail_at("a name not used before", name);
    return name;
  }

  /// The text inside `kind[` … `]` (a target may hold any character, ']' included): up to
  /// the last ']' that ends the line or precedes the location comment.
  std::string bracket_target() {
    const size_t open = pos_;
    for (size_t close = line_.find(']', open); close != std::string_view::npos; close = line_.find(']', close + 1)) {
      std::string_view after = line_.substr(close + 1);
      const size_t first = after.find_first_not_of(" \t");
      if (first == std::string_view::npos || after[first] == '#') {
        pos_ = close + 1;
        return std::string(line_.substr(open, close - open));
      }
    }
    fail("a target followed by ']'");
  }

  /// "  # file:line" (the file may hold ':'): the location, or an unknown one.
  SourceLoc location() {
    skip_spaces();
    if (done()) return {};
    expect("#", "'# file:line' or end of line");
    skip_spaces();
    std::string_view loc = rest();
    while (!loc.empty() && (loc.back() == ' ' || loc.back() == '\t')) loc.remove_suffix(1);
    const size_t colon = loc.rfind(':');
    if (colon == std::string_view::npos || colon == 0) fail("a location 'file:line'");
    std::string_view num = loc.substr(colon + 1);
    uint32_t line = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), line);
    if (num.empty() || ec != std::errc() || end != num.data() + num.size()) {
      pos_ += colon + 1;
      fail("a line number after the last ':' of the location");
    }
    pos_ = line_.size();
    return SourceLoc(std::string(loc.substr(0, colon)), line);
  }

  void node(Graph& g) {
    std::string name(node_name());
    skip_spaces();
    expect(":", "':' after the node name");
    skip_spaces();
    const size_t meta_start = pos_;
    std::vector<TensorMeta> meta = metas();
    const std::string_view meta_text = line_.substr(meta_start, pos_ - meta_start);
    skip_spaces();
    expect("=", "'=' after the geometry");
    skip_spaces();
    NodeKind kind = NodeKind::Call;
    if (consume("placeholder[")) {
      kind = NodeKind::Placeholder;
    } else if (consume("get_attr[")) {
      kind = NodeKind::Attribute;
    } else if (consume("constant[")) {
      kind = NodeKind::Constant;
    }
    Node* n = nullptr;
    if (kind != NodeKind::Call) {
      if (meta.size() != 1) fail_at("one geometry for an input or constant", meta_text);
      std::string target = bracket_target();
      SourceLoc loc = location();
      n = g.add_named(kind, name, target, nullptr, {}, std::move(meta), std::move(loc), true);
    } else {
      n = call(g, name, std::move(meta));
    }
    defined_.emplace(std::move(name), n);
    ++line_no_;
  }

  Node* call(Graph& g, const std::string& name, std::vector<TensorMeta> meta) {
    const size_t start = pos_;
    while (!done() && (is_ident_char(line_[pos_]) || line_[pos_] == ':' || line_[pos_] == '.')) ++pos_;
    std::string_view op_name = line_.substr(start, pos_ - start);
    if (op_name.empty()) fail("placeholder[…], get_attr[…], constant[…] or an op name");
    const ops::OpDef* op = ops::registry().find(op_name);
    if (!op) fail_at("a registered op" + close_op_names(op_name), op_name);
    const auto& returns = op->schema.returns;
    const bool list_return = !returns.empty() && returns[0].type.is_list;
    if (!list_return && meta.size() != returns.size()) {
      fail_line(std::to_string(returns.size()) + " output geometr" + (returns.size() == 1 ? "y" : "ies") + " for " +
                    op->name,
                std::to_string(meta.size()));
    }
    expect("(", "'(' after the op name");
    const auto& params = op->schema.arguments;
    std::vector<Arg> args;
    skip_spaces();
    if (!consume(")")) {
      for (;;) {
        skip_spaces();
        if (args.size() == params.size()) fail_line(arity(*op), "more: " + quote(rest()));
        Lit l = literal(/*in_list=*/false);
        args.push_back(convert(*op, args.size(), l));
        skip_spaces();
        if (consume(")")) break;
        expect(",", "',' or ')' after an argument");
      }
    }
    if (args.size() != params.size()) {
      fail_line(arity(*op), std::to_string(args.size()) + ": " + quote(line_.substr(start, pos_ - start)));
    }
    skip_spaces();
    const bool no_grad = consume("{no_grad}");
    SourceLoc loc = location();
    return g.add_named(NodeKind::Call, name, op->name, op, std::move(args), std::move(meta), std::move(loc), !no_grad);
  }

  static std::string arity(const ops::OpDef& op) {
    std::string names;
    for (const auto& a : op.schema.arguments) names += (names.empty() ? "" : ", ") + a.name;
    return std::to_string(op.schema.arguments.size()) + " arguments for " + op.name + " (" + names + ")";
  }

  void output(Graph& g) {
    expect("return", "'return'");
    skip_spaces();
    expect("(", "'(' after return");
    std::vector<ValueRef> outs;
    skip_spaces();
    if (!consume(")")) {
      for (;;) {
        skip_spaces();
        outs.push_back(ref());
        skip_spaces();
        if (consume(")")) break;
        expect(",", "',' or ')' in the return list");
      }
    }
    skip_spaces();
    if (!done()) fail("end of line after the return list");
    g.set_output(std::move(outs));
    ++line_no_;
  }

  std::vector<std::string_view> lines_;
  size_t line_no_ = 0;
  std::string_view line_;
  size_t pos_ = 0;
  std::map<std::string, Node*> defined_;
  /// The size symbols of the header, when it has any; the symbolic geometry of the
  /// parsed values owns it.
  std::shared_ptr<core::ShapeEnv> env_;
};

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text) { return Parser(text).parse(); }

}  // namespace ember
