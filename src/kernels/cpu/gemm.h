// kernels/cpu/gemm.h — matrix products for every numeric dtype: float on the fastest of
// oneDNN's sgemm, oneDNN's matmul primitive and OpenBLAS for each product shape (timed
// once; Note [sgemm autotuning] in gemm.cpp), double on OpenBLAS (held to one thread,
// split across OpenMP's threads here), so every GEMM runs on the one OpenMP pool; half and
// bfloat16 through the float path on float copies, integers through a blocked loop.
#pragma once

#include <cstdint>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// out[b] = alpha * a[b] @ b[b] + beta * out[b] for a [B, m, k], b [B, k, n] (any strides,
/// including 0) and a contiguous out [B, m, n] of the same dtype. beta == 0 ignores out's
/// previous contents (NaN in it does not propagate), as BLAS does.
void gemm_batched(const Tensor& a, const Tensor& b, Tensor& out, const Scalar& alpha, const Scalar& beta);

/// Row-major c[m, n] = alpha * op(a) @ op(b) + beta * c, op transposing when ta / tb, with
/// cblas_?gemm's leading dimensions. Threads over OpenMP's pool, or runs on the calling
/// thread inside a parallel region. k == 0 leaves beta * c (0 for beta == 0); beta == 0
/// never reads c and alpha == 0 never reads a or b.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

/// The float GEMM implementations the autotuner chooses among. PackedMatmul is oneDNN's
/// matmul primitive reading b reordered into the blocked layout it asks for: gemm_batched
/// keeps that copy of a right operand it has seen before, while its storage lives at the
/// same version (Note [packed right operands] in gemm.cpp); sgemm_on reorders b per call.
enum class SgemmImpl { Dnnl, MatmulPrimitive, OpenBlas, PackedMatmul };
/// "dnnl", "matmul", "openblas", "packed": the names EMBER_SGEMM takes and the autotuning
/// log shows.
const char* sgemm_impl_name(SgemmImpl impl);
/// gemm() on one implementation, bypassing the choice. For tests and measurements.
void sgemm_on(SgemmImpl impl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
/// How many float product shapes have been timed so far.
int64_t sgemm_tunings();
/// How many right operands gemm_batched has reordered into a packed layout so far, and the
/// bytes of the packs it holds now (Note [packed right operands] in gemm.cpp).
int64_t sgemm_operand_packs();
int64_t sgemm_packed_bytes();

}  // namespace ember::kernels::cpu
