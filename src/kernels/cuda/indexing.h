// kernels/cuda/indexing.h — the CUDA kernels of the indexing family: advanced indexing
// (index.Tensor, index_put, and through them index_select and embedding) as an offset
// table on the device, gather and scatter along a dim. Every kernel is rendered for the
// dtypes of a call and compiled by NVRTC like the pointwise kernels. The ops check their
// indices before calling these (kernels/cuda/host_checks.h): the kernels assume in-range
// indices. Writes that may land on one element twice (index_put, scatter, scatter_add)
// are ordered as on the CPU, so results are deterministic and equal the CPU's bit for
// bit, accumulations included. See Note [cuda] (docs/notes/cuda.md), "Indexing".
#pragma once

#include <string>
#include <vector>

#include "ember/tensor.h"
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
};

/// One indexing kernel: `dtype` is the data's dtype (the index's for Offsets: int32/int64).
struct IndexKernel {
  IndexKernelKind kind = IndexKernelKind::Gather;
  ScalarType dtype = kFloat;
};

/// "ember_index_gather_f32", "ember_scatter_add_i64", "ember_index_offsets_i32".
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
void index_put(const Tensor& self, const Tensor& values, const std::vector<int64_t>& pre_dims, const Tensor& adv,
               const std::vector<int64_t>& post_dims, bool accumulate);
/// out[pos] = self[pos with pos[dim] = index[pos]]; out has index's sizes; rank >= 1.
void gather(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
/// out[pos with pos[dim] = index[pos]] = src[pos] (or +=); `src` is index-shaped or
/// bigger, or a 0-dim tensor (scatter.value) on the device; rank >= 1.
void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool add);

/// `t` on `device`: itself when there, else a copy (index tensors made on the host).
Tensor on_device(const Tensor& t, Device device);

}  // namespace ember::kernels::cuda
