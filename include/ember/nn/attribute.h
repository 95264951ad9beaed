// ember/nn/attribute.h — nn::Attribute<T>: a module's configuration value (LayerNorm::eps,
// Dropout::p, Conv2d::stride, Module's training flag, …) that reads like a T and that a
// compiled function guards on when its trace reads it, as TorchDynamo guards the module
// attributes it reads: changing `ln.eps` after the first call recompiles, and the
// recompile log names the attribute. See Note [module attributes] in docs/notes/capture.md.
//
//   class Scale : public nn::UnaryModule {
//    public:
//     nn::Attribute<double> factor{this, "factor", 2.0};
//     Tensor forward(const Tensor& x) override { return x * factor; }
//   };
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/ivalue.h"

namespace ember::nn {

class Module;

/// The value behind an Attribute. Capture's guards hold it by shared_ptr, so a guard stays
/// safe to check after its module is gone.
class AttributeCell : public std::enable_shared_from_this<AttributeCell> {
 public:
  AttributeCell(const Module* owner, const char* name) : owner_(owner), name_(name) {}
  virtual ~AttributeCell() = default;
  AttributeCell(const AttributeCell&) = delete;
  AttributeCell& operator=(const AttributeCell&) = delete;

  /// The current value (for guards' messages).
  virtual IValue value() const = 0;
  /// Whether the current value equals `v` (NaN equals NaN); allocates nothing.
  virtual bool equals(const IValue& v) const = 0;
  /// The attribute's name in its module ("eps").
  const char* name() const { return name_; }
  /// The module it belongs to; only valid while that module lives (capture reads it while
  /// tracing, to name the attribute).
  const Module* owner() const { return owner_; }

 private:
  const Module* owner_;
  const char* name_;
};

namespace detail {

template <typename T>
class TypedAttributeCell final : public AttributeCell {
 public:
  TypedAttributeCell(const Module* owner, const char* name, T v) : AttributeCell(owner, name), value_(std::move(v)) {}
  IValue value() const override { return IValue(value_); }
  bool equals(const IValue& v) const override {
    if constexpr (std::is_same_v<T, double>) {
      return v.is_double() && (v.to_double() == value_ || (std::isnan(v.to_double()) && std::isnan(value_)));
    } else if constexpr (std::is_same_v<T, bool>) {
      return v.is_bool() && v.to_bool() == value_;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return v.is_int() && v.to_int() == value_;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return v.is_string() && v.to_string_ref() == value_;
    } else {
      static_assert(std::is_same_v<T, std::vector<int64_t>>,
                    "nn::Attribute holds double, bool, int64_t, std::string or std::vector<int64_t>");
      return v.is_int_list() && v.to_int_list() == value_;
    }
  }
  T value_;
};

/// Tells capture that `cell` was read (a guard when a compiled function is being traced on
/// this thread; nothing otherwise). Defined in src/nn/module.cpp.
void note_attribute_read(const AttributeCell& cell);

}  // namespace detail

/// A module attribute of type T (double, bool, int64_t, std::string or std::vector<int64_t>):
/// converts to `const T&` wherever a T is expected, `get()` reads it explicitly (e.g. to
/// pass a std::vector<int64_t> as IntArrayRef), assignment changes it. Every read while a
/// compiled function is traced guards the trace on the value read.
template <typename T>
class Attribute {
 public:
  Attribute(const Module* owner, const char* name, T value)
      : cell_(std::make_shared<detail::TypedAttributeCell<T>>(owner, name, std::move(value))) {}
  Attribute(const Attribute&) = delete;
  Attribute& operator=(const Attribute&) = delete;

  const T& get() const {
    detail::note_attribute_read(*cell_);
    return cell_->value_;
  }
  operator const T&() const { return get(); }  // NOLINT: reads like the value it holds
  /// A number attribute where ops take a Scalar (`x * factor`).
  operator Scalar() const  // NOLINT
      requires std::is_arithmetic_v<T> {
    return Scalar(get());
  }
  const T* operator->() const { return &get(); }
  Attribute& operator=(T value) {
    cell_->value_ = std::move(value);
    return *this;
  }
  /// Numbers compare through the conversion; strings and lists, whose operator== are
  /// templates that a conversion does not reach, through this.
  friend bool operator==(const Attribute& a, const T& b) requires(!std::is_arithmetic_v<T>) { return a.get() == b; }

 private:
  std::shared_ptr<detail::TypedAttributeCell<T>> cell_;
};

}  // namespace ember::nn
