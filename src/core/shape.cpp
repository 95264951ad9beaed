// core/shape.cpp — see shape.h.
#include "core/shape.h"

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

std::vector<int64_t> contiguous_strides(IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

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

std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  const size_t nd = std::max(a.size(), b.size());
  std::vector<int64_t> out(nd);
  // From the last dim down, as ATen's infer_size: with several mismatching dims the error
  // names the last one, as PyTorch's does.
  for (size_t i = nd; i-- > 0;) {
    const int64_t ia = static_cast<int64_t>(i) - static_cast<int64_t>(nd - a.size());
    const int64_t ib = static_cast<int64_t>(i) - static_cast<int64_t>(nd - b.size());
    const int64_t sa = ia >= 0 ? a[ia] : 1;
    const int64_t sb = ib >= 0 ? b[ib] : 1;
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1)
        << "The size of tensor a (" << sa << ") must match the size of tensor b (" << sb
        << ") at non-singleton dimension " << i;
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

std::vector<int64_t> broadcast_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef target) {
  const size_t nd = target.size();
  EMBER_INTERNAL_ASSERT(sizes.size() <= nd);
  std::vector<int64_t> out(nd, 0);
  const size_t off = nd - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == target[off + i]) {
      out[off + i] = sizes[i] == 1 ? 0 : strides[i];
    } else {
      EMBER_CHECK(sizes[i] == 1) << "The expanded size of the tensor (" << target[off + i]
                                 << ") must match the existing size (" << sizes[i] << ") at non-singleton dimension "
                                 << off + i << ".  Target sizes: " << target << ".  Tensor sizes: " << sizes;
      out[off + i] = 0;
    }
  }
  return out;
}

std::vector<int64_t> infer_size(IntArrayRef shape, int64_t numel) {
  std::vector<int64_t> out = shape.vec();
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      EMBER_CHECK(!infer) << "only one dimension can be inferred";
      infer = i;
    } else {
      EMBER_CHECK(out[i] >= 0) << "invalid shape dimension " << out[i];
      known *= out[i];
    }
  }
  if (infer) {
    EMBER_CHECK(known != 0 && numel % known == 0)
        << "shape '" << shape << "' is invalid for input of size " << numel;
    out[*infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel) << "shape '" << shape << "' is invalid for input of size " << numel;
  }
  return out;
}

// After ATen's computeStride: groups old dims into contiguous chunks and maps the new
// shape onto them; fails when a new dim would straddle a chunk boundary.
bool compute_view_strides(IntArrayRef oldshape, IntArrayRef oldstride, IntArrayRef newshape,
                          std::vector<int64_t>& newstride) {
  newstride.assign(newshape.size(), 0);
  if (oldshape.empty()) {
    std::fill(newstride.begin(), newstride.end(), 1);
    return true;
  }
  const int64_t numel = numel_of(oldshape);
  if (numel == 0 && oldshape == newshape) {
    newstride = oldstride.vec();
    return true;
  }
  if (numel == 0) {
    newstride = contiguous_strides(newshape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace ember::core
