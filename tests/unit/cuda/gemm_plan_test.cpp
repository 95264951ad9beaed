// The plan that turns a matrix product of strided tensors into one column-major cuBLASLt
// call (kernels/cuda/gemm_plan.h): each layout rule on its own, and every combination of
// operand layouts (row-major, column-major, padded leading dimensions, size-1 dims,
// expanded and overlapping strides) executed by a small interpreter of the cuBLASLt call
// over the operands' real memory and compared with the product computed from the
// logical indices. A wrong transpose or leading dimension here would be a silently wrong
// product on the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "kernels/cuda/gemm_plan.h"

namespace ember::kernels::cuda {
namespace {

TEST(GemmPlan, ARowMajorMatrixIsReadInPlaceWithItsRowStrideAsLeadingDimension) {
  const MatrixLayout l = matrix_layout(3, 4, 4, 1);
  EXPECT_TRUE(l.usable);
  EXPECT_TRUE(l.row_major);
  EXPECT_EQ(l.ld, 4);
  EXPECT_EQ(matrix_layout(3, 4, 10, 1).ld, 10);  // rows padded (a slice of a wider matrix)
}

TEST(GemmPlan, AColumnMajorMatrixIsReadInPlaceWithItsColumnStrideAsLeadingDimension) {
  const MatrixLayout l = matrix_layout(3, 4, 1, 3);
  EXPECT_TRUE(l.usable);
  EXPECT_FALSE(l.row_major);
  EXPECT_EQ(l.ld, 3);
  EXPECT_EQ(matrix_layout(3, 4, 1, 8).ld, 8);
}

TEST(GemmPlan, StridesThatFitNeitherLayoutAreCopied) {
  EXPECT_FALSE(matrix_layout(3, 4, 8, 2).usable);   // every other column
  EXPECT_FALSE(matrix_layout(3, 4, 0, 1).usable);   // rows expanded (stride 0)
  EXPECT_FALSE(matrix_layout(3, 4, 1, 0).usable);   // columns expanded
  EXPECT_FALSE(matrix_layout(3, 4, 2, 1).usable);   // rows overlap
  EXPECT_FALSE(matrix_layout(3, 4, 1, 2).usable);   // columns overlap
}

TEST(GemmPlan, SizeOneDimsAcceptAnyStrideAndKeepALegalLeadingDimension) {
  // A row vector whose row stride is meaningless; a column vector with a strided step.
  EXPECT_TRUE(matrix_layout(1, 5, 0, 1).usable);
  EXPECT_EQ(matrix_layout(1, 5, 0, 1).ld, 5);
  const MatrixLayout col = matrix_layout(5, 1, 3, 7);
  EXPECT_TRUE(col.usable);
  EXPECT_TRUE(col.row_major);
  EXPECT_EQ(col.ld, 3);
  EXPECT_EQ(matrix_layout(1, 1, 0, 0).ld, 1);
  EXPECT_TRUE(matrix_layout(5, 1, 1, 0).usable);  // a contiguous column with stride 0 across its one column
}

TEST(GemmPlan, ARowMajorOutputComputesTheTransposedProductWithOperandsSwapped) {
  const int64_t a[2] = {4, 1}, b[2] = {5, 1}, o[2] = {5, 1};
  const GemmPlan p = plan_gemm(3, 5, 4, a, b, o);
  EXPECT_TRUE(p.swapped);
  EXPECT_FALSE(p.trans_a);
  EXPECT_FALSE(p.trans_b);
  EXPECT_EQ(p.lt_m, 5);
  EXPECT_EQ(p.lt_n, 3);
  EXPECT_EQ(p.lt_k, 4);
  EXPECT_EQ(p.ld_a, 5);
  EXPECT_EQ(p.ld_b, 4);
  EXPECT_EQ(p.ld_d, 5);
  EXPECT_FALSE(p.copy_a || p.copy_b || p.copy_out);
}

TEST(GemmPlan, ATransposedOperandBecomesATransposeFlagNotACopy) {
  // a = x.t() of a contiguous 4 x 3 x: column-major 3 x 4.
  const int64_t a[2] = {1, 3}, b[2] = {5, 1}, o[2] = {5, 1};
  const GemmPlan p = plan_gemm(3, 5, 4, a, b, o);
  EXPECT_FALSE(p.copy_a);
  EXPECT_TRUE(p.trans_b);  // cuBLASLt's B is a
  EXPECT_EQ(p.ld_b, 3);
}

// --- the interpreter ----------------------------------------------------------------------

/// A strided matrix over a buffer of its own.
struct Strided {
  int64_t rows, cols, s0, s1;
  std::vector<double> mem;
  int64_t extent() const { return (rows ? (rows - 1) * s0 : 0) + (cols ? (cols - 1) * s1 : 0) + 1; }
  double at(int64_t i, int64_t j) const { return mem[static_cast<size_t>(i * s0 + j * s1)]; }
};

Strided make(int64_t rows, int64_t cols, int64_t s0, int64_t s1, int seed) {
  Strided m{rows, cols, s0, s1, {}};
  m.mem.assign(static_cast<size_t>(m.extent()), -1000.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m.mem[static_cast<size_t>(i * s0 + j * s1)] = seed * 7 + i * 3 + j * 5 % 11;
  return m;
}

Strided contiguous(const Strided& m) {
  Strided c = make(m.rows, m.cols, std::max<int64_t>(1, m.cols), 1, 0);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) c.mem[static_cast<size_t>(i * c.s0 + j)] = m.at(i, j);
  return c;
}

/// Reads element (i, j) of a stored column-major matrix with leading dimension ld, as
/// cuBLASLt does; fails the test on a read outside the buffer.
double read(const std::vector<double>& mem, int64_t i, int64_t j, int64_t ld, std::string& err) {
  const int64_t off = i + j * ld;
  if (off < 0 || off >= static_cast<int64_t>(mem.size())) {
    err = "read outside the buffer";
    return 0;
  }
  return mem[static_cast<size_t>(off)];
}

/// Runs `plan` the way cuBLASLt would and returns what differs from a @ b ("" if nothing).
std::string run_plan(Strided a, Strided b, Strided out) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  const int64_t as[2] = {a.s0, a.s1}, bs[2] = {b.s0, b.s1}, os[2] = {out.s0, out.s1};
  const GemmPlan p = plan_gemm(m, n, k, as, bs, os);
  if (p.copy_a) a = contiguous(a);
  if (p.copy_b) b = contiguous(b);
  Strided d = p.copy_out ? contiguous(out) : out;
  const Strided& first = p.swapped ? b : a;
  const Strided& second = p.swapped ? a : b;
  // cuBLASLt's rule: ld >= rows of the stored matrix.
  const int64_t rows_a = p.trans_a ? p.lt_k : p.lt_m, rows_b = p.trans_b ? p.lt_n : p.lt_k;
  if (p.ld_a < std::max<int64_t>(1, rows_a) || p.ld_b < std::max<int64_t>(1, rows_b) ||
      p.ld_d < std::max<int64_t>(1, p.lt_m))
    return "a leading dimension below its stored rows";
  std::string err;
  for (int64_t i = 0; i < p.lt_m; ++i)
    for (int64_t j = 0; j < p.lt_n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < p.lt_k; ++l) {
        const double x = p.trans_a ? read(first.mem, l, i, p.ld_a, err) : read(first.mem, i, l, p.ld_a, err);
        const double y = p.trans_b ? read(second.mem, j, l, p.ld_b, err) : read(second.mem, l, j, p.ld_b, err);
        acc += x * y;
      }
      const int64_t off = i + j * p.ld_d;
      if (off >= static_cast<int64_t>(d.mem.size())) return "write outside the output";
      d.mem[static_cast<size_t>(off)] = acc;
    }
  if (!err.empty()) return err;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t l = 0; l < k; ++l) want += a.at(i, l) * b.at(l, j);
      if (d.at(i, j) != want) {
        std::ostringstream os;
        os << "out(" << i << ", " << j << ") = " << d.at(i, j) << ", expected " << want;
        return os.str();
      }
    }
  return "";
}

/// Layouts of a rows x cols matrix: contiguous, transposed, padded either way, a column
/// step, size-1 dims with odd strides, expanded.
std::vector<std::pair<int64_t, int64_t>> layouts(int64_t rows, int64_t cols) {
  const int64_t r = std::max<int64_t>(1, rows), c = std::max<int64_t>(1, cols);
  return {{c, 1}, {1, r}, {c + 3, 1}, {1, r + 2}, {2 * c, 2}, {0, 1}, {1, 0}, {7, 1}, {1, 7}, {c, c * r}};
}

TEST(GemmPlan, EveryOperandLayoutGivesTheProductOfTheLogicalMatrices) {
  int cases = 0;
  for (int64_t m : {1, 2, 3})
    for (int64_t k : {1, 2, 4})
      for (int64_t n : {1, 3}) {
        for (auto [a0, a1] : layouts(m, k))
          for (auto [b0, b1] : layouts(k, n))
            for (auto [o0, o1] : std::vector<std::pair<int64_t, int64_t>>{{n, 1}, {1, m}, {n + 2, 1}}) {
              const std::string why =
                  run_plan(make(m, k, a0, a1, 1), make(k, n, b0, b1, 2), make(m, n, o0, o1, 3));
              ++cases;
              EXPECT_TRUE(why.empty()) << why << " for m=" << m << " k=" << k << " n=" << n << ", a strides (" << a0
                                       << ", " << a1 << "), b strides (" << b0 << ", " << b1
                                       << "), out strides (" << o0 << ", " << o1 << ")";
            }
      }
  EXPECT_GT(cases, 1000);
}

}  // namespace
}  // namespace ember::kernels::cuda
