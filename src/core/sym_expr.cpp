// core/sym_expr.cpp — canonical integer expressions: construction (each operation
// returns the canonical form), evaluation, interval bounds, printing and parsing.
// See Note [dynamic shapes].
#include "core/sym_expr.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <limits>
#include <numeric>
#include <ostream>

#include "ember/error.h"

namespace ember::core::sym {

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  EMBER_CHECK(!__builtin_add_overflow(a, b, &r)) << "symbolic size arithmetic overflowed int64: " << a << " + " << b;
  return r;
}

int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  EMBER_CHECK(!__builtin_sub_overflow(a, b, &r)) << "symbolic size arithmetic overflowed int64: " << a << " - " << b;
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  EMBER_CHECK(!__builtin_mul_overflow(a, b, &r)) << "symbolic size arithmetic overflowed int64: " << a << " * " << b;
  return r;
}

namespace {

int64_t py_floordiv(int64_t a, int64_t b) {
  EMBER_CHECK(b != 0) << "division by zero in a size expression";
  EMBER_CHECK(!(a == INT64_MIN && b == -1)) << "symbolic size arithmetic overflowed int64: " << a << " // -1";
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  EMBER_CHECK(b != 0) << "modulo by zero in a size expression";
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

int64_t floordiv(int64_t a, int64_t b) { return py_floordiv(a, b); }
int64_t mod(int64_t a, int64_t b) { return py_mod(a, b); }

namespace {

size_t mix(size_t h, uint64_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

bool is_atom_kind(Kind k) { return k != Kind::Const && k != Kind::Sum && k != Kind::Product; }

}  // namespace

// The one place nodes are made; the functions below keep the canonical form.
struct Build {
  static Expr make(Node n) {
    size_t h = mix(static_cast<size_t>(n.kind), static_cast<uint64_t>(n.value));
    for (const Expr& a : n.args) h = mix(h, a.hash());
    for (int64_t c : n.coeffs) h = mix(h, static_cast<uint64_t>(c));
    n.hash = h;
    return Expr(std::make_shared<const Node>(std::move(n)));
  }
  static Expr atom(Kind kind, Expr a, Expr b) { return make(Node{kind, 0, {std::move(a), std::move(b)}, {}, 0}); }
};

Expr::Expr(int64_t value) : Expr(Build::make(Node{Kind::Const, value, {}, {}, 0})) {}

Expr Expr::symbol(int32_t id) {
  EMBER_INTERNAL_ASSERT(id >= 0) << "symbol ids are non-negative, got " << id;
  return Build::make(Node{Kind::Symbol, id, {}, {}, 0});
}

Kind Expr::kind() const {
  EMBER_INTERNAL_ASSERT(node_ != nullptr) << "use of a null size expression";
  return node_->kind;
}

int64_t Expr::value() const {
  EMBER_INTERNAL_ASSERT(kind() == Kind::Const) << "value() of a non-constant size expression";
  return node_->value;
}

int32_t Expr::symbol_id() const {
  EMBER_INTERNAL_ASSERT(kind() == Kind::Symbol) << "symbol_id() of a size expression that is not a symbol";
  return static_cast<int32_t>(node_->value);
}

size_t Expr::hash() const { return node_ ? node_->hash : 0; }

int compare(const Expr& a, const Expr& b) {
  if (a.is_same(b)) return 0;
  const Node& x = a.node();
  const Node& y = b.node();
  if (x.kind != y.kind) return static_cast<int>(x.kind) < static_cast<int>(y.kind) ? -1 : 1;
  if (x.value != y.value) return x.value < y.value ? -1 : 1;
  if (x.args.size() != y.args.size()) return x.args.size() < y.args.size() ? -1 : 1;
  for (size_t i = 0; i < x.args.size(); ++i) {
    if (int c = compare(x.args[i], y.args[i]); c != 0) return c;
  }
  for (size_t i = 0; i < x.coeffs.size(); ++i) {
    if (x.coeffs[i] != y.coeffs[i]) return x.coeffs[i] < y.coeffs[i] ? -1 : 1;
  }
  return 0;
}

bool operator==(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return true;
  if (a.node_ == nullptr || b.node_ == nullptr || a.hash() != b.hash()) return false;
  return compare(a, b) == 0;
}

// --- sums and products ----------------------------------------------------------------

namespace {

struct Term {
  Expr monomial;
  int64_t coeff;
};
struct Poly {
  std::vector<Term> terms;
  int64_t constant = 0;
};
struct Factor {
  Expr atom;
  int64_t exponent;
};

Poly to_poly(const Expr& e) {
  const Node& n = e.node();
  if (n.kind == Kind::Const) return Poly{{}, n.value};
  if (n.kind != Kind::Sum) return Poly{{Term{e, 1}}, 0};
  Poly p{{}, n.value};
  for (size_t i = 0; i < n.args.size(); ++i) p.terms.push_back(Term{n.args[i], n.coeffs[i]});
  return p;
}

Expr from_poly(Poly p) {
  std::sort(p.terms.begin(), p.terms.end(), [](const Term& a, const Term& b) { return compare(a.monomial, b.monomial) < 0; });
  Node sum{Kind::Sum, p.constant, {}, {}, 0};
  for (Term& t : p.terms) {
    if (!sum.args.empty() && sum.args.back() == t.monomial) {
      sum.coeffs.back() = checked_add(sum.coeffs.back(), t.coeff);
      if (sum.coeffs.back() == 0) {
        sum.args.pop_back();
        sum.coeffs.pop_back();
      }
    } else if (t.coeff != 0) {
      sum.args.push_back(std::move(t.monomial));
      sum.coeffs.push_back(t.coeff);
    }
  }
  if (sum.args.empty()) return Expr(sum.value);
  if (sum.args.size() == 1 && sum.coeffs[0] == 1 && sum.value == 0) return sum.args[0];
  return Build::make(std::move(sum));
}

std::vector<Factor> factors_of(const Expr& monomial) {
  const Node& n = monomial.node();
  if (n.kind != Kind::Product) return {Factor{monomial, 1}};
  std::vector<Factor> f;
  for (size_t i = 0; i < n.args.size(); ++i) f.push_back(Factor{n.args[i], n.coeffs[i]});
  return f;
}

Expr from_factors(std::vector<Factor> f) {
  std::sort(f.begin(), f.end(), [](const Factor& a, const Factor& b) { return compare(a.atom, b.atom) < 0; });
  Node product{Kind::Product, 0, {}, {}, 0};
  for (Factor& x : f) {
    if (!product.args.empty() && product.args.back() == x.atom) {
      product.coeffs.back() = checked_add(product.coeffs.back(), x.exponent);
    } else {
      product.args.push_back(std::move(x.atom));
      product.coeffs.push_back(x.exponent);
    }
  }
  if (product.args.size() == 1 && product.coeffs[0] == 1) return product.args[0];
  return Build::make(std::move(product));
}

Expr multiply_monomials(const Expr& a, const Expr& b) {
  std::vector<Factor> f = factors_of(a);
  for (Factor& x : factors_of(b)) f.push_back(std::move(x));
  return from_factors(std::move(f));
}

/// q with a == q * b exactly, when `b` is not a constant: a constant multiple of b, or
/// (b a single monomial c*m) a sum whose every term is divisible by c*m.
std::optional<Expr> exact_quotient(const Expr& a, const Expr& b) {
  const Poly pa = to_poly(a);
  const Poly pb = to_poly(b);
  if (pb.terms.empty()) return std::nullopt;
  if (pa.terms.size() == pb.terms.size() && pa.terms[0].coeff % pb.terms[0].coeff == 0) {
    const int64_t c = pa.terms[0].coeff / pb.terms[0].coeff;
    bool multiple = pa.constant == checked_mul(c, pb.constant);
    for (size_t i = 0; multiple && i < pa.terms.size(); ++i) {
      multiple = pa.terms[i].monomial == pb.terms[i].monomial && pa.terms[i].coeff == checked_mul(c, pb.terms[i].coeff);
    }
    if (multiple) return Expr(c);
  }
  if (pb.terms.size() != 1 || pb.constant != 0 || pa.constant != 0) return std::nullopt;
  const std::vector<Factor> divisor = factors_of(pb.terms[0].monomial);
  Poly q;
  for (const Term& t : pa.terms) {
    if (t.coeff % pb.terms[0].coeff != 0) return std::nullopt;
    std::vector<Factor> f = factors_of(t.monomial);
    for (const Factor& d : divisor) {
      auto it = std::find_if(f.begin(), f.end(), [&](const Factor& x) { return x.atom == d.atom; });
      if (it == f.end() || it->exponent < d.exponent) return std::nullopt;
      it->exponent -= d.exponent;
    }
    std::erase_if(f, [](const Factor& x) { return x.exponent == 0; });
    Expr m = f.empty() ? Expr(int64_t{1}) : from_factors(std::move(f));
    if (m.is_const()) {
      q.constant = checked_add(q.constant, t.coeff / pb.terms[0].coeff);
    } else {
      q.terms.push_back(Term{std::move(m), t.coeff / pb.terms[0].coeff});
    }
  }
  return from_poly(std::move(q));
}

/// The gcd of `k` and every coefficient and the constant of `p` (positive).
int64_t content_gcd(const Poly& p, int64_t k) {
  int64_t g = std::gcd(k, p.constant);
  for (const Term& t : p.terms) g = std::gcd(g, t.coeff);
  return g;
}

Poly divide_exactly(Poly p, int64_t g) {
  p.constant /= g;
  for (Term& t : p.terms) t.coeff /= g;
  return p;
}

}  // namespace

Expr operator+(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(checked_add(a.value(), b.value()));
  if (a.is_const() && a.value() == 0) return b;
  if (b.is_const() && b.value() == 0) return a;
  Poly p = to_poly(a);
  Poly q = to_poly(b);
  p.constant = checked_add(p.constant, q.constant);
  for (Term& t : q.terms) p.terms.push_back(std::move(t));
  return from_poly(std::move(p));
}

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(checked_mul(a.value(), b.value()));
  if (a.is_const() && a.value() == 1) return b;
  if (b.is_const() && b.value() == 1) return a;
  const Poly p = to_poly(a);
  const Poly q = to_poly(b);
  // A bound on the expanded product: sizes are small polynomials, and an expression from
  // outside data (an imported program's) must not expand into millions of terms.
  constexpr size_t kMaxTerms = 4096;
  EMBER_CHECK(p.terms.size() * q.terms.size() <= kMaxTerms)
      << "size expression too large: a product of " << p.terms.size() << " by " << q.terms.size()
      << " terms (at most " << kMaxTerms << " after expanding)";
  Poly r{{}, checked_mul(p.constant, q.constant)};
  for (const Term& t : p.terms) r.terms.push_back(Term{t.monomial, checked_mul(t.coeff, q.constant)});
  for (const Term& t : q.terms) r.terms.push_back(Term{t.monomial, checked_mul(t.coeff, p.constant)});
  for (const Term& t : p.terms) {
    for (const Term& u : q.terms) r.terms.push_back(Term{multiply_monomials(t.monomial, u.monomial), checked_mul(t.coeff, u.coeff)});
  }
  return from_poly(std::move(r));
}

Expr operator-(const Expr& a) { return Expr(int64_t{-1}) * a; }
Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }

namespace {

/// `inner // k` for k > 1 once nothing more comes out of the sum: (x // m) // k is
/// x // (m * k) for positive m.
Expr floordiv_atom(Expr inner, int64_t k) {
  const Node& n = inner.node();
  if (n.kind == Kind::FloorDiv && n.args[1].is_const() && n.args[1].value() > 0) {
    return floordiv(n.args[0], Expr(checked_mul(n.args[1].value(), k)));
  }
  return Build::atom(Kind::FloorDiv, std::move(inner), Expr(k));
}

/// `inner % k` for k > 1 likewise: (x % m) % k is x % k when k divides m.
Expr mod_atom(Expr inner, int64_t k) {
  const Node& n = inner.node();
  if (n.kind == Kind::Mod && n.args[1].is_const() && n.args[1].value() % k == 0) return mod(n.args[0], Expr(k));
  return Build::atom(Kind::Mod, std::move(inner), Expr(k));
}

}  // namespace

Expr floordiv(const Expr& a, const Expr& b) {
  if (!b.is_const()) {
    if (std::optional<Expr> q = exact_quotient(a, b)) return *q;
    return Build::atom(Kind::FloorDiv, a, b);
  }
  int64_t k = b.value();
  EMBER_CHECK(k != 0) << "division by zero in a size expression";
  if (a.is_const()) return Expr(py_floordiv(a.value(), k));
  // -k overflows for the most negative divisor (the recursion would never end).
  EMBER_CHECK(k != std::numeric_limits<int64_t>::min()) << "size expression divided by " << k << ", out of range";
  if (k < 0) return floordiv(-a, Expr(-k));  // floor(a / k) == floor(-a / -k)
  if (k == 1) return a;
  // (k*Q + R) // k == Q + R // k: the terms divisible by k leave the division.
  const Poly p = to_poly(a);
  Poly quotient{{}, py_floordiv(p.constant, k)};
  Poly rest{{}, p.constant - quotient.constant * k};
  for (const Term& t : p.terms) {
    if (t.coeff % k == 0) {
      quotient.terms.push_back(Term{t.monomial, t.coeff / k});
    } else {
      rest.terms.push_back(t);
    }
  }
  if (rest.terms.empty()) return from_poly(std::move(quotient));
  // (g*R) // (g*k) == R // k.
  const int64_t g = content_gcd(rest, k);
  Expr inner = from_poly(divide_exactly(std::move(rest), g));
  return from_poly(std::move(quotient)) + floordiv_atom(std::move(inner), k / g);
}

Expr mod(const Expr& a, const Expr& b) {
  if (!b.is_const()) {
    if (exact_quotient(a, b)) return Expr(int64_t{0});
    return Build::atom(Kind::Mod, a, b);
  }
  const int64_t k = b.value();
  EMBER_CHECK(k != 0) << "modulo by zero in a size expression";
  if (a.is_const()) return Expr(py_mod(a.value(), k));
  EMBER_CHECK(k != std::numeric_limits<int64_t>::min()) << "size expression modulo " << k << ", out of range";
  if (k < 0) return -mod(-a, Expr(-k));  // Python: a % k == -((-a) % -k)
  if (k == 1) return Expr(int64_t{0});
  // Coefficients and the constant only matter modulo k.
  const Poly p = to_poly(a);
  Poly rest{{}, py_mod(p.constant, k)};
  for (const Term& t : p.terms) {
    if (int64_t c = py_mod(t.coeff, k); c != 0) rest.terms.push_back(Term{t.monomial, c});
  }
  if (rest.terms.empty()) return Expr(rest.constant);
  // (g*R) % (g*k) == g * (R % k).
  const int64_t g = content_gcd(rest, k);
  Expr inner = from_poly(divide_exactly(std::move(rest), g));
  return Expr(g) * mod_atom(std::move(inner), k / g);
}

namespace {

Expr min_or_max(Kind kind, const Expr& a, const Expr& b) {
  const Expr d = a - b;
  if (d.is_const()) return (d.value() <= 0) == (kind == Kind::Min) ? a : b;
  return compare(a, b) <= 0 ? Build::atom(kind, a, b) : Build::atom(kind, b, a);
}

}  // namespace

Expr min(const Expr& a, const Expr& b) { return min_or_max(Kind::Min, a, b); }
Expr max(const Expr& a, const Expr& b) { return min_or_max(Kind::Max, a, b); }

// --- rewriting --------------------------------------------------------------------------

Expr rewrite_atoms(const Expr& e, const std::function<std::optional<Expr>(const Expr& atom)>& rewrite) {
  const Node& n = e.node();
  switch (n.kind) {
    case Kind::Const:
      return e;
    case Kind::Symbol: {
      std::optional<Expr> r = rewrite(e);
      return r ? *r : e;
    }
    case Kind::Sum: {
      Expr out(n.value);
      for (size_t i = 0; i < n.args.size(); ++i) out = out + Expr(n.coeffs[i]) * rewrite_atoms(n.args[i], rewrite);
      return out;
    }
    case Kind::Product: {
      Expr out(int64_t{1});
      for (size_t i = 0; i < n.args.size(); ++i) {
        const Expr factor = rewrite_atoms(n.args[i], rewrite);
        for (int64_t j = 0; j < n.coeffs[i]; ++j) out = out * factor;
      }
      return out;
    }
    case Kind::FloorDiv:
    case Kind::Mod:
    case Kind::Min:
    case Kind::Max: {
      const Expr x = rewrite_atoms(n.args[0], rewrite);
      const Expr y = rewrite_atoms(n.args[1], rewrite);
      const Expr rebuilt = n.kind == Kind::FloorDiv ? floordiv(x, y)
                           : n.kind == Kind::Mod    ? mod(x, y)
                           : n.kind == Kind::Min    ? min(x, y)
                                                    : max(x, y);
      if (!is_atom_kind(rebuilt.kind())) return rebuilt;
      std::optional<Expr> r = rewrite(rebuilt);
      return r ? *r : rebuilt;
    }
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown size expression kind";
  return e;
}

Expr substitute(const Expr& e, const std::function<std::optional<Expr>(int32_t)>& replace) {
  return rewrite_atoms(e, [&](const Expr& atom) -> std::optional<Expr> {
    if (atom.kind() != Kind::Symbol) return std::nullopt;
    return replace(atom.symbol_id());
  });
}

namespace {

void collect_symbols(const Expr& e, std::vector<int32_t>& out) {
  if (e.kind() == Kind::Symbol) out.push_back(e.symbol_id());
  for (const Expr& a : e.node().args) collect_symbols(a, out);
}

}  // namespace

std::vector<int32_t> free_symbols(const Expr& e) {
  std::vector<int32_t> out;
  collect_symbols(e, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t evaluate(const Expr& e, std::span<const int64_t> values) {
  const Node& n = e.node();
  switch (n.kind) {
    case Kind::Const:
      return n.value;
    case Kind::Symbol:
      EMBER_INTERNAL_ASSERT(static_cast<size_t>(n.value) < values.size())
          << "no value for symbol s" << n.value << " (" << values.size() << " given)";
      return values[static_cast<size_t>(n.value)];
    case Kind::Sum: {
      int64_t acc = n.value;
      for (size_t i = 0; i < n.args.size(); ++i) acc = checked_add(acc, checked_mul(n.coeffs[i], evaluate(n.args[i], values)));
      return acc;
    }
    case Kind::Product: {
      int64_t acc = 1;
      for (size_t i = 0; i < n.args.size(); ++i) {
        const int64_t v = evaluate(n.args[i], values);
        for (int64_t j = 0; j < n.coeffs[i]; ++j) acc = checked_mul(acc, v);
      }
      return acc;
    }
    case Kind::FloorDiv:
      return py_floordiv(evaluate(n.args[0], values), evaluate(n.args[1], values));
    case Kind::Mod:
      return py_mod(evaluate(n.args[0], values), evaluate(n.args[1], values));
    case Kind::Min:
      return std::min(evaluate(n.args[0], values), evaluate(n.args[1], values));
    case Kind::Max:
      return std::max(evaluate(n.args[0], values), evaluate(n.args[1], values));
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown size expression kind";
  return 0;
}

// --- bounds -----------------------------------------------------------------------------

namespace {

constexpr int64_t kInf = Range::kInfinity;
constexpr int64_t kNegInf = Range::kMinusInfinity;

bool infinite(int64_t v) { return v == kInf || v == kNegInf; }

int64_t saturate(__int128 v) {
  if (v >= kInf) return kInf;
  if (v <= kNegInf) return kNegInf;
  return static_cast<int64_t>(v);
}

int64_t bound_add(int64_t a, int64_t b) {
  if (infinite(a)) return a;
  if (infinite(b)) return b;
  return saturate(static_cast<__int128>(a) + b);
}

int64_t bound_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (infinite(a) || infinite(b)) return (a > 0) == (b > 0) ? kInf : kNegInf;
  return saturate(static_cast<__int128>(a) * b);
}

Range range_mul(Range a, Range b) {
  const int64_t c[4] = {bound_mul(a.lo, b.lo), bound_mul(a.lo, b.hi), bound_mul(a.hi, b.lo), bound_mul(a.hi, b.hi)};
  return Range{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

/// floor(a / d) for d > 0 where either may be infinite.
int64_t bound_floordiv(int64_t a, int64_t d) {
  if (infinite(a)) return a;
  if (d == kInf) return a >= 0 ? 0 : -1;
  return py_floordiv(a, d);
}

}  // namespace

Range bounds(const Expr& e, const std::function<Range(int32_t)>& range_of) {
  const Node& n = e.node();
  switch (n.kind) {
    case Kind::Const:
      return Range{n.value, n.value};
    case Kind::Symbol:
      return range_of(static_cast<int32_t>(n.value));
    case Kind::Sum: {
      Range r{n.value, n.value};
      for (size_t i = 0; i < n.args.size(); ++i) {
        const Range t = range_mul(Range{n.coeffs[i], n.coeffs[i]}, bounds(n.args[i], range_of));
        r = Range{bound_add(r.lo, t.lo), bound_add(r.hi, t.hi)};
      }
      return r;
    }
    case Kind::Product: {
      Range r{1, 1};
      for (size_t i = 0; i < n.args.size(); ++i) {
        const Range f = bounds(n.args[i], range_of);
        for (int64_t j = 0; j < n.coeffs[i]; ++j) r = range_mul(r, f);
      }
      return r;
    }
    case Kind::FloorDiv: {
      const Range a = bounds(n.args[0], range_of);
      const Range d = bounds(n.args[1], range_of);
      if (d.lo <= 0) return Range{};
      const int64_t c[4] = {bound_floordiv(a.lo, d.lo), bound_floordiv(a.lo, d.hi), bound_floordiv(a.hi, d.lo),
                            bound_floordiv(a.hi, d.hi)};
      return Range{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case Kind::Mod: {
      const Range a = bounds(n.args[0], range_of);
      const Range d = bounds(n.args[1], range_of);
      if (d.lo <= 0) return Range{};
      if (a.lo >= 0 && a.hi < d.lo) return a;  // already reduced
      const int64_t hi = d.hi == kInf ? kInf : d.hi - 1;
      return Range{0, a.lo >= 0 ? std::min(hi, a.hi) : hi};
    }
    case Kind::Min:
    case Kind::Max: {
      const Range a = bounds(n.args[0], range_of);
      const Range b = bounds(n.args[1], range_of);
      if (n.kind == Kind::Min) return Range{std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      return Range{std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
  }
  return Range{};
}

// --- printing ---------------------------------------------------------------------------

std::string default_symbol_name(int32_t id) {
  return is_unbacked(id) ? "u" + std::to_string(id - kUnbackedBase) : "s" + std::to_string(id);
}

namespace {

void print(const Expr& e, const SymbolNamer& name, std::string& out);

/// An atom as a factor of a product: a floor division needs parentheses there.
void print_factor(const Expr& atom, const SymbolNamer& name, std::string& out) {
  const bool paren = atom.kind() == Kind::FloorDiv;
  if (paren) out += '(';
  print(atom, name, out);
  if (paren) out += ')';
}

void print_monomial(const Expr& m, const SymbolNamer& name, std::string& out) {
  const Node& n = m.node();
  if (n.kind != Kind::Product) return print_factor(m, name, out);
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (i > 0) out += '*';
    print_factor(n.args[i], name, out);
    if (n.coeffs[i] != 1) out += "**" + std::to_string(n.coeffs[i]);
  }
}

/// An operand of `//`: anything but a symbol, a constant or a call is parenthesized.
void print_operand(const Expr& e, const SymbolNamer& name, std::string& out) {
  const Kind k = e.kind();
  const bool paren = !(k == Kind::Symbol || (k == Kind::Const && e.value() >= 0) || k == Kind::Mod || k == Kind::Min ||
                       k == Kind::Max);
  if (paren) out += '(';
  print(e, name, out);
  if (paren) out += ')';
}

void print_call(const char* fn, const Node& n, const SymbolNamer& name, std::string& out) {
  out += fn;
  out += '(';
  print(n.args[0], name, out);
  out += ", ";
  print(n.args[1], name, out);
  out += ')';
}

void print(const Expr& e, const SymbolNamer& name, std::string& out) {
  const Node& n = e.node();
  switch (n.kind) {
    case Kind::Const:
      out += std::to_string(n.value);
      return;
    case Kind::Symbol:
      out += name(static_cast<int32_t>(n.value));
      return;
    case Kind::Sum:
      for (size_t i = 0; i < n.args.size(); ++i) {
        const int64_t c = n.coeffs[i];
        if (i == 0) {
          if (c < 0) out += '-';
        } else {
          out += c < 0 ? " - " : " + ";
        }
        const int64_t magnitude = c < 0 ? -c : c;
        // `a//b` needs no parentheses as a whole term, except after a leading minus
        // (`-1//s0` would read as `(-1)//s0`).
        const bool bare_floordiv = n.args[i].kind() == Kind::FloorDiv && magnitude == 1 && !(i == 0 && c < 0);
        if (magnitude != 1) out += std::to_string(magnitude) + "*";
        if (bare_floordiv) {
          print(n.args[i], name, out);
        } else {
          print_monomial(n.args[i], name, out);
        }
      }
      if (n.value != 0) out += (n.value < 0 ? " - " : " + ") + std::to_string(n.value < 0 ? -n.value : n.value);
      return;
    case Kind::Product:
      print_monomial(e, name, out);
      return;
    case Kind::FloorDiv:
      print_operand(n.args[0], name, out);
      out += "//";
      print_operand(n.args[1], name, out);
      return;
    case Kind::Mod:
      return print_call("Mod", n, name, out);
    case Kind::Min:
      return print_call("Min", n, name, out);
    case Kind::Max:
      return print_call("Max", n, name, out);
  }
}

}  // namespace

std::string to_string(const Expr& e, const SymbolNamer& name) {
  std::string out;
  print(e, name, out);
  return out;
}

std::string c_expr(const Expr& e, CDialect dialect) {
  const Node& n = e.node();
  switch (e.kind()) {
    case Kind::Const:
      return std::to_string(e.value());
    case Kind::Symbol:
      return "ks[" + std::to_string(e.symbol_id()) + "]";
    case Kind::Sum: {
      std::string s = "(" + (n.value ? std::to_string(n.value) : std::string());
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (s.size() > 1) s += " + ";
        s += (n.coeffs[i] == 1 ? "" : std::to_string(n.coeffs[i]) + " * ") + c_expr(n.args[i], dialect);
      }
      return s + ")";
    }
    case Kind::Product: {
      std::string s;
      for (size_t i = 0; i < n.args.size(); ++i)
        for (int64_t k = 0; k < n.coeffs[i]; ++k) s += (s.empty() ? "" : " * ") + c_expr(n.args[i], dialect);
      return "(" + s + ")";
    }
    case Kind::FloorDiv: {
      // Python's // (toward -inf): C's truncating quotient, one less when the signs differ
      // and the division is inexact. Operands are pure expressions of ks, read twice.
      const std::string a = c_expr(n.args[0], dialect), b = c_expr(n.args[1], dialect);
      return "(" + a + " / " + b + " - (" + a + " % " + b + " != 0 && (" + a + " < 0) != (" + b + " < 0)))";
    }
    case Kind::Mod: {
      // Python's % (the divisor's sign).
      const std::string a = c_expr(n.args[0], dialect), b = c_expr(n.args[1], dialect);
      return "((" + a + " % " + b + " + " + b + ") % " + b + ")";
    }
    case Kind::Min:
    case Kind::Max: {
      const bool min = e.kind() == Kind::Min;
      const char* fn = dialect == CDialect::Cuda ? (min ? "ember_dev::imin(" : "ember_dev::imax(")
                                                 : (min ? "std::min<int64_t>(" : "std::max<int64_t>(");
      return fn + c_expr(n.args[0], dialect) + ", " + c_expr(n.args[1], dialect) + ")";
    }
  }
  EMBER_INTERNAL_ASSERT(false) << "c_expr: size expression " << e << " of an unknown kind";
  return "";
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << (e.is_null() ? "<null>" : to_string(e)); }

// --- parsing ----------------------------------------------------------------------------

namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::function<int32_t(std::string_view)>& symbol) : text_(text), symbol_(symbol) {}

  Expr parse_all() {
    Expr e = parse_sum();
    skip_space();
    if (pos_ != text_.size()) fail("an operator or the end");
    return e;
  }

 private:
  [[noreturn]] void fail(const char* expected) {
    EMBER_CHECK(false) << "cannot parse the size expression '" << text_ << "': expected " << expected << " at column "
                       << pos_ + 1 << ", got "
                       << (pos_ < text_.size() ? "'" + std::string(text_.substr(pos_, 1)) + "'" : std::string("the end"));
    __builtin_unreachable();  // EMBER_CHECK(false) throws
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  void expect(std::string_view token, const char* what) {
    if (!accept(token)) fail(what);
  }

  Expr parse_sum() {
    Expr e = parse_product();
    for (;;) {
      if (accept("+")) {
        e = e + parse_product();
      } else if (accept("-")) {
        e = e - parse_product();
      } else {
        return e;
      }
    }
  }

  Expr parse_product() {
    Expr e = parse_unary();
    for (;;) {
      skip_space();
      if (text_.substr(pos_, 2) == "**") return e;  // handled by parse_power
      if (accept("//")) {
        e = floordiv(e, parse_unary());
      } else if (accept("*")) {
        e = e * parse_unary();
      } else if (accept("%")) {
        e = mod(e, parse_unary());
      } else {
        return e;
      }
    }
  }

  Expr parse_unary() {
    if (accept("-")) return -parse_unary();
    return parse_power();
  }

  Expr parse_power() {
    Expr base = parse_primary();
    if (!accept("**")) return base;
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) fail("a non-negative integer exponent");
    const std::string digits(text_.substr(start, pos_ - start));
    EMBER_CHECK(digits.size() <= 2 && std::stoi(digits) <= 64)
        << "the size expression '" << text_ << "' has an exponent larger than 64: " << digits;
    const int64_t exponent = std::stoi(digits);
    Expr out(int64_t{1});
    for (int64_t i = 0; i < exponent; ++i) out = out * base;
    return out;
  }

  Expr parse_primary() {
    skip_space();
    if (accept("(")) {
      Expr e = parse_sum();
      expect(")", "')'");
      return e;
    }
    const size_t start = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      const std::string_view digits = text_.substr(start, pos_ - start);
      int64_t value = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      EMBER_CHECK(ec == std::errc() && end == digits.data() + digits.size())
          << "the size expression '" << text_ << "' has a constant that does not fit int64: " << digits;
      return Expr(value);
    }
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) fail("a number, a symbol, a call or '('");
    const std::string_view word = text_.substr(start, pos_ - start);
    if (word == "Mod" || word == "Min" || word == "Max" || word == "min" || word == "max") {
      expect("(", "'(' after a function name");
      const Expr a = parse_sum();
      expect(",", "',' between two arguments");
      const Expr b = parse_sum();
      expect(")", "')'");
      return word == "Mod" ? mod(a, b) : (word == "Min" || word == "min") ? min(a, b) : max(a, b);
    }
    const int32_t id = symbol_(word);
    EMBER_CHECK(id >= 0) << "the size expression '" << text_ << "' names an unknown symbol '" << word << "'";
    return Expr::symbol(id);
  }

  std::string_view text_;
  const std::function<int32_t(std::string_view)>& symbol_;
  size_t pos_ = 0;
};

int32_t default_symbol_id(std::string_view name) {
  if (name.size() < 2 || (name[0] != 's' && name[0] != 'u') || name.size() > 10) return -1;
  int64_t id = 0;
  for (char c : name.substr(1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    id = id * 10 + (c - '0');
  }
  const int64_t limit = name[0] == 'u' ? INT32_MAX - kUnbackedBase : kUnbackedBase - 1;
  if (id > limit) return -1;
  return static_cast<int32_t>(name[0] == 'u' ? id + kUnbackedBase : id);
}

}  // namespace

Expr parse(std::string_view text, const std::function<int32_t(std::string_view)>& symbol) {
  return Parser(text, symbol).parse_all();
}

Expr parse(std::string_view text) { return parse(text, default_symbol_id); }

}  // namespace ember::core::sym
