// For each float32 product of the W4/W5/W8 rows (row-major C[M,N] = A[M,K] * B[K,N], in
// the three layouts the rows use), every algorithm cuBLASLt's heuristics offer (up to 16)
// timed with CUDA events, beside the first one (what Ember's plan takes today) and cuBLAS's
// cublasSgemm (what PyTorch's mm calls). Median of 25 runs after 5 warm-up runs, L2 warm.
//   nvcc -O2 -arch=sm_90 lt_algos.cu -lcublasLt -lcublas -o lt_algos
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { auto s_ = (x); if (s_ != 0) { std::printf("error %d at %s:%d\n", (int)s_, __FILE__, __LINE__); std::exit(1); } } while (0)

template <typename F> float median_ms(F f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f();
  std::vector<float> t;
  for (int i = 0; i < 25; ++i) {
    cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a); cudaEventDestroy(b);
  return t[t.size() / 2];
}

int main() {
  struct Shape { int m, k, n; bool bias; const char* row; };
  const Shape shapes[] = {
      {1024, 768, 2304, true, "W8/W5 qkv"}, {1024, 768, 768, true, "W8/W5 proj"}, {1024, 768, 3072, true, "W8/W5 fc"},
      {1024, 3072, 768, true, "W8/W5 fc2"}, {768, 1024, 3072, false, "W8 dW fc"}, {3072, 1024, 768, false, "W8 dW fc2"},
      {2304, 1024, 768, false, "W8 dW qkv"}, {768, 1024, 768, false, "W8 dW proj"}, {1024, 2304, 768, false, "W8 dX qkv"},
      {256, 1024, 4096, true, "W4 fc1"}, {256, 4096, 1024, true, "W4 fc2"}, {512, 768, 2304, true, "W5 1x512 qkv"}};
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cublasHandle_t cb; CK(cublasCreate(&cb));
  float *A, *B, *C, *bias; void* ws;
  const size_t big = size_t(4096) * 4096;
  CK(cudaMalloc(&A, big * 4)); CK(cudaMalloc(&B, big * 4)); CK(cudaMalloc(&C, big * 4)); CK(cudaMalloc(&bias, 4096 * 4));
  CK(cudaMalloc(&ws, 32 << 20));
  cudaMemset(A, 0, big * 4); cudaMemset(B, 0, big * 4); cudaMemset(bias, 0, 4096 * 4);
  std::printf("%-14s %-16s %-3s %9s %9s %9s %5s %4s %9s\n", "row", "MxKxN", "ly", "lt top1", "lt best", "cublas", "best#", "of", "TFLOP/s");
  for (const Shape& s : shapes) {
    for (int layout = 0; layout < 3; ++layout) {  // 0: A[M,K] B[K,N]; 1: B given as [N,K] (x @ W^T); 2: A given as [K,M] (A^T @ B)
      const bool tb = layout == 1, ta = layout == 2;
      const char* ly = layout == 0 ? "nn" : layout == 1 ? "nt" : "tn";
      // Column-major: C^T[N,M] = op(B)^T[N,K] * op(A)^T[K,M]
      cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N;  // first operand: B
      cublasOperation_t opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;  // second: A
      const int lda = tb ? s.k : s.n, ldb = ta ? s.m : s.k, ldc = s.n;
      cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
      const bool with_bias = s.bias && layout == 1;
      if (with_bias) {
        cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
      }
      cublasLtMatrixLayout_t la, lb, lc;
      CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, tb ? s.k : s.n, tb ? s.n : s.k, lda));
      CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, ta ? s.m : s.k, ta ? s.k : s.m, ldb));
      CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, s.n, s.m, ldc));
      cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
      uint64_t wsb = 32 << 20;
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
      cublasLtMatmulHeuristicResult_t res[16]; int found = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, res, &found));
      const float one = 1, zero = 0;
      std::vector<float> t(found);
      for (int i = 0; i < found; ++i)
        t[i] = median_ms([&] { cublasLtMatmul(lt, op, &one, B, la, A, lb, &zero, C, lc, C, lc, &res[i].algo, ws, res[i].workspaceSize, 0); });
      const int best = int(std::min_element(t.begin(), t.end()) - t.begin());
      const float cbt = median_ms([&] { cublasSgemm(cb, opA, opB, s.n, s.m, s.k, &one, B, lda, A, ldb, &zero, C, ldc); });
      const double flop = 2.0 * s.m * s.n * s.k;
      char mkn[32]; std::snprintf(mkn, sizeof mkn, "%dx%dx%d%s", s.m, s.k, s.n, with_bias ? "+b" : "");
      std::printf("%-14s %-16s %-3s %9.4f %9.4f %9.4f %5d %4d %9.1f\n", s.row, mkn, ly, t[0], t[best], cbt, best, found,
                  flop / (std::min(t[best], cbt) * 1e-3) / 1e12);
      cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc); cublasLtMatmulDescDestroy(op);
    }
  }
  return 0;
}
