// kernels/cuda/gemm_plan.h — how a matrix product of row-major-indexed tensors becomes
// one cuBLASLt call, which reads column-major matrices: for each operand, whether its
// strides let cuBLASLt read it in place (as stored, or as the transpose of what is stored,
// with a leading dimension) or it must be copied to a contiguous tensor first; and the
// call's shape, transposes and leading dimensions. Pure functions of sizes and strides
// (no CUDA), so the rules are tested on any machine (tests/unit/cuda/gemm_plan_test.cpp).
// The rules are PyTorch's (prepare_matrix_for_cublas); see Note [cuda], "GEMM".
#pragma once

#include <cstdint>

namespace ember::kernels::cuda {

/// One matrix (rows × cols; element (i, j) at i*s0 + j*s1) as cuBLASLt can read it.
struct MatrixLayout {
  bool usable = false;  ///< false: no leading dimension fits; copy it to contiguous first
  /// true: memory holds the transpose column-major (the matrix is row-major: s1 == 1);
  /// false: memory holds the matrix itself column-major (s0 == 1).
  bool row_major = false;
  int64_t ld = 1;  ///< leading dimension, >= max(1, rows stored)
};

/// The layout of a (rows × cols) matrix with strides (s0, s1). Row-major wins when both fit
/// (a dim of size 1 lets either). A stride 0 (an expanded dim) of a dim longer than 1 never
/// fits.
MatrixLayout matrix_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1);

/// The cuBLASLt call for out (m × n) = a (m × k) @ b (k × n):
/// D (lt_m × lt_n, column-major, ld_d) = op(A) (lt_m × lt_k) · op(B) (lt_k × lt_n).
/// With a row-major output D is outᵀ = bᵀ·aᵀ (A is b, B is a: `swapped`); with a
/// column-major output D is out = a·b. An operand marked copy_* is planned as if it were
/// contiguous (strides {cols, 1}), which is what the caller must hand over.
struct GemmPlan {
  bool copy_a = false, copy_b = false;  ///< a, b must be made contiguous first
  bool copy_out = false;                ///< out fits neither layout: compute into a contiguous tensor
  bool swapped = false;                 ///< cuBLASLt's A is b and its B is a
  bool trans_a = false, trans_b = false;
  int64_t lt_m = 0, lt_n = 0, lt_k = 0;
  int64_t ld_a = 1, ld_b = 1, ld_d = 1;
};

/// Strides are (s0, s1) of the 2-D matrices a (m × k), b (k × n) and out (m × n).
GemmPlan plan_gemm(int64_t m, int64_t n, int64_t k, const int64_t a_strides[2], const int64_t b_strides[2],
                   const int64_t out_strides[2]);

}  // namespace ember::kernels::cuda
