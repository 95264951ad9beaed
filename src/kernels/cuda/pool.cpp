// kernels/cuda/pool.cpp — see pool.h.
#include "kernels/cuda/pool.h"

#include <algorithm>
#include <sstream>

#include "core/cuda.h"
#include "ember/cuda.h"
#include "kernels/cuda/nvrtc.h"
#include "kernels/cuda/reduce_source.h"

namespace ember::kernels::cuda {
namespace {

static_assert(sizeof(cpu::Pool2dParams) == 13 * sizeof(long long), "PoolGeometry mirrors Pool2dParams");

/// One function per pooling kernel, each for the element `i` of its index space (the
/// output's forward, the input's backward). Windows and divisors are the CPU kernels'
/// (kernels/cpu/conv.cpp and conv_common.h); the backward ones gather, per input element,
/// the output windows that cover it (ATen's CUDA formulas for the range of windows).
constexpr const char* kPoolSource = R"CUDA(
namespace ember_dev {
struct PoolGeometry {
  long long planes, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
      dilation_w;
};
__device__ __forceinline__ long long min_(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long max_(long long a, long long b) { return a > b ? a : b; }

// Average pooling's window of output (oh, ow), clipped to the input, and its size counting
// padding.
struct AvgWindow { long long h0, h1, w0, w1, padded; };
__device__ __forceinline__ AvgWindow avg_window(const PoolGeometry& p, long long oh, long long ow) {
  const long long h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  const long long h1 = min_(h0 + p.kernel_h, p.in_h + p.pad_h), w1 = min_(w0 + p.kernel_w, p.in_w + p.pad_w);
  return AvgWindow{max_(h0, 0), min_(h1, p.in_h), max_(w0, 0), min_(w1, p.in_w), (h1 - h0) * (w1 - w0)};
}
__device__ __forceinline__ long long avg_divisor(const AvgWindow& w, int count_include_pad, long long divisor) {
  if (divisor) return divisor;
  return count_include_pad ? w.padded : (w.h1 - w.h0) * (w.w1 - w.w0);
}
// Adaptive pooling: output a of b covers input [start, end) of c.
__device__ __forceinline__ long long adaptive_start(long long a, long long b, long long c) {
  return (a / b) * c + ((a % b) * c) / b;
}
__device__ __forceinline__ long long adaptive_end(long long a, long long b, long long c) {
  return 1 + ((a + 1) * c - 1) / b;
}

template <typename T>
__device__ void max_forward(T* out, long long* ind, const T* in, const PoolGeometry& p, int, long long, long long i) {
  typedef typename OpMath<T>::type A;
  const long long ow = i % p.out_w, oh = (i / p.out_w) % p.out_h, plane = i / (p.out_w * p.out_h);
  const T* src = in + plane * p.in_h * p.in_w;
  long long ih0 = oh * p.stride_h - p.pad_h, iw0 = ow * p.stride_w - p.pad_w;
  const long long ih1 = min_(ih0 + (p.kernel_h - 1) * p.dilation_h + 1, p.in_h);
  const long long iw1 = min_(iw0 + (p.kernel_w - 1) * p.dilation_w + 1, p.in_w);
  while (ih0 < 0) ih0 += p.dilation_h;
  while (iw0 < 0) iw0 += p.dilation_w;
  long long best = ih0 * p.in_w + iw0;
  A maxval = lowest_<A>();
  for (long long ih = ih0; ih < ih1; ih += p.dilation_h) {
    for (long long iw = iw0; iw < iw1; iw += p.dilation_w) {
      const long long index = ih * p.in_w + iw;
      const A v = cvt<A>(src[index]);
      if (v > maxval || isnan(v)) {
        maxval = v;
        best = index;
      }
    }
  }
  out[i] = cvt<T>(maxval);
  ind[i] = best;
}

template <typename T>
__device__ void avg_forward(T* out, long long*, const T* in, const PoolGeometry& p, int count_include_pad,
                            long long divisor, long long i) {
  typedef typename OpMath<T>::type A;
  const long long ow = i % p.out_w, oh = (i / p.out_w) % p.out_h, plane = i / (p.out_w * p.out_h);
  const T* src = in + plane * p.in_h * p.in_w;
  const AvgWindow w = avg_window(p, oh, ow);
  if (w.h0 >= w.h1 || w.w0 >= w.w1) {
    out[i] = cvt<T>(A(0));
    return;
  }
  A sum = A(0);
  for (long long ih = w.h0; ih < w.h1; ++ih)
    for (long long iw = w.w0; iw < w.w1; ++iw) sum += cvt<A>(src[ih * p.in_w + iw]);
  out[i] = cvt<T>(sum / static_cast<A>(avg_divisor(w, count_include_pad, divisor)));
}

template <typename T>
__device__ void adaptive_avg_forward(T* out, long long*, const T* in, const PoolGeometry& p, int, long long,
                                     long long i) {
  typedef typename OpMath<T>::type A;
  const long long ow = i % p.out_w, oh = (i / p.out_w) % p.out_h, plane = i / (p.out_w * p.out_h);
  const T* src = in + plane * p.in_h * p.in_w;
  const long long ih0 = adaptive_start(oh, p.out_h, p.in_h), ih1 = adaptive_end(oh, p.out_h, p.in_h);
  const long long iw0 = adaptive_start(ow, p.out_w, p.in_w), iw1 = adaptive_end(ow, p.out_w, p.in_w);
  A sum = A(0);
  for (long long ih = ih0; ih < ih1; ++ih)
    for (long long iw = iw0; iw < iw1; ++iw) sum += cvt<A>(src[ih * p.in_w + iw]);
  out[i] = cvt<T>(sum / static_cast<A>(ih1 - ih0) / static_cast<A>(iw1 - iw0));
}

// Backward: `out` is grad_input, `in` grad_output; i indexes grad_input.
template <typename T>
__device__ void max_backward(T* out, long long* ind, const T* in, const PoolGeometry& p, int, long long, long long i) {
  typedef typename OpMath<T>::type A;
  const long long w = i % p.in_w, h = (i / p.in_w) % p.in_h, plane = i / (p.in_w * p.in_h);
  const long long span_h = (p.kernel_h - 1) * p.dilation_h + 1, span_w = (p.kernel_w - 1) * p.dilation_w + 1;
  const long long ph0 = h + p.pad_h < span_h ? 0 : (h + p.pad_h - span_h) / p.stride_h + 1;
  const long long pw0 = w + p.pad_w < span_w ? 0 : (w + p.pad_w - span_w) / p.stride_w + 1;
  const long long ph1 = min_((h + p.pad_h) / p.stride_h + 1, p.out_h);
  const long long pw1 = min_((w + p.pad_w) / p.stride_w + 1, p.out_w);
  const long long base = plane * p.out_h * p.out_w, self = h * p.in_w + w;
  A g = A(0);
  for (long long ph = ph0; ph < ph1; ++ph)
    for (long long pw = pw0; pw < pw1; ++pw)
      if (ind[base + ph * p.out_w + pw] == self) g += cvt<A>(in[base + ph * p.out_w + pw]);
  out[i] = cvt<T>(g);
}

template <typename T>
__device__ void avg_backward(T* out, long long*, const T* in, const PoolGeometry& p, int count_include_pad,
                             long long divisor, long long i) {
  typedef typename OpMath<T>::type A;
  const long long w = i % p.in_w, h = (i / p.in_w) % p.in_h, plane = i / (p.in_w * p.in_h);
  const long long ph0 = h + p.pad_h < p.kernel_h ? 0 : (h + p.pad_h - p.kernel_h) / p.stride_h + 1;
  const long long pw0 = w + p.pad_w < p.kernel_w ? 0 : (w + p.pad_w - p.kernel_w) / p.stride_w + 1;
  const long long ph1 = min_((h + p.pad_h) / p.stride_h + 1, p.out_h);
  const long long pw1 = min_((w + p.pad_w) / p.stride_w + 1, p.out_w);
  const long long base = plane * p.out_h * p.out_w;
  A g = A(0);
  for (long long ph = ph0; ph < ph1; ++ph) {
    for (long long pw = pw0; pw < pw1; ++pw) {
      const AvgWindow win = avg_window(p, ph, pw);
      if (h < win.h0 || h >= win.h1 || w < win.w0 || w >= win.w1) continue;
      g += cvt<A>(in[base + ph * p.out_w + pw]) / static_cast<A>(avg_divisor(win, count_include_pad, divisor));
    }
  }
  out[i] = cvt<T>(g);
}

template <typename T>
__device__ void adaptive_avg_backward(T* out, long long*, const T* in, const PoolGeometry& p, int, long long,
                                      long long i) {
  typedef typename OpMath<T>::type A;
  const long long w = i % p.in_w, h = (i / p.in_w) % p.in_h, plane = i / (p.in_w * p.in_h);
  const long long base = plane * p.out_h * p.out_w;
  // The outputs whose windows hold h: [floor(h * out / in), ceil((h + 1) * out / in)).
  const long long ph0 = h * p.out_h / p.in_h, ph1 = min_(((h + 1) * p.out_h + p.in_h - 1) / p.in_h, p.out_h);
  const long long pw0 = w * p.out_w / p.in_w, pw1 = min_(((w + 1) * p.out_w + p.in_w - 1) / p.in_w, p.out_w);
  A g = A(0);
  for (long long ph = ph0; ph < ph1; ++ph) {
    const long long h0 = adaptive_start(ph, p.out_h, p.in_h), h1 = adaptive_end(ph, p.out_h, p.in_h);
    if (h < h0 || h >= h1) continue;
    for (long long pw = pw0; pw < pw1; ++pw) {
      const long long w0 = adaptive_start(pw, p.out_w, p.in_w), w1 = adaptive_end(pw, p.out_w, p.in_w);
      if (w < w0 || w >= w1) continue;
      // As the CPU and ATen: divided by the window's height, rounded, then by its width.
      const A by_h = cvt<A>(cvt<T>(cvt<A>(in[base + ph * p.out_w + pw]) / static_cast<A>(h1 - h0)));
      g += cvt<A>(cvt<T>(by_h / static_cast<A>(w1 - w0)));
    }
  }
  out[i] = cvt<T>(g);
}
}  // namespace ember_dev
)CUDA";

bool is_backward(Pool op) { return op == Pool::MaxBackward || op == Pool::AvgBackward || op == Pool::AdaptiveBackward; }

constexpr unsigned kBlock = 256;
constexpr int64_t kMaxGrid = int64_t{1} << 20;  // the loop strides over the rest

/// Runs `k` over `out`'s elements (`out` is the output forward, grad_input backward).
void launch(const PoolKernel& k, const Tensor& out, const Tensor& indices, const Tensor& in, const cpu::Pool2dParams& p,
            bool count_include_pad = false, std::optional<int64_t> divisor_override = std::nullopt) {
  EMBER_INTERNAL_ASSERT(out.is_cuda() && in.device() == out.device() && out.is_contiguous() && in.is_contiguous())
      << "CUDA pooling kernel '" << kernel_symbol(k) << "' with a strided or misplaced tensor";
  if (out.numel() == 0) return;
  const int device = out.device().index;
  void* fn = get_kernel(kernel_symbol(k), device, [&] { return render_pool(k); });
  void* out_ptr = out.raw_data_ptr();
  void* ind_ptr = indices.defined() ? indices.raw_data_ptr() : nullptr;
  void* in_ptr = in.raw_data_ptr();
  cpu::Pool2dParams geometry = p;
  int cip = count_include_pad ? 1 : 0;
  long long divisor = divisor_override.value_or(0);
  void* args[] = {&out_ptr, &ind_ptr, &in_ptr, &geometry, &cip, &divisor};
  const int64_t blocks = std::min<int64_t>((out.numel() + kBlock - 1) / kBlock, kMaxGrid);
  ember::cuda::DeviceGuard guard(device);
  launch_kernel(fn, static_cast<unsigned>(blocks), kBlock, args, core::cuda::current_stream_handle(device));
}

}  // namespace

const char* pool_name(Pool op) {
  switch (op) {
    case Pool::MaxForward:
      return "max_forward";
    case Pool::AvgForward:
      return "avg_forward";
    case Pool::AdaptiveForward:
      return "adaptive_avg_forward";
    case Pool::MaxBackward:
      return "max_backward";
    case Pool::AvgBackward:
      return "avg_backward";
    case Pool::AdaptiveBackward:
      return "adaptive_avg_backward";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown pooling kernel";
}

std::string kernel_symbol(const PoolKernel& k) {
  return std::string("ember_pool_") + pool_name(k.op) + "_" + dtype_tag(k.dtype);
}

std::string render_pool(const PoolKernel& k) {
  const std::string T = cuda_type_name(k.dtype);
  std::ostringstream os;
  os << "// " << pool_name(k.op) << " pooling\n" << render_row_head() << kPoolSource << "\n";
  os << "extern \"C\" __global__ void " << kernel_symbol(k) << "(" << T << "* out, long long* indices, const " << T
     << "* in, ember_dev::PoolGeometry p, int count_include_pad, long long divisor) {\n";
  os << "  const long long n = p.planes * " << (is_backward(k.op) ? "p.in_h * p.in_w" : "p.out_h * p.out_w") << ";\n";
  os << "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n";
  os << "  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)\n";
  os << "    ember_dev::" << pool_name(k.op) << "(out, indices, in, p, count_include_pad, divisor, i);\n}\n";
  return os.str();
}

void max_pool2d(const Tensor& input, const Tensor& out, const Tensor& indices, const cpu::Pool2dParams& p) {
  launch({Pool::MaxForward, input.dtype()}, out, indices, input, p);
}

void avg_pool2d(const Tensor& input, const Tensor& out, const cpu::Pool2dParams& p, bool count_include_pad,
                std::optional<int64_t> divisor_override) {
  launch({Pool::AvgForward, input.dtype()}, out, Tensor(), input, p, count_include_pad, divisor_override);
}

void adaptive_avg_pool2d(const Tensor& input, const Tensor& out, const cpu::Pool2dParams& p) {
  launch({Pool::AdaptiveForward, input.dtype()}, out, Tensor(), input, p);
}

void max_pool2d_backward(const Tensor& grad_output, const Tensor& indices, const Tensor& grad_input,
                         const cpu::Pool2dParams& p) {
  launch({Pool::MaxBackward, grad_input.dtype()}, grad_input, indices, grad_output, p);
}

void avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const cpu::Pool2dParams& p,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  launch({Pool::AvgBackward, grad_input.dtype()}, grad_input, Tensor(), grad_output, p, count_include_pad,
         divisor_override);
}

void adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const cpu::Pool2dParams& p) {
  launch({Pool::AdaptiveBackward, grad_input.dtype()}, grad_input, Tensor(), grad_output, p);
}

}  // namespace ember::kernels::cuda
