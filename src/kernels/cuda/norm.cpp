// kernels/cuda/norm.cpp — see norm.h.
#include "kernels/cuda/norm.h"

#include <sstream>

#include "kernels/cuda/loops.h"
#include "kernels/cuda/nvrtc.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_source.h"

namespace ember::kernels::cuda {
namespace {

/// Elements of one (n, c) plane per block of batch norm in evaluation, and its threads.
constexpr int64_t kPlaneChunk = 1024;
constexpr unsigned kPlaneBlock = 256;

/// The norm templates, rendered after the row head. A = the math type (float for half,
/// bfloat16 and float; double for double), which is also PyTorch's CUDA accumulation type.
constexpr const char* kNormSource = R"CUDA(
namespace ember_dev {
/// Each row: Welford's mean and variance (biased) over the block, then the affine pass.
template <typename T, typename S>
__device__ void layer_norm_rows(T* y, S* mean_out, S* rstd_out, const T* x, const T* gamma, const T* beta,
                                long long M, long long N, double eps) {
  typedef typename OpMath<T>::type A;
  typedef VarOp<T> W;
  __shared__ typename W::Acc buf[EMBER_ROW_BLOCK];
  for (long long r = blockIdx.x; r < M; r += gridDim.x) {
    const T* xr = x + r * N;
    T* yr = y + r * N;
    typename W::Acc acc = W::init();
    for (long long j = threadIdx.x; j < N; j += blockDim.x) acc = W::step(acc, cvt<A>(xr[j]));
    acc = block_combine<W>(acc, buf);
    const A mean = acc.mean;
    const A rstd = A(1) / sqrt(acc.m2 / acc.n + static_cast<A>(eps));  // an empty row: 0/0, NaN
    if (threadIdx.x == 0) {
      mean_out[r] = cvt<S>(mean);
      rstd_out[r] = cvt<S>(rstd);
    }
    for (long long j = threadIdx.x; j < N; j += blockDim.x) {
      A v = (cvt<A>(xr[j]) - mean) * rstd;
      if (gamma) v = v * cvt<A>(gamma[j]);
      if (beta) v = v + cvt<A>(beta[j]);
      yr[j] = cvt<T>(v);
    }
  }
}

/// layer_norm_rows over warp rows (N at most 32 * C), read and written V elements at a
/// time (warp_slot); the row in registers allows the exact two-pass variance instead of
/// Welford's running one.
template <int V, int C, typename T, typename S>
__device__ void layer_norm_warp_rows(T* y, S* mean_out, S* rstd_out, const T* x, const T* gamma, const T* beta,
                                     long long M, long long N, double eps) {
  typedef typename OpMath<T>::type A;
  const int n = static_cast<int>(N);
  const int lane = static_cast<int>(threadIdx.x % 32);
  for_each_warp_row(M, [&](long long r) {
    A v[C];
    load_warp_row<V>(v, x + r * N, lane, n, A(0));
    // Two passes over the registers: the mean, then the mean squared deviation from it.
    A sum = A(0);
#pragma unroll
    for (int t = 0; t < C; ++t) sum += v[t];
    const A total = warp_combine<SumOp<T> >(sum);
    const A mean = n > 0 ? total / static_cast<A>(n) : A(0);  // an empty row: mean 0, rstd NaN
    A m2 = A(0);
#pragma unroll
    for (int t = 0; t < C; ++t) {
      const A d = warp_slot<V>(t, lane) < n ? v[t] - mean : A(0);
      m2 += d * d;
    }
    const A rstd = A(1) / sqrt(warp_combine<SumOp<T> >(m2) / static_cast<A>(n) + static_cast<A>(eps));
    if (lane == 0) {
      mean_out[r] = cvt<S>(mean);
      rstd_out[r] = cvt<S>(rstd);
    }
    store_warp_row<V, C>(y + r * N, lane, n, [&](int t, int j) {
      A o = (v[t] - mean) * rstd;
      if (gamma) o = o * cvt<A>(gamma[j]);
      if (beta) o = o + cvt<A>(beta[j]);
      return cvt<T>(o);
    });
  });
}

/// A parameter of C elements with its own stride, or none.
template <typename P> struct Param {
  P* data;
  long long stride;
};
template <typename A, typename P> __device__ __forceinline__ A param_or(Param<P> p, long long c, A fallback) {
  return p.data ? cvt<A>(p.data[c * p.stride]) : fallback;
}

/// Element j of channel c of a contiguous [N, C, S] tensor.
__device__ __forceinline__ long long channel_offset(long long j, long long c, long long C, long long S) {
  return (j / S * C + c) * S + j % S;
}

/// One block per channel: the statistics (the batch's in training, the running ones in
/// evaluation), the running stats' update, then the normalized channel.
template <typename T, typename P, typename S>
__device__ void batch_norm_channels(T* y, S* save_mean, S* save_invstd, const T* x, Param<P> w, Param<P> b,
                                    Param<P> rm, Param<P> rv, long long N, long long C, long long Sz, int training,
                                    double momentum, double eps) {
  typedef typename OpMath<T>::type A;
  typedef VarOp<T> W;
  __shared__ typename W::Acc buf[EMBER_ROW_BLOCK];
  const long long count = N * Sz;
  for (long long c = blockIdx.x; c < C; c += gridDim.x) {
    A mean, invstd;
    if (training) {
      typename W::Acc acc = W::init();
      for (long long j = threadIdx.x; j < count; j += blockDim.x)
        acc = W::step(acc, cvt<A>(x[channel_offset(j, c, C, Sz)]));
      acc = block_combine<W>(acc, buf);
      mean = count > 0 ? acc.mean : A(0);
      invstd = count > 0 ? A(1) / sqrt(acc.m2 / acc.n + static_cast<A>(eps)) : A(0);
      if (threadIdx.x == 0 && count > 0) {
        const A m = static_cast<A>(momentum);
        if (rm.data) rm.data[c * rm.stride] = cvt<P>(m * acc.mean + (A(1) - m) * cvt<A>(rm.data[c * rm.stride]));
        if (rv.data) {
          const A unbiased = acc.m2 / (acc.n - A(1));
          rv.data[c * rv.stride] = cvt<P>(m * unbiased + (A(1) - m) * cvt<A>(rv.data[c * rv.stride]));
        }
      }
    } else {
      mean = cvt<A>(rm.data[c * rm.stride]);
      invstd = A(1) / sqrt(cvt<A>(rv.data[c * rv.stride]) + static_cast<A>(eps));
    }
    if (threadIdx.x == 0) {
      save_mean[c] = cvt<S>(mean);
      save_invstd[c] = cvt<S>(invstd);
    }
    const A weight = param_or(w, c, A(1)), bias = param_or(b, c, A(0));
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
      const long long off = channel_offset(j, c, C, Sz);
      y[off] = cvt<T>((cvt<A>(x[off]) - mean) * invstd * weight + bias);
    }
  }
}

/// Evaluation: a pointwise pass with the running statistics. Each block takes a chunk of
/// EMBER_PLANE_CHUNK elements of one (n, c) plane, so the channel's constants are
/// computed once per block, not per element; blocks stride over the rest past the grid.
template <typename T, typename P, typename S>
__device__ void batch_norm_eval_planes(T* y, S* save_mean, S* save_invstd, const T* x, Param<P> w, Param<P> b,
                                       Param<P> rm, Param<P> rv, long long N, long long C, long long Sz,
                                       double eps) {
  typedef typename OpMath<T>::type A;
  const long long chunks = (Sz + EMBER_PLANE_CHUNK - 1) / EMBER_PLANE_CHUNK;
  for (long long blk = blockIdx.x; blk < N * C * chunks; blk += gridDim.x) {
    const long long plane = blk / chunks, chunk = blk - plane * chunks, c = plane % C;
    const A mean = cvt<A>(rm.data[c * rm.stride]);
    const A invstd = A(1) / sqrt(cvt<A>(rv.data[c * rv.stride]) + static_cast<A>(eps));
    const A weight = param_or(w, c, A(1)), bias = param_or(b, c, A(0));
    if (plane == c && chunk == 0 && threadIdx.x == 0) {
      save_mean[c] = cvt<S>(mean);
      save_invstd[c] = cvt<S>(invstd);
    }
    const long long begin = plane * Sz + chunk * EMBER_PLANE_CHUNK;
    const long long end = plane * Sz + (Sz < (chunk + 1) * EMBER_PLANE_CHUNK ? Sz : (chunk + 1) * EMBER_PLANE_CHUNK);
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x)
      y[i] = cvt<T>((cvt<A>(x[i]) - mean) * invstd * weight + bias);
  }
}

/// The two sums batch norm's backward needs per channel.
template <typename A> struct SumDot { A sum; A dot; };
template <typename A> struct SumDotOp {
  typedef SumDot<A> Acc;
  static __device__ Acc combine(Acc a, Acc b) { return Acc{a.sum + b.sum, a.dot + b.dot}; }
};

/// One block per channel: sum(dy) and sum((x - mean) * dy), then the input's gradient
/// (the batch-statistics formula in training, the affine one in evaluation).
template <typename T, typename P, typename S>
__device__ void batch_norm_backward_channels(T* dx, P* dw, P* db, const T* dy, const T* x, Param<P> w,
                                             Param<const S> mean_p, Param<const S> var_p, long long N, long long C,
                                             long long Sz, int train, double eps) {
  typedef typename OpMath<T>::type A;
  typedef SumDotOp<A> Op;
  __shared__ typename Op::Acc buf[EMBER_ROW_BLOCK];
  const long long count = N * Sz;
  for (long long c = blockIdx.x; c < C; c += gridDim.x) {
    const A mean = cvt<A>(mean_p.data[c * mean_p.stride]);
    const A v = cvt<A>(var_p.data[c * var_p.stride]);
    const A invstd = train ? v : A(1) / sqrt(v + static_cast<A>(eps));
    typename Op::Acc acc{A(0), A(0)};
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
      const long long off = channel_offset(j, c, C, Sz);
      const A g = cvt<A>(dy[off]);
      acc.sum += g;
      acc.dot += (cvt<A>(x[off]) - mean) * g;
    }
    acc = block_combine<Op>(acc, buf);
    if (threadIdx.x == 0) {
      if (dw) dw[c] = cvt<P>(acc.dot * invstd);
      if (db) db[c] = cvt<P>(acc.sum);
    }
    if (!dx) continue;
    // PyTorch's CUDA kernel's roundings, in its order: a reciprocal of the count multiplies,
    // and the projection is subtracted before the mean gradient.
    const A norm = A(1) / static_cast<A>(count);
    const A grad_mean = acc.sum * norm, proj_scale = acc.dot * norm * invstd * invstd;
    const A scale = invstd * param_or(w, c, A(1));
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
      const long long off = channel_offset(j, c, C, Sz);
      const A g = cvt<A>(dy[off]);
      dx[off] = cvt<T>(train ? (g - (cvt<A>(x[off]) - mean) * proj_scale - grad_mean) * scale : g * scale);
    }
  }
}
}  // namespace ember_dev
)CUDA";

std::string head() {
  return render_row_head() + "#define EMBER_PLANE_CHUNK " + std::to_string(kPlaneChunk) + "\n" + kNormSource + "\n";
}

/// A kernel argument for a 1-D parameter: its data (null when undefined) and stride.
struct ParamArg {
  void* data = nullptr;
  long long stride = 0;
};
ParamArg param_arg(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.raw_data_ptr(), t.dim() == 0 ? 0 : t.stride(0)};
}

void* ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data_ptr() : nullptr; }

}  // namespace

ScalarType norm_stat_dtype(ScalarType input) { return is_reduced_float(input) ? kFloat : input; }

std::string kernel_symbol(const LayerNormKernel& k) {
  return std::string("ember_layer_norm_") + dtype_tag(k.in) + "_stat_" + dtype_tag(k.stat) +
         (k.warp_rows ? "_warp_v" + std::to_string(k.vec) + "_s" + std::to_string(k.slots) : "");
}

std::string kernel_symbol(const BatchNormKernel& k) {
  const char* head = k.backward ? "ember_batch_norm_backward_" : k.eval ? "ember_batch_norm_eval_" : "ember_batch_norm_";
  return std::string(head) + dtype_tag(k.in) + "_param_" +
         dtype_tag(k.param) + "_stat_" + dtype_tag(k.stat);
}

std::string render_layer_norm(const LayerNormKernel& k) {
  const std::string T = cuda_type_name(k.in), S = cuda_type_name(k.stat);
  std::ostringstream os;
  os << "// layer norm over rows\n" << head();
  os << (k.warp_rows ? warp_row_kernel_head() : std::string("extern \"C\" __global__ void ")) << kernel_symbol(k) << "("
     << T << "* y, " << S << "* mean, " << S
     << "* rstd, const " << T << "* x, const " << T << "* gamma, const " << T
     << "* beta, long long M, long long N, double eps) {\n";
  os << "  ember_dev::layer_norm_"
     << (k.warp_rows ? "warp_rows<" + std::to_string(k.vec) + ", " + std::to_string(k.slots) + ">" : std::string("rows"))
     << "(y, mean, rstd, x, gamma, beta, M, N, eps);\n}\n";
  return os.str();
}

std::string render_batch_norm(const BatchNormKernel& k) {
  const std::string T = cuda_type_name(k.in), P = cuda_type_name(k.param), S = cuda_type_name(k.stat);
  std::ostringstream os;
  os << "// batch norm" << (k.backward ? " backward" : k.eval ? " in evaluation" : "") << " over channels\n" << head();
  os << "extern \"C\" __global__ void " << kernel_symbol(k) << "(";
  if (k.eval) {
    os << T << "* y, " << S << "* save_mean, " << S << "* save_invstd, const " << T << "* x, ember_dev::Param<" << P
       << "> w, ember_dev::Param<" << P << "> b, ember_dev::Param<" << P << "> rm, ember_dev::Param<" << P
       << "> rv, long long N, long long C, long long S, double eps) {\n";
    os << "  ember_dev::batch_norm_eval_planes(y, save_mean, save_invstd, x, w, b, rm, rv, N, C, S, eps);\n}\n";
  } else if (!k.backward) {
    os << T << "* y, " << S << "* save_mean, " << S << "* save_invstd, const " << T << "* x, ember_dev::Param<" << P
       << "> w, ember_dev::Param<" << P << "> b, ember_dev::Param<" << P << "> rm, ember_dev::Param<" << P
       << "> rv, long long N, long long C, long long S, int training, double momentum, double eps) {\n";
    os << "  ember_dev::batch_norm_channels(y, save_mean, save_invstd, x, w, b, rm, rv, N, C, S, training, momentum, "
          "eps);\n}\n";
  } else {
    os << T << "* dx, " << P << "* dw, " << P << "* db, const " << T << "* dy, const " << T << "* x, ember_dev::Param<"
       << P << "> w, ember_dev::Param<const " << S << "> mean, ember_dev::Param<const " << S
       << "> var, long long N, long long C, long long S, int train, double eps) {\n";
    os << "  ember_dev::batch_norm_backward_channels(dx, dw, db, dy, x, w, mean, var, N, C, S, train, eps);\n}\n";
  }
  return os.str();
}

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  EMBER_INTERNAL_ASSERT(x.is_contiguous() && out.is_contiguous()) << "CUDA layer norm of a strided tensor";
  const bool warp_rows = fits_warp_row(N, x.dtype());
  const int vec = warp_rows ? warp_row_vector(N, x.dtype(), {x.raw_data_ptr(), out.raw_data_ptr()}, {N}) : 1;
  const LayerNormKernel k{.in = x.dtype(),
                          .stat = mean.dtype(),
                          .warp_rows = warp_rows,
                          .vec = vec,
                          .slots = warp_rows ? warp_row_slots(N, vec) : 0};
  void* ptrs[] = {out.raw_data_ptr(), mean.raw_data_ptr(), rstd.raw_data_ptr(),
                  x.raw_data_ptr(),   ptr_or_null(weight), ptr_or_null(bias)};
  long long m = M, n = N;
  void* args[] = {&ptrs[0], &ptrs[1], &ptrs[2], &ptrs[3], &ptrs[4], &ptrs[5], &m, &n, &eps};
  const auto render = [&] { return render_layer_norm(k); };
  if (k.warp_rows) return launch_warp_rows(kernel_symbol(k), render, x.device().index, args, M);
  launch_row_kernel(kernel_symbol(k), render, x.device().index, args, M, N);
}

void batch_norm(const Tensor& x, int64_t N, int64_t C, int64_t S, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps,
                const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd) {
  EMBER_INTERNAL_ASSERT(x.is_contiguous() && out.is_contiguous()) << "CUDA batch norm of a strided tensor";
  ScalarType param = x.dtype();
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var})
    if (t->defined()) param = t->dtype();
  const BatchNormKernel k{
      .backward = false, .eval = !training, .in = x.dtype(), .param = param, .stat = save_mean.dtype()};
  void* ptrs[] = {out.raw_data_ptr(), save_mean.raw_data_ptr(), save_invstd.raw_data_ptr(), x.raw_data_ptr()};
  ParamArg p[] = {param_arg(weight), param_arg(bias), param_arg(running_mean), param_arg(running_var)};
  long long n = N, c = C, s = S;
  if (!training) {
    // Blocks of chunks of planes, as batch_norm_eval_planes takes them.
    void* args[] = {&ptrs[0], &ptrs[1], &ptrs[2], &ptrs[3], &p[0], &p[1], &p[2], &p[3], &n, &c, &s, &eps};
    void* fn = get_kernel(kernel_symbol(k), x.device().index, [&] { return render_batch_norm(k); });
    const int64_t chunks = (S + kPlaneChunk - 1) / kPlaneChunk;
    launch_blocks(fn, x.device(), N * C * chunks, kPlaneBlock, args);
    return;
  }
  int train = 1;
  void* args[] = {&ptrs[0], &ptrs[1], &ptrs[2], &ptrs[3], &p[0],  &p[1],     &p[2],
                  &p[3],    &n,       &c,       &s,       &train, &momentum, &eps};
  launch_row_kernel(kernel_symbol(k), [&] { return render_batch_norm(k); }, x.device().index, args, C, N * S);
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t N, int64_t C, int64_t S, const Tensor& weight,
                         const Tensor& mean, const Tensor& var, bool train, double eps, const Tensor& grad_input,
                         const Tensor& grad_weight, const Tensor& grad_bias) {
  EMBER_INTERNAL_ASSERT(x.is_contiguous() && grad_out.is_contiguous()) << "CUDA batch norm backward of strided tensors";
  EMBER_INTERNAL_ASSERT(mean.dtype() == var.dtype()) << "batch norm backward statistics of two dtypes";
  ScalarType param = x.dtype();
  for (const Tensor* t : {&weight, &grad_weight, &grad_bias})
    if (t->defined()) param = t->dtype();
  const BatchNormKernel k{.backward = true, .in = x.dtype(), .param = param, .stat = mean.dtype()};
  void* ptrs[] = {ptr_or_null(grad_input), ptr_or_null(grad_weight), ptr_or_null(grad_bias), grad_out.raw_data_ptr(),
                  x.raw_data_ptr()};
  ParamArg p[] = {param_arg(weight), param_arg(mean), param_arg(var)};
  long long n = N, c = C, s = S;
  int is_train = train ? 1 : 0;
  void* args[] = {&ptrs[0], &ptrs[1], &ptrs[2], &ptrs[3], &ptrs[4], &p[0], &p[1], &p[2], &n, &c, &s, &is_train, &eps};
  launch_row_kernel(kernel_symbol(k), [&] { return render_batch_norm(k); }, x.device().index, args, C, N * S);
}

}  // namespace ember::kernels::cuda
