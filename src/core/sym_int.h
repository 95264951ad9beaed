// core/sym_int.h — SymInt: a size, stride or offset that is either a plain integer or a
// symbolic expression with an example value (its hint), as PyTorch's SymInt. Arithmetic
// on SymInts builds expressions; comparing them answers with the hints and records the
// answer as a guard in the ShapeEnv that owns the symbols, so code written once over
// SymInt is correct for static sizes (no guards, no allocation) and symbolic ones.
// See Note [dynamic shapes].
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/sym_expr.h"

namespace ember::core {

class ShapeEnv;

class SymInt {
 public:
  SymInt(int64_t value = 0) : hint_(value) {}  // NOLINT: plain integers convert implicitly
  /// A symbolic value; a constant `expr` gives a plain SymInt.
  SymInt(sym::Expr expr, int64_t hint, ShapeEnv* env);

  bool is_symbolic() const { return env_ != nullptr; }
  /// The example value; reading it records no guard.
  int64_t hint() const { return hint_; }
  /// The value as a plain integer, when it is one.
  std::optional<int64_t> maybe_int() const {
    return is_symbolic() ? std::nullopt : std::optional<int64_t>(hint_);
  }
  /// The expression (a constant for a plain SymInt).
  sym::Expr expr() const { return is_symbolic() ? expr_ : sym::Expr(hint_); }
  ShapeEnv* env() const { return env_; }
  /// The value as a plain integer, guarding that it keeps this value (specialization).
  int64_t guard_int() const;
  /// `s0*s1` or `8`.
  std::string str() const;

 private:
  int64_t hint_;
  sym::Expr expr_;
  ShapeEnv* env_ = nullptr;
};

SymInt operator+(const SymInt& a, const SymInt& b);
SymInt operator-(const SymInt& a, const SymInt& b);
SymInt operator-(const SymInt& a);
SymInt operator*(const SymInt& a, const SymInt& b);
/// Python's // and %, as sizes are computed in PyTorch's meta functions.
SymInt floordiv(const SymInt& a, const SymInt& b);
SymInt mod(const SymInt& a, const SymInt& b);
SymInt sym_min(const SymInt& a, const SymInt& b);
SymInt sym_max(const SymInt& a, const SymInt& b);

/// Comparisons answer with the hints and guard on the answer when either side is
/// symbolic and the environment cannot prove it from the symbols' ranges.
bool operator==(const SymInt& a, const SymInt& b);
bool operator!=(const SymInt& a, const SymInt& b);
bool operator<(const SymInt& a, const SymInt& b);
bool operator<=(const SymInt& a, const SymInt& b);
bool operator>(const SymInt& a, const SymInt& b);
bool operator>=(const SymInt& a, const SymInt& b);

}  // namespace ember::core
