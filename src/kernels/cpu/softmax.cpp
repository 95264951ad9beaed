// kernels/cpu/softmax.cpp — see softmax.h. Rows are shifted by their max so exp never
// overflows; a row of all -inf gives -inf - -inf = nan, as PyTorch does. Half and
// bfloat16 rows are widened to float, computed, and rounded once.
#include "kernels/cpu/softmax.h"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu/loops.h"
#include "kernels/cpu/vec.h"

namespace ember::kernels::cpu {
namespace {

using vec::lane_max;
using vec::lane_sum;
using vec::Vectorized;



/// One contiguous row of n elements (float or double).
template <typename T>
void softmax_row(const T* x, T* y, int64_t n, bool log) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  const int64_t nv = n - n % W;
  T mx = -std::numeric_limits<T>::infinity();
  if (nv > 0) {
    V vm = V::load(x);
    for (int64_t i = W; i < nv; i += W) {
      V xi = V::load(x + i);
      vm = vec::where(xi > vm, xi, vm);
    }
    mx = lane_max(vm);
  }
  for (int64_t i = nv; i < n; ++i) mx = std::max(mx, x[i]);

  const V vmx(mx);
  V vsum(T(0));
  T sum = 0;
  if (log) {
    for (int64_t i = 0; i < nv; i += W) vsum = vsum + vec::exp(V::load(x + i) - vmx);
    for (int64_t i = nv; i < n; ++i) sum += vec::exp(x[i] - mx);
    const T lse = vec::log(sum + lane_sum(vsum));
    const V vlse(lse);
    for (int64_t i = 0; i < nv; i += W) ((V::load(x + i) - vmx) - vlse).store(y + i);
    for (int64_t i = nv; i < n; ++i) y[i] = (x[i] - mx) - lse;
  } else {
    for (int64_t i = 0; i < nv; i += W) {
      V e = vec::exp(V::load(x + i) - vmx);
      e.store(y + i);
      vsum = vsum + e;
    }
    for (int64_t i = nv; i < n; ++i) {
      y[i] = vec::exp(x[i] - mx);
      sum += y[i];
    }
    const T r = T(1) / (sum + lane_sum(vsum));
    const V vr(r);
    for (int64_t i = 0; i < nv; i += W) (V::load(y + i) * vr).store(y + i);
    for (int64_t i = nv; i < n; ++i) y[i] *= r;
  }
}

/// Columns [j, j + width) of a [dim, inner] slab, width one vector or one scalar (VT).
template <typename T, typename VT>
void softmax_columns(const T* x, T* y, int64_t dim, int64_t inner, bool log) {
  auto load = [](const T* p) {
    if constexpr (std::is_same_v<VT, T>) return *p;
    else return VT::load(p);
  };
  auto store = [](VT v, T* p) {
    if constexpr (std::is_same_v<VT, T>) *p = v;
    else v.store(p);
  };
  VT mx(-std::numeric_limits<T>::infinity());
  for (int64_t d = 0; d < dim; ++d) {
    VT xd = load(x + d * inner);
    mx = vec::where(xd > mx, xd, mx);
  }
  VT sum(T(0));
  for (int64_t d = 0; d < dim; ++d) {
    VT e = vec::exp(load(x + d * inner) - mx);
    if (!log) store(e, y + d * inner);
    sum = sum + e;
  }
  if (log) {
    const VT lse = vec::log(sum);
    for (int64_t d = 0; d < dim; ++d) store((load(x + d * inner) - mx) - lse, y + d * inner);
  } else {
    const VT r = VT(T(1)) / sum;
    for (int64_t d = 0; d < dim; ++d) store(load(y + d * inner) * r, y + d * inner);
  }
}

/// Columns [j0, j1) of one [dim, inner] slab.
template <typename T>
void softmax_block(const T* x, T* y, int64_t dim, int64_t inner, int64_t j0, int64_t j1, bool log) {
  using V = Vectorized<T>;
  int64_t j = j0;
  for (; j + V::size() <= j1; j += V::size()) softmax_columns<T, V>(x + j, y + j, dim, inner, log);
  for (; j < j1; ++j) softmax_columns<T, T>(x + j, y + j, dim, inner, log);
}

template <typename T>
void softmax_native(const T* x, T* y, int64_t outer, int64_t dim, int64_t inner, bool log) {
  const bool big = outer * dim * inner > kGrainSize && !omp_in_parallel();
  if (inner == 1) {
#pragma omp parallel for if (big) schedule(static)
    for (int64_t o = 0; o < outer; ++o) softmax_row(x + o * dim, y + o * dim, dim, log);
    return;
  }
  constexpr int64_t kBlock = 64;
  const int64_t nblocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for if (big) schedule(static)
  for (int64_t task = 0; task < outer * nblocks; ++task) {
    const int64_t o = task / nblocks, j0 = (task % nblocks) * kBlock;
    const int64_t off = o * dim * inner;
    softmax_block(x + off, y + off, dim, inner, j0, std::min(inner, j0 + kBlock), log);
  }
}

/// Half / bfloat16: each [dim, inner] slab widened to float.
template <typename T>
void softmax_reduced(const T* x, T* y, int64_t outer, int64_t dim, int64_t inner, bool log) {
  const int64_t slab = dim * inner;
  const bool big = outer * slab > kGrainSize && !omp_in_parallel();
#pragma omp parallel if (big)
  {
    std::vector<float> in(static_cast<size_t>(slab)), out(static_cast<size_t>(slab));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < slab; ++i) in[i] = static_cast<float>(x[o * slab + i]);
      if (inner == 1) softmax_row(in.data(), out.data(), dim, log);
      else softmax_block(in.data(), out.data(), dim, inner, 0, inner, log);
      for (int64_t i = 0; i < slab; ++i) y[o * slab + i] = T(out[i]);
    }
  }
}

}  // namespace

void softmax(const Tensor& in, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  EMBER_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && in.dtype() == out.dtype());
  if (outer * dim * inner == 0) return;
  switch (in.dtype()) {
    case kFloat:
      return softmax_native(in.data_ptr<float>(), out.data_ptr<float>(), outer, dim, inner, log);
    case kDouble:
      return softmax_native(in.data_ptr<double>(), out.data_ptr<double>(), outer, dim, inner, log);
    case kHalf:
      return softmax_reduced(in.data_ptr<Half>(), out.data_ptr<Half>(), outer, dim, inner, log);
    case kBFloat16:
      return softmax_reduced(in.data_ptr<BFloat16>(), out.data_ptr<BFloat16>(), outer, dim, inner, log);
    default:
      break;
  }
  EMBER_INTERNAL_ASSERT(false) << "softmax kernel for dtype " << in.dtype();
}

}  // namespace ember::kernels::cpu
