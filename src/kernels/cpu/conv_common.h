// kernels/cpu/conv_common.h — what the convolution and pooling kernels (conv.cpp) and
// their gradients (conv_backward.cpp) share: the im2col gather, the float32 copy that
// reduced-precision inputs compute through, and average pooling's window.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "kernels/cpu/conv.h"

namespace ember::kernels::cpu {

/// col[(c*KH + i)*KW + j][oh*OW + ow] = in[c][oh*sh - ph + i*dh][ow*sw - pw + j*dw] (0 outside).
template <typename T>
void im2col(const T* in, int64_t channels, const Conv2dParams& p, T* col) {
  const int64_t P = p.out_h * p.out_w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        T* dst = col + ((c * p.kernel_h + i) * p.kernel_w + j) * P;
        const T* plane = in + c * p.in_h * p.in_w;
        for (int64_t oh = 0; oh < p.out_h; ++oh) {
          const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
          T* row = dst + oh * p.out_w;
          if (ih < 0 || ih >= p.in_h) {
            for (int64_t ow = 0; ow < p.out_w; ++ow) row[ow] = T(0);
            continue;
          }
          for (int64_t ow = 0; ow < p.out_w; ++ow) {
            const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
            row[ow] = (iw >= 0 && iw < p.in_w) ? plane[ih * p.in_w + iw] : T(0);
          }
        }
      }
}

/// `t`'s elements (contiguous, of type T) as float32: Half and BFloat16 compute through
/// the float32 kernels and round once at the end, as ATen does.
template <typename T>
std::vector<float> to_float(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  const T* src = t.data_ptr<T>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(src[i]);
  return v;
}

/// The input window of average pooling's output (oh, ow): rows [h0, h1) and columns
/// [w0, w1) clipped to the input, and `padded_size`, the window's size counting padding
/// (ATen's divisor under count_include_pad). Empty when h0 >= h1 or w0 >= w1.
struct AvgPoolWindow {
  int64_t h0, h1, w0, w1, padded_size;
  bool empty() const { return h0 >= h1 || w0 >= w1; }
  /// What the window's sum is divided by: divisor_override, else the size with or
  /// without padding.
  int64_t divisor(bool count_include_pad, std::optional<int64_t> divisor_override) const {
    if (divisor_override) return *divisor_override;
    return count_include_pad ? padded_size : (h1 - h0) * (w1 - w0);
  }
};

inline AvgPoolWindow avg_pool_window(const Pool2dParams& p, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  int64_t h1 = std::min(h0 + p.kernel_h, p.in_h + p.pad_h), w1 = std::min(w0 + p.kernel_w, p.in_w + p.pad_w);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  return {std::max<int64_t>(h0, 0), std::min(h1, p.in_h), std::max<int64_t>(w0, 0), std::min(w1, p.in_w), padded_size};
}

/// Adaptive pooling's window along one dim: output index a of b covers input indices
/// [adaptive_start(a, b, c), adaptive_end(a, b, c)) of c (ATen's formulas).
inline int64_t adaptive_start(int64_t a, int64_t b, int64_t c) { return (a / b) * c + ((a % b) * c) / b; }
inline int64_t adaptive_end(int64_t a, int64_t b, int64_t c) { return 1 + ((a + 1) * c - 1) / b; }

}  // namespace ember::kernels::cpu
