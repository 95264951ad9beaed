// ember/ops/reduction.h — reductions over dims (empty dims = all dims), as torch.*.
#pragma once

#include <optional>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt, Loc loc = Loc::current());
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt,
           Loc loc = Loc::current());
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt, Loc loc = Loc::current());
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt,
            Loc loc = Loc::current());
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt, Loc loc = Loc::current());
Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt,
            Loc loc = Loc::current());
Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false, Loc loc = Loc::current());
Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false, Loc loc = Loc::current());
/// Maximum of all elements.
Tensor max(const Tensor& self, Loc loc = Loc::current());
Tensor min(const Tensor& self, Loc loc = Loc::current());
/// (values, indices) along `dim`.
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false, Loc loc = Loc::current());
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false, Loc loc = Loc::current());
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
              Loc loc = Loc::current());
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
              Loc loc = Loc::current());
/// Variance with `correction` (1 = unbiased, Bessel's correction; 0 = population).
Tensor var(const Tensor& self, std::optional<std::vector<int64_t>> dim = std::nullopt,
           std::optional<Scalar> correction = std::nullopt, bool keepdim = false, Loc loc = Loc::current());
Tensor std(const Tensor& self, std::optional<std::vector<int64_t>> dim = std::nullopt,
           std::optional<Scalar> correction = std::nullopt, bool keepdim = false, Loc loc = Loc::current());
/// torch.linalg.vector_norm: (sum |x|^ord)^(1/ord) over `dim` (all dims when none), max|x|
/// for ord inf, min|x| for -inf, the count of nonzeros for 0; computed in `dtype` when given.
Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord = 2.0,
                          std::optional<std::vector<int64_t>> dim = std::nullopt, bool keepdim = false,
                          std::optional<ScalarType> dtype = std::nullopt, Loc loc = Loc::current());
Tensor any(const Tensor& self, Loc loc = Loc::current());
Tensor any(const Tensor& self, int64_t dim, bool keepdim = false, Loc loc = Loc::current());
/// any over several dims (nullopt: every dim; an empty list: none, only the truth values).
Tensor any(const Tensor& self, const std::optional<std::vector<int64_t>>& dims, bool keepdim = false,
           Loc loc = Loc::current());
Tensor all(const Tensor& self, Loc loc = Loc::current());
Tensor all(const Tensor& self, int64_t dim, bool keepdim = false, Loc loc = Loc::current());
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt,
              Loc loc = Loc::current());
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false, Loc loc = Loc::current());

}  // namespace ember
