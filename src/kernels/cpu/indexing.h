// kernels/cpu/indexing.h — eager CPU kernels of the indexing family: gather/scatter along
// a dim, index_select, advanced indexing (as offset tables), sort, topk and nonzero.
// Callers check every index first: these kernels assume in-range indices.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// dst = src for tensors of one dtype, src broadcast to dst's shape.
void copy_elements(const Tensor& dst, const Tensor& src);

/// Values of an int32/int64 tensor broadcast to `shape`, in row-major order.
std::vector<int64_t> read_indices(const Tensor& index, IntArrayRef shape);

/// out[pos] = self[pos with pos[dim] = index[pos]] (all three tensors of one rank >= 1).
void gather_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
/// out[pos with pos[dim] = index[pos]] = src[pos] (or `value`, or += src[pos] when `add`).
/// `value` is a 0-dim tensor of out's dtype used when `src` is undefined.
void scatter_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, const Tensor& value,
                    bool add);
/// scatter_reduce.two's reductions.
enum class ScatterReduce { kSum, kProd, kMean, kAmax, kAmin };
/// out (a copy of self) combined with src at index along dim by `op` (amax/amin propagate
/// a NaN of src); without include_self a scattered position starts from its first src
/// value; kMean then divides each scattered position by its count (floor for integers).
void scatter_reduce_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduce op,
                           bool include_self);
/// out[i] = the next element of source for each i where mask[i] (out, a bool/uint8 mask of
/// out's size and source contiguous; source holds enough elements).
void masked_scatter_kernel(const Tensor& out, const Tensor& mask, const Tensor& source);
/// out = self.index_select(dim, idx) for a contiguous self and out.
void index_select_kernel(const Tensor& out, const Tensor& self, int64_t dim, const std::vector<int64_t>& idx);

/// Advanced indexing as three offset tables (in elements of the indexed tensor): the
/// result is [pre, adv, post] and element (p, b, q) sits at pre[p] + adv[b] + post[q].
struct IndexOffsets {
  std::vector<int64_t> pre, adv, post;
};
/// out (contiguous, [pre, adv, post] elements) = self[offsets].
void index_gather_kernel(const Tensor& out, const Tensor& self, const IndexOffsets& o);
/// self[offsets] = values (or += values when accumulating); values contiguous, result-shaped.
void index_put_kernel(const Tensor& self, const Tensor& values, const IndexOffsets& o, bool accumulate);

/// Sorts each line along `dim` of `values` (contiguous, a copy of the input) and writes the
/// permutation into `indices`. Unstable sorts use std::sort with ATen's comparator so that
/// ties come out in the order PyTorch's CPU kernel gives; NaN sorts as the largest value.
void sort_kernel(const Tensor& values, const Tensor& indices, int64_t dim, bool descending, bool stable);
/// The k largest (smallest) of each line of `self` along `dim`, as ATen's CPU topk.
void topk_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k, int64_t dim, bool largest,
                 bool sorted);
/// The number n of non-zero elements of `self` and their coordinates in row-major order,
/// flattened (n * ndim values).
std::pair<int64_t, std::vector<int64_t>> nonzero_kernel(const Tensor& self);

}  // namespace ember::kernels::cpu
