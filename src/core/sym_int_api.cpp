// core/sym_int_api.cpp — the public ember::SymInt (ember/sym_int.h) over core::SymInt:
// a plain value costs an int64; a symbolic one shares its core::SymInt, and arithmetic and
// comparisons go through core's, which build expressions and record guards.
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ember/sym_int.h"
#include "ember/tensor.h"
#include "support/call_context.h"

namespace ember {
namespace {

core::SymInt to_core(const SymInt& s) { return s.sym() ? *s.sym() : core::SymInt(s.hint()); }

template <typename F>
SymInt combine(const SymInt& a, const SymInt& b, F&& f) {
  if (!a.is_symbolic() && !b.is_symbolic()) return SymInt(f(core::SymInt(a.hint()), core::SymInt(b.hint())).hint());
  return SymInt(f(to_core(a), to_core(b)));
}

}  // namespace

SymInt::SymInt(const core::SymInt& s) : value_(s.hint()) {
  const core::SymInt now = core::current(s);
  if (now.is_symbolic()) sym_ = std::make_shared<const core::SymInt>(now);
}

int64_t SymInt::guard_int() const { return sym_ ? sym_->guard_int() : value_; }

std::string SymInt::str() const { return sym_ ? core::current(*sym_).str() : std::to_string(value_); }

SymInt operator+(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const core::SymInt& x, const core::SymInt& y) { return x + y; });
}
SymInt operator-(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const core::SymInt& x, const core::SymInt& y) { return x - y; });
}
SymInt operator*(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const core::SymInt& x, const core::SymInt& y) { return x * y; });
}
SymInt operator/(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const core::SymInt& x, const core::SymInt& y) { return core::floordiv(x, y); });
}
SymInt operator%(const SymInt& a, const SymInt& b) {
  return combine(a, b, [](const core::SymInt& x, const core::SymInt& y) { return core::mod(x, y); });
}

bool operator==(const SymInt& a, const SymInt& b) { return to_core(a) == to_core(b); }
bool operator!=(const SymInt& a, const SymInt& b) { return to_core(a) != to_core(b); }
bool operator<(const SymInt& a, const SymInt& b) { return to_core(a) < to_core(b); }
bool operator<=(const SymInt& a, const SymInt& b) { return to_core(a) <= to_core(b); }
bool operator>(const SymInt& a, const SymInt& b) { return to_core(a) > to_core(b); }
bool operator>=(const SymInt& a, const SymInt& b) { return to_core(a) >= to_core(b); }

std::ostream& operator<<(std::ostream& os, const SymInt& s) { return os << s.str(); }

bool identical(const SymInt& a, const SymInt& b) {
  if (a.is_symbolic() != b.is_symbolic()) return false;
  return !a.is_symbolic() ? a.hint() == b.hint() : core::current(*a.sym()).expr() == core::current(*b.sym()).expr();
}

bool SymIntList::operator==(const SymIntList& o) const {
  if (values.size() != o.values.size()) return false;
  for (size_t i = 0; i < values.size(); ++i)
    if (!identical(values[i], o.values[i])) return false;
  return true;
}

bool any_symbolic(SymIntArrayRef sizes) {
  for (const SymInt& s : sizes)
    if (s.is_symbolic()) return true;
  return false;
}

std::vector<int64_t> guard_ints(SymIntArrayRef sizes) {
  std::vector<int64_t> out;
  out.reserve(sizes.size());
  for (const SymInt& s : sizes) out.push_back(s.guard_int());
  return out;
}

SymInt sym_size(const Tensor& t, int64_t dim) {
  if (!core::is_symbolic(t)) return t.size(dim);
  const core::SymInt s = core::sym_size(t, dim);
  // In user code a data-dependent size is its unbacked symbol (PyTorch's `nz.size(0)` is
  // u0): size lists holding it take the value the op that computes it returns on each call,
  // read by the interpreter and the inductor's wrapper once that op has run, and a
  // comparison its range does not decide raises at the user's line. Inside an op (a
  // decomposition) it stays an integer read, which breaks the graph at that op: the op's
  // own comparisons would raise where it runs fine eagerly (Note [dynamic shapes]).
  if (s.is_symbolic() && core::ShapeEnv::has_unbacked(s.expr()) && !support::call_context().op_stack.empty())
    return t.size(dim);
  return SymInt(s);
}

std::vector<SymInt> sym_sizes(const Tensor& t) {
  std::vector<SymInt> out;
  for (int64_t d = 0; d < t.dim(); ++d) out.push_back(sym_size(t, d));
  return out;
}

SymInt sym_numel(const Tensor& t) {
  SymInt n = 1;
  for (int64_t d = 0; d < t.dim(); ++d) n = n * sym_size(t, d);
  return n;
}

}  // namespace ember
