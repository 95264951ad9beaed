// kernels/cuda/gemm.cpp — see gemm.h.
#include "kernels/cuda/gemm.h"

#include <cstdint>

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

namespace {

/// The cuBLASLt call of `plan` for out = alpha · a @ b + beta · out (+ bias).
void run_plan(const GemmPlan& p, const Tensor& a, const Tensor& b, const Tensor& out, double alpha, double beta,
              bool allow_tf32, const void* bias) {
  const int64_t batch = out.size(0);
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
  c.bias = bias;
  c.device = out.device().index;
  lt_matmul(c);
  if (p.copy_out) copy_into(out, d);
}

void check_operands(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_INTERNAL_ASSERT(a.dim() == 3 && b.dim() == 3 && out.dim() == 3) << "CUDA gemm takes batches of matrices";
  EMBER_INTERNAL_ASSERT(out.is_cuda() && a.device() == out.device() && b.device() == out.device())
      << "CUDA gemm with tensors on " << a.device() << ", " << b.device() << " and " << out.device();
  EMBER_INTERNAL_ASSERT(a.dtype() == out.dtype() && b.dtype() == out.dtype()) << "CUDA gemm of mixed dtypes";
}

GemmPlan plan_of(const Tensor& a, const Tensor& b, const Tensor& out) {
  int64_t sa[2], sb[2], so[2];
  matrix_strides(a, sa);
  matrix_strides(b, sb);
  matrix_strides(out, so);
  return plan_gemm(out.size(1), out.size(2), a.size(2), sa, sb, so);
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& out, double alpha, double beta, bool allow_tf32) {
  check_operands(a, b, out);
  if (out.numel() == 0) return;
  if (a.size(2) == 0) {
    // Nothing to sum: beta · out, or zeros (out unread).
    const bool scale = beta != 0;
    pointwise(empty_product_kernel(out.dtype(), scale), out, scale ? std::vector<Tensor>{out} : std::vector<Tensor>{},
              beta);
    return;
  }
  run_plan(plan_of(a, b, out), a, b, out, alpha, beta, allow_tf32, nullptr);
}

bool gemm_bias(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, double alpha,
               bool allow_tf32) {
  check_operands(a, b, out);
  if (out.numel() == 0 || out.size(0) != 1 || a.size(2) == 0) return false;
  // float32 and float64 only: for half and bfloat16 the epilogue adds the bias after
  // rounding the product to the output dtype (three bfloat16 ulps off where they cancel,
  // on an H100), where beta · C adds it before the one rounding.
  if (out.dtype() != kFloat && out.dtype() != kDouble) return false;
  if (bias.dim() != 1 || bias.size(0) != out.size(2) || bias.stride(0) != 1 || bias.dtype() != out.dtype() ||
      bias.device() != out.device() || reinterpret_cast<uintptr_t>(bias.raw_data_ptr()) % 16 != 0)
    return false;
  // The epilogue adds a vector along D's rows: out's columns only when D is outᵀ.
  const GemmPlan p = plan_of(a, b, out);
  if (!p.swapped || p.copy_out) return false;
  run_plan(p, a, b, out, alpha, 0, allow_tf32, bias.raw_data_ptr());
  return true;
}

}  // namespace ember::kernels::cuda
