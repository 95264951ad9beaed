// core/sym_expr.h — integer expressions over size symbols (s0, s1, …): what a symbolic
// size, stride or storage offset is. Expressions are immutable and always in one
// canonical form, so two expressions that the rules below prove equal are structurally
// equal (`==`), print the same and hash the same. See Note [dynamic shapes].
//
// The canonical form is a sum of monomials with integer coefficients plus a constant;
// a monomial is a product of atoms with positive exponents; an atom is a symbol or one
// of floordiv(a, b), mod(a, b), min(a, b), max(a, b) over canonical operands. Division
// and modulo follow Python (floor toward −∞; the remainder has the divisor's sign), as
// PyTorch's FloorDiv and Mod do.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::core::sym {

enum class Kind : uint8_t { Const, Symbol, Sum, Product, FloorDiv, Mod, Min, Max };

struct Node;

/// A handle on a canonical expression. Default-constructed handles are null (used by
/// SymInt for plain integers); every operation requires a non-null handle.
class Expr {
 public:
  Expr() = default;
  Expr(int64_t value);  // NOLINT: constants convert implicitly, as in sympy
  static Expr symbol(int32_t id);

  bool is_null() const { return node_ == nullptr; }
  /// Whether two handles share one node (a fast path of ==).
  bool is_same(const Expr& o) const { return node_ == o.node_; }
  Kind kind() const;
  bool is_const() const { return kind() == Kind::Const; }
  /// The value of a Const.
  int64_t value() const;
  /// The id of a Symbol.
  int32_t symbol_id() const;
  const Node& node() const { return *node_; }
  size_t hash() const;

  /// Structural equality of canonical forms.
  friend bool operator==(const Expr& a, const Expr& b);
  friend bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }

 private:
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  friend struct Build;
  std::shared_ptr<const Node> node_;
};

struct Node {
  Kind kind;
  /// Const: the value. Symbol: its id. Sum: the constant term.
  int64_t value = 0;
  /// Sum: its monomials. Product: its atoms. FloorDiv, Mod, Min, Max: the two operands.
  std::vector<Expr> args;
  /// Sum: each monomial's coefficient (non-zero). Product: each atom's exponent (> 0).
  std::vector<int64_t> coeffs;
  size_t hash = 0;
};

/// A total order on canonical expressions (the order of a Sum's terms and a Product's
/// factors): negative, zero or positive.
int compare(const Expr& a, const Expr& b);

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator*(const Expr& a, const Expr& b);
/// Python's a // b; raises for a constant zero divisor.
Expr floordiv(const Expr& a, const Expr& b);
/// Python's a % b; raises for a constant zero divisor.
Expr mod(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);

/// a + b, a - b and a * b on integers, raising where int64 overflows (sizes may come from
/// outside data, such as an imported program's integers).
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_sub(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);

/// Python's a // b and a % b on integers (floor division; the remainder has b's sign);
/// raise for b == 0.
int64_t floordiv(int64_t a, int64_t b);
int64_t mod(int64_t a, int64_t b);

/// `e` with each symbol replaced by `replace(id)` where that returns a value, rebuilt in
/// canonical form.
Expr substitute(const Expr& e, const std::function<std::optional<Expr>(int32_t)>& replace);
/// `e` rebuilt bottom-up, each atom offered to `rewrite` after its operands are rebuilt
/// (returning nullopt keeps it). Substitution and range simplification are both this.
Expr rewrite_atoms(const Expr& e, const std::function<std::optional<Expr>(const Expr& atom)>& rewrite);
/// The ids of the symbols in `e`, ascending, each once.
std::vector<int32_t> free_symbols(const Expr& e);

/// The value of `e` when symbol i has value `values[i]`. No allocation; raises on a zero
/// divisor or int64 overflow.
int64_t evaluate(const Expr& e, std::span<const int64_t> values);

/// A closed interval of int64; kMinusInfinity / kInfinity stand for unbounded ends.
struct Range {
  static constexpr int64_t kMinusInfinity = INT64_MIN;
  static constexpr int64_t kInfinity = INT64_MAX;
  int64_t lo = kMinusInfinity;
  int64_t hi = kInfinity;
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool operator==(const Range&) const = default;
};
/// Bounds of `e` by interval arithmetic over each symbol's range (conservative: the true
/// set of values lies inside, the interval may be wider).
Range bounds(const Expr& e, const std::function<Range(int32_t)>& range_of);

/// Symbols of id kUnbackedBase + k are *unbacked*: sizes an op computes from data (the
/// count `nonzero` returns), known only at run time. They print as `u<k>`, as PyTorch's
/// create_unbacked_symint names them; symbols below it are sizes of inputs, `s<i>`.
inline constexpr int32_t kUnbackedBase = int32_t{1} << 24;
inline bool is_unbacked(int32_t id) { return id >= kUnbackedBase; }

/// Names a symbol when printing; the default names symbol i `s<i>` (`u<k>` unbacked).
using SymbolNamer = std::function<std::string(int32_t)>;
std::string default_symbol_name(int32_t id);
/// sympy-like text: `2*s0*s1 + s1//8 - 1`, `Mod(s0, 8)`, `Min(s0, 4)`, `s0**2`.
std::string to_string(const Expr& e, const SymbolNamer& name = default_symbol_name);
/// Which code a size expression's C++ text is for: host C++ (Min/Max as std::min and
/// std::max over int64_t) or CUDA (ember_dev::imin/imax of the inductor's generated code).
enum class CDialect { Cpp, Cuda };
/// The C++ text of a size expression whose symbol values are `ks` (an array indexed by
/// symbol id, or the CUDA kernels' by-value ember_dev::Sizes): `ks[0] * 16`; a constant
/// prints as its digits; `//` and `Mod` print as Python's floor division and modulo (C's
/// `/` and `%` truncate). Used by the inductor's kernels and by runnable programs.
std::string c_expr(const Expr& e, CDialect dialect = CDialect::Cpp);

std::ostream& operator<<(std::ostream& os, const Expr& e);

/// Parses what to_string prints (also `%`, `min`, `max`, and parentheses anywhere);
/// `symbol` maps a name to its id or returns -1 for an unknown name (an error naming it).
Expr parse(std::string_view text, const std::function<int32_t(std::string_view)>& symbol);
/// parse() with the default names s0, s1, … and u0, u1, ….
Expr parse(std::string_view text);

}  // namespace ember::core::sym
