// ember/ops/shape.h — joining, splitting (see view.h), repeating and reordering tensors.
#pragma once

#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor repeat(const Tensor& self, IntArrayRef repeats, Loc loc = Loc::current());
Tensor flip(const Tensor& self, IntArrayRef dims, Loc loc = Loc::current());
Tensor tril(const Tensor& self, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor triu(const Tensor& self, int64_t diagonal = 0, Loc loc = Loc::current());
/// self with src written over self[start:end:step] along dim (src has that slice's sizes).
/// start, end and index are sizes (SymInt): one computed with ember::sym_size stays
/// symbolic in a trace (Note [dynamic shapes]).
Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim = 0, std::optional<SymInt> start = std::nullopt,
                     std::optional<SymInt> end = std::nullopt, int64_t step = 1, Loc loc = Loc::current());
/// self with src written over self.select(dim, index).
Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, SymInt index, Loc loc = Loc::current());

}  // namespace ember
