// core/shape.cpp — see shape.h.
#include "core/shape.h"

#include "core/shape_rules.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>

namespace ember::core {

int64_t wrap_dim(int64_t dim, int64_t ndim, bool scalar_ok) {
  if (ndim <= 0 && scalar_ok) ndim = 1;  // a 0-dim tensor accepts dim 0 and -1
  EMBER_CHECK_INDEX(dim >= -ndim && dim < ndim)
      << "Dimension out of range (expected to be in range of [" << -ndim << ", " << ndim - 1 << "], but got "
      << dim << ")";
  return dim < 0 ? dim + ndim : dim;
}

std::vector<int64_t> wrap_dims(IntArrayRef dims, int64_t ndim) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim);
    EMBER_CHECK(!seen[w]) << "dim " << w << " appears multiple times in the list of dims";
    seen[w] = true;
    out.push_back(w);
  }
  return out;
}

std::vector<bool> dim_mask(IntArrayRef dims, int64_t ndim, bool empty_means_all) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty() && empty_means_all);
  for (int64_t d : wrap_dims(dims, ndim))
    if (d < ndim) mask[d] = true;
  return mask;
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::vector<int64_t> contiguous_strides(IntArrayRef sizes) { return rules::contiguous_strides(sizes); }

bool is_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool is_channels_last_strides_2d(IntArrayRef sizes, IntArrayRef strides) {
  return rules::is_channels_last_strides_2d(sizes, strides);
}

std::vector<int64_t> channels_last_strides(IntArrayRef sizes) {
  EMBER_INTERNAL_ASSERT(sizes.size() >= 3) << "channels_last_strides: rank " << sizes.size();
  return rules::channels_last_strides(sizes);
}

bool is_contiguous_as(IntArrayRef sizes, IntArrayRef strides, std::string_view memory_format) {
  const bool last_2d = memory_format == "channels_last", last_3d = memory_format == "channels_last_3d";
  if (!last_2d && !last_3d) return is_contiguous(sizes, strides);
  if (sizes.size() != (last_2d ? 4u : 5u)) return false;
  const std::vector<size_t> order = last_2d ? std::vector<size_t>{1, 3, 2, 0} : std::vector<size_t>{1, 4, 3, 2, 0};
  int64_t expected = 1;
  for (size_t d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  const size_t nd = sizes.size();
  if (nd == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (size_t i : perm) {
    if (sizes[i] == 1) continue;
    if (sizes[i] == 0) return true;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool strides_equivalent(IntArrayRef sizes, IntArrayRef a, IntArrayRef b) {
  if (a.size() != sizes.size() || b.size() != sizes.size()) return false;
  if (numel_of(sizes) == 0) return true;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 1 && a[i] != b[i]) return false;
  return true;
}

std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b) { return rules::broadcast_shapes(a, b); }

std::vector<int64_t> broadcast_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef target) {
  return rules::broadcast_strides(sizes, strides, target);
}

std::vector<int64_t> infer_size(IntArrayRef shape, int64_t numel) { return rules::infer_size(shape, numel); }

bool compute_view_strides(IntArrayRef oldshape, IntArrayRef oldstride, IntArrayRef newshape,
                          std::vector<int64_t>& newstride) {
  return rules::compute_view_strides(oldshape, oldstride, newshape, newstride);
}

}  // namespace ember::core
