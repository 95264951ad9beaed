// kernels/cuda/gemm.cpp — see gemm.h.
#include "kernels/cuda/gemm.h"

#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/gemm_plan.h"
#include "kernels/cuda/loops.h"

namespace ember::kernels::cuda {
namespace {

Tensor contiguous_copy(const Tensor& t) {
  Tensor c = empty_device(t.sizes(), t.dtype(), t.device());
  copy_into(c, t);
  return c;
}

/// A matrix's strides (rows, columns) within a batch.
void matrix_strides(const Tensor& t, int64_t s[2]) {
  s[0] = t.stride(1);
  s[1] = t.stride(2);
}

}  // namespace

PointwiseKernel empty_product_kernel(ScalarType dtype, bool scale) {
  if (scale) return {.name = "scale", .expr = "x * T(p0)", .helpers = {}, .inputs = {dtype}, .compute = dtype, .out = dtype};
  return {.name = "zero", .expr = "T(0)", .helpers = {}, .inputs = {}, .compute = dtype, .out = dtype};
}

void gemm(const Tensor& a, const Tensor& b, const Tensor& out, double alpha, double beta, bool allow_tf32) {
  EMBER_INTERNAL_ASSERT(a.dim() == 3 && b.dim() == 3 && out.dim() == 3) << "CUDA gemm takes batches of matrices";
  EMBER_INTERNAL_ASSERT(out.is_cuda() && a.device() == out.device() && b.device() == out.device())
      << "CUDA gemm with tensors on " << a.device() << ", " << b.device() << " and " << out.device();
  EMBER_INTERNAL_ASSERT(a.dtype() == out.dtype() && b.dtype() == out.dtype()) << "CUDA gemm of mixed dtypes";
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  if (out.numel() == 0) return;
  if (k == 0) {
    // Nothing to sum: beta · out, or zeros (out unread).
    const bool scale = beta != 0;
    pointwise(empty_product_kernel(out.dtype(), scale), out, scale ? std::vector<Tensor>{out} : std::vector<Tensor>{},
              beta);
    return;
  }
  int64_t sa[2], sb[2], so[2];
  matrix_strides(a, sa);
  matrix_strides(b, sb);
  matrix_strides(out, so);
  const GemmPlan p = plan_gemm(m, n, k, sa, sb, so);
  const Tensor ca = p.copy_a ? contiguous_copy(a) : a;
  const Tensor cb = p.copy_b ? contiguous_copy(b) : b;
  Tensor d = out;
  if (p.copy_out) d = beta != 0 ? contiguous_copy(out) : empty_device(out.sizes(), out.dtype(), out.device());
  const Tensor& first = p.swapped ? cb : ca;
  const Tensor& second = p.swapped ? ca : cb;
  auto batch_stride = [&](const Tensor& t) { return batch > 1 ? t.stride(0) : 0; };
  LtMatmul c;
  c.dtype = out.dtype();
  c.allow_tf32 = allow_tf32;
  c.trans_a = p.trans_a;
  c.trans_b = p.trans_b;
  c.m = p.lt_m;
  c.n = p.lt_n;
  c.k = p.lt_k;
  c.batch = batch;
  c.a = first.raw_data_ptr();
  c.ld_a = p.ld_a;
  c.stride_a = batch_stride(first);
  c.b = second.raw_data_ptr();
  c.ld_b = p.ld_b;
  c.stride_b = batch_stride(second);
  c.d = d.raw_data_ptr();
  c.ld_d = p.ld_d;
  c.stride_d = batch_stride(d);
  c.alpha = alpha;
  c.beta = beta;
  c.device = out.device().index;
  lt_matmul(c);
  if (p.copy_out) copy_into(out, d);
}

}  // namespace ember::kernels::cuda
