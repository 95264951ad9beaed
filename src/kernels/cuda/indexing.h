// kernels/cuda/indexing.h — the CUDA kernels of the indexing family: advanced indexing
// (index.Tensor, index_put, and through them index_select and embedding) as an offset
// table on the device, gather, scatter and scatter_reduce along a dim, masked_scatter. Every kernel is rendered for the
// dtypes of a call and compiled by NVRTC like the pointwise kernels. The ops check their
// indices before calling these (kernels/cuda/host_checks.h): the kernels assume in-range
// indices. Writes that may land on one element twice (index_put, scatter, scatter_add)
// are ordered as on the CPU, so results are deterministic and equal the CPU's bit for
// bit, accumulations included. See Note [cuda] (docs/notes/cuda.md), "Indexing".
#pragma once

#include <string>
#include <vector>

#include "ember/tensor.h"
#include "kernels/cpu/indexing.h"
#include "kernels/cuda/kernel_source.h"

namespace ember::kernels::cuda {

enum class IndexKernelKind {
  Offsets,     ///< adv[b] += wrap(index[b]) * stride, index broadcast to adv's shape
  Gather,      ///< out[p, b, q] = self[pre(p) + adv[b] + post(q)]
  Put,         ///< self[pre(p) + adv[b] + post(q)] = values[p, b, q], b in order
  PutAdd,      ///< ... += values[p, b, q], b in order
  GatherDim,   ///< out[pos] = self[pos with pos[dim] = index[pos]]
  ScatterDim,  ///< out[pos with pos[dim] = index[pos]] = src[pos], along each line in order
  ScatterAdd,  ///< ... += src[pos]
  ScatterReduce,  ///< ... = reduce(out, src[pos]) along each line in order (`reduce`)
  MaskedScatter,  ///< out[i] = src[pos[i] - 1] where pos (the mask's inclusive cumsum) steps
};

/// One indexing kernel: `dtype` is the data's dtype (the index's for Offsets: int32/int64).
/// `sorted` (Put, PutAdd, ScatterDim, ScatterAdd): the writes come from runs of equal
/// targets in a stably sorted copy of the offsets or indices, one thread per run, instead
/// of one thread walking every write in order; for many writes to few (p, q) pairs or
/// lines. Either way the writes to one element happen in index order.
struct IndexKernel {
  IndexKernelKind kind = IndexKernelKind::Gather;
  ScalarType dtype = kFloat;
  bool sorted = false;
  cpu::ScatterReduce reduce = cpu::ScatterReduce::kSum;  ///< ScatterReduce's reduction
};

/// Device helpers for kernels over lines and gathered positions, after the pointwise
/// prelude: `dims_offset` (a linear index's offset under sizes and strides),
/// `operand_offsets` (the first n operands' offsets at a linear index of a Geometry) and
/// the grid-stride loop macro EMBER_GRID_STRIDE(i, n). The sort kernels use them too.
const char* index_helpers_source();

/// "ember_index_gather_f32", "ember_scatter_add_i64", "ember_index_put_sorted_f16".
std::string kernel_symbol(const IndexKernel& k);
/// The whole translation unit: the pointwise prelude, the indexing helpers and one
/// extern "C" kernel.
std::string render_index(const IndexKernel& k);

/// The geometry of Gather/Put, laid out as the rendered `IndexGeometry`: P = the product
/// of the pre dims, B = adv's elements, Q = the product of the post dims; the pre and post
/// dims index the data tensor by its strides.
struct IndexGeometry {
  long long P = 1, B = 1, Q = 1;
  int pre_ndim = 0, post_ndim = 0;
  long long pre_sizes[kMaxDims] = {};
  long long pre_strides[kMaxDims] = {};
  long long post_sizes[kMaxDims] = {};
  long long post_strides[kMaxDims] = {};
};
/// `t`'s pre and post dims around `B` indexed positions; raises NotImplementedError past
/// kMaxDims on either side.
IndexGeometry make_index_geometry(const Tensor& t, const std::vector<int64_t>& pre_dims, int64_t B,
                                  const std::vector<int64_t>& post_dims);

/// The offsets (int64, on `device`, `shape`) of advanced indexing: the sum over k of
/// wrap(indices[k]) * strides[k], where indices[k] (int32/int64, on the device) broadcasts
/// to `shape` and a negative value counts from sizes[k].
Tensor index_offsets(const std::vector<Tensor>& indices, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& strides, IntArrayRef shape, Device device);
/// out (contiguous, [pre..., adv..., post...]) = self at the offsets.
void index_gather(const Tensor& out, const Tensor& self, const std::vector<int64_t>& pre_dims, const Tensor& adv,
                  const std::vector<int64_t>& post_dims);
/// self at the offsets = values (contiguous, result-shaped), or += when `accumulate`;
/// repeated offsets are written in index order (last write wins; sums in index order).
/// Many writes (B) over few (p, q) pairs go through the sorted kernel.
void index_put(const Tensor& self, const Tensor& values, const std::vector<int64_t>& pre_dims, const Tensor& adv,
               const std::vector<int64_t>& post_dims, bool accumulate);
/// out[pos] = self[pos with pos[dim] = index[pos]]; out has index's sizes; rank >= 1.
void gather(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
/// out[pos with pos[dim] = index[pos]] = src[pos] (or +=); `src` is index-shaped or
/// bigger, or a 0-dim tensor (scatter.value) on the device; rank >= 1. Long lines, few of
/// them, go through the sorted kernel.
void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool add);
/// scatter_reduce.two on the device, with the CPU kernel's semantics and order (one thread
/// walks each line along the dim; without include_self the first write of a target
/// replaces it; kMean divides by the count, floor for integers). `src` is index-shaped or
/// bigger, on the device; rank >= 1; indices in range.
void scatter_reduce(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, cpu::ScatterReduce op,
                    bool include_self);
/// The inclusive running count of `mask`'s nonzero elements in row-major order: int64,
/// contiguous, 1-D, on the mask's device; its last element is how many the mask selects.
Tensor mask_positions(const Tensor& mask);
/// out (contiguous, holding self) gets source's next element wherever `positions` (from
/// mask_positions of a mask of out's sizes) steps; `source` contiguous on the device and
/// holding at least positions' last value elements (the op checks).
void masked_scatter(const Tensor& out, const Tensor& positions, const Tensor& source);

/// Whether B writes over `parallel` independent targets (index_put's (p, q) pairs,
/// scatter's lines) go through the sorted kernels: many writes, little parallelism.
bool use_sorted_writes(int64_t B, int64_t parallel);

/// `t` on `device`: itself when there, else a copy (index tensors made on the host).
Tensor on_device(const Tensor& t, Device device);

}  // namespace ember::kernels::cuda
