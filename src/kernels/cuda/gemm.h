// kernels/cuda/gemm.h — matrix products of CUDA tensors through cuBLASLt: the batched
// product every matmul-family op (mm, bmm, addmm, mv, dot) reduces to, with operands read
// in place where their strides allow (gemm_plan.h) and copied to contiguous otherwise,
// alpha and beta, and empty products. Shapes and dtypes are the ops' meta functions' to
// check; these only fill `out`. See Note [cuda] (docs/notes/cuda.md), "GEMM".
#pragma once

#include "ember/tensor.h"
#include "kernels/cuda/kernel_source.h"

namespace ember::kernels::cuda {

/// out[i] = alpha · a[i] @ b[i] + beta · out[i] for each i of the batch: a [B, m, k],
/// b [B, k, n], out [B, m, n] on one CUDA device, one dtype (float32, float64, float16,
/// bfloat16), any strides (a batch stride of 0 broadcasts). beta == 0: out is not read, so
/// NaN there does not propagate. k == 0: out = beta · out (zeros when beta == 0).
/// `allow_tf32`: float32 products may round their inputs to TF32.
void gemm(const Tensor& a, const Tensor& b, const Tensor& out, double alpha, double beta, bool allow_tf32);

/// out = alpha · a @ b + bias for a single product (a [1, m, k], b [1, k, n], out [1, m, n])
/// with `bias` a contiguous, 16-byte aligned vector of n elements added to every row,
/// through cuBLASLt's bias epilogue, as PyTorch's addmm with a 1-D self and beta 1 does.
/// float32 and float64 only. Returns false, doing nothing, where the epilogue does not fit
/// (half and bfloat16, k == 0, an output
/// cuBLASLt writes transposed or through a copy, a misaligned bias): the caller then
/// copies the bias into out and runs gemm with beta 1.
bool gemm_bias(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, double alpha,
               bool allow_tf32);

/// The pointwise kernels of an empty product (k == 0): out = beta · out (`scale`) or
/// out = 0.
PointwiseKernel empty_product_kernel(ScalarType dtype, bool scale);

}  // namespace ember::kernels::cuda
