// core/ivalue.cpp — IValue conversions and printing.
#include "ember/ivalue.h"

namespace ember {

int64_t IValue::to_int() const {
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (const auto* s = std::get_if<SymInt>(&v_)) return s->guard_int();
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  if (const auto* s = std::get_if<Scalar>(&v_); s && !s->is_floating_point()) return s->to_long();
  fail("int");
}

SymInt IValue::to_sym_int() const {
  if (const auto* s = std::get_if<SymInt>(&v_)) return *s;
  return SymInt(to_int());
}

double IValue::to_double() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (is_int()) return static_cast<double>(to_int());
  if (const auto* s = std::get_if<Scalar>(&v_)) return s->to_double();
  fail("float");
}

bool IValue::to_bool() const {
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  fail("bool");
}

Scalar IValue::to_scalar() const {
  if (const auto* s = std::get_if<Scalar>(&v_)) return *s;
  if (const auto* d = std::get_if<double>(&v_)) return Scalar(*d);
  if (is_int()) return Scalar(to_int());
  if (const auto* b = std::get_if<bool>(&v_)) return Scalar(*b);
  fail("Scalar");
}

IValue::IValue(SymIntArrayRef l) {
  if (!any_symbolic(l)) {
    std::vector<int64_t> plain;
    plain.reserve(l.size());
    for (const SymInt& s : l) plain.push_back(s.hint());
    v_ = std::move(plain);
    return;
  }
  SymIntList list;
  list.values = l.vec();
  for (const SymInt& s : l) list.hints.push_back(s.hint());
  v_ = std::move(list);
}

const std::vector<int64_t>& IValue::to_int_list() const {
  // Specializing keeps the hints true for every call the guards admit.
  if (const auto* l = std::get_if<SymIntList>(&v_)) (void)guard_ints(l->values);
  if (const auto* l = std::get_if<SymIntList>(&v_)) return l->hints;
  return get<std::vector<int64_t>>("int[]");
}

std::vector<SymInt> IValue::to_sym_int_list() const {
  if (const auto* l = std::get_if<SymIntList>(&v_)) return l->values;
  const auto& plain = get<std::vector<int64_t>>("int[]");
  return std::vector<SymInt>(plain.begin(), plain.end());
}

const char* IValue::type_name() const {
  static const char* kNames[] = {"None", "Tensor", "int", "float", "bool", "Scalar", "int[]", "Tensor[]",
                                 "Tensor?[]", "bool[]", "str", "ScalarType", "Device", "float[]", "SymInt[]", "SymInt"};
  return kNames[v_.index()];
}

void IValue::fail(const char* expected) const {
  EMBER_FAIL_KIND(ErrorKind::TypeError) << "expected a value of type " << expected << ", got " << type_name();
}

std::ostream& print_ivalue(std::ostream& os, const IValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, None>) {
          os << "None";
        } else if constexpr (std::is_same_v<T, Tensor>) {
          if (x.defined()) os << "Tensor(" << x.sizes() << ", " << x.dtype() << ")";
          else os << "Tensor(undefined)";
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "True" : "False");
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << IntArrayRef(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
        } else if constexpr (std::is_same_v<T, SymIntList>) {
          os << "[";
          for (size_t i = 0; i < x.values.size(); ++i) os << (i ? ", " : "") << x.values[i];
          os << "]";
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>> ||
                             std::is_same_v<T, std::vector<std::optional<Tensor>>> ||
                             std::is_same_v<T, std::vector<bool>>) {
          os << "[" << x.size() << " items]";
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << x << '"';
        } else {
          os << x;
        }
      },
      v.variant());
  return os;
}

}  // namespace ember
