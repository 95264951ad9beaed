// kernels/cuda/scan.h — the CUDA cumulative sum (cumsum) along one dim: a row kernel
// rendered after the row head of reduce_source.h, one block per row of the row geometry
// of reduce.h (any strides). Each thread sums a contiguous piece of its row, the block
// scans those sums in shared memory, and each thread rescans its piece from its offset.
// Elements are converted to the result dtype (as the CPU's cast before the scan) and
// accumulated in PyTorch's CUDA type: float for half and bfloat16, int64 for integers.
// See Note [cuda] (docs/notes/cuda.md), "Cumulative sums".
#pragma once

#include <string>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

struct ScanKernel {
  ScalarType in = kFloat;
  ScalarType out = kFloat;
};

/// "ember_cumsum_i32_to_i64".
std::string kernel_symbol(const ScanKernel& k);
/// The translation unit: `(Out* out, const In* in, double p0, RowGeometry g)`.
std::string render_cumsum(const ScanKernel& k);

/// out = cumsum(self) along `dim` (wrapped); out has self's sizes and any strides.
void cumsum(const Tensor& self, int64_t dim, const Tensor& out);

}  // namespace ember::kernels::cuda
