// inductor/cpp_prelude.h — the start of every C++ translation unit the inductor generates:
// includes, strided and converting loads and stores of vector lanes, and the passes the row
// and column kernels call (sums, min/max, products, softmax), each with the eager kernels'
// arithmetic. Not part of Ember's own build: the inductor library embeds this text (the
// generated source shown in logs and the trace directory starts with it), and the build
// precompiles it for GCC, so each generated unit includes it instead of parsing it again.
// See Note [inductor] (docs/notes/inductor.md), "Code generation" and "The precompiled
// prelude".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <omp.h>

#include "kernels/cpu/vec.h"

namespace ember::vec {

// Strided and converting loads and stores of a vector's lanes.
// f(i) for i in [0, n): across OpenMP threads when `parallel`, else on this thread without
// entering an OpenMP region (a region whose `if` clause is false still costs libgomp about
// 0.7 µs a call). Kernels over size symbols decide with it at run time.
template <typename F>
inline void for_rows(bool parallel, int64_t n, F&& f) {
  if (parallel) {
    _Pragma("omp parallel for schedule(static)")
    for (int64_t i = 0; i < n; ++i) f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

template <typename V, typename S>
inline V ld(const S* p, int64_t s) {
  typename V::value_type t[V::size()];
  for (int i = 0; i < V::size(); ++i) t[i] = static_cast<typename V::value_type>(p[i * s]);
  return V::load(t);
}
// A where() condition: lane i is all ones when p[i * s] is true. Contiguous bools widen
// in the vector unit (one byte load, one conversion, one compare per vector).
template <typename V>
inline auto ld_mask(const bool* p, int64_t s) {
  using M = typename V::mask_raw;
  if (s == 1) {
    typedef uint8_t bytes __attribute__((vector_size(V::size())));
    bytes b;
    std::memcpy(&b, p, sizeof b);
    return typename V::Mask{__builtin_convertvector(b, M) != M{}};
  }
  return ld<V>(p, s) != V(typename V::value_type(0));
}
// A comparison's mask stored as bools (lane i all ones: true).
template <typename M>
inline void st_mask(bool* p, int64_t s, M m) {
  constexpr int n = sizeof(m.m) / sizeof(m.m[0]);
  for (int i = 0; i < n; ++i) p[i * s] = m.m[i] != 0;
}
template <typename V>
inline void st(typename V::value_type* p, int64_t s, V v) {
  typename V::value_type t[V::size()];
  v.store(t);
  for (int i = 0; i < V::size(); ++i) p[i * s] = t[i];
}

// Passes of the row kernels over a row's values f(x), f for vectors (fv) and scalars (fs);
// the arithmetic of the eager kernels: kernels/cpu/norm.cpp's row_sum (float lanes over
// chunks of 256, chunks added in double), softmax.cpp's softmax_row.
template <typename V, typename FV, typename FS>
inline double row_sum(int64_t n, FV fv, FS fs) {
  using T = typename V::value_type;
  constexpr int64_t W = V::size();
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += 256) {
    const int64_t c1 = std::min<int64_t>(n, c0 + 256);
    V a0(T(0)), a1(T(0));
    int64_t i = c0;
    for (; i + 2 * W <= c1; i += 2 * W) {
      a0 = a0 + fv(i);
      a1 = a1 + fv(i + W);
    }
    for (; i + W <= c1; i += W) a0 = a0 + fv(i);
    T s = lane_sum(a0 + a1);
    for (; i < c1; ++i) s += fs(i);
    total += static_cast<double>(s);
  }
  return total;
}
/// amax / amin: NaN propagates, as in eager.
template <typename V, bool kMax, typename FV, typename FS>
inline typename V::value_type row_minmax(int64_t n, FV fv, FS fs) {
  using T = typename V::value_type;
  constexpr int64_t W = V::size();
  auto better = [](auto a, auto b) {
    if constexpr (kMax) return a > b || a != a;
    else return a < b || a != a;
  };
  int64_t i = 1;
  T m = fs(0);
  if (n >= W) {
    V vm = fv(0);
    for (i = W; i + W <= n; i += W) {
      const V v = fv(i);
      vm = where(better(v, vm), v, vm);
    }
    T lanes[W];
    vm.store(lanes);
    m = lanes[0];
    for (int64_t l = 1; l < W; ++l) m = better(lanes[l], m) ? lanes[l] : m;
  }
  for (; i < n; ++i) {
    const T v = fs(i);
    m = better(v, m) ? v : m;
  }
  return m;
}
/// amax / amin of two partial results (NaN propagates).
template <bool kMax, typename T>
inline T pick_minmax(T a, T b) {
  if (a != a) return a;
  return (kMax ? b > a : b < a) || b != b ? b : a;
}
/// prod: sequential products in T (eager accumulates prod in the input's float type).
template <typename V, typename FV, typename FS>
inline typename V::value_type row_prod(int64_t n, FV, FS fs) {
  typename V::value_type p(1);
  for (int64_t i = 0; i < n; ++i) p *= fs(i);
  return p;
}

// Column passes: res[j] = the reduction over k0 <= k < k1 of f(k, c0 + j) for the cn <= CB
// columns of a block; fv(k, c) gives the lanes of columns c .. c + W. Lanes accumulate in
// an L1-resident array per block of rows; sums take float (or double) lanes over chunks
// of 256 reduced elements, chunks added in double (as row_sum).
template <typename V, int64_t CB, typename FV, typename FS>
inline void col_sum(int64_t k0, int64_t k1, int64_t c0, int64_t cn, FV fv, FS fs, double* res) {
  using T = typename V::value_type;
  constexpr int64_t W = V::size();
  const int64_t nv = cn - cn % W;
  for (int64_t j = 0; j < cn; ++j) res[j] = 0;
  V acc[CB / W];
  T tail[W] = {};
  for (int64_t kc = k0; kc < k1; kc += 256) {
    const int64_t kc1 = std::min<int64_t>(k1, kc + 256);
    for (int64_t j = 0; j < nv; j += W) acc[j / W] = V(T(0));
    for (int64_t j = nv; j < cn; ++j) tail[j - nv] = T(0);
    for (int64_t k = kc; k < kc1; ++k) {
      for (int64_t j = 0; j < nv; j += W) acc[j / W] = acc[j / W] + fv(k, c0 + j);
      for (int64_t j = nv; j < cn; ++j) tail[j - nv] += fs(k, c0 + j);
    }
    T lanes[CB];
    for (int64_t j = 0; j < nv; j += W) acc[j / W].store(lanes + j);
    for (int64_t j = 0; j < nv; ++j) res[j] += static_cast<double>(lanes[j]);
    for (int64_t j = nv; j < cn; ++j) res[j] += static_cast<double>(tail[j - nv]);
  }
}
template <typename V, int64_t CB, bool kMax, typename FV, typename FS>
inline void col_minmax(int64_t k0, int64_t k1, int64_t c0, int64_t cn, FV fv, FS fs, typename V::value_type* res) {
  constexpr int64_t W = V::size();
  auto better = [](auto a, auto b) {
    if constexpr (kMax) return a > b || a != a;
    else return a < b || a != a;
  };
  const int64_t nv = cn - cn % W;
  V acc[CB / W];
  for (int64_t j = 0; j < nv; j += W) acc[j / W] = fv(k0, c0 + j);
  for (int64_t j = nv; j < cn; ++j) res[j] = fs(k0, c0 + j);
  for (int64_t k = k0 + 1; k < k1; ++k) {
    for (int64_t j = 0; j < nv; j += W) {
      const V x = fv(k, c0 + j);
      acc[j / W] = where(better(x, acc[j / W]), x, acc[j / W]);
    }
    for (int64_t j = nv; j < cn; ++j) {
      const auto x = fs(k, c0 + j);
      res[j] = better(x, res[j]) ? x : res[j];
    }
  }
  for (int64_t j = 0; j < nv; j += W) acc[j / W].store(res + j);
}
template <typename V, int64_t CB, typename FV, typename FS>
inline void col_prod(int64_t k0, int64_t k1, int64_t c0, int64_t cn, FV fv, FS fs, typename V::value_type* res) {
  using T = typename V::value_type;
  constexpr int64_t W = V::size();
  const int64_t nv = cn - cn % W;
  V acc[CB / W];
  for (int64_t j = 0; j < nv; j += W) acc[j / W] = V(T(1));
  for (int64_t j = nv; j < cn; ++j) res[j] = T(1);
  for (int64_t k = k0; k < k1; ++k) {
    for (int64_t j = 0; j < nv; j += W) acc[j / W] = acc[j / W] * fv(k, c0 + j);
    for (int64_t j = nv; j < cn; ++j) res[j] *= fs(k, c0 + j);
  }
  for (int64_t j = 0; j < nv; j += W) acc[j / W].store(res + j);
}
template <typename V, typename FV, typename FS>
inline typename V::value_type softmax_max(int64_t n, FV fv, FS fs) {
  using T = typename V::value_type;
  constexpr int64_t W = V::size();
  const int64_t nv = n - n % W;
  T mx = -std::numeric_limits<T>::infinity();
  if (nv > 0) {
    V vm = fv(0);
    for (int64_t i = W; i < nv; i += W) {
      const V xi = fv(i);
      vm = where(xi > vm, xi, vm);
    }
    mx = lane_max(vm);
  }
  for (int64_t i = nv; i < n; ++i) mx = std::max(mx, fs(i));
  return mx;
}
/// The sum of exp(x - mx) over a row (vector lanes, then the scalar tail, as the eager
/// softmax_row); with `out`, each exp(x - mx) is also stored at out[i * stride], so the
/// last pass scales the stored values instead of computing exp again.
template <typename V, typename FV, typename FS>
inline typename V::value_type softmax_sum(int64_t n, typename V::value_type mx, FV fv, FS fs,
                                          typename V::value_type* out = nullptr, int64_t stride = 1) {
  using T = typename V::value_type;
  constexpr int64_t W = V::size();
  const int64_t nv = n - n % W;
  const V vmx(mx);
  V vsum(T(0));
  T sum = 0;
  for (int64_t i = 0; i < nv; i += W) {
    const V e = exp(fv(i) - vmx);
    if (out && stride == 1) e.store(out + i);
    else if (out) st(out + i * stride, stride, e);
    vsum = vsum + e;
  }
  for (int64_t i = nv; i < n; ++i) {
    const T e = exp(fs(i) - mx);
    if (out) out[i * stride] = e;
    sum += e;
  }
  return sum + lane_sum(vsum);
}

}  // namespace ember::vec
