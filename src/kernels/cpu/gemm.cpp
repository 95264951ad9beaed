// kernels/cpu/gemm.cpp — see gemm.h. BLAS reads a row-major matrix whose rows or whose
// columns are unit-stride; anything else (broadcast, sliced both ways) is packed first.
#include "kernels/cpu/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

/// One operand of a batched product: element strides of batch, row and column.
template <typename T>
struct Operand {
  const T* data;
  int64_t bs, rs, cs;
  const T* batch(int64_t b) const { return data + b * bs; }
};

template <typename T>
Operand<T> operand(const Tensor& t) {
  return {static_cast<const T*>(t.raw_data_ptr()), t.stride(0), t.stride(1), t.stride(2)};
}

/// How BLAS can read a rows x cols matrix with element strides (rs, cs), if it can.
struct BlasLayout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  // A size-1 dim's stride is meaningless; the leading dimension only has to be large enough.
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(cols, 1)))
    return {true, false, rows <= 1 ? std::max<int64_t>(cols, 1) : rs};
  if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(rows, 1)))
    return {true, true, cols <= 1 ? std::max<int64_t>(rows, 1) : cs};
  return {};
}

/// A rows x cols strided matrix as a dense row-major buffer of type D.
template <typename D, typename S>
void pack(const S* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, D* dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = static_cast<D>(static_cast<opmath_t<S>>(src[i * rs + j * cs]));
}

void blas_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}
void blas_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

/// C (m x n, dense) = alpha * A @ B + beta * C for float/double, one matrix.
template <typename T>
void blas_matrix(const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* c, int64_t m,
                 int64_t n, int64_t k, T alpha, T beta, std::vector<T>& abuf, std::vector<T>& bbuf) {
  BlasLayout la = blas_layout(m, k, ars, acs);
  BlasLayout lb = blas_layout(k, n, brs, bcs);
  if (!la.ok) {
    abuf.resize(static_cast<size_t>(m * k));
    pack(a, m, k, ars, acs, abuf.data());
    a = abuf.data();
    la = {true, false, std::max<int64_t>(k, 1)};
  }
  if (!lb.ok) {
    bbuf.resize(static_cast<size_t>(k * n));
    pack(b, k, n, brs, bcs, bbuf.data());
    b = bbuf.data();
    lb = {true, false, std::max<int64_t>(n, 1)};
  }
  blas_call(la.trans, lb.trans, m, n, k, alpha, a, la.ld, b, lb.ld, beta, c, std::max<int64_t>(n, 1));
}

template <typename T>
void gemm_blas(const Tensor& a, const Tensor& b, Tensor& out, T alpha, T beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  Operand<T> A = operand<T>(a), B = operand<T>(b);
  T* C = static_cast<T*>(out.raw_data_ptr());
  std::vector<T> abuf, bbuf;
  for (int64_t i = 0; i < batch; ++i)
    blas_matrix<T>(A.batch(i), A.rs, A.cs, B.batch(i), B.rs, B.cs, C + i * m * n, m, n, k, alpha, beta, abuf, bbuf);
}

/// Half and bfloat16: each matrix converted to float, sgemm, rounded back once.
template <typename T>
void gemm_reduced(const Tensor& a, const Tensor& b, Tensor& out, float alpha, float beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  Operand<T> A = operand<T>(a), B = operand<T>(b);
  T* C = static_cast<T*>(out.raw_data_ptr());
  std::vector<float> af(static_cast<size_t>(m * k)), bf(static_cast<size_t>(k * n)), cf(static_cast<size_t>(m * n));
  std::vector<float> unused_a, unused_b;
  for (int64_t i = 0; i < batch; ++i) {
    pack(A.batch(i), m, k, A.rs, A.cs, af.data());
    pack(B.batch(i), k, n, B.rs, B.cs, bf.data());
    T* c = C + i * m * n;
    if (beta != 0.0f)
      for (int64_t j = 0; j < m * n; ++j) cf[j] = static_cast<float>(c[j]);
    blas_matrix<float>(af.data(), k, 1, bf.data(), n, 1, cf.data(), m, n, k, alpha, beta, unused_a, unused_b);
    for (int64_t j = 0; j < m * n; ++j) c[j] = T(cf[j]);
  }
}

/// Integers: wrapping arithmetic (as the C++ types of PyTorch do), computed in uint64 so
/// that overflow is defined; the result truncated to T is the same modulo 2^bits.
template <typename T>
void gemm_integer(const Tensor& a, const Tensor& b, Tensor& out, int64_t alpha, int64_t beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  Operand<T> A = operand<T>(a), B = operand<T>(b);
  T* C = static_cast<T*>(out.raw_data_ptr());
  const uint64_t ualpha = static_cast<uint64_t>(alpha), ubeta = static_cast<uint64_t>(beta);
  std::vector<uint64_t> bpack(static_cast<size_t>(k * n));
  constexpr int64_t kBlock = 256;  // columns per block: the accumulators stay in L1
  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* ab = A.batch(bi);
    const T* bb = B.batch(bi);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        bpack[p * n + j] = static_cast<uint64_t>(static_cast<int64_t>(bb[p * B.rs + j * B.cs]));
    T* c = C + bi * m * n;
    const bool big = m * n * k > kGrainSize && !omp_in_parallel();
#pragma omp parallel for if (big)
    for (int64_t i = 0; i < m; ++i) {
      uint64_t acc[kBlock];
      for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
        const int64_t jn = std::min(kBlock, n - j0);
        std::fill(acc, acc + jn, uint64_t{0});
        for (int64_t p = 0; p < k; ++p) {
          const uint64_t av = static_cast<uint64_t>(static_cast<int64_t>(ab[i * A.rs + p * A.cs]));
          const uint64_t* brow = bpack.data() + p * n + j0;
          for (int64_t j = 0; j < jn; ++j) acc[j] += av * brow[j];
        }
        T* crow = c + i * n + j0;
        for (int64_t j = 0; j < jn; ++j) {
          uint64_t v = ualpha * acc[j];
          if (beta != 0) v += ubeta * static_cast<uint64_t>(static_cast<int64_t>(crow[j]));
          crow[j] = static_cast<T>(v);
        }
      }
    }
  }
}

}  // namespace

void gemm_batched(const Tensor& a, const Tensor& b, Tensor& out, const Scalar& alpha, const Scalar& beta) {
  EMBER_INTERNAL_ASSERT(a.dim() == 3 && b.dim() == 3 && out.dim() == 3 && out.is_contiguous());
  const int64_t m = out.size(1), n = out.size(2), k = a.size(2);
  EMBER_CHECK(m < INT_MAX && n < INT_MAX && k < INT_MAX) << "matrix dimensions too large for BLAS";
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  if (k == 0) {
    // An empty sum: only beta * out remains.
    EMBER_DISPATCH_NUMERIC_TYPES(dt, "addmm_impl_cpu_", [&] {
      scalar_t* c = static_cast<scalar_t*>(out.raw_data_ptr());
      const auto bv = beta.to<opmath_t<scalar_t>>();
      using acc_t = opmath_t<scalar_t>;
      for (int64_t i = 0; i < out.numel(); ++i)
        c[i] = static_cast<scalar_t>(bv == 0 ? acc_t(0) : static_cast<acc_t>(bv * static_cast<acc_t>(c[i])));
    });
    return;
  }
  switch (dt) {
    case kFloat: return gemm_blas<float>(a, b, out, alpha.to<float>(), beta.to<float>());
    case kDouble: return gemm_blas<double>(a, b, out, alpha.to_double(), beta.to_double());
    case kHalf: return gemm_reduced<Half>(a, b, out, static_cast<float>(alpha.to_double()), static_cast<float>(beta.to_double()));
    case kBFloat16:
      return gemm_reduced<BFloat16>(a, b, out, static_cast<float>(alpha.to_double()), static_cast<float>(beta.to_double()));
    case kUInt8: return gemm_integer<uint8_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt8: return gemm_integer<int8_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt16: return gemm_integer<int16_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt32: return gemm_integer<int32_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt64: return gemm_integer<int64_t>(a, b, out, alpha.to_long(), beta.to_long());
    default: break;
  }
  EMBER_FAIL() << "\"addmm_impl_cpu_\" not implemented for '" << scalar_type_name(dt) << "'";
}

}  // namespace ember::kernels::cpu
