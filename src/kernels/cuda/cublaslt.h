// kernels/cuda/cublaslt.h — one cuBLASLt matrix product (strided-batched, column-major, as
// gemm_plan.h lays it out) on the current stream, with cuBLASLt opened by dlopen on first
// use (EMBER_CUBLASLT_LIBRARY, libcublasLt.so.13, the toolkit's library directory) and
// reached through a table of function pointers. A handle per device, the algorithm from
// cuBLASLt's heuristics, and the workspace from the caching allocator on the current
// stream. A build without CUDA links cublaslt_off.cpp, which raises. See Note [cuda], "GEMM".
#pragma once

#include <cstdint>
#include <string>

#include "ember/dtype.h"

namespace ember::kernels::cuda {

/// Whether cuBLASLt can be opened and has every function Ember calls; `reason` says why not.
bool cublaslt_available(std::string* reason);
/// cuBLASLt's version number (cublasLtGetVersion: 130000 for 13.0.0).
int64_t cublaslt_version();

/// D = alpha·op(A)·op(B) + beta·D for each of `batch` matrices, all column-major with
/// leading dimensions ld_* and batch strides stride_* (elements). op(A) is m × k and op(B)
/// k × n; A is stored k × m when trans_a (m × k otherwise), B n × k when trans_b. beta == 0:
/// D is not read. float32 computes in float32 (TF32 when `allow_tf32`), half and bfloat16 in
/// float32, float64 in float64. m, n, k > 0.
struct LtMatmul {
  ScalarType dtype = kFloat;
  bool allow_tf32 = false;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  int64_t ld_a = 1, stride_a = 0;
  const void* b = nullptr;
  int64_t ld_b = 1, stride_b = 0;
  void* d = nullptr;
  int64_t ld_d = 1, stride_d = 0;
  double alpha = 1, beta = 0;
  /// When set: a vector of m elements (D's dtype, 16-byte aligned) added to every column
  /// of D by cuBLASLt's bias epilogue, D = alpha·op(A)·op(B) + bias; beta must be 0.
  const void* bias = nullptr;
  int device = 0;
};
void lt_matmul(const LtMatmul& call);

}  // namespace ember::kernels::cuda
