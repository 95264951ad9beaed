// ops/derivative_rows.h — the one-line form the derivative tables (derivatives.cpp,
// derivatives_nn.cpp) use to attach a formula to an op: row(r, "aten::exp", "ExpBackward0", fn).
#pragma once

#include <source_location>
#include <vector>

#include "ops/registry.h"

namespace ember::ops::derivative_rows {

using Ctx = DerivativeContext;
using Grads = std::vector<Tensor>;

inline void row(Registry& r, const char* op, const char* node, DerivativeFn f,
                std::source_location loc = std::source_location::current()) {
  r.edit(op).set_derivative(node, std::move(f), loc);
}

/// An op whose outputs PyTorch never differentiates (they do not require grad).
inline void no_grad_row(Registry& r, const char* op, std::source_location loc = std::source_location::current()) {
  r.edit(op).set_not_differentiable(loc);
}

}  // namespace ember::ops::derivative_rows
