// kernels/cuda/sort.h — the CUDA kernels of sort and topk: a bitonic sorting network over
// each line along `dim`, in a scratch buffer of (key, index) pairs padded to a power of two,
// one launch per stage of the network. Keys are compared in the dtype's math type (float for
// half and bfloat16) with ATen's order (NaN above every number); equal keys keep their
// index order, so the result is always the stable sort's. See Note [cuda]
// (docs/notes/cuda.md), "sort and topk".
#pragma once

#include <string>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

enum class SortStage {
  Load,   ///< scratch[line, j] = (self[line, j], j), padding past the line's end
  Step,   ///< one compare-exchange stage of the bitonic network
  Store,  ///< values[line, c], indices[line, c] = scratch[line, c] for the first `count`
};

struct SortKernel {
  SortStage stage = SortStage::Step;
  ScalarType dtype = kFloat;  ///< the data's dtype
};

/// "ember_sort_load_f16", "ember_sort_step_f32", "ember_sort_store_i64".
std::string kernel_symbol(const SortKernel& k);
/// The whole translation unit: the pointwise prelude, the comparator and one kernel.
std::string render_sort(const SortKernel& k);

/// The number of compare-exchange stages of a bitonic network over `n` elements (padded
/// to a power of two L): log2(L) (log2(L) + 1) / 2.
int64_t bitonic_stages(int64_t n);

/// values/indices (contiguous, `self`'s sizes but `count` along dim) = the first `count`
/// elements of each line of `self` along `dim` sorted ascending or descending (NaN above
/// every number; equal keys in index order). sort passes count = self.size(dim), topk k.
void sort_lines(const Tensor& self, int64_t dim, bool descending, int64_t count, const Tensor& values,
                const Tensor& indices);

}  // namespace ember::kernels::cuda
