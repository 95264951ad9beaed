// kernels/cuda/reduce_source.cpp — see reduce_source.h.
#include "kernels/cuda/reduce_source.h"

#include <sstream>

#include "ember/error.h"

namespace ember::kernels::cuda {
namespace {

/// The row helpers every reduction and softmax kernel uses, after the pointwise prelude.
/// Each reduction is a struct: its accumulator, identity, step (fold one element) and
/// combine (fold two partial results, for the tree); reduce_rows finishes mean (divide by
/// the row's length) and var (divide by max(0, n - correction)).
constexpr const char* kRowPrelude = R"CUDA(
namespace ember_dev {
struct RowGeometry {
  long long outer_numel;
  long long inner_numel;
  int outer_ndim;
  int inner_ndim;
  long long outer_sizes[EMBER_MAX_DIMS];
  long long inner_sizes[EMBER_MAX_DIMS];
  long long outer_strides[2][EMBER_MAX_DIMS];
  long long inner_strides[2][EMBER_MAX_DIMS];
};

/// The element offset of linear index i (row-major over sizes) under strides.
__device__ __forceinline__ long long offset_of(long long i, int ndim, const long long* sizes, const long long* strides) {
  long long off = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

// Accumulation types: PyTorch's CUDA rules (at::acc_type with is_cuda=true for sums).
template <typename T> struct SumAcc { typedef typename OpMath<T>::type type; };
template <> struct SumAcc<bool> { typedef long long type; };
template <> struct SumAcc<unsigned char> { typedef long long type; };
template <> struct SumAcc<signed char> { typedef long long type; };
template <> struct SumAcc<short> { typedef long long type; };
template <> struct SumAcc<int> { typedef long long type; };

template <typename T> __device__ __forceinline__ T lowest_() {
  if constexpr (Same<T, float>::value) return -__int_as_float(0x7f800000);
  else if constexpr (Same<T, double>::value) return -__longlong_as_double(0x7ff0000000000000LL);
  else if constexpr (Same<T, bool>::value) return false;
  else if constexpr (Same<T, unsigned char>::value) return 0;
  else return static_cast<T>(1ULL << (sizeof(T) * 8 - 1));  // two's complement minimum
}
template <typename T> __device__ __forceinline__ T highest_() {
  if constexpr (Same<T, float>::value) return __int_as_float(0x7f800000);
  else if constexpr (Same<T, double>::value) return __longlong_as_double(0x7ff0000000000000LL);
  else if constexpr (Same<T, bool>::value) return true;
  else if constexpr (Same<T, unsigned char>::value) return 255;
  else return static_cast<T>(~lowest_<T>());
}

template <typename C> struct SumOp {
  typedef typename SumAcc<C>::type A;
  typedef A Acc;
  static __device__ Acc init() { return A(0); }
  static __device__ Acc step(Acc a, A x) { return a + x; }
  static __device__ Acc combine(Acc a, Acc b) { return a + b; }
};
template <typename C> struct MeanOp : SumOp<C> {};  // the sum, divided by the row's length
template <typename C> struct ProdOp {
  typedef typename SumAcc<C>::type A;
  typedef A Acc;
  static __device__ Acc init() { return A(1); }
  static __device__ Acc step(Acc a, A x) { return a * x; }
  static __device__ Acc combine(Acc a, Acc b) { return a * b; }
};
// NaN propagates, as in PyTorch's max and min.
template <typename C> struct MaxOp {
  typedef typename OpMath<C>::type A;
  typedef A Acc;
  static __device__ Acc init() { return lowest_<A>(); }
  static __device__ Acc combine(Acc a, Acc b) { return isnan(a) ? a : (isnan(b) ? b : (a > b ? a : b)); }
  static __device__ Acc step(Acc a, A x) { return combine(a, x); }
};
template <typename C> struct MinOp {
  typedef typename OpMath<C>::type A;
  typedef A Acc;
  static __device__ Acc init() { return highest_<A>(); }
  static __device__ Acc combine(Acc a, Acc b) { return isnan(a) ? a : (isnan(b) ? b : (a < b ? a : b)); }
  static __device__ Acc step(Acc a, A x) { return combine(a, x); }
};
// Welford's running mean and sum of squared deviations; partial results merge with Chan's
// formula. Divides by max(0, n - correction).
template <typename A> struct Welford { A mean; A m2; A n; };
template <typename C> struct VarOp {
  typedef typename OpMath<C>::type A;
  typedef Welford<A> Acc;
  static __device__ Acc init() { return Acc{A(0), A(0), A(0)}; }
  static __device__ Acc step(Acc a, A x) {
    a.n += A(1);
    const A d = x - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (x - a.mean);
    return a;
  }
  static __device__ Acc combine(Acc a, Acc b) {
    if (b.n == A(0)) return a;
    if (a.n == A(0)) return b;
    const A n = a.n + b.n;
    const A d = b.mean - a.mean;
    return Acc{a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * (b.n / n)), n};
  }
};

/// v of the lane `lane ^ mask` of the warp, for any trivially copyable accumulator (moved
/// as 32-bit words).
template <typename A> __device__ __forceinline__ A shfl_xor_(A v, int mask) {
  union Words { A a; int w[(sizeof(A) + 3) / 4]; } u;
  u.a = v;
#pragma unroll
  for (int i = 0; i < static_cast<int>((sizeof(A) + 3) / 4); ++i) u.w[i] = __shfl_xor_sync(0xffffffffu, u.w[i], mask);
  return u.a;
}
template <typename A> __device__ __forceinline__ A shfl_first_(A v) {
  union Words { A a; int w[(sizeof(A) + 3) / 4]; } u;
  u.a = v;
#pragma unroll
  for (int i = 0; i < static_cast<int>((sizeof(A) + 3) / 4); ++i) u.w[i] = __shfl_sync(0xffffffffu, u.w[i], 0);
  return u.a;
}

/// Folds every thread's value of the block into one, which every thread gets back: a
/// butterfly within each warp, the warps' results through `buf`, then a butterfly over
/// those in every warp. blockDim.x is a power of two from 32 to EMBER_ROW_BLOCK.
/// Folds the 32 values of a warp into one, which every lane gets back.
template <typename Op> __device__ __forceinline__ typename Op::Acc warp_combine(typename Op::Acc v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = Op::combine(v, shfl_xor_(v, m));
  return v;
}

template <typename Op> __device__ typename Op::Acc block_combine(typename Op::Acc v, typename Op::Acc* buf) {
  v = warp_combine<Op>(v);
  const int warps = static_cast<int>(blockDim.x / 32);
  if (warps == 1) return v;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (lane == 0) buf[threadIdx.x / 32] = v;
  __syncthreads();
  v = buf[lane < warps ? lane : 0];
  // Lanes below `warps` exchange only among themselves; lane 0 ends with all of them.
  for (int m = warps / 2; m > 0; m >>= 1) v = Op::combine(v, shfl_xor_(v, m));
  v = shfl_first_(v);
  __syncthreads();  // buf is free for the next call
  return v;
}

/// Warp rows: rows of at most 32 * C elements go a warp each (the launcher gives blocks of
/// several warps; C, the slots a lane holds, is a power of two up to 32 chosen for the row
/// length); for_each_warp_row calls f(row) for every row of this warp. Every lane holds its
/// elements in C registers, and only warp shuffles combine them: no shared memory and no
/// block barriers.
template <typename F> __device__ __forceinline__ void for_each_warp_row(long long rows, F f) {
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  for (long long o = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; o < rows; o += warps)
    f(o);
}

/// A lane's registers hold its elements read V at a time (V elements of 16 bytes, or 1):
/// slot t holds element warp_slot<V>(t, lane) = (t / V) * 32 * V + lane * V + t % V, so each
/// access of the warp covers 32 * V contiguous elements (V = 1: element lane + 32 t). With
/// V > 1 the launcher checks that the row holds a whole number of V-element groups and
/// starts 16-byte aligned.
template <int V> __device__ __forceinline__ int warp_slot(int t, int lane) { return t / V * 32 * V + lane * V + t % V; }

/// Reads a warp row of n elements into the slots, `fill` past its end.
template <int V, int C, typename A, typename T>
__device__ __forceinline__ void load_warp_row(A (&v)[C], const T* row, int lane, int n, A fill) {
#pragma unroll
  for (int g = 0; g < C / V; ++g) {
    const int j = g * 32 * V + lane * V;
    if (j < n) {
      const Vec<T, V> w = *reinterpret_cast<const Vec<T, V>*>(row + j);
#pragma unroll
      for (int k = 0; k < V; ++k) v[g * V + k] = cvt<A>(w.v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) v[g * V + k] = fill;
    }
  }
}

/// Writes value(t, j) for every slot t holding an element j < n of the row.
template <int V, int C, typename T, typename F>
__device__ __forceinline__ void store_warp_row(T* row, int lane, int n, F value) {
#pragma unroll
  for (int g = 0; g < C / V; ++g) {
    const int j = g * 32 * V + lane * V;
    if (j < n) {
      Vec<T, V> w;
#pragma unroll
      for (int k = 0; k < V; ++k) w.v[k] = value(g * V + k, j + k);
      *reinterpret_cast<Vec<T, V>*>(row + j) = w;
    }
  }
}

template <typename Op, typename Out, typename In>
__device__ void reduce_rows(Out* out, const In* in, double p0, const RowGeometry& g) {
  typedef typename Op::A A;
  typedef typename Op::Acc Acc;
  __shared__ Acc buf[EMBER_ROW_BLOCK];
  for (long long o = blockIdx.x; o < g.outer_numel; o += gridDim.x) {
    const In* row = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    Acc acc = Op::init();
    for (long long j = threadIdx.x; j < g.inner_numel; j += blockDim.x)
      acc = Op::step(acc, cvt<A>(cvt<Out>(row[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[1])])));
    acc = block_combine<Op>(acc, buf);
    if (threadIdx.x == 0) {
      A r;
      if constexpr (Same<Op, MeanOp<Out> >::value) {
        r = acc / static_cast<A>(g.inner_numel);
      } else if constexpr (Same<Op, VarOp<Out> >::value) {
        A divisor = acc.n - static_cast<A>(p0);
        if (divisor < A(0)) divisor = A(0);
        r = acc.m2 / divisor;
      } else {
        r = acc;
      }
      out[offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0])] = cvt<Out>(r);
    }
  }
}

/// softmax over warp rows: rows of at most 32 * C elements, contiguous (unit inner stride
/// in and out), read and written V elements at a time (warp_slot).
template <bool Log, int V, int C, typename Out, typename In>
__device__ void softmax_warp_rows(Out* out, const In* in, const RowGeometry& g) {
  typedef typename OpMath<In>::type A;
  const int n = static_cast<int>(g.inner_numel);
  const int lane = static_cast<int>(threadIdx.x % 32);
  for_each_warp_row(g.outer_numel, [&](long long o) {
    const In* x = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    Out* y = out + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0]);
    // Slots past the row's end hold -inf, whose exp(-inf - m) adds 0 to the sum. The max
    // skips NaN (fmax): a NaN element still makes its exp, the sum and so the whole row
    // NaN, as a NaN-propagating max would, and the row's result is NaN whenever a slot's
    // exp is (m = -inf: every element is -inf). Both keep the per-element work to one max,
    // one exp and one add, which the memory-bound kernel needs to keep pace with a copy.
    A v[C];
    load_warp_row<V>(v, x, lane, n, lowest_<A>());
    A m = v[0];
#pragma unroll
    for (int t = 1; t < C; ++t) m = fmax(m, v[t]);
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) m = fmax(m, shfl_xor_(m, mask));
    // softmax keeps exp(x - max) in place of x, so each element's exp is taken once.
    A s = A(0);
#pragma unroll
    for (int t = 0; t < C; ++t) {
      const A e = exp(v[t] - m);
      s += e;
      if constexpr (!Log) v[t] = e;
    }
    s = warp_combine<SumOp<In> >(s);
    // One reciprocal and a multiply per element, as the CPU kernel (and PyTorch's CPU)
    // does: within an ulp of dividing, and 7% faster on an H100 for rows of 1024 floats.
    A shift = A(0), r = A(1) / s;
    if constexpr (Log) shift = m + log(s);
    store_warp_row<V, C>(y, lane, n, [&](int t, int) { return cvt<Out>(Log ? v[t] - shift : v[t] * r); });
  });
}

/// softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax(x) = x - max - log(sum(…)).
/// A block per row, reading it three times (max, sum, result): for rows longer than a warp
/// row or with strides.
template <bool Log, typename Out, typename In>
__device__ void softmax_rows(Out* out, const In* in, const RowGeometry& g) {
  typedef typename OpMath<In>::type A;
  __shared__ A buf[EMBER_ROW_BLOCK];
  const long long n = g.inner_numel;
  const long long si = g.inner_ndim ? g.inner_strides[1][0] : 0, so = g.inner_ndim ? g.inner_strides[0][0] : 0;
  for (long long o = blockIdx.x; o < g.outer_numel; o += gridDim.x) {
    const In* x = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    Out* y = out + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0]);
    A m = MaxOp<In>::init();
    for (long long j = threadIdx.x; j < n; j += blockDim.x) m = MaxOp<In>::step(m, cvt<A>(x[j * si]));
    m = block_combine<MaxOp<In> >(m, buf);
    A s = A(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) s += exp(cvt<A>(x[j * si]) - m);
    s = block_combine<SumOp<In> >(s, buf);
    if constexpr (Log) {
      const A shift = m + log(s);
      for (long long j = threadIdx.x; j < n; j += blockDim.x) y[j * so] = cvt<Out>(cvt<A>(x[j * si]) - shift);
    } else {
      const A r = A(1) / s;
      for (long long j = threadIdx.x; j < n; j += blockDim.x) y[j * so] = cvt<Out>(exp(cvt<A>(x[j * si]) - m) * r);
    }
  }
}
}  // namespace ember_dev
)CUDA";

const char* op_struct(Reduction op) {
  switch (op) {
    case Reduction::Sum: return "SumOp";
    case Reduction::Mean: return "MeanOp";
    case Reduction::Prod: return "ProdOp";
    case Reduction::Max: return "MaxOp";
    case Reduction::Min: return "MinOp";
    case Reduction::Var: return "VarOp";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown reduction";
}

std::string signature(const std::string& symbol, ScalarType out, ScalarType in, bool warp_rows = false) {
  return (warp_rows ? warp_row_kernel_head() : std::string("extern \"C\" __global__ void ")) + symbol + "(" +
         cuda_type_name(out) + "* out, const " + cuda_type_name(in) + "* in, double p0, ember_dev::RowGeometry g)";
}

}  // namespace

std::string warp_row_kernel_head() {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kWarpRowBlock) + ", 8) ";
}

std::string render_row_head() {
  std::ostringstream os;
  os << render_prelude() << "#define EMBER_ROW_BLOCK " << kRowBlock << "\n" << kRowPrelude << "\n";
  return os.str();
}

const char* reduction_name(Reduction op) {
  switch (op) {
    case Reduction::Sum: return "sum";
    case Reduction::Mean: return "mean";
    case Reduction::Prod: return "prod";
    case Reduction::Max: return "amax";
    case Reduction::Min: return "amin";
    case Reduction::Var: return "var";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown reduction";
}

std::string kernel_symbol(const ReduceKernel& k) {
  return std::string("ember_reduce_") + reduction_name(k.op) + "_" + dtype_tag(k.in) + "_to_" + dtype_tag(k.out);
}

std::string kernel_symbol(const SoftmaxKernel& k) {
  return std::string(k.log ? "ember_log_softmax_" : "ember_softmax_") + dtype_tag(k.in) + "_to_" + dtype_tag(k.out) +
         (k.warp_rows ? "_warp_v" + std::to_string(k.vec) + "_s" + std::to_string(k.slots) : "");
}

std::string render_reduce(const ReduceKernel& k) {
  std::ostringstream os;
  os << "// " << reduction_name(k.op) << " over rows\n" << render_row_head();
  os << signature(kernel_symbol(k), k.out, k.in) << " {\n";
  os << "  ember_dev::reduce_rows<ember_dev::" << op_struct(k.op) << "<" << cuda_type_name(k.out) << "> >(out, in, p0, g);\n}\n";
  return os.str();
}

std::string render_softmax(const SoftmaxKernel& k) {
  std::ostringstream os;
  os << "// " << (k.log ? "log_softmax" : "softmax") << " over rows\n" << render_row_head();
  os << signature(kernel_symbol(k), k.out, k.in, k.warp_rows) << " {\n";
  os << "  ember_dev::softmax_" << (k.warp_rows ? "warp_rows<" : "rows<") << (k.log ? "true" : "false");
  if (k.warp_rows) os << ", " << k.vec << ", " << k.slots;
  os << ">(out, in, g);\n}\n";
  return os.str();
}

}  // namespace ember::kernels::cuda
