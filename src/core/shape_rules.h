// core/shape_rules.h — the shape rules written once over an integer type: int64_t for
// the plain forms in shape.h, SymInt for the symbolic ones in sym_geometry.h (a
// comparison of symbolic sizes records a guard; Note [dynamic shapes]). Broadcasting,
// contiguous strides, -1 in a view's shape and ATen's computeStride for views.
#pragma once

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/sym_int.h"
#include "ember/array_ref.h"
#include "ember/error.h"

namespace ember::core::rules {

inline int64_t shown(int64_t v) { return v; }
inline int64_t shown(const SymInt& v) { return v.hint(); }
/// The value as a plain integer: a symbolic one is specialized (guarded to keep its value).
inline int64_t guard_int(int64_t v) { return v; }
inline int64_t guard_int(const SymInt& v) { return v.guard_int(); }
inline bool is_symbolic_entry(int64_t) { return false; }
inline bool is_symbolic_entry(const SymInt& v) { return v.is_symbolic(); }
template <typename Int>
std::vector<int64_t> shown(ArrayRef<Int> v) {
  std::vector<int64_t> out;
  for (const Int& x : v) out.push_back(shown(x));
  return out;
}

/// A size as a factor of the strides before it: a size-0 dim does not zero them.
inline int64_t at_least_one(int64_t v) { return std::max<int64_t>(v, 1); }
inline SymInt at_least_one(const SymInt& v) { return v.maybe_int() == 0 ? SymInt(1) : v; }  // a symbol is >= 2

// Division of non-negative sizes (C++'s and Python's agree there).
inline int64_t divide(int64_t a, int64_t b) { return a / b; }
inline SymInt divide(const SymInt& a, const SymInt& b) { return floordiv(a, b); }
inline int64_t remainder(int64_t a, int64_t b) { return a % b; }
inline SymInt remainder(const SymInt& a, const SymInt& b) { return mod(a, b); }

template <typename Int>
Int numel_of(ArrayRef<Int> sizes) {
  Int n = 1;
  for (const Int& s : sizes) n = n * s;
  return n;
}

template <typename Int>
std::vector<Int> contiguous_strides(ArrayRef<Int> sizes) {
  std::vector<Int> strides(sizes.size(), Int(1));
  Int s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s = s * at_least_one(sizes[i]);
  }
  return strides;
}

template <typename Int>
std::vector<Int> broadcast_shapes(ArrayRef<Int> a, ArrayRef<Int> b) {
  const size_t nd = std::max(a.size(), b.size());
  std::vector<Int> out(nd, Int(1));
  // From the last dim down, as ATen's infer_size: with several mismatching dims the error
  // names the last one, as PyTorch's does.
  for (size_t i = nd; i-- > 0;) {
    const int64_t ia = static_cast<int64_t>(i) - static_cast<int64_t>(nd - a.size());
    const int64_t ib = static_cast<int64_t>(i) - static_cast<int64_t>(nd - b.size());
    const Int sa = ia >= 0 ? a[ia] : Int(1);
    const Int sb = ib >= 0 ? b[ib] : Int(1);
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1)
        << "The size of tensor a (" << shown(sa) << ") must match the size of tensor b (" << shown(sb)
        << ") at non-singleton dimension " << i;
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

template <typename Int>
std::vector<Int> broadcast_strides(ArrayRef<Int> sizes, ArrayRef<Int> strides, ArrayRef<Int> target) {
  const size_t nd = target.size();
  EMBER_INTERNAL_ASSERT(sizes.size() <= nd);
  std::vector<Int> out(nd, Int(0));
  const size_t off = nd - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == target[off + i]) {
      out[off + i] = sizes[i] == 1 ? Int(0) : strides[i];
    } else {
      EMBER_CHECK(sizes[i] == 1) << "The expanded size of the tensor (" << shown(target[off + i])
                                 << ") must match the existing size (" << shown(sizes[i])
                                 << ") at non-singleton dimension " << off + i
                                 << ".  Target sizes: " << IntArrayRef(shown(target))
                                 << ".  Tensor sizes: " << IntArrayRef(shown(sizes));
      out[off + i] = 0;
    }
  }
  return out;
}

/// A shape as an error shows it: `[8, 16]`, or over symbols with the example values
/// (`[s0, 700] (here [77, 700])`).
inline std::string shape_text(IntArrayRef v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
inline std::string shape_text(ArrayRef<SymInt> v) {
  std::ostringstream os;
  bool symbolic = false;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) {
    os << (i ? ", " : "") << v[i].str();
    symbolic = symbolic || v[i].is_symbolic();
  }
  os << "]";
  if (symbolic) os << " (here " << IntArrayRef(shown(v)) << ")";
  return os.str();
}
inline std::string size_text(int64_t v) { return std::to_string(v); }
inline std::string size_text(const SymInt& v) {
  return v.is_symbolic() ? v.str() + " (here " + std::to_string(v.hint()) + ")" : std::to_string(v.hint());
}

/// `shape` (entries of type S: int64_t, or SymInt when a size list holds symbols) with its
/// -1 replaced by what makes the element count `numel`.
template <typename Int, typename S>
std::vector<Int> infer_size(ArrayRef<S> shape, const Int& numel) {
  std::vector<Int> out(shape.begin(), shape.end());
  Int known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    // A symbolic entry is a size, never -1 (symbols are at least 2).
    if (!is_symbolic_entry(shape[i]) && shown(shape[i]) == -1) {
      EMBER_CHECK(!infer) << "only one dimension can be inferred";
      infer = i;
    } else {
      EMBER_CHECK(is_symbolic_entry(shape[i]) || shown(shape[i]) >= 0) << "invalid shape dimension " << shown(shape[i]);
      known = known * out[i];
    }
  }
  if (infer) {
    EMBER_CHECK(known != 0 && remainder(numel, known) == 0)
        << "shape '" << shape_text(shape) << "' is invalid for input of size " << size_text(numel);
    out[*infer] = divide(numel, known);
  } else {
    EMBER_CHECK(known == numel) << "shape '" << shape_text(shape) << "' is invalid for input of size "
                                << size_text(numel);
  }
  return out;
}
template <typename Int>
std::vector<Int> infer_size(IntArrayRef shape, const Int& numel) {
  return infer_size<Int, int64_t>(shape, numel);
}

/// c10's is_channels_last_strides_2d: whether a 4-D tensor is laid out NHWC (channels
/// fastest, then W, H, N), ambiguous layouts (size-1 dims, C == 1) read as NCHW. Over
/// SymInt each comparison the ranges do not decide is a guard, and no size is read as an
/// integer: a symbolic contiguous or channels_last tensor gets the static answer without
/// one (Note [dynamic shapes]).
template <typename Int>
bool is_channels_last_strides_2d(ArrayRef<Int> sizes, ArrayRef<Int> strides) {
  if (sizes.size() != 4 || strides[1] == 0) return false;
  Int min = 0;
  for (int d : {1, 3, 2, 0}) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min = min * sizes[d];
  }
  return true;
}

/// The strides of a dense channels_last tensor of `sizes` (rank 3 or more): channels
/// fastest, then the last dim back to dim 2, then the batch.
template <typename Int>
std::vector<Int> channels_last_strides(ArrayRef<Int> sizes) {
  const size_t n = sizes.size();
  std::vector<Int> strides(n, Int(1));
  Int step = sizes[1];
  for (size_t d = n - 1; d >= 2; --d) {
    strides[d] = step;
    step = step * sizes[d];
  }
  strides[0] = step;
  return strides;
}

// After ATen's computeStride: groups old dims into contiguous chunks and maps the new
// shape onto them; fails when a new dim would straddle a chunk boundary.
template <typename Int>
bool compute_view_strides(ArrayRef<Int> oldshape, ArrayRef<Int> oldstride, ArrayRef<Int> newshape,
                          std::vector<Int>& newstride) {
  newstride.assign(newshape.size(), Int(0));
  if (oldshape.empty()) {
    std::fill(newstride.begin(), newstride.end(), Int(1));
    return true;
  }
  const Int numel = numel_of(oldshape);
  if (numel == 0 && oldshape == newshape) {
    newstride = oldstride.vec();
    return true;
  }
  if (numel == 0) {
    newstride = contiguous_strides(newshape);
    return true;
  }
  if constexpr (std::is_same_v<Int, SymInt>) {
    // A tensor whose strides are its contiguous ones (the same expressions) is one chunk:
    // the walk below would give the new shape's contiguous strides, after comparing partial
    // products of symbolic sizes with the numel (`2*s1 < 8*s0*s1`), which the ranges often
    // cannot decide and would guard. The answer without the comparisons.
    const std::vector<Int> contiguous = contiguous_strides(oldshape);
    bool same = true;
    for (size_t d = 0; same && d < contiguous.size(); ++d) same = contiguous[d].expr() == oldstride[d].expr();
    if (same) {
      newstride = contiguous_strides(newshape);
      return true;
    }
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  Int chunk_base_stride = oldstride.back();
  Int tensor_numel = 1;
  Int view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel = tensor_numel * oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel = view_numel * newshape[view_d];
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

}  // namespace ember::core::rules
