// core/shape_env.cpp — symbols, guards, replacements and range narrowing of a shape
// environment, and SymInt's arithmetic over it. See Note [dynamic shapes].
#include "core/shape_env.h"

#include <algorithm>

#include "ember/error.h"
#include "support/logging.h"

namespace ember::core {

namespace {

support::UserLoc current_user_loc() {
  const support::CallContext& c = support::call_context();
  return c.has_user_loc ? c.user_loc : support::UserLoc{};
}

std::string at_user_line(const support::UserLoc& loc) {
  return loc.line == 0 ? std::string() : " at " + support::format_loc(loc);
}

bool holds(Relation rel, int64_t a, int64_t b) {
  switch (rel) {
    case Relation::Eq:
      return a == b;
    case Relation::Ne:
      return a != b;
    case Relation::Lt:
      return a < b;
    case Relation::Le:
      return a <= b;
  }
  return false;
}

/// What the range of lhs − rhs decides about `lhs REL rhs`, if anything.
std::optional<bool> decide(Relation rel, sym::Range d) {
  switch (rel) {
    case Relation::Eq:
      if (d.lo == 0 && d.hi == 0) return true;
      if (!d.contains(0)) return false;
      return std::nullopt;
    case Relation::Ne:
      if (std::optional<bool> eq = decide(Relation::Eq, d)) return !*eq;
      return std::nullopt;
    case Relation::Lt:
      if (d.hi < 0) return true;
      if (d.lo >= 0) return false;
      return std::nullopt;
    case Relation::Le:
      if (d.hi <= 0) return true;
      if (d.lo > 0) return false;
      return std::nullopt;
  }
  return std::nullopt;
}

std::string range_end(int64_t v) {
  if (v == sym::Range::kInfinity) return "inf";
  if (v == sym::Range::kMinusInfinity) return "-inf";
  return std::to_string(v);
}

}  // namespace

std::string ShapeEnv::format_range(sym::Range r) { return "[" + range_end(r.lo) + ", " + range_end(r.hi) + "]"; }

const char* relation_text(Relation rel) {
  switch (rel) {
    case Relation::Eq:
      return "==";
    case Relation::Ne:
      return "!=";
    case Relation::Lt:
      return "<";
    case Relation::Le:
      return "<=";
  }
  return "?";
}

const SymbolInfo& ShapeEnv::symbol(int32_t id) const {
  if (sym::is_unbacked(id)) {
    const auto k = static_cast<size_t>(id - sym::kUnbackedBase);
    EMBER_INTERNAL_ASSERT(k < unbacked_.size()) << "no symbol " << sym::default_symbol_name(id);
    return unbacked_[k];
  }
  EMBER_INTERNAL_ASSERT(id >= 0 && static_cast<size_t>(id) < symbols_.size()) << "no symbol s" << id;
  return symbols_[static_cast<size_t>(id)];
}

bool ShapeEnv::has_unbacked(const sym::Expr& e) {
  for (int32_t id : sym::free_symbols(e))
    if (sym::is_unbacked(id)) return true;
  return false;
}

SymInt ShapeEnv::create_unbacked(std::string origin) {
  const SymInt s = restore_unbacked(std::move(origin), sym::Range{0, sym::Range::kInfinity});
  SymbolInfo& info = unbacked_.back();
  info.loc = current_user_loc();
  EMBER_LOG(dynamic, INFO) << "create_unbacked_symint " << s.str() << " " << format_range(info.range) << " for "
                           << info.source << at_user_line(info.loc);
  return s;
}

SymInt ShapeEnv::restore_unbacked(std::string origin, sym::Range range) {
  const auto id = sym::kUnbackedBase + static_cast<int32_t>(unbacked_.size());
  EMBER_CHECK(range.lo >= 0) << "the data-dependent size " << sym::default_symbol_name(id) << " (" << origin
                             << ") has range " << format_range(range) << "; a size is never negative";
  unbacked_.push_back(SymbolInfo{std::move(origin), kUnbackedPlaceholder, range, {}});
  return SymInt(sym::Expr::symbol(id), kUnbackedPlaceholder, this);
}

std::string ShapeEnv::unbacked_origins(const sym::Expr& e) const {
  std::string out;
  for (int32_t id : sym::free_symbols(e)) {
    if (!sym::is_unbacked(id)) continue;
    const SymbolInfo& u = symbol(id);
    out += (out.empty() ? "" : "; ") + sym::default_symbol_name(id) + " is the size " + u.source +
           " computes from data" + at_user_line(u.loc);
  }
  return out;
}

void ShapeEnv::data_dependent(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs) const {
  EMBER_FAIL() << "Could not guard on data-dependent expression " << format(lhs) << " " << relation_text(rel) << " "
               << format(rhs) << " (" << unbacked_origins(lhs - rhs)
               << "; it is known only at run time, so the traced code cannot branch on it). Compute with the size "
                  "without comparing it to a fixed value, or call ember::graph_break() before this line so that the "
                  "size is a number there";
}

SymInt ShapeEnv::create_size(int64_t hint, std::string source, std::optional<int64_t> min, std::optional<int64_t> max) {
  EMBER_CHECK(hint >= 0) << "a size must be non-negative, got " << hint << " for " << source;
  EMBER_CHECK(!min || hint >= *min) << source << " was marked dynamic with min=" << *min << " but its size is " << hint;
  EMBER_CHECK(!max || hint <= *max) << source << " was marked dynamic with max=" << *max << " but its size is " << hint;
  if (options_.specialize_zero_one && hint <= 1) return SymInt(hint);
  sym::Range range{options_.specialize_zero_one ? 2 : 0, sym::Range::kInfinity};
  if (min) range.lo = std::max(range.lo, *min);
  if (max) range.hi = *max;
  const auto id = static_cast<int32_t>(symbols_.size());
  const support::UserLoc loc = current_user_loc();
  symbols_.push_back(SymbolInfo{std::move(source), hint, range, loc});
  replacements_.emplace_back();
  const sym::Expr symbol = sym::Expr::symbol(id);
  const SymbolInfo& info = symbols_.back();
  // Duck shaping: the first symbol with this example value and the same range stands for
  // this size too, and the equality of the two sources is a guard.
  if (options_.duck_shape) {
    for (int32_t other = 0; other < id; ++other) {
      const SymbolInfo& o = symbols_[static_cast<size_t>(other)];
      if (o.hint == hint && o.range == range && !replacements_[static_cast<size_t>(other)]) {
        EMBER_LOG(dynamic, INFO) << "create_symbol s" << id << " = " << hint << " for " << info.source
                                 << " (duck sized: the same symbol as s" << other << ")" << at_user_line(loc);
        guards_.push_back(ShapeGuard{Relation::Eq, symbol, sym::Expr::symbol(other), loc});
        set_replacement(id, sym::Expr::symbol(other));
        return SymInt(sym::Expr::symbol(other), hint, this);
      }
    }
  }
  EMBER_LOG(dynamic, INFO) << "create_symbol s" << id << " = " << hint << " for " << info.source << " "
                           << format_range(range) << at_user_line(loc);
  return SymInt(symbol, hint, this);
}

int64_t ShapeEnv::hint(const sym::Expr& e) const {
  if (has_unbacked(e)) {
    EMBER_FAIL() << "Could not extract specialized integer from data-dependent expression " << format(e) << " ("
                 << unbacked_origins(e)
                 << "; it is known only at run time). Code that reads this size as an integer (sizes(), size(d), "
                    "numel(), or an op whose meta function is not written over SymInt) needs it; call "
                    "ember::graph_break() before this line so that the size is a number there";
  }
  return placeholder_hint(e);
}

int64_t ShapeEnv::placeholder_hint(const sym::Expr& e) const {
  // Unbacked ids are not indices of this vector: put them at the placeholder first.
  const sym::Expr at_placeholder = sym::substitute(e, [](int32_t id) -> std::optional<sym::Expr> {
    return sym::is_unbacked(id) ? std::optional<sym::Expr>(kUnbackedPlaceholder) : std::nullopt;
  });
  std::vector<int64_t> hints(symbols_.size());
  for (size_t i = 0; i < symbols_.size(); ++i) hints[i] = symbols_[i].hint;
  return sym::evaluate(at_placeholder, hints);
}

sym::Range ShapeEnv::range(const sym::Expr& e) const {
  return sym::bounds(e, [this](int32_t id) { return symbol(id).range; });
}

sym::Expr ShapeEnv::simplify(const sym::Expr& e) const {
  return sym::rewrite_atoms(e, [this](const sym::Expr& atom) -> std::optional<sym::Expr> {
    const sym::Node& n = atom.node();
    if (n.kind == sym::Kind::Symbol) {
      if (sym::is_unbacked(atom.symbol_id())) return std::nullopt;  // never replaced: no guard names one
      return replacements_[static_cast<size_t>(atom.symbol_id())];
    }
    const sym::Range a = range(n.args[0]);
    const sym::Range b = range(n.args[1]);
    switch (n.kind) {
      case sym::Kind::Min:
        if (a.hi <= b.lo) return n.args[0];
        if (b.hi <= a.lo) return n.args[1];
        return std::nullopt;
      case sym::Kind::Max:
        if (a.lo >= b.hi) return n.args[0];
        if (b.lo >= a.hi) return n.args[1];
        return std::nullopt;
      case sym::Kind::Mod:
        if (b.lo > 0 && a.lo >= 0 && a.hi < b.lo) return n.args[0];
        return std::nullopt;
      case sym::Kind::FloorDiv:
        if (b.lo > 0 && a.lo >= 0 && a.hi < b.lo) return sym::Expr(int64_t{0});
        return std::nullopt;
      default:
        return std::nullopt;
    }
  });
}

bool ShapeEnv::evaluate(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs) {
  const sym::Expr l = simplify(lhs);
  const sym::Expr r = simplify(rhs);
  if (std::optional<bool> known = decide(rel, range(l - r))) return *known;
  if (has_unbacked(l - r)) {
    // guard_size_oblivious: compared with 0 or 1, a data-dependent size is taken to be
    // neither (as if its range were [2, inf]); nothing is recorded.
    const bool against_0_1 = (r.is_const() && (r.value() == 0 || r.value() == 1)) ||
                             (l.is_const() && (l.value() == 0 || l.value() == 1));
    if (against_0_1) {
      const sym::Range oblivious = sym::bounds(l - r, [this](int32_t id) {
        sym::Range range = symbol(id).range;
        if (sym::is_unbacked(id)) range.lo = std::max<int64_t>(range.lo, 2);
        return range;
      });
      if (std::optional<bool> known = decide(rel, oblivious)) return *known;
    }
    data_dependent(rel, l, r);
  }
  const bool value = holds(rel, hint(l), hint(r));
  // Record what was found true: a false `a < b` is the guard `b <= a`.
  switch (rel) {
    case Relation::Eq:
      record(value ? Relation::Eq : Relation::Ne, l, r);
      break;
    case Relation::Ne:
      record(value ? Relation::Ne : Relation::Eq, l, r);
      break;
    case Relation::Lt:
      value ? record(Relation::Lt, l, r) : record(Relation::Le, r, l);
      break;
    case Relation::Le:
      value ? record(Relation::Le, l, r) : record(Relation::Lt, r, l);
      break;
  }
  return value;
}

int64_t ShapeEnv::specialize(const sym::Expr& e) {
  const int64_t value = hint(e);
  evaluate(Relation::Eq, e, sym::Expr(value));
  return value;
}

void ShapeEnv::record(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs) {
  // A relation already guarded (the same sizes compared again, as every op that broadcasts
  // `[s0 - 1, 6]` asks whether s0 - 1 is 1) adds nothing: one guard, one log line.
  const bool symmetric = rel == Relation::Eq || rel == Relation::Ne;
  for (const ShapeGuard& g : guards_) {
    if (g.rel != rel) continue;
    const sym::Expr gl = simplify(g.lhs), gr = simplify(g.rhs);
    if ((gl == lhs && gr == rhs) || (symmetric && gl == rhs && gr == lhs)) return;
  }
  const support::UserLoc loc = current_user_loc();
  EMBER_LOG(dynamic, INFO) << "eval " << format(lhs) << " " << relation_text(rel) << " " << format(rhs)
                           << " [guard added]" << at_user_line(loc);
  add_guard(rel, lhs, rhs, loc);
}

SymInt ShapeEnv::restore_symbol(std::string source, int64_t hint, sym::Range range) {
  EMBER_CHECK(range.contains(hint)) << "symbol s" << symbols_.size() << " (" << source << ") has example value "
                                    << hint << " outside its range " << format_range(range);
  const auto id = static_cast<int32_t>(symbols_.size());
  symbols_.push_back(SymbolInfo{std::move(source), hint, range, {}});
  replacements_.emplace_back();
  return SymInt(sym::Expr::symbol(id), hint, this);
}

void ShapeEnv::restore_guard(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs) {
  EMBER_CHECK(!has_unbacked(lhs - rhs)) << "the guard " << format(lhs) << " " << relation_text(rel) << " "
                                        << format(rhs) << " names a data-dependent size, which no guard can read";
  add_guard(rel, lhs, rhs, {});
}

void ShapeEnv::add_guard(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs, const support::UserLoc& loc) {
  const sym::Expr difference = lhs - rhs;
  if (narrow_range(rel, difference)) return;
  guards_.push_back(ShapeGuard{rel, lhs, rhs, loc});
  if (rel != Relation::Eq) return;
    // An equality that isolates a symbol (nowhere else in it, its coefficient dividing the
  // rest) replaces that symbol everywhere after: the newest such symbol goes, so older
  // names stay.
  const sym::Node& d = difference.node();
  if (difference.kind() == sym::Kind::Symbol) return set_replacement(difference.symbol_id(), sym::Expr(int64_t{0}));
  if (d.kind != sym::Kind::Sum) return;
  for (size_t i = d.args.size(); i-- > 0;) {
    if (d.args[i].kind() != sym::Kind::Symbol) continue;
    const int64_t c = d.coeffs[i];
    const sym::Expr rest = difference - sym::Expr(c) * d.args[i];
    const std::vector<int32_t> others = sym::free_symbols(rest);
    const int32_t id = d.args[i].symbol_id();
    if (std::find(others.begin(), others.end(), id) != others.end()) continue;
    // c*s + rest == 0 → s == -rest / c, when c divides rest exactly.
    const sym::Expr value = sym::floordiv(-rest, sym::Expr(c));
    if (value * sym::Expr(c) != -rest) continue;
    return set_replacement(id, value);
  }
}

/// A guard on one symbol alone (`s0 + 3 <= 0` style, coefficient ±1) narrows the
/// symbol's range instead of adding a guard; returns whether it did.
bool ShapeEnv::narrow_range(Relation rel, const sym::Expr& difference) {
  if (rel != Relation::Lt && rel != Relation::Le) return false;
  const sym::Node& d = difference.node();
  int64_t coeff = 1;
  int64_t constant = 0;
  sym::Expr s;
  if (d.kind == sym::Kind::Symbol) {
    s = difference;
  } else if (d.kind == sym::Kind::Sum && d.args.size() == 1 && d.args[0].kind() == sym::Kind::Symbol &&
             (d.coeffs[0] == 1 || d.coeffs[0] == -1)) {
    s = d.args[0];
    coeff = d.coeffs[0];
    constant = d.value;
  } else {
    return false;
  }
  // coeff*s + constant REL 0, with Lt as "<= -1" over the integers.
  const int64_t bound = -constant - (rel == Relation::Lt ? 1 : 0);
  SymbolInfo& info = symbols_[static_cast<size_t>(s.symbol_id())];
  if (coeff == 1) {
    info.range.hi = std::min(info.range.hi, bound);  // s <= bound
  } else {
    info.range.lo = std::max(info.range.lo, -bound);  // -s <= bound
  }
  info.loc = current_user_loc();
  return true;
}

void ShapeEnv::set_replacement(int32_t id, const sym::Expr& value) {
  EMBER_LOG(dynamic, INFO) << "set_replacement s" << id << " = " << format(value);
  replacements_[static_cast<size_t>(id)] = value;
  const sym::Expr symbol = sym::Expr::symbol(id);
  for (std::optional<sym::Expr>& r : replacements_) {
    if (r) r = sym::substitute(*r, [&](int32_t s) -> std::optional<sym::Expr> {
      return s == id ? std::optional<sym::Expr>(value) : std::nullopt;
    });
  }
}

bool ShapeEnv::check(std::span<const int64_t> values) const {
  if (values.size() != symbols_.size()) return false;
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (!symbols_[i].range.contains(values[i])) return false;
  }
  for (const ShapeGuard& g : guards_) {
    if (!holds(g.rel, sym::evaluate(g.lhs, values), sym::evaluate(g.rhs, values))) return false;
  }
  return true;
}

std::string ShapeEnv::format_range_guard(const SymbolInfo& s) const {
  if (s.range.lo == s.range.hi) return s.source + " == " + std::to_string(s.range.lo);
  std::string out;
  if (s.range.lo != sym::Range::kMinusInfinity) out += std::to_string(s.range.lo) + " <= ";
  out += s.source;
  if (s.range.hi != sym::Range::kInfinity) out += " <= " + std::to_string(s.range.hi);
  return out;
}

std::string ShapeEnv::first_failure(std::span<const int64_t> values) const {
  if (values.size() != symbols_.size()) {
    return std::to_string(values.size()) + " values for " + std::to_string(symbols_.size()) + " symbols";
  }
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (!symbols_[i].range.contains(values[i])) {
      return format_range_guard(symbols_[i]) + " (" + symbols_[i].source + " is " + std::to_string(values[i]) + ")";
    }
  }
  for (const ShapeGuard& g : guards_) {
    const int64_t l = sym::evaluate(g.lhs, values);
    const int64_t r = sym::evaluate(g.rhs, values);
    if (!holds(g.rel, l, r)) {
      return format_with_sources(g.lhs) + " " + relation_text(g.rel) + " " + format_with_sources(g.rhs) + " (" +
             std::to_string(l) + " vs " + std::to_string(r) + ")";
    }
  }
  return {};
}

std::vector<std::string> ShapeEnv::format_guards() const {
  std::vector<std::string> out;
  for (const SymbolInfo& s : symbols_) out.push_back(format_range_guard(s));
  for (const ShapeGuard& g : guards_) {
    out.push_back(format_with_sources(g.lhs) + " " + relation_text(g.rel) + " " + format_with_sources(g.rhs));
  }
  return out;
}

std::string ShapeEnv::format(const sym::Expr& e) const { return sym::to_string(e); }

std::string ShapeEnv::format_with_sources(const sym::Expr& e) const {
  return sym::to_string(e, [this](int32_t id) { return symbol(id).source; });
}

// --- SymInt -----------------------------------------------------------------------------

SymInt::SymInt(sym::Expr expr, int64_t hint, ShapeEnv* env) : hint_(hint) {
  EMBER_INTERNAL_ASSERT(!expr.is_null()) << "a symbolic SymInt needs an expression";
  if (expr.is_const()) {
    EMBER_INTERNAL_ASSERT(expr.value() == hint) << "a constant SymInt " << expr.value() << " with hint " << hint;
    return;
  }
  EMBER_INTERNAL_ASSERT(env != nullptr) << "a symbolic SymInt needs its shape environment";
  expr_ = std::move(expr);
  env_ = env;
}

int64_t SymInt::guard_int() const { return is_symbolic() ? env_->specialize(expr_) : hint_; }

std::string SymInt::str() const { return is_symbolic() ? sym::to_string(expr_) : std::to_string(hint_); }

namespace {

ShapeEnv* env_of(const SymInt& a, const SymInt& b) {
  EMBER_INTERNAL_ASSERT(!a.is_symbolic() || !b.is_symbolic() || a.env() == b.env())
      << "SymInts of two shape environments were combined";
  return a.is_symbolic() ? a.env() : b.env();
}

template <typename ExprOp, typename IntOp>
SymInt combine(const SymInt& a, const SymInt& b, ExprOp on_exprs, IntOp on_ints) {
  const int64_t hint = on_ints(a.hint(), b.hint());
  if (!a.is_symbolic() && !b.is_symbolic()) return SymInt(hint);
  ShapeEnv* env = env_of(a, b);
  return SymInt(env->simplify(on_exprs(a.expr(), b.expr())), hint, env);
}

bool compare_syms(Relation rel, const SymInt& a, const SymInt& b) {
  if (!a.is_symbolic() && !b.is_symbolic()) return holds(rel, a.hint(), b.hint());
  return env_of(a, b)->evaluate(rel, a.expr(), b.expr());
}

}  // namespace

SymInt operator+(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return x + y; },
                 sym::checked_add);
}
SymInt operator-(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return x - y; },
                 sym::checked_sub);
}
SymInt operator-(const SymInt& a) { return SymInt(0) - a; }
SymInt operator*(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return x * y; },
                 sym::checked_mul);
}
SymInt floordiv(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return sym::floordiv(x, y); },
                 [](int64_t x, int64_t y) { return sym::floordiv(x, y); });
}
SymInt mod(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return sym::mod(x, y); },
                 [](int64_t x, int64_t y) { return sym::mod(x, y); });
}
SymInt sym_min(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return sym::min(x, y); },
                 [](int64_t x, int64_t y) { return std::min(x, y); });
}
SymInt sym_max(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const sym::Expr& x, const sym::Expr& y) { return sym::max(x, y); },
                 [](int64_t x, int64_t y) { return std::max(x, y); });
}

bool operator==(const SymInt& a, const SymInt& b) { return compare_syms(Relation::Eq, a, b); }
bool operator!=(const SymInt& a, const SymInt& b) { return compare_syms(Relation::Ne, a, b); }
bool operator<(const SymInt& a, const SymInt& b) { return compare_syms(Relation::Lt, a, b); }
bool operator<=(const SymInt& a, const SymInt& b) { return compare_syms(Relation::Le, a, b); }
bool operator>(const SymInt& a, const SymInt& b) { return compare_syms(Relation::Lt, b, a); }
bool operator>=(const SymInt& a, const SymInt& b) { return compare_syms(Relation::Le, b, a); }

}  // namespace ember::core
