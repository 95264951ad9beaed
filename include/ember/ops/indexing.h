// ember/ops/indexing.h — gathering, scattering, advanced indexing, sorting.
#pragma once

#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, Loc loc = Loc::current());
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, Loc loc = Loc::current());
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current());
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, Loc loc = Loc::current());
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current());
/// Advanced indexing, self[indices…]: nullopt entries stand for a full slice ":".
/// self with src combined in at index along dim: reduce is "sum", "prod", "mean", "amax" or
/// "amin"; without include_self, self's values at the scattered positions are left out.
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true, Loc loc = Loc::current());
/// self (broadcast with mask) with the elements of source, in order, where mask is true.
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, Loc loc = Loc::current());
Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, Loc loc = Loc::current());
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate = false, Loc loc = Loc::current());
Tensor& index_put_(Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                   bool accumulate = false, Loc loc = Loc::current());
/// (values, indices).
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false,
                                Loc loc = Loc::current());
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true, Loc loc = Loc::current());
/// Indices of non-zero elements, [n, ndim] (its size depends on the data).
Tensor nonzero(const Tensor& self, Loc loc = Loc::current());
/// The elements of self where the bool `mask` (broadcast with self) is true, in order, as
/// a 1-D tensor (its size depends on the data).
Tensor masked_select(const Tensor& self, const Tensor& mask, Loc loc = Loc::current());

}  // namespace ember
