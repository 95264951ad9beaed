// kernels/cuda/gemm_plan.cpp — see gemm_plan.h.
#include "kernels/cuda/gemm_plan.h"

#include <algorithm>

namespace ember::kernels::cuda {

MatrixLayout matrix_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  MatrixLayout l;
  // Row-major: consecutive elements of a row adjacent, rows at least a row apart.
  if ((cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= std::max<int64_t>(1, cols))) {
    l.usable = true;
    l.row_major = true;
    l.ld = rows <= 1 ? std::max<int64_t>(1, cols) : s0;
    return l;
  }
  // Column-major: the same with rows and columns exchanged.
  if ((rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= std::max<int64_t>(1, rows))) {
    l.usable = true;
    l.ld = cols <= 1 ? std::max<int64_t>(1, rows) : s1;
  }
  return l;
}

namespace {

/// A layout, or the contiguous one when the strides fit none (`copy` says so).
MatrixLayout layout_or_contiguous(int64_t rows, int64_t cols, const int64_t s[2], bool& copy) {
  MatrixLayout l = matrix_layout(rows, cols, s[0], s[1]);
  copy = !l.usable;
  if (copy) l = matrix_layout(rows, cols, std::max<int64_t>(1, cols), 1);
  return l;
}

}  // namespace

GemmPlan plan_gemm(int64_t m, int64_t n, int64_t k, const int64_t a_strides[2], const int64_t b_strides[2],
                   const int64_t out_strides[2]) {
  GemmPlan p;
  const MatrixLayout la = layout_or_contiguous(m, k, a_strides, p.copy_a);
  const MatrixLayout lb = layout_or_contiguous(k, n, b_strides, p.copy_b);
  const MatrixLayout lo = layout_or_contiguous(m, n, out_strides, p.copy_out);
  p.lt_k = k;
  if (lo.row_major) {
    // D = outᵀ (n × m) = bᵀ (n × k) · aᵀ (k × m). A row-major operand's memory already
    // holds its transpose column-major (no op); a column-major one needs op = T.
    p.swapped = true;
    p.lt_m = n;
    p.lt_n = m;
    p.trans_a = !lb.row_major;
    p.trans_b = !la.row_major;
    p.ld_a = lb.ld;
    p.ld_b = la.ld;
  } else {
    // D = out (m × n) = a (m × k) · b (k × n): a column-major operand is read as is.
    p.lt_m = m;
    p.lt_n = n;
    p.trans_a = la.row_major;
    p.trans_b = lb.row_major;
    p.ld_a = la.ld;
    p.ld_b = lb.ld;
  }
  p.ld_d = lo.ld;
  return p;
}

}  // namespace ember::kernels::cuda
