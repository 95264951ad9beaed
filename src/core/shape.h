// core/shape.h — shape arithmetic shared by meta functions and kernels: dim wrapping,
// contiguous strides, broadcasting, and iteration over multi-indices.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ember/array_ref.h"
#include "ember/error.h"

namespace ember::core {

/// Wraps a possibly negative dim into [0, ndim); raises PyTorch's IndexError if out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, bool scalar_ok = true);
/// Wraps every dim and checks that none repeats.
std::vector<int64_t> wrap_dims(IntArrayRef dims, int64_t ndim);
/// A bitmask of dims (after wrapping); empty `dims` means all when `empty_means_all`.
std::vector<bool> dim_mask(IntArrayRef dims, int64_t ndim, bool empty_means_all = true);

int64_t numel_of(IntArrayRef sizes);
std::vector<int64_t> contiguous_strides(IntArrayRef sizes);
bool is_contiguous(IntArrayRef sizes, IntArrayRef strides);
/// c10's TensorImpl::is_contiguous(memory_format) ("channels_last", "channels_last_3d", or
/// any other name for the plain rule): dense in the format's dim order (C, the spatial dims
/// from the last, N), size-1 dims skipped; false for a channels_last format of another rank.
bool is_contiguous_as(IntArrayRef sizes, IntArrayRef strides, std::string_view memory_format);
/// Whether the elements exactly tile a block of memory with no holes or overlaps.
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);
/// c10's is_channels_last_strides_2d: whether a 4-D tensor is laid out NHWC (channels
/// fastest, then W, H, N), ambiguous layouts (size-1 dims, C == 1) read as NCHW as
/// PyTorch's suggest_memory_format reads them. False for other ranks.
bool is_channels_last_strides_2d(IntArrayRef sizes, IntArrayRef strides);
/// The strides of a dense channels_last tensor of `sizes` (rank 3 or more): channels
/// fastest, then the last dim back to dim 2, then the batch (c10's
/// get_channels_last_strides_2d for rank 4; [L*C, 1, C] for rank 3).
std::vector<int64_t> channels_last_strides(IntArrayRef sizes);
/// Whether strides `a` and `b` of a tensor of `sizes` address the same elements: equal on
/// every dim larger than 1, or anything when an element count is 0. A size-1 dim's index
/// is always 0, so its stride never changes what is read or written (PyTorch's expand,
/// squeeze and computeStride give such dims strides Ember's ops may not).
bool strides_equivalent(IntArrayRef sizes, IntArrayRef a, IntArrayRef b);

/// The broadcast of two shapes; raises PyTorch's error when they do not broadcast.
std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b);
/// Strides to read a tensor of (sizes, strides) as if it had shape `target` (0 on
/// broadcast dims).
std::vector<int64_t> broadcast_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef target);

/// Infers a -1 entry of a view/reshape shape for `numel` elements.
std::vector<int64_t> infer_size(IntArrayRef shape, int64_t numel);

/// Strides for a view of (sizes, strides) as `shape` without copying, if one exists.
bool compute_view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef shape, std::vector<int64_t>& out);

/// Calls f(const int64_t* index) for every multi-index of `sizes` in row-major order.
template <typename F>
void for_each_index(IntArrayRef sizes, F&& f) {
  const size_t nd = sizes.size();
  for (int64_t s : sizes)
    if (s == 0) return;
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    f(idx.data());
    size_t d = nd;
    while (d > 0) {
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (nd == 0) return;
  }
}

}  // namespace ember::core
