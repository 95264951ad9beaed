// kernels/cpu/gemm.h — batched matrix products for every numeric dtype: float/double go
// to OpenBLAS (strided operands passed as transposes where BLAS can read them), half and
// bfloat16 through sgemm on float copies, integers through a blocked loop.
#pragma once

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// out[b] = alpha * a[b] @ b[b] + beta * out[b] for a [B, m, k], b [B, k, n] (any strides,
/// including 0) and a contiguous out [B, m, n] of the same dtype. beta == 0 ignores out's
/// previous contents (NaN in it does not propagate), as BLAS does.
void gemm_batched(const Tensor& a, const Tensor& b, Tensor& out, const Scalar& alpha, const Scalar& beta);

}  // namespace ember::kernels::cpu
