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

/// Folds every thread's value of the block into one, which every thread gets back.
/// blockDim.x is a power of two no larger than EMBER_ROW_BLOCK.
template <typename Op> __device__ typename Op::Acc block_combine(typename Op::Acc v, typename Op::Acc* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = Op::combine(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  const typename Op::Acc r = buf[0];
  __syncthreads();
  return r;
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

/// softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax(x) = x - max - log(sum(…)).
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
      for (long long j = threadIdx.x; j < n; j += blockDim.x) y[j * so] = cvt<Out>(exp(cvt<A>(x[j * si]) - m) / s);
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

std::string signature(const std::string& symbol, ScalarType out, ScalarType in) {
  return "extern \"C\" __global__ void " + symbol + "(" + cuda_type_name(out) + "* out, const " + cuda_type_name(in) +
         "* in, double p0, ember_dev::RowGeometry g)";
}

}  // namespace

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
  return std::string(k.log ? "ember_log_softmax_" : "ember_softmax_") + dtype_tag(k.in) + "_to_" + dtype_tag(k.out);
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
  os << signature(kernel_symbol(k), k.out, k.in) << " {\n";
  os << "  ember_dev::softmax_rows<" << (k.log ? "true" : "false") << ">(out, in, g);\n}\n";
  return os.str();
}

}  // namespace ember::kernels::cuda
