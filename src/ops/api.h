// ops/api.h — helpers for the public API functions that wrap registry ops. Each public
// function looks its op up once and calls it through the one dispatch path with the
// caller's source location.
#pragma once

#include <tuple>

#include "ops/dispatch.h"

/// The OpDef named NAME, looked up once per call site.
#define EMBER_OP(NAME)                                                              \
  ([]() -> const ::ember::ops::OpDef& {                                             \
    static const ::ember::ops::OpDef& op_ = ::ember::ops::registry().get(NAME);     \
    return op_;                                                                     \
  }())

namespace ember::ops {

inline IValue dtype_arg(const TensorOptions& o) { return o.dtype_ ? IValue(*o.dtype_) : IValue(); }
inline IValue device_arg(const TensorOptions& o) { return o.device_ ? IValue(*o.device_) : IValue(); }

inline std::tuple<Tensor, Tensor> tuple2(Stack s) {
  return {std::move(s.at(0).to_tensor()), std::move(s.at(1).to_tensor())};
}
inline std::tuple<Tensor, Tensor, Tensor> tuple3(Stack s) {
  return {std::move(s.at(0).to_tensor()), std::move(s.at(1).to_tensor()), std::move(s.at(2).to_tensor())};
}
/// A backward op's outputs, an undefined Tensor where the output mask left one out.
inline std::tuple<Tensor, Tensor, Tensor> masked3(Stack s) {
  auto get = [&](size_t i) { return s.at(i).is_none() ? Tensor() : std::move(s.at(i).to_tensor()); };
  return {get(0), get(1), get(2)};
}
inline std::vector<Tensor> tensor_list(Stack s) { return s.at(0).to_tensor_list(); }

/// Runs an in-place op and returns `self` (the same handle the caller passed).
inline Tensor& call_inplace(const OpDef& op, Tensor& self, Stack args, const std::source_location& loc) {
  call_at(op, std::move(args), loc);
  return self;
}

}  // namespace ember::ops
