// kernels/cpu/copy.h — the strided copy every kernel that moves data uses: copy_,
// _to_copy and clone, cat/flip/repeat/tril (as views over one index space), padding.
#pragma once

#include <vector>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// dst[...] = src[...]: src broadcasts to dst's shape; values convert when the dtypes
/// differ (C casts, with ATen's results for NaN and out-of-range floats to integers).
/// Strides may be anything, negative included; the memory of dst and src must not
/// overlap (copy_ clones src first when they do).
void copy_into(const Tensor& dst, const Tensor& src);

/// A tensor over `base`'s storage with the given geometry, made without dispatch and
/// without autograd state: for kernels that describe their inputs and outputs as views.
Tensor raw_view(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset);

}  // namespace ember::kernels::cpu
