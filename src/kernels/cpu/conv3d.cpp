// kernels/cpu/conv3d.cpp — see conv3d.h. float32 goes to oneDNN first (conv3d_dnnl.cpp);
// what it cannot run, and every other dtype, runs the loops here. Each loop kernel splits its output into independent
// slices (an image's output channel, an image's input channel, a weight's (OC, C) pair)
// across OpenMP threads, and accumulates each slice in opmath_t (float32 for the 16-bit
// floating types) before rounding once.
#include "kernels/cpu/conv3d.h"

#include <omp.h>


#include <type_traits>
#include <vector>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

/// The input index along one spatial dim read by output position o and kernel tap k, or
/// -1 when it falls into the padding.
inline int64_t input_index(const Conv3dParams& p, int dim, int64_t o, int64_t k) {
  const int64_t i = o * p.stride[dim] - p.pad[dim] + k * p.dilation[dim];
  return i >= 0 && i < p.in[dim] ? i : -1;
}

/// Calls f(out_offset, in_offset) for every output position of p.out and kernel tap
/// (kd, kh, kw) whose input position lies inside p.in.
template <typename F>
inline void for_each_tap(const Conv3dParams& p, int64_t kd, int64_t kh, int64_t kw, F&& f) {
  for (int64_t od = 0; od < p.out[0]; ++od) {
    const int64_t id = input_index(p, 0, od, kd);
    if (id < 0) continue;
    for (int64_t oh = 0; oh < p.out[1]; ++oh) {
      const int64_t ih = input_index(p, 1, oh, kh);
      if (ih < 0) continue;
      const int64_t orow = (od * p.out[1] + oh) * p.out[2], irow = (id * p.in[1] + ih) * p.in[2];
      for (int64_t ow = 0; ow < p.out[2]; ++ow) {
        const int64_t iw = input_index(p, 2, ow, kw);
        if (iw >= 0) f(orow + ow, irow + iw);
      }
    }
  }
}

int64_t volume(const std::array<int64_t, 3>& s) { return s[0] * s[1] * s[2]; }

template <typename T>
void forward_impl(const T* x, const T* w, const T* b, T* y, const Conv3dParams& p) {
  using acc_t = opmath_t<T>;
  const int64_t G = p.groups, OCg = p.out_channels / G, Cg = p.in_channels / G;
  const int64_t in_vol = volume(p.in), out_vol = volume(p.out), k_vol = volume(p.kernel);
#pragma omp parallel
  {
    std::vector<acc_t> acc(static_cast<size_t>(out_vol));
#pragma omp for schedule(static)
    for (int64_t job = 0; job < p.batch * p.out_channels; ++job) {
      const int64_t n = job / p.out_channels, oc = job % p.out_channels, g = oc / OCg;
      std::fill(acc.begin(), acc.end(), acc_t(b ? static_cast<acc_t>(b[oc]) : acc_t(0)));
      for (int64_t c = 0; c < Cg; ++c) {
        const T* xs = x + (n * p.in_channels + g * Cg + c) * in_vol;
        const T* ws = w + (oc * Cg + c) * k_vol;
        for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
              const acc_t wv = static_cast<acc_t>(ws[(kd * p.kernel[1] + kh) * p.kernel[2] + kw]);
              for_each_tap(p, kd, kh, kw,
                           [&](int64_t o, int64_t i) { acc[o] += wv * static_cast<acc_t>(xs[i]); });
            }
      }
      T* ys = y + job * out_vol;
      for (int64_t o = 0; o < out_vol; ++o) ys[o] = static_cast<T>(acc[o]);
    }
  }
}

template <typename T>
void transpose_impl(const T* gy, const T* w, const T* b, T* gx, const Conv3dParams& p) {
  using acc_t = opmath_t<T>;
  const int64_t G = p.groups, OCg = p.out_channels / G, Cg = p.in_channels / G;
  const int64_t in_vol = volume(p.in), out_vol = volume(p.out), k_vol = volume(p.kernel);
#pragma omp parallel
  {
    std::vector<acc_t> acc(static_cast<size_t>(in_vol));
#pragma omp for schedule(static)
    for (int64_t job = 0; job < p.batch * p.in_channels; ++job) {
      const int64_t n = job / p.in_channels, c = job % p.in_channels, g = c / Cg;
      std::fill(acc.begin(), acc.end(), acc_t(b ? static_cast<acc_t>(b[c]) : acc_t(0)));
      for (int64_t j = 0; j < OCg; ++j) {
        const int64_t oc = g * OCg + j;
        const T* gs = gy + (n * p.out_channels + oc) * out_vol;
        const T* ws = w + (oc * Cg + (c - g * Cg)) * k_vol;
        for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
              const acc_t wv = static_cast<acc_t>(ws[(kd * p.kernel[1] + kh) * p.kernel[2] + kw]);
              for_each_tap(p, kd, kh, kw,
                           [&](int64_t o, int64_t i) { acc[i] += wv * static_cast<acc_t>(gs[o]); });
            }
      }
      T* xs = gx + job * in_vol;
      for (int64_t i = 0; i < in_vol; ++i) xs[i] = static_cast<T>(acc[i]);
    }
  }
}

template <typename T>
void weight_grad_impl(const T* gy, const T* x, T* gw, const Conv3dParams& p) {
  using acc_t = opmath_t<T>;
  const int64_t G = p.groups, OCg = p.out_channels / G, Cg = p.in_channels / G;
  const int64_t in_vol = volume(p.in), out_vol = volume(p.out), k_vol = volume(p.kernel);
#pragma omp parallel for schedule(static)
  for (int64_t job = 0; job < p.out_channels * Cg; ++job) {
    const int64_t oc = job / Cg, c = job % Cg, g = oc / OCg;
    T* ws = gw + job * k_vol;
    for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
          acc_t sum = 0;
          for (int64_t n = 0; n < p.batch; ++n) {
            const T* gs = gy + (n * p.out_channels + oc) * out_vol;
            const T* xs = x + (n * p.in_channels + g * Cg + c) * in_vol;
            for_each_tap(p, kd, kh, kw,
                         [&](int64_t o, int64_t i) { sum += static_cast<acc_t>(gs[o]) * static_cast<acc_t>(xs[i]); });
          }
          ws[(kd * p.kernel[1] + kh) * p.kernel[2] + kw] = static_cast<T>(sum);
        }
  }
}

template <typename T>
const T* optional_ptr(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

}  // namespace

void conv3d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                    const Conv3dParams& p) {
  if (out.numel() == 0) return;
  if (out.dtype() == kFloat && conv3d_forward_dnnl(input.data_ptr<float>(), weight.data_ptr<float>(), optional_ptr<float>(bias),
                                                   out.data_ptr<float>(), p))
    return;
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "conv3d", [&] {
    if constexpr (std::is_same_v<scalar_t, bool>) {
      EMBER_INTERNAL_ASSERT(false) << "conv3d: bool reached the kernel";
    } else {
      forward_impl<scalar_t>(input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), optional_ptr<scalar_t>(bias),
                             out.data_ptr<scalar_t>(), p);
    }
  });
}

void conv3d_transpose(const Tensor& grad, const Tensor& weight, const Tensor& bias, const Tensor& out,
                      const Conv3dParams& p) {
  if (out.numel() == 0) return;
  if (out.dtype() == kFloat &&
      conv3d_backward_data_dnnl(grad.data_ptr<float>(), weight.data_ptr<float>(), out.data_ptr<float>(), p)) {
    if (bias.defined()) {
      const float* b = bias.data_ptr<float>();
      float* o = out.data_ptr<float>();
      const int64_t vol = volume(p.in), planes = p.batch * p.in_channels;
#pragma omp parallel for if (planes * vol > kGrainSize && !omp_in_parallel())
      for (int64_t plane = 0; plane < planes; ++plane)
        for (int64_t i = 0; i < vol; ++i) o[plane * vol + i] += b[plane % p.in_channels];
    }
    return;
  }
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "conv_transpose3d", [&] {
    if constexpr (std::is_same_v<scalar_t, bool>) {
      EMBER_INTERNAL_ASSERT(false) << "conv_transpose3d: bool reached the kernel";
    } else {
      transpose_impl<scalar_t>(grad.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), optional_ptr<scalar_t>(bias),
                               out.data_ptr<scalar_t>(), p);
    }
  });
}

void conv3d_weight_grad(const Tensor& grad, const Tensor& input, const Tensor& out, const Conv3dParams& p) {
  if (out.numel() == 0) return;
  if (out.dtype() == kFloat && conv3d_backward_weights_dnnl(grad.data_ptr<float>(), input.data_ptr<float>(),
                                                            out.data_ptr<float>(), p))
    return;
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "convolution_backward", [&] {
    weight_grad_impl<scalar_t>(grad.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), p);
  });
}

}  // namespace ember::kernels::cpu
