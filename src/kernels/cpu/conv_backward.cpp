// kernels/cpu/conv_backward.cpp — see conv_backward.h. The weight gradient runs im2col +
// GEMM per image and group, images split across threads with one accumulator each;
// float16/bfloat16 compute in float32 and round once. Pooling gradients accumulate in
// the element type, as ATen's CPU kernels do, so rounding matches theirs.
#include "kernels/cpu/conv_backward.h"

#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

/// c[M][N] += a[M][K] @ b[N][K]^T, row-major (through gemm.h, so on the one OpenMP pool).
template <typename Acc>
void gemm_nt_acc(int64_t M, int64_t N, int64_t K, const Acc* a, const Acc* b, Acc* c) {
  gemm(false, true, M, N, K, Acc(1), a, std::max<int64_t>(K, 1), b, std::max<int64_t>(K, 1), Acc(1), c,
       std::max<int64_t>(N, 1));
}

template <typename Acc>
void weight_grad_core(const Acc* a, const Acc* b, Acc* out, const Conv2dParams& q) {
  const int64_t G = q.groups, M = q.out_channels / G, Cb = q.in_channels / G;
  const int64_t K = Cb * q.kernel_h * q.kernel_w, P = q.out_h * q.out_w;
  const int64_t W = G * M * K;
  std::fill(out, out + W, Acc(0));
  if (W == 0 || P == 0 || q.batch == 0) return;
  const int64_t a_img = q.out_channels * P, b_plane = q.in_h * q.in_w, b_img = q.in_channels * b_plane;
  const bool parallel = q.batch > 1 && q.batch * W * P > kGrainSize && !omp_in_parallel();
  const int threads = parallel ? static_cast<int>(std::min<int64_t>(omp_get_max_threads(), q.batch)) : 1;
  // Thread t > 0 sums its images into partial[t - 1]; thread 0 into out.
  std::vector<Acc> partial(static_cast<size_t>((threads - 1) * W));
  // Part t takes the images a static schedule gives thread t (the first batch % threads
  // parts one more), on the full team: Note [full OpenMP teams] (loops.h).
  for_parts(threads, [&](int64_t t, int64_t parts) {
    Acc* acc = t == 0 ? out : partial.data() + (t - 1) * W;
    std::vector<Acc> col(static_cast<size_t>(K * P));
    const int64_t per = q.batch / parts, extra = q.batch % parts;
    const int64_t n0 = t * per + std::min(t, extra), n1 = n0 + per + (t < extra ? 1 : 0);
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t g = 0; g < G; ++g) {
        im2col(b + n * b_img + g * Cb * b_plane, Cb, q, col.data());
        gemm_nt_acc<Acc>(M, K, P, a + n * a_img + g * M * P, col.data(), acc + g * M * K);
      }
    }
  });
  for (int t = 1; t < threads; ++t) {
    const Acc* src = partial.data() + (t - 1) * W;
    for (int64_t i = 0; i < W; ++i) out[i] += src[i];
  }
}

template <typename T>
void bias_grad_impl(const T* g, T* o, int64_t N, int64_t C, int64_t S) {
#pragma omp parallel for if (N * C * S > kGrainSize && C > 1 && !omp_in_parallel())
  for (int64_t c = 0; c < C; ++c) {
    double acc = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T* row = g + (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s) acc += static_cast<double>(row[s]);
    }
    o[c] = static_cast<T>(acc);
  }
}

bool pool_parallel(const Pool2dParams& p, int64_t window) {
  return p.planes > 1 && p.planes * p.out_h * p.out_w * std::max<int64_t>(window, 1) > kGrainSize && !omp_in_parallel();
}

template <typename T>
void max_pool_backward_impl(const T* go, const int64_t* ind, T* gi, const Pool2dParams& p) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
#pragma omp parallel for if (pool_parallel(p, 1))
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    T* dst = gi + plane * in_plane;
    std::fill(dst, dst + in_plane, T(0));
    const T* src = go + plane * out_plane;
    const int64_t* idx = ind + plane * out_plane;
    for (int64_t o = 0; o < out_plane; ++o) dst[idx[o]] = static_cast<T>(dst[idx[o]] + src[o]);
  }
}

template <typename T>
void avg_pool_backward_impl(const T* go, T* gi, const Pool2dParams& p, bool count_include_pad,
                            std::optional<int64_t> divisor) {
  using acc_t = opmath_t<T>;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
#pragma omp parallel for if (pool_parallel(p, p.kernel_h * p.kernel_w))
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    T* dst = gi + plane * in_plane;
    std::fill(dst, dst + in_plane, T(0));
    const T* src = go + plane * out_plane;
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        const AvgPoolWindow win = avg_pool_window(p, oh, ow);
        const int64_t ih0 = win.h0, ih1 = win.h1, iw0 = win.w0, iw1 = win.w1;
        if (win.empty()) continue;
        const int64_t factor = win.divisor(count_include_pad, divisor);
        const T delta = static_cast<T>(static_cast<acc_t>(src[oh * p.out_w + ow]) / static_cast<acc_t>(factor));
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw) dst[ih * p.in_w + iw] = static_cast<T>(dst[ih * p.in_w + iw] + delta);
      }
    }
  }
}

template <typename T>
void adaptive_avg_pool_backward_impl(const T* go, T* gi, const Pool2dParams& p) {
  using acc_t = opmath_t<T>;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const int64_t window = (p.in_h / std::max<int64_t>(p.out_h, 1) + 1) * (p.in_w / std::max<int64_t>(p.out_w, 1) + 1);
#pragma omp parallel for if (pool_parallel(p, window))
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    T* dst = gi + plane * in_plane;
    std::fill(dst, dst + in_plane, T(0));
    const T* src = go + plane * out_plane;
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      const int64_t ih0 = adaptive_start(oh, p.out_h, p.in_h), ih1 = adaptive_end(oh, p.out_h, p.in_h);
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        const int64_t iw0 = adaptive_start(ow, p.out_w, p.in_w), iw1 = adaptive_end(ow, p.out_w, p.in_w);
        // ATen divides by the window height, rounds, then by its width.
        const T by_h = static_cast<T>(static_cast<acc_t>(src[oh * p.out_w + ow]) / static_cast<acc_t>(ih1 - ih0));
        const T delta = static_cast<T>(static_cast<acc_t>(by_h) / static_cast<acc_t>(iw1 - iw0));
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw) dst[ih * p.in_w + iw] = static_cast<T>(dst[ih * p.in_w + iw] + delta);
      }
    }
  }
}

}  // namespace

void conv2d_weight_grad(const Tensor& a, const Tensor& b, const Tensor& out, const Conv2dParams& q) {
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "convolution_backward", [&] {
    if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
      weight_grad_core<scalar_t>(a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), q);
    } else {
      const std::vector<float> af = to_float<scalar_t>(a), bf = to_float<scalar_t>(b);
      std::vector<float> of(static_cast<size_t>(out.numel()));
      weight_grad_core<float>(af.data(), bf.data(), of.data(), q);
      scalar_t* dst = out.data_ptr<scalar_t>();
      for (size_t i = 0; i < of.size(); ++i) dst[i] = static_cast<scalar_t>(of[i]);
    }
  });
}

void conv_bias_grad(const Tensor& grad, const Tensor& out) {
  const int64_t N = grad.size(0), C = grad.size(1);
  const int64_t S = N * C == 0 ? 0 : grad.numel() / (N * C);
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "convolution_backward", [&] {
    bias_grad_impl<scalar_t>(grad.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), N, C, S);
  });
}

void max_pool2d_backward(const Tensor& grad_output, const Tensor& indices, const Tensor& grad_input,
                         const Pool2dParams& p) {
  if (grad_input.numel() == 0) return;
  // Every index is checked before any element is written.
  const int64_t* ind = indices.data_ptr<int64_t>();
  const int64_t plane = p.in_h * p.in_w;
  for (int64_t i = 0; i < indices.numel(); ++i)
    EMBER_CHECK_INDEX(ind[i] >= 0 && ind[i] < plane)
        << "index " << ind[i] << " is out of range for an input plane of " << plane << " elements";
  EMBER_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "max_pool2d_with_indices_backward", [&] {
    max_pool_backward_impl<scalar_t>(grad_output.data_ptr<scalar_t>(), ind, grad_input.data_ptr<scalar_t>(), p);
  });
}

void avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const Pool2dParams& p,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (grad_input.numel() == 0) return;
  if (grad_input.dtype() == kLong) {
    avg_pool_backward_impl<int64_t>(grad_output.data_ptr<int64_t>(), grad_input.data_ptr<int64_t>(), p,
                                    count_include_pad, divisor_override);
    return;
  }
  EMBER_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "avg_pool2d_backward", [&] {
    avg_pool_backward_impl<scalar_t>(grad_output.data_ptr<scalar_t>(), grad_input.data_ptr<scalar_t>(), p,
                                     count_include_pad, divisor_override);
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& grad_input, const Pool2dParams& p) {
  if (grad_input.numel() == 0) return;
  EMBER_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "adaptive_avg_pool2d_backward", [&] {
    adaptive_avg_pool_backward_impl<scalar_t>(grad_output.data_ptr<scalar_t>(), grad_input.data_ptr<scalar_t>(), p);
  });
}

}  // namespace ember::kernels::cpu
