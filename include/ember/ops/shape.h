// ember/ops/shape.h — joining, splitting (see view.h), repeating and reordering tensors.
#pragma once

#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor repeat(const Tensor& self, IntArrayRef repeats, Loc loc = Loc::current());
Tensor flip(const Tensor& self, IntArrayRef dims, Loc loc = Loc::current());
Tensor tril(const Tensor& self, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor triu(const Tensor& self, int64_t diagonal = 0, Loc loc = Loc::current());

}  // namespace ember
