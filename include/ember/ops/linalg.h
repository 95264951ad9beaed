// ember/ops/linalg.h — matrix products (float32/float64 through BLAS).
#pragma once

#include <optional>

#include "ember/tensor.h"

namespace ember {

Tensor mm(const Tensor& self, const Tensor& mat2, Loc loc = Loc::current());
Tensor bmm(const Tensor& self, const Tensor& mat2, Loc loc = Loc::current());
/// beta * self + alpha * (mat1 @ mat2).
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1, Loc loc = Loc::current());
/// Matrix @ vector.
Tensor mv(const Tensor& self, const Tensor& vec, Loc loc = Loc::current());
/// Inner product of two 1-D tensors (a 0-dim result).
Tensor dot(const Tensor& self, const Tensor& tensor, Loc loc = Loc::current());
/// torch.matmul: 1-D, 2-D and batched (broadcast) products.
Tensor matmul(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
/// input @ weight.T + bias.
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              Loc loc = Loc::current());

}  // namespace ember
