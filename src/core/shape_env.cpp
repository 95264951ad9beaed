// core/shape_env.cpp — symbols, guards, replacements and range narrowing of a shape
// environment, and SymInt's arithmetic over it. See Note [dynamic shapes].
#include "core/shape_env.h"

#include <algorithm>
#include <limits>
#include <numeric>

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
  if (divisible_.empty()) return sym::bounds(e, [this](int32_t id) { return symbol(id).range; });
  // A symbol that a fact says k divides takes only multiples of k: its range's ends round
  // inward (3 | s1 with s1 in [2, inf] is s1 in [3, inf], so s1//3 >= 1).
  return sym::bounds(e, [this](int32_t id) {
    sym::Range r = symbol(id).range;
    for (const Divisible& f : divisible_) {
      if (f.e.kind() != sym::Kind::Symbol || f.e.symbol_id() != id) continue;
      if (r.lo != sym::Range::kMinusInfinity && r.lo <= std::numeric_limits<int64_t>::max() - f.k) {
        r.lo = -sym::floordiv(-r.lo, f.k) * f.k;
      }
      if (r.hi != sym::Range::kInfinity && r.hi >= std::numeric_limits<int64_t>::min() + f.k) {
        r.hi = sym::floordiv(r.hi, f.k) * f.k;
      }
    }
    return r;
  });
}

sym::Expr ShapeEnv::simplify(const sym::Expr& e) const {
  const bool facts = !divisible_.empty();
  const sym::Expr out = sym::rewrite_atoms(e, [this, facts](const sym::Expr& atom) -> std::optional<sym::Expr> {
    const sym::Node& n = atom.node();
    if (n.kind == sym::Kind::Symbol) {
      if (sym::is_unbacked(atom.symbol_id())) return std::nullopt;  // never replaced: no guard names one
      return replacements_[static_cast<size_t>(atom.symbol_id())];
    }
    if (facts) {
      // The operands are rebuilt sums: an exact division they multiply back cancels first
      // (`Mod(4*(s0//4) + 1, 8)` is `Mod(s0 + 1, 8)`), and the atom is simplified again.
      const sym::Expr x = cancel_exact_divisions(n.args[0]);
      const sym::Expr y = cancel_exact_divisions(n.args[1]);
      if (!x.is_same(n.args[0]) || !y.is_same(n.args[1])) {
        return simplify(n.kind == sym::Kind::FloorDiv ? sym::floordiv(x, y)
                        : n.kind == sym::Kind::Mod    ? sym::mod(x, y)
                        : n.kind == sym::Kind::Min    ? sym::min(x, y)
                                                      : sym::max(x, y));
      }
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
        // A known multiple of k: Mod(s0*s1, 4) is 0 once Mod(s0, 4) == 0 is.
        if (facts && n.args[1].is_const() && known_divisor(n.args[0]) % n.args[1].value() == 0) {
          return sym::Expr(int64_t{0});
        }
        return std::nullopt;
      case sym::Kind::FloorDiv:
        if (b.lo > 0 && a.lo >= 0 && a.hi < b.lo) return sym::Expr(int64_t{0});
        if (facts && is_exact_floordiv(atom)) {
          std::optional<sym::Expr> q = exact_division(n.args[0], n.args[1].value());
          if (q && *q != atom) return q;
        }
        return std::nullopt;
      default:
        return std::nullopt;
    }
  });
  return facts ? cancel_exact_divisions(out) : out;
}

// --- divisibility facts -----------------------------------------------------------------
// See Note [dynamic shapes], "Divisibility facts". Every rule below rewrites only what a
// recorded fact (itself a guard checked on each call) or the coefficients prove.

namespace {

/// |v|, with 1 (a divisor of anything) where |v| does not fit.
int64_t magnitude(int64_t v) { return v == std::numeric_limits<int64_t>::min() ? 1 : (v < 0 ? -v : v); }

/// lcm(a, b) of two divisors of one value (a divisor too), or a where it overflows.
int64_t lcm_or_keep(int64_t a, int64_t b) {
  if (a == 0) return 0;
  int64_t out = 0;
  if (__builtin_mul_overflow(a / std::gcd(a, b), b, &out)) return a;
  return out;
}

struct Factors {
  std::vector<sym::Expr> atoms;
  std::vector<int64_t> exponents;
};

Factors factors_of(const sym::Expr& monomial) {
  const sym::Node& n = monomial.node();
  if (n.kind == sym::Kind::Product) return Factors{n.args, n.coeffs};
  return Factors{{monomial}, {1}};
}

/// Calls on_term(monomial, coefficient) for each term of `e` and returns its constant.
template <typename OnTerm>
int64_t for_each_term(const sym::Expr& e, OnTerm on_term) {
  const sym::Node& n = e.node();
  if (n.kind == sym::Kind::Const) return n.value;
  if (n.kind != sym::Kind::Sum) {
    on_term(e, int64_t{1});
    return 0;
  }
  for (size_t i = 0; i < n.args.size(); ++i) on_term(n.args[i], n.coeffs[i]);
  return n.value;
}

}  // namespace

int64_t ShapeEnv::known_divisor(const sym::Expr& e) const {
  if (e.is_const()) return e.value() == 0 ? 0 : magnitude(e.value());
  // A facts' divisor of the whole expression (a sum can be one: Mod(s0 + s1, 4) == 0).
  const auto facts_on = [this](const sym::Expr& x) {
    int64_t d = 1;
    for (const Divisible& f : divisible_)
      if (f.e == x) d = lcm_or_keep(d, f.k);
    return d;
  };
  // Structurally: the gcd over the terms of |coefficient| times its factors' divisors.
  int64_t g = 0;
  const int64_t constant = for_each_term(e, [&](const sym::Expr& monomial, int64_t coeff) {
    int64_t d = magnitude(coeff);
    const Factors f = factors_of(monomial);
    for (size_t i = 0; i < f.atoms.size(); ++i) {
      const int64_t k = facts_on(f.atoms[i]);
      for (int64_t j = 0; j < f.exponents[i] && k > 1; ++j) {
        if (__builtin_mul_overflow(d, k, &d)) d = magnitude(coeff);  // still a divisor
      }
    }
    g = std::gcd(g, d);
  });
  g = std::gcd(g, magnitude(constant));
  return lcm_or_keep(g, facts_on(e));
}

bool ShapeEnv::is_exact_floordiv(const sym::Expr& atom) const {
  const sym::Node& n = atom.node();
  return n.kind == sym::Kind::FloorDiv && n.args[1].is_const() && n.args[1].value() > 1 &&
         known_divisor(n.args[0]) % n.args[1].value() == 0;
}

std::optional<sym::Expr> ShapeEnv::exact_division(const sym::Expr& e, int64_t k) const {
  bool exact = true;
  sym::Expr q(int64_t{0});
  const int64_t constant = for_each_term(e, [&](const sym::Expr& monomial, int64_t coeff) {
    if (!exact) return;
    // c*m / k == (c/g) * (m / (k/g)) with g = gcd(c, k); m / (k/g) takes one power of a
    // factor that k/g is known to divide.
    const int64_t g = std::gcd(magnitude(coeff), k);
    const int64_t rest_k = k / g;
    if (rest_k == 1) {
      q = q + sym::Expr(coeff / g) * monomial;
      return;
    }
    const Factors f = factors_of(monomial);
    for (size_t i = 0; i < f.atoms.size(); ++i) {
      if (known_divisor(f.atoms[i]) % rest_k != 0) continue;
      sym::Expr term = sym::Expr(coeff / g) * sym::floordiv(f.atoms[i], sym::Expr(rest_k));
      for (size_t j = 0; j < f.atoms.size(); ++j)
        for (int64_t p = (i == j ? 1 : 0); p < f.exponents[j]; ++p) term = term * f.atoms[j];
      q = q + term;
      return;
    }
    exact = false;
  });
  if (!exact || constant % k != 0) return std::nullopt;
  return q + sym::Expr(constant / k);
}

sym::Expr ShapeEnv::cancel_exact_divisions(const sym::Expr& e) const {
  if (e.is_const() || divisible_.empty()) return e;
  bool changed = false;
  sym::Expr out(int64_t{0});
  const int64_t constant = for_each_term(e, [&](const sym::Expr& monomial, int64_t coeff) {
    sym::Expr product(int64_t{1});
    const Factors f = factors_of(monomial);
    for (size_t i = 0; i < f.atoms.size(); ++i) {
      int64_t p = f.exponents[i];
      if (is_exact_floordiv(f.atoms[i])) {
        const sym::Node& d = f.atoms[i].node();
        const int64_t k = d.args[1].value();
        for (; p > 0 && coeff % k == 0; --p) {
          coeff /= k;
          product = product * d.args[0];
          changed = true;
        }
      }
      for (int64_t j = 0; j < p; ++j) product = product * f.atoms[i];
    }
    out = out + sym::Expr(coeff) * product;
  });
  if (!changed) return e;
  // The numerators multiplied in may hold exact divisions with new coefficients.
  return cancel_exact_divisions(out + sym::Expr(constant));
}

void ShapeEnv::add_divisible(const sym::Expr& e, int64_t k) {
  // sym::mod normalizes: Mod(2*s0 + 2, 4) is 2*Mod(s0 + 1, 2), so the fact is 2 | s0 + 1.
  const sym::Expr m = sym::mod(simplify(e), sym::Expr(k));
  if (m.is_const()) return;  // already decided (a constant remainder)
  const sym::Node& n = m.node();
  const sym::Expr atom = n.kind == sym::Kind::Sum ? n.args[0] : m;
  const sym::Node& a = atom.node();
  if (a.kind != sym::Kind::Mod || !a.args[1].is_const()) return;
  const Divisible fact{a.args[0], a.args[1].value()};
  for (const Divisible& f : divisible_)
    if (f.e == fact.e && f.k % fact.k == 0) return;
  divisible_.push_back(fact);
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
  // c*Mod(x, k) == 0 with a constant k > 0 (group_norm's `C % group == 0`): k divides x.
  if (const sym::Node& d = difference.node();
      d.kind == sym::Kind::Mod ||
      (d.kind == sym::Kind::Sum && d.value == 0 && d.args.size() == 1 && d.args[0].kind() == sym::Kind::Mod)) {
    const sym::Node& m = d.kind == sym::Kind::Mod ? d : d.args[0].node();
    if (m.args[1].is_const() && m.args[1].value() > 0) return add_divisible(m.args[0], m.args[1].value());
  }
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
  // The facts are kept over symbols without a replacement, as the replacements are.
  std::vector<Divisible> facts = std::move(divisible_);
  divisible_.clear();
  for (const Divisible& f : facts) add_divisible(f.e, f.k);
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
