// core/shape_env.h — the shape environment of one compile: the size symbols (each with
// the source it was read from, its example value and its range), the guards the trace
// relied on, the replacements that equalities imply and the divisibility facts that
// `Mod(e, k) == 0` guards give. Checking the guards on a call allocates nothing. See
// Note [dynamic shapes].
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/sym_expr.h"
#include "core/sym_int.h"
#include "support/call_context.h"

namespace ember::core {

/// lhs REL rhs; `>` and `>=` are recorded with the sides swapped.
enum class Relation { Eq, Ne, Lt, Le };
const char* relation_text(Relation rel);

struct ShapeGuard {
  Relation rel;
  sym::Expr lhs;
  sym::Expr rhs;
  support::UserLoc loc;
};

/// A divisibility fact: `Mod(e, k) == 0` with a constant k > 1, `e` in terms of symbols
/// without a replacement (a guard or check recorded it). See Note [dynamic shapes].
struct Divisible {
  sym::Expr e;
  int64_t k = 1;
};

struct SymbolInfo {
  /// Where the value is read on each call, e.g. `x.size(0)`; for an unbacked symbol, the
  /// op that computes it (`aten::nonzero`).
  std::string source;
  int64_t hint = 0;
  /// The values the compiled code is valid for; guards on the symbol alone narrow it.
  sym::Range range;
  /// Where the range was last narrowed (or the symbol created).
  support::UserLoc loc;
};

class ShapeEnv : public std::enable_shared_from_this<ShapeEnv> {
 public:
  struct Options {
    /// Sizes 0 and 1 stay static (PyTorch's specialize_zero_one): broadcasting and
    /// contiguity depend on them.
    bool specialize_zero_one = true;
    /// Sizes with equal example values get one symbol (PyTorch's duck shaping); the
    /// equality of their sources becomes a guard.
    bool duck_shape = true;
  };

  ShapeEnv() : ShapeEnv(Options{}) {}
  explicit ShapeEnv(Options options) : options_(options) {}
  ShapeEnv(const ShapeEnv&) = delete;
  ShapeEnv& operator=(const ShapeEnv&) = delete;

  /// A size read from `source` whose example value is `hint`: a plain SymInt for 0 and
  /// 1 (the caller guards the exact value), else a symbol with range [2, ∞) narrowed
  /// by `min`/`max` (mark_dynamic's bounds; a hint outside them is a user error).
  SymInt create_size(int64_t hint, std::string source, std::optional<int64_t> min = std::nullopt,
                     std::optional<int64_t> max = std::nullopt);

  /// A size that an op computes from its input's data (`nonzero`'s count, a boolean
  /// mask's): the unbacked symbol u<k> (PyTorch's create_unbacked_symint), range [0, ∞),
  /// no example value. `origin` names the op. Comparisons that its range does not decide
  /// raise "could not guard on data-dependent expression" (see evaluate()).
  SymInt create_unbacked(std::string origin);
  /// An unbacked symbol read back from a graph's text (the next u<k>).
  SymInt restore_unbacked(std::string origin, sym::Range range);
  /// The value unbacked symbols stand at in a fake's plain fields (PyTorch's
  /// unbacked_symint_fallback); nothing is decided from it.
  static constexpr int64_t kUnbackedPlaceholder = 8192;

  /// A symbol read back from a graph's text (graph/parser.cpp): the next id, with exactly
  /// this source, hint and range (no duck shaping, no 0/1 specialization).
  SymInt restore_symbol(std::string source, int64_t hint, sym::Range range);
  /// A guard read back from a graph's text: recorded as evaluate() records what it found
  /// true (narrowing ranges, setting replacements), without evaluating or logging it.
  void restore_guard(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs);

  /// Answers `lhs REL rhs` with the hints; records a guard unless the symbols' ranges
  /// already decide it. A relation over unbacked symbols has no hint: one against the
  /// constant 0 or 1 (`u0 == 1`, `1 < 3*u0`) is answered as PyTorch's
  /// guard_size_oblivious does, as if u0 were at least 2 (broadcasting, contiguity and
  /// views ask them, and the eager kernels that run the graph handle 0 and 1 themselves);
  /// anything else the range does not decide raises, naming the expression, the op that
  /// made the symbol and the user's line.
  bool evaluate(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs);
  /// Guards that `e` keeps its example value and returns that value.
  int64_t specialize(const sym::Expr& e);

  /// The example value of `e`; raises for an expression over unbacked symbols.
  int64_t hint(const sym::Expr& e) const;
  /// The example value of `e` with unbacked symbols at kUnbackedPlaceholder (what a
  /// fake's plain fields hold; never a reason for a decision).
  int64_t placeholder_hint(const sym::Expr& e) const;
  /// `e` with the replacements applied, what the ranges decide folded (`Min(s0, 1)` → 1
  /// for s0 ≥ 2) and the divisibility facts used: with `Mod(s0, 4) == 0` known,
  /// `4*(s0//4)` → `s0`, `Mod(s0*s1, 4)` → 0, `(s0*s1)//4` → `s1*(s0//4)`.
  sym::Expr simplify(const sym::Expr& e) const;
  /// The largest divisor of `e` that the facts and the coefficients show (≥ 1; 0 for the
  /// constant 0, which every k divides). `k` divides `e` for sure when it divides this.
  int64_t known_divisor(const sym::Expr& e) const;
  /// The divisibility facts recorded so far.
  const std::vector<Divisible>& divisible() const { return divisible_; }
  /// Interval bounds of `e` over the symbols' ranges.
  sym::Range range(const sym::Expr& e) const;

  /// The symbols read from inputs, s0 … s<n-1> (the values check() takes).
  size_t num_symbols() const { return symbols_.size(); }
  /// The unbacked symbols, u0 … u<n-1> (ids sym::kUnbackedBase + k).
  size_t num_unbacked() const { return unbacked_.size(); }
  /// Any symbol by id, backed or unbacked.
  const SymbolInfo& symbol(int32_t id) const;
  /// Whether `e` holds an unbacked symbol.
  static bool has_unbacked(const sym::Expr& e);
  const std::vector<ShapeGuard>& guards() const { return guards_; }

  /// Whether every symbol's range and every guard hold when symbol i has value
  /// `values[i]` (one value per symbol, read from its source). Allocates nothing.
  bool check(std::span<const int64_t> values) const;
  /// The first range or guard that fails for `values`, readable; empty when all hold.
  std::string first_failure(std::span<const int64_t> values) const;
  /// Every guard over sources, readable: `2 <= x.size(0)`, `x.size(0) == y.size(0)`.
  std::vector<std::string> format_guards() const;
  /// `e` with symbols named s0, s1, … or by their sources.
  std::string format(const sym::Expr& e) const;
  std::string format_with_sources(const sym::Expr& e) const;
  /// `[2, inf]`.
  static std::string format_range(sym::Range r);

 private:
  void record(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs);
  void add_guard(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs, const support::UserLoc& loc);
  bool narrow_range(Relation rel, const sym::Expr& difference);
  void set_replacement(int32_t id, const sym::Expr& value);
  /// Records that k divides e (normalized by sym::mod: `Mod(2*s0, 4) == 0` is `2 | s0`).
  void add_divisible(const sym::Expr& e, int64_t k);
  /// Whether `atom` is `x // k` with a constant k that the facts show divides x.
  bool is_exact_floordiv(const sym::Expr& atom) const;
  /// q with e == k*q exactly, written without a new division where the coefficients
  /// and the facts allow it (`s0*s1` by 4 with 4 | s0: `s1*(s0//4)`); nullopt otherwise.
  std::optional<sym::Expr> exact_division(const sym::Expr& e, int64_t k) const;
  /// `e` with each term's `c*(x//k)**p` whose division is exact and k | c turned into
  /// `(c/k)*x*(x//k)**(p-1)`: `4*(s0//4)*s1` → `s0*s1`.
  sym::Expr cancel_exact_divisions(const sym::Expr& e) const;
  std::string format_range_guard(const SymbolInfo& s) const;
  /// The error of a relation over unbacked symbols that needs a value to answer.
  /// `u0 is the size aten::nonzero computes from data at model.cpp:12` for each unbacked
  /// symbol of `e`.
  std::string unbacked_origins(const sym::Expr& e) const;
  [[noreturn]] void data_dependent(Relation rel, const sym::Expr& lhs, const sym::Expr& rhs) const;

  Options options_;
  std::vector<SymbolInfo> symbols_;
  /// unbacked_[k]: symbol u<k> (hint unused).
  std::vector<SymbolInfo> unbacked_;
  /// replacements_[i]: what symbol i equals, in terms of symbols without a replacement.
  std::vector<std::optional<sym::Expr>> replacements_;
  std::vector<ShapeGuard> guards_;
  std::vector<Divisible> divisible_;
};

}  // namespace ember::core
