// kernels/cpu/reduce.cpp — the reduction engine and the reduction kernels built on it.
//
// A reduction reads the input over its own iteration space; the output is addressed in
// that space with stride 0 on the reduced dims. The Plan sorts dims by input stride,
// splits them into kept and reduced lists and merges dims within each list. Then either
//   row:    the innermost (in memory) dim is reduced: each output reduces rows, and a
//           vectorized row function does the work (softmax/layernorm-style reductions);
//   column: the innermost dim is kept: a block of outputs accumulates whole input rows
//           elementwise, so the inner loop is contiguous over outputs.
// Work splits across OpenMP threads by output when there are enough outputs, otherwise
// by reduction range, with per-thread partials combined in order.
#include "kernels/cpu/reduce.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "kernels/cpu/loops.h"
#include "kernels/cpu/vec.h"

namespace ember::kernels::cpu {
namespace {

// --- geometry ------------------------------------------------------------------------

struct Plan {
  // Innermost first, element strides. Each list has at least one (possibly dummy) dim.
  std::vector<int64_t> ksz, kin, kout;  // kept dims: size, input stride, output stride
  std::vector<int64_t> rsz, rin;        // reduced dims: size, input stride
  int64_t M = 1, K = 1;                 // number of outputs, elements per output
  bool row = true;

  /// Input and output element offsets of output number m.
  std::pair<int64_t, int64_t> kept_offsets(int64_t m) const {
    int64_t in = 0, out = 0;
    for (size_t d = 0; d < ksz.size(); ++d) {
      const int64_t i = m % ksz[d];
      m /= ksz[d];
      in += i * kin[d];
      out += i * kout[d];
    }
    return {in, out};
  }
};

/// Output strides over self's dims: 0 where reduced; out may have the keepdim shape or not.
std::vector<int64_t> output_strides(const Tensor& self, const std::vector<bool>& mask, const Tensor& out) {
  std::vector<int64_t> os(static_cast<size_t>(self.dim()), 0);
  const bool keep = out.dim() == self.dim();
  int64_t j = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d]) {
      if (keep) ++j;
    } else {
      os[d] = out.stride(j++);
    }
  }
  return os;
}

Plan make_plan(const Tensor& self, const std::vector<bool>& mask, const std::vector<int64_t>& out_strides) {
  struct Dim {
    int64_t size, in, out;
    bool red;
  };
  std::vector<Dim> dims;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.size(d) != 1) dims.push_back({self.size(d), self.stride(d), out_strides[d], static_cast<bool>(mask[d])});
  }
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return std::abs(a.in) < std::abs(b.in); });
  Plan p;
  for (const Dim& d : dims) {
    if (d.red) {
      if (!p.rsz.empty() && p.rin.back() * p.rsz.back() == d.in) {
        p.rsz.back() *= d.size;
      } else {
        p.rsz.push_back(d.size);
        p.rin.push_back(d.in);
      }
      p.K *= d.size;
    } else {
      if (!p.ksz.empty() && p.kin.back() * p.ksz.back() == d.in && p.kout.back() * p.ksz.back() == d.out) {
        p.ksz.back() *= d.size;
      } else {
        p.ksz.push_back(d.size);
        p.kin.push_back(d.in);
        p.kout.push_back(d.out);
      }
      p.M *= d.size;
    }
  }
  const bool real_red = !p.rsz.empty(), real_kept = !p.ksz.empty();
  if (!real_red) {
    p.rsz = {1};
    p.rin = {0};
  }
  if (!real_kept) {
    p.ksz = {1};
    p.kin = {0};
    p.kout = {0};
  }
  p.row = real_red ? (!real_kept || std::abs(p.rin[0]) <= std::abs(p.kin[0])) : !real_kept;
  return p;
}

/// Walks the multi-index of dims [first, n) of `sizes`, tracking the offset along
/// `strides` (and along `strides2`, when given). Allocation-free for up to kInline dims.
struct Odometer {
  static constexpr size_t kInline = 16;
  const std::vector<int64_t>& sizes;
  const std::vector<int64_t>& strides;
  const std::vector<int64_t>* strides2;
  size_t first;
  int64_t inline_idx[kInline];
  std::vector<int64_t> heap_idx;
  int64_t* idx;
  int64_t off = 0, off2 = 0;

  Odometer(const std::vector<int64_t>& sz, const std::vector<int64_t>& st, size_t first_dim, int64_t linear,
           const std::vector<int64_t>* st2 = nullptr)
      : sizes(sz), strides(st), strides2(st2), first(first_dim) {
    if (sizes.size() > kInline) heap_idx.assign(sizes.size(), 0);
    idx = sizes.size() > kInline ? heap_idx.data() : inline_idx;
    for (size_t d = first; d < sizes.size(); ++d) {
      idx[d] = linear % sizes[d];
      linear /= sizes[d];
      off += idx[d] * strides[d];
      if (strides2) off2 += idx[d] * (*strides2)[d];
    }
  }
  Odometer(const Odometer&) = delete;
  Odometer& operator=(const Odometer&) = delete;
  void next() {
    for (size_t d = first; d < sizes.size(); ++d) {
      if (++idx[d] < sizes[d]) {
        off += strides[d];
        if (strides2) off2 += (*strides2)[d];
        return;
      }
      off -= (sizes[d] - 1) * strides[d];
      if (strides2) off2 -= (sizes[d] - 1) * (*strides2)[d];
      idx[d] = 0;
    }
  }
};

int64_t threads_for(int64_t work) {
  if (omp_in_parallel()) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), work / kGrainSize));
}

// --- the engine ------------------------------------------------------------------------
// Ops provide: in_t, acc_t, identity(), combine(a, b) (a covers earlier k than b),
// row(acc, out_off, k0, p, stride, n) -> acc, cols(acc*, out_off, out_stride, k, p, stride, n),
// write(out_off, acc).

template <typename Ops>
void run_rows(const Plan& p, const typename Ops::in_t* in, const Ops& ops, int64_t nthreads) {
  using acc_t = typename Ops::acc_t;
  const int64_t n0 = p.rsz[0], s0 = p.rin[0];
  auto range = [&](int64_t in_base, int64_t out_off, int64_t kb, int64_t ke) {
    if (p.rsz.size() == 1) return ops.row(ops.identity(), out_off, kb, in + in_base + kb * s0, s0, ke - kb);
    acc_t acc = ops.identity();
    Odometer od(p.rsz, p.rin, 1, kb / n0);
    int64_t i = kb % n0;
    for (int64_t k = kb; k < ke;) {
      const int64_t len = std::min(n0 - i, ke - k);
      acc = ops.row(acc, out_off, k, in + in_base + od.off + i * s0, s0, len);
      k += len;
      i = 0;
      od.next();
    }
    return acc;
  };
  if (nthreads == 1 || p.M >= nthreads) {
    for_parts(nthreads, [&](int64_t t, int64_t nt) {  // Note [full OpenMP teams]
      const int64_t chunk = (p.M + nt - 1) / nt;
      const int64_t mb = std::min(p.M, t * chunk), me = std::min(p.M, mb + chunk);
      if (mb < me) {
        Odometer kept(p.ksz, p.kin, 0, mb, &p.kout);
        for (int64_t m = mb; m < me; ++m, kept.next()) ops.write(kept.off2, range(kept.off, kept.off2, 0, p.K));
      }
    });
    return;
  }
  // Few outputs, long reductions: split each reduction across threads.
  std::unique_ptr<acc_t[]> partial(new acc_t[nthreads]);
  for (int64_t m = 0; m < p.M; ++m) {
    auto [ib, ob] = p.kept_offsets(m);
    for (int64_t t = 0; t < nthreads; ++t) partial[t] = ops.identity();
    for_parts(nthreads, [&](int64_t t, int64_t nt) {
      const int64_t chunk = (p.K + nt - 1) / nt;
      const int64_t kb = std::min(p.K, t * chunk), ke = std::min(p.K, kb + chunk);
      if (kb < ke) partial[t] = range(ib, ob, kb, ke);
    });
    acc_t acc = partial[0];
    for (int64_t t = 1; t < nthreads; ++t) acc = ops.combine(acc, partial[t]);
    ops.write(ob, acc);
  }
}

template <typename Ops>
void run_cols(const Plan& p, const typename Ops::in_t* in, const Ops& ops, int64_t nthreads) {
  using acc_t = typename Ops::acc_t;
  constexpr int64_t kBlock = 256;
  const int64_t c0 = p.ksz[0], is0 = p.kin[0], os0 = p.kout[0];
  const int64_t nb = (c0 + kBlock - 1) / kBlock, units = (p.M / c0) * nb;
  struct Unit {
    int64_t in, out, len;
  };
  auto unit = [&](int64_t u) {
    const int64_t j0 = (u % nb) * kBlock;
    auto [ib, ob] = p.kept_offsets((u / nb) * c0);
    return Unit{ib + j0 * is0, ob + j0 * os0, std::min(kBlock, c0 - j0)};
  };
  auto accumulate = [&](const Unit& w, int64_t kb, int64_t ke, acc_t* acc) {
    if constexpr (requires { ops.cols_rows(acc, in, is0, int64_t{0}, int64_t{0}, int64_t{0}); }) {
      // Runs of rows along the innermost reduced dim, so the op can keep sums in registers.
      const int64_t r0 = p.rsz[0], rs0 = p.rin[0];
      Odometer od(p.rsz, p.rin, 1, kb / r0);
      int64_t i = kb % r0;
      for (int64_t k = kb; k < ke;) {
        const int64_t rows = std::min(r0 - i, ke - k);
        ops.cols_rows(acc, in + w.in + od.off + i * rs0, is0, w.len, rs0, rows);
        k += rows;
        i = 0;
        od.next();
      }
    } else {
      Odometer od(p.rsz, p.rin, 0, kb);
      for (int64_t k = kb; k < ke; ++k, od.next()) ops.cols(acc, w.out, os0, k, in + w.in + od.off, is0, w.len);
    }
  };
  if (nthreads == 1 || units >= nthreads) {
    for_parts(nthreads, [&](int64_t t, int64_t nt) {  // Note [full OpenMP teams]
      const int64_t chunk = (units + nt - 1) / nt;
      for (int64_t u = t * chunk; u < std::min(units, (t + 1) * chunk); ++u) {
        acc_t acc[kBlock];
        const Unit w = unit(u);
        std::fill(acc, acc + w.len, ops.identity());
        accumulate(w, 0, p.K, acc);
        for (int64_t j = 0; j < w.len; ++j) ops.write(w.out + j * os0, acc[j]);
      }
    });
    return;
  }
  // Few outputs: each thread accumulates a range of k for every output.
  std::unique_ptr<acc_t[]> partial(new acc_t[nthreads * units * kBlock]);
  std::fill(partial.get(), partial.get() + nthreads * units * kBlock, ops.identity());
  for_parts(nthreads, [&](int64_t t, int64_t nt) {
    const int64_t chunk = (p.K + nt - 1) / nt;
    const int64_t kb = std::min(p.K, t * chunk), ke = std::min(p.K, kb + chunk);
    for (int64_t u = 0; u < units && kb < ke; ++u) accumulate(unit(u), kb, ke, &partial[(t * units + u) * kBlock]);
  });
  for (int64_t u = 0; u < units; ++u) {
    const Unit w = unit(u);
    for (int64_t j = 0; j < w.len; ++j) {
      acc_t acc = partial[u * kBlock + j];
      for (int64_t t = 1; t < nthreads; ++t) acc = ops.combine(acc, partial[(t * units + u) * kBlock + j]);
      ops.write(w.out + j * os0, acc);
    }
  }
}

template <typename Ops>
void run_reduce(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, const Ops& ops) {
  if (out.numel() == 0) return;
  const Plan p = make_plan(self, mask, output_strides(self, mask, out));
  if (self.numel() == 0) {  // empty reductions: every output is the identity
    for (int64_t m = 0; m < p.M; ++m) ops.write(p.kept_offsets(m).second, ops.identity());
    return;
  }
  const auto* in = static_cast<const typename Ops::in_t*>(self.raw_data_ptr());
  const int64_t nthreads = threads_for(p.M * p.K);
  if (p.row) run_rows(p, in, ops, nthreads);
  else run_cols(p, in, ops, nthreads);
}

int64_t reduced_count(const Tensor& self, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) n *= self.size(d);
  return n;
}

// --- SIMD helpers ------------------------------------------------------------------------

typedef float F4 __attribute__((vector_size(16)));
typedef double D4 __attribute__((vector_size(32)));

inline D4 load_d4(const float* p) {
  F4 f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, D4);
}
inline D4 load_d4(const double* p) {
  D4 d;
  std::memcpy(&d, p, sizeof d);
  return d;
}
inline double hsum(D4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

template <typename T>
constexpr bool kIsFloatOrDouble = std::is_same_v<T, float> || std::is_same_v<T, double>;

inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// --- sum / mean ---------------------------------------------------------------------------

template <typename T>
using sum_acc_t = std::conditional_t<kIsFloatOrDouble<T>, double, std::conditional_t<std::is_integral_v<T>, int64_t, float>>;

template <typename T, typename W>
struct SumOps {
  using in_t = T;
  using acc_t = sum_acc_t<T>;
  W write;

  static acc_t add(acc_t a, acc_t b) {
    if constexpr (std::is_integral_v<acc_t>) return wrap_add(a, b);
    else return a + b;
  }
  acc_t identity() const { return acc_t(0); }
  acc_t combine(acc_t a, acc_t b) const { return add(a, b); }
  acc_t row(acc_t acc, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    int64_t i = 0;
    if constexpr (kIsFloatOrDouble<T>) {
      if (s == 1) {
        D4 a0{}, a1{}, a2{}, a3{};
        for (; i + 16 <= n; i += 16) {
          a0 += load_d4(p + i);
          a1 += load_d4(p + i + 4);
          a2 += load_d4(p + i + 8);
          a3 += load_d4(p + i + 12);
        }
        for (; i + 4 <= n; i += 4) a0 += load_d4(p + i);
        acc += hsum((a0 + a1) + (a2 + a3));
      }
    }
    for (; i < n; ++i) acc = add(acc, static_cast<acc_t>(p[i * s]));
    return acc;
  }
  void cols(acc_t* acc, int64_t, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    int64_t j = 0;
    if constexpr (kIsFloatOrDouble<T>) {
      if (s == 1) {
        for (; j + 4 <= n; j += 4) {
          D4 a = load_d4(acc + j) + load_d4(p + j);
          std::memcpy(acc + j, &a, sizeof a);
        }
      }
    }
    for (; j < n; ++j) acc[j] = add(acc[j], static_cast<acc_t>(p[j * s]));
  }
  /// acc[j] += sum over r < rows of p[r * rs + j * s]; dense floats go 16 rows at a time
  /// (16 rows of a 256-wide block stay in L1) with the sums held in registers.
  void cols_rows(acc_t* acc, const T* p, int64_t s, int64_t n, int64_t rs, int64_t rows) const {
    if constexpr (kIsFloatOrDouble<T>) {
      if (s == 1 && n % 8 == 0) {
        for (int64_t rb = 0; rb < rows; rb += 16) {
          const int64_t re = std::min(rows, rb + 16);
          for (int64_t j = 0; j < n; j += 8) {
            D4 a0 = load_d4(acc + j), a1 = load_d4(acc + j + 4);
            for (int64_t r = rb; r < re; ++r) {
              a0 += load_d4(p + r * rs + j);
              a1 += load_d4(p + r * rs + j + 4);
            }
            std::memcpy(acc + j, &a0, sizeof a0);
            std::memcpy(acc + j + 4, &a1, sizeof a1);
          }
        }
        return;
      }
    }
    for (int64_t r = 0; r < rows; ++r) cols(acc, 0, 0, 0, p + r * rs, s, n);
  }
};
template <typename T, typename W>
SumOps<T, W> sum_ops(W w) {
  return SumOps<T, W>{w};
}

// --- prod ---------------------------------------------------------------------------------

template <typename T, typename W>
struct ProdOps {
  using in_t = T;
  using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;
  W write;
  static acc_t mul(acc_t a, acc_t b) {
    if constexpr (std::is_integral_v<acc_t>) return wrap_mul(a, b);
    else return a * b;
  }
  acc_t identity() const { return acc_t(1); }
  acc_t combine(acc_t a, acc_t b) const { return mul(a, b); }
  acc_t row(acc_t acc, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) acc = mul(acc, static_cast<acc_t>(p[i * s]));
    return acc;
  }
  void cols(acc_t* acc, int64_t, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) acc[j] = mul(acc[j], static_cast<acc_t>(p[j * s]));
  }
};

// --- amax / amin ----------------------------------------------------------------------------

template <typename T, bool kMax>
struct MinMaxOps {
  using in_t = T;
  using acc_t = opmath_t<T>;
  T* out;

  static acc_t pick(acc_t a, acc_t b) {
    if constexpr (std::is_floating_point_v<acc_t>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    if constexpr (kMax) return b > a ? b : a;
    else return b < a ? b : a;
  }
  acc_t identity() const {
    if constexpr (std::is_same_v<acc_t, bool>) return !kMax;
    else if constexpr (std::is_floating_point_v<acc_t>)
      return kMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else return kMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  acc_t combine(acc_t a, acc_t b) const { return pick(a, b); }
  acc_t row(acc_t acc, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    int64_t i = 0;
    if constexpr (kIsFloatOrDouble<T>) {
      using V = vec::Vectorized<T>;
      if (s == 1 && n >= 2 * V::size()) {
        V a0(acc), a1(acc);
        auto step = [](V a, V x) {
          if constexpr (kMax) return vec::where((x > a) || (x != x), x, a);
          else return vec::where((x < a) || (x != x), x, a);
        };
        for (; i + 2 * V::size() <= n; i += 2 * V::size()) {
          a0 = step(a0, V::load(p + i));
          a1 = step(a1, V::load(p + i + V::size()));
        }
        T lanes[2 * V::size()];
        a0.store(lanes);
        a1.store(lanes + V::size());
        for (T v : lanes) acc = pick(acc, v);
      }
    }
    for (; i < n; ++i) acc = pick(acc, static_cast<acc_t>(p[i * s]));
    return acc;
  }
  void cols(acc_t* acc, int64_t, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) acc[j] = pick(acc[j], static_cast<acc_t>(p[j * s]));
  }
  void write(int64_t off, acc_t a) const { out[off] = static_cast<T>(a); }
};

// --- max/min with index ------------------------------------------------------------------

template <typename T, bool kMax>
struct ArgOps {
  using in_t = T;
  struct acc_t {
    opmath_t<T> v;
    int64_t i;
  };
  T* values;  // may be null
  int64_t* indices;

  static bool better(opmath_t<T> x, const acc_t& a) {
    if (a.i < 0) return true;
    if constexpr (std::is_floating_point_v<opmath_t<T>>) {
      if (a.v != a.v) return false;
      if (x != x) return true;
    }
    return kMax ? x > a.v : x < a.v;
  }
  acc_t identity() const { return {opmath_t<T>(0), -1}; }
  acc_t combine(acc_t a, acc_t b) const { return b.i >= 0 && better(b.v, a) ? b : a; }
  acc_t row(acc_t acc, int64_t, int64_t k0, const T* p, int64_t s, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      const auto x = static_cast<opmath_t<T>>(p[i * s]);
      if (better(x, acc)) acc = {x, k0 + i};
    }
    return acc;
  }
  void cols(acc_t* acc, int64_t, int64_t, int64_t k, const T* p, int64_t s, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) {
      const auto x = static_cast<opmath_t<T>>(p[j * s]);
      if (better(x, acc[j])) acc[j] = {x, k};
    }
  }
  void write(int64_t off, acc_t a) const {
    if (values) values[off] = static_cast<T>(a.v);
    indices[off] = a.i;
  }
};

// --- var ----------------------------------------------------------------------------------

template <typename T>
struct VarOps {
  using in_t = T;
  using acc_t = double;
  const double* mean;  // indexed by output offset
  T* out;
  double divisor;

  acc_t identity() const { return 0; }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  acc_t row(acc_t acc, int64_t out_off, int64_t, const T* p, int64_t s, int64_t n) const {
    const double mu = mean[out_off];
    int64_t i = 0;
    if constexpr (kIsFloatOrDouble<T>) {
      if (s == 1) {
        D4 a0{}, a1{};
        const D4 m = D4{} + mu;
        for (; i + 8 <= n; i += 8) {
          const D4 d0 = load_d4(p + i) - m, d1 = load_d4(p + i + 4) - m;
          a0 += d0 * d0;
          a1 += d1 * d1;
        }
        acc += hsum(a0 + a1);
      }
    }
    for (; i < n; ++i) {
      const double d = static_cast<double>(static_cast<opmath_t<T>>(p[i * s])) - mu;
      acc += d * d;
    }
    return acc;
  }
  void cols(acc_t* acc, int64_t out_off, int64_t out_s, int64_t, const T* p, int64_t s, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(static_cast<opmath_t<T>>(p[j * s])) - mean[out_off + j * out_s];
      acc[j] += d * d;
    }
  }
  void write(int64_t off, acc_t a) const { out[off] = static_cast<T>(a / divisor); }
};

// --- any / all ------------------------------------------------------------------------------

template <typename T, typename O, bool kAll>
struct AnyAllOps {
  using in_t = T;
  using acc_t = uint8_t;
  O* out;

  static bool nonzero(T x) { return static_cast<opmath_t<T>>(x) != opmath_t<T>(0); }
  acc_t identity() const { return kAll; }
  acc_t combine(acc_t a, acc_t b) const { return kAll ? (a && b) : (a || b); }
  acc_t row(acc_t acc, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    if (acc != kAll) return acc;
    for (int64_t i = 0; i < n; ++i)
      if (nonzero(p[i * s]) != kAll) return !kAll;
    return kAll;
  }
  void cols(acc_t* acc, int64_t, int64_t, int64_t, const T* p, int64_t s, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) acc[j] = combine(acc[j], nonzero(p[j * s]));
  }
  void write(int64_t off, acc_t a) const { out[off] = static_cast<O>(a); }
};

/// Running sums along the middle dim of [outer, n, inner] (row-major), accumulating as
/// ATen does (double for float); blocks of `inner` keep the inner loop contiguous.
template <typename T>
void cumsum_impl(const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  using acc_t = sum_acc_t<T>;
  constexpr int64_t kBlock = 256;
  const int64_t nb = (inner + kBlock - 1) / kBlock;
  const int64_t nthreads = threads_for(outer * n * inner);
  const int64_t units = outer * nb;
  for_parts(nthreads, [&](int64_t t, int64_t nt) {  // Note [full OpenMP teams]
    const int64_t chunk = (units + nt - 1) / nt;
    for (int64_t u = t * chunk; u < std::min(units, (t + 1) * chunk); ++u) {
      const int64_t b = u / nb, j0 = (u % nb) * kBlock, len = std::min(kBlock, inner - j0);
      const T* src = in + b * n * inner + j0;
      T* dst = out + b * n * inner + j0;
      if (inner == 1) {
        acc_t a = 0;
        for (int64_t i = 0; i < n; ++i) {
          a = SumOps<T, int>::add(a, static_cast<acc_t>(src[i]));
          dst[i] = static_cast<T>(a);
        }
        continue;
      }
      acc_t acc[kBlock];
      std::fill(acc, acc + len, acc_t(0));
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < len; ++j) {
          acc[j] = SumOps<T, int>::add(acc[j], static_cast<acc_t>(src[i * inner + j]));
          dst[i * inner + j] = static_cast<T>(acc[j]);
        }
      }
    }
  });
}

}  // namespace

// --- entry points ---------------------------------------------------------------------------

void sum_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, bool mean) {
  const int64_t n = reduced_count(self, mask);
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "sum", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    using acc_t = sum_acc_t<scalar_t>;
    if (mean) {
      // As ATen: the sum rounded to the output type, then divided.
      run_reduce(self, mask, out, sum_ops<scalar_t>([o, n](int64_t off, acc_t a) {
                   using math_t = opmath_t<scalar_t>;
                   const auto s = static_cast<math_t>(static_cast<scalar_t>(a));
                   o[off] = static_cast<scalar_t>(s / static_cast<math_t>(n));
                 }));
    } else {
      run_reduce(self, mask, out, sum_ops<scalar_t>([o](int64_t off, acc_t a) { o[off] = static_cast<scalar_t>(a); }));
    }
  });
}

void prod_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out) {
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "prod", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    auto w = [o](int64_t off, auto a) { o[off] = static_cast<scalar_t>(a); };
    run_reduce(self, mask, out, ProdOps<scalar_t, decltype(w)>{w});
  });
}

void minmax_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, bool is_max) {
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "amax", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    if (is_max) run_reduce(self, mask, out, MinMaxOps<scalar_t, true>{o});
    else run_reduce(self, mask, out, MinMaxOps<scalar_t, false>{o});
  });
}

void arg_minmax_kernel(const Tensor& self, int64_t dim, const Tensor& values, const Tensor& indices, bool is_max) {
  std::vector<bool> mask(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) mask[dim] = true;
  EMBER_DISPATCH_ALL_TYPES(self.dtype(), "argmax", [&] {
    scalar_t* v = values.defined() ? values.data_ptr<scalar_t>() : nullptr;
    int64_t* i = indices.data_ptr<int64_t>();
    if (is_max) run_reduce(self, mask, indices, ArgOps<scalar_t, true>{v, i});
    else run_reduce(self, mask, indices, ArgOps<scalar_t, false>{v, i});
  });
}

void var_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, double correction) {
  const int64_t n = reduced_count(self, mask);
  std::vector<double> mean(static_cast<size_t>(std::max<int64_t>(out.numel(), 1)));
  double* mu = mean.data();
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "var", [&] {
    // Pass 1: the mean of each output, at the output's offset (out is contiguous).
    run_reduce(self, mask, out, sum_ops<scalar_t>([mu, n](int64_t off, sum_acc_t<scalar_t> a) {
                 mu[off] = static_cast<double>(a) / static_cast<double>(n);
               }));
    // Pass 2: squared deviations from it.
    const double divisor = std::max(0.0, static_cast<double>(n) - correction);
    run_reduce(self, mask, out, VarOps<scalar_t>{mu, out.data_ptr<scalar_t>(), divisor});
  });
}

void any_all_kernel(const Tensor& self, const std::vector<bool>& mask, const Tensor& out, bool is_all) {
  EMBER_DISPATCH_ALL_TYPES(self.dtype(), "any", [&] {
    using in_t = scalar_t;
    if (out.dtype() == kUInt8) {
      uint8_t* o = out.data_ptr<uint8_t>();
      if (is_all) run_reduce(self, mask, out, AnyAllOps<in_t, uint8_t, true>{o});
      else run_reduce(self, mask, out, AnyAllOps<in_t, uint8_t, false>{o});
    } else {
      bool* o = out.data_ptr<bool>();
      if (is_all) run_reduce(self, mask, out, AnyAllOps<in_t, bool, true>{o});
      else run_reduce(self, mask, out, AnyAllOps<in_t, bool, false>{o});
    }
  });
}

void cumsum_kernel(const Tensor& self, int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  // Both dense row-major: out is freshly allocated and the caller passes self contiguous.
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < dim) outer *= self.size(d);
    else if (d == dim) n = self.size(d);
    else inner *= self.size(d);
  }
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "cumsum", [&] {
    cumsum_impl(self.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), outer, n, inner);
  });
}

}  // namespace ember::kernels::cpu
