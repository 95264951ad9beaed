// ember/scalar.h — Scalar (a number argument: bool, integer or floating) and Device.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

#include "ember/dtype.h"
#include "ember/error.h"

namespace ember {

/// A number passed to an op where ATen's schema says `Scalar`. Keeps its category
/// (bool, integral, floating) because type promotion depends on it.
class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : type_(kBool), i_(v) {}  // NOLINT: implicit by design
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : type_(kInt64), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : type_(kDouble), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}  // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<double>(static_cast<float>(v))) {}  // NOLINT

  /// kBool, kInt64 or kDouble.
  ScalarType type() const { return type_; }
  bool is_floating_point() const { return type_ == kDouble; }
  bool is_integral() const { return type_ == kInt64; }
  bool is_bool() const { return type_ == kBool; }

  double to_double() const { return type_ == kDouble ? d_ : static_cast<double>(i_); }
  int64_t to_long() const { return type_ == kDouble ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return type_ == kDouble ? d_ != 0 : i_ != 0; }
  template <typename T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_long());
    else return static_cast<T>(static_cast<opmath_t<T>>(to_double()));
  }
  bool operator==(const Scalar& o) const {
    return type_ == o.type_ && (type_ == kDouble ? (d_ == o.d_ || (d_ != d_ && o.d_ != o.d_)) : i_ == o.i_);
  }

 private:
  ScalarType type_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

enum class DeviceType : int8_t { CPU, Meta, CUDA };

/// Where a tensor's data lives. `meta` tensors have sizes, strides and dtype but no
/// data: capture traces with them.
struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;

  Device() = default;
  Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}  // NOLINT
  /// "cpu", "meta", "cuda", "cuda:1".
  Device(std::string_view spec);                      // NOLINT
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_meta() const { return type == DeviceType::Meta; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Device& d);

inline const Device kCPU{DeviceType::CPU};
inline const Device kMeta{DeviceType::Meta};
inline const Device kCUDA{DeviceType::CUDA};

}  // namespace ember
