// kernels/cpu/im2col.h — the im2col gather shared by convolution (conv.cpp) and its
// weight gradient (conv_backward.cpp): each kernel tap's input values as one row.
#pragma once

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

}  // namespace ember::kernels::cpu
