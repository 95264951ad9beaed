// ember/ivalue.h — IValue: one op argument or result of any schema type, so that the
// dispatcher, graphs and the interpreter handle every op the same way.
#pragma once

#include <concepts>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ember/sym_int.h"
#include "ember/tensor.h"

namespace ember {

struct None {
  bool operator==(const None&) const { return true; }
};

class IValue {
 public:
  using Variant = std::variant<None, Tensor, int64_t, double, bool, Scalar, std::vector<int64_t>, std::vector<Tensor>,
                               std::vector<std::optional<Tensor>>, std::vector<bool>, std::string, ScalarType, Device,
                               std::vector<double>, SymIntList, SymInt>;

  IValue() : v_(None{}) {}
  IValue(None) : v_(None{}) {}                                        // NOLINT
  IValue(Tensor t) : v_(std::move(t)) {}                              // NOLINT
  IValue(int64_t i) : v_(i) {}                                        // NOLINT
  IValue(int i) : v_(static_cast<int64_t>(i)) {}                      // NOLINT
  IValue(double d) : v_(d) {}                                         // NOLINT
  IValue(bool b) : v_(b) {}                                           // NOLINT
  IValue(const Scalar& s) : v_(s) {}                                  // NOLINT
  IValue(std::vector<int64_t> l) : v_(std::move(l)) {}                // NOLINT
  IValue(IntArrayRef l) : v_(l.vec()) {}                              // NOLINT
  /// A SymInt[] value: kept as a plain int list unless an entry is symbolic.
  IValue(SymIntArrayRef l);                                           // NOLINT
  IValue(const std::vector<SymInt>& l) : IValue(SymIntArrayRef(l)) {}  // NOLINT
  /// A SymInt value: kept as a plain int unless it is symbolic.
  IValue(const SymInt& s) {  // NOLINT
    if (s.is_symbolic()) v_ = s;
    else v_ = s.hint();
  }
  IValue(std::vector<Tensor> l) : v_(std::move(l)) {}                 // NOLINT
  IValue(std::vector<std::optional<Tensor>> l) : v_(std::move(l)) {}  // NOLINT
  IValue(std::vector<bool> l) : v_(std::move(l)) {}                   // NOLINT
  IValue(std::vector<double> l) : v_(std::move(l)) {}                 // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}                         // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}                       // NOLINT
  IValue(ScalarType t) : v_(t) {}                                     // NOLINT
  IValue(Device d) : v_(d) {}                                         // NOLINT
  template <typename T>
  IValue(const std::optional<T>& o) : IValue(o ? IValue(*o) : IValue()) {}  // NOLINT

  bool is_none() const { return std::holds_alternative<None>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  /// An int, plain or symbolic (SymInt).
  bool is_int() const { return std::holds_alternative<int64_t>(v_) || is_sym_int(); }
  /// A symbolic int (only while tracing with dynamic shapes: a SymInt argument computed
  /// from a symbolic size).
  bool is_sym_int() const { return std::holds_alternative<SymInt>(v_); }
  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_scalar() const { return std::holds_alternative<Scalar>(v_); }
  /// An int list, plain or with symbolic entries (SymIntList).
  bool is_int_list() const { return std::holds_alternative<std::vector<int64_t>>(v_) || is_sym_int_list(); }
  /// An int list with at least one symbolic entry (only while tracing with dynamic shapes).
  bool is_sym_int_list() const { return std::holds_alternative<SymIntList>(v_); }
  bool is_tensor_list() const { return std::holds_alternative<std::vector<Tensor>>(v_); }
  bool is_optional_tensor_list() const { return std::holds_alternative<std::vector<std::optional<Tensor>>>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_scalar_type() const { return std::holds_alternative<ScalarType>(v_); }
  bool is_double_list() const { return std::holds_alternative<std::vector<double>>(v_); }

  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  Tensor& to_tensor() { return std::get<Tensor>(v_); }
  std::optional<Tensor> to_optional_tensor() const {
    return is_none() ? std::nullopt : std::optional<Tensor>(to_tensor());
  }
  /// The value. A symbolic int is specialized: its symbols are guarded to keep their
  /// example values (what an op that takes a plain int does with one).
  int64_t to_int() const;
  /// The value as a SymInt, a symbolic one kept (a plain int gives a plain SymInt).
  SymInt to_sym_int() const;
  std::optional<SymInt> to_optional_sym_int() const {
    return is_none() ? std::nullopt : std::optional<SymInt>(to_sym_int());
  }
  std::optional<int64_t> to_optional_int() const { return is_none() ? std::nullopt : std::optional<int64_t>(to_int()); }
  double to_double() const;
  std::optional<double> to_optional_double() const {
    return is_none() ? std::nullopt : std::optional<double>(to_double());
  }
  bool to_bool() const;
  std::optional<bool> to_optional_bool() const { return is_none() ? std::nullopt : std::optional<bool>(to_bool()); }
  Scalar to_scalar() const;
  std::optional<Scalar> to_optional_scalar() const {
    return is_none() ? std::nullopt : std::optional<Scalar>(to_scalar());
  }
  /// The list's values. A list with symbolic entries is specialized: each symbol read is
  /// guarded to keep its example value (what an op that takes plain sizes does with one).
  const std::vector<int64_t>& to_int_list() const;
  /// The list's entries as SymInts, symbolic ones kept (plain lists give plain entries).
  std::vector<SymInt> to_sym_int_list() const;
  std::optional<std::vector<int64_t>> to_optional_int_list() const {
    return is_none() ? std::nullopt : std::optional<std::vector<int64_t>>(to_int_list());
  }
  const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  const std::vector<std::optional<Tensor>>& to_optional_tensor_list() const {
    return get<std::vector<std::optional<Tensor>>>("Tensor?[]");
  }
  const std::vector<bool>& to_bool_list() const { return get<std::vector<bool>>("bool[]"); }
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  std::optional<std::vector<double>> to_optional_double_list() const {
    return is_none() ? std::nullopt : std::optional<std::vector<double>>(to_double_list());
  }
  const std::string& to_string_ref() const { return get<std::string>("str"); }
  std::optional<std::string> to_optional_string() const {
    return is_none() ? std::nullopt : std::optional<std::string>(to_string_ref());
  }
  ScalarType to_scalar_type() const { return get<ScalarType>("ScalarType"); }
  std::optional<ScalarType> to_optional_scalar_type() const {
    return is_none() ? std::nullopt : std::optional<ScalarType>(to_scalar_type());
  }
  Device to_device() const { return get<Device>("Device"); }

  const Variant& variant() const { return v_; }
  Variant& variant() { return v_; }
  /// Type name as a schema spells it ("Tensor", "int[]", "None", …).
  const char* type_name() const;

 private:
  template <typename T>
  const T& get(const char* expected) const {
    const T* p = std::get_if<T>(&v_);
    if (!p) fail(expected);
    return *p;
  }
  [[noreturn]] void fail(const char* expected) const;
  Variant v_;
};

std::ostream& print_ivalue(std::ostream& os, const IValue& v);
/// Exactly IValue, no conversions: a Tensor prints through its own operator<<, which
/// knows the user's line.
template <typename V>
  requires std::same_as<V, IValue>
std::ostream& operator<<(std::ostream& os, const V& v) {
  return print_ivalue(os, v);
}

using Stack = std::vector<IValue>;

}  // namespace ember
