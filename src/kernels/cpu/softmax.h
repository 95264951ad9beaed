// kernels/cpu/softmax.h — softmax and log_softmax along one dim: fused per row (max,
// exp-sum, scale in one sweep over a cache-resident row), parallel over rows.
#pragma once

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// out = (log_)softmax(in) along the middle dim of a contiguous [outer, dim, inner] view;
/// in and out are contiguous and of one floating dtype.
void softmax(const Tensor& in, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log);

}  // namespace ember::kernels::cpu
