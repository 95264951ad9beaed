// ember/sym_int.h — SymInt: a size that user code reads without specializing it
// (`ember::sym_size(x, 1)`, PyTorch's `x.size(1)` giving a SymInt), computes with, and
// passes in the size lists of view, reshape, expand and the factories. In eager code, and
// for every size that is not symbolic, it is a plain int64; while a function is traced
// with dynamic shapes it also holds the size's expression over the trace's size symbols,
// so the graph's list argument keeps the symbol and one compile serves every size.
// See Note [dynamic shapes] ("Symbolic int lists").
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ember/array_ref.h"

namespace ember {

namespace core {
class SymInt;
}

class SymInt {
 public:
  SymInt() = default;
  template <std::integral I>
  SymInt(I value) : value_(static_cast<int64_t>(value)) {}  // NOLINT: plain integers convert implicitly
  /// A symbolic size (Ember's own code makes these; a constant expression gives a plain one).
  explicit SymInt(const core::SymInt& s);

  bool is_symbolic() const { return sym_ != nullptr; }
  /// The value: in eager code the size itself; while tracing, the example value the trace
  /// sees (reading it records no guard).
  int64_t hint() const { return value_; }
  /// The value as a plain integer. A symbolic one is specialized: the trace guards that it
  /// keeps this value, as reading `x.size(1)` does.
  int64_t guard_int() const;
  /// "s0*12" or "8".
  std::string str() const;
  /// The symbolic value (null when plain).
  const core::SymInt* sym() const { return sym_.get(); }

 private:
  int64_t value_ = 0;
  std::shared_ptr<const core::SymInt> sym_;
};

/// Arithmetic as on sizes: `/` and `%` are Python's `//` and `%` (floor toward -inf).
SymInt operator+(const SymInt& a, const SymInt& b);
SymInt operator-(const SymInt& a, const SymInt& b);
SymInt operator*(const SymInt& a, const SymInt& b);
SymInt operator/(const SymInt& a, const SymInt& b);
SymInt operator%(const SymInt& a, const SymInt& b);
/// Comparisons answer with the example values; while tracing, the answer becomes a guard
/// of the compiled entry unless the sizes' ranges decide it.
bool operator==(const SymInt& a, const SymInt& b);
bool operator!=(const SymInt& a, const SymInt& b);
bool operator<(const SymInt& a, const SymInt& b);
bool operator<=(const SymInt& a, const SymInt& b);
bool operator>(const SymInt& a, const SymInt& b);
bool operator>=(const SymInt& a, const SymInt& b);
std::ostream& operator<<(std::ostream& os, const SymInt& s);
/// Whether `a` and `b` are the same value without comparing sizes: equal expressions (plain
/// values by value). Records no guard.
bool identical(const SymInt& a, const SymInt& b);

using SymIntArrayRef = ArrayRef<SymInt>;

/// A size list with at least one symbolic entry: the value of a `SymInt[]` argument that
/// holds symbols (IValue keeps lists without symbols as plain int lists).
struct SymIntList {
  std::vector<SymInt> values;
  /// The entries' example values.
  std::vector<int64_t> hints;
  /// Entry by entry: equal expressions (plain entries by value).
  bool operator==(const SymIntList& o) const;
};

/// Whether any entry is symbolic.
bool any_symbolic(SymIntArrayRef sizes);
/// The entries' values, each symbolic one specialized (guard_int).
std::vector<int64_t> guard_ints(SymIntArrayRef sizes);

class Tensor;
/// Size `dim` of `t` (negative counts from the end) without specializing it: a plain int64
/// in eager code and for static sizes; while tracing with dynamic shapes, the size's
/// expression, usable in view/reshape/expand/factory size lists and arithmetic; for a size
/// an op computed from data (nonzero's count), its unbacked symbol u<k>.
SymInt sym_size(const Tensor& t, int64_t dim);
/// All sizes of `t`, as sym_size reads each.
std::vector<SymInt> sym_sizes(const Tensor& t);
/// numel of `t`, as sym_size reads a size.
SymInt sym_numel(const Tensor& t);

}  // namespace ember
