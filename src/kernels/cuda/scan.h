// kernels/cuda/scan.h — the CUDA cumulative sum (cumsum) along one dim, over the row
// geometry of reduce.h (any strides), in PyTorch's CUDA order and rounding: elements are
// converted to the result dtype (as the CPU's cast before the scan) and every partial sum
// is rounded to it (PyTorch scans in the result dtype, half and bfloat16 included). Along
// the last dim, a block per row scans chunks in shared memory (Sklansky's tree, each chunk
// starting from the previous one's total; the chunk size is PyTorch's for the shape);
// along another dim, a thread per row adds in order. See Note [cuda] (docs/notes/cuda.md),
// "Index reductions, any/all and cumsum".
#pragma once

#include <string>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

struct ScanKernel {
  ScalarType in = kFloat;
  ScalarType out = kFloat;
  bool sequential = false;  ///< a thread per row adding in order, else a block per row in chunks
};

/// "ember_cumsum_i32_to_i64", "ember_cumsum_sequential_f16_to_f16".
std::string kernel_symbol(const ScanKernel& k);
/// The translation unit: `(Out* out, const In* in, double p0, RowGeometry g)`; p0 is the
/// log2 of the chunk (chunked kernels).
std::string render_cumsum(const ScanKernel& k);

/// log2 of the chunk PyTorch's CUDA scan uses for `rows` rows of `row_size` along the
/// last dim: get_log_num_threads_x_inner_scan in its uint32 arithmetic (so a shape with far
/// more rows than columns wraps around to the largest chunk, 1024, as there), plus one (a
/// chunk is two elements per x-thread).
int inner_scan_log_chunk(int64_t rows, int64_t row_size);

/// out = cumsum(self) along `dim` (wrapped); out has self's sizes and any strides.
void cumsum(const Tensor& self, int64_t dim, const Tensor& out);

}  // namespace ember::kernels::cuda
