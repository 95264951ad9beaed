// kernels/cpu/dnnl_conv.h — what the oneDNN convolution paths share: the forward primitives
// (conv.cpp) and the backward ones (conv_backward_dnnl.cpp) describe the same tensors,
// activations NCHW or NHWC (Conv2dParams::channels_last) and OIHW weights, and reach
// oneDNN's preferred layouts through onednn.h's reorders. NHWC activations are handed to
// the primitives as they are (oneDNN runs NHWC natively), so only the weights reorder.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/onednn.h"

namespace ember::kernels::cpu::dnnl_conv {

using onednn::engine;
using onednn::reorder;

/// A float32 convolution's tensors as the caller holds them (`user_*`: NCHW or NHWC input
/// and output, OIHW or GOIHW weights, a 1-d bias), the same as the primitives are asked
/// for (`any_*`: the layout left to oneDNN, except NHWC activations, which stay NHWC), and
/// the window parameters in oneDNN's terms (dilation counted from 0).
struct Geometry {
  dnnl::memory::desc user_src, user_wei, user_bias, user_dst;
  dnnl::memory::desc any_src, any_wei, any_dst;
  dnnl::memory::dims strides, dilates, pad;
};

/// oneDNN's blocked activation layout (a vector of channels per block: nChw16c with
/// AVX-512, nChw8c with AVX2) when an ungrouped convolution's channels fill whole blocks;
/// `any` otherwise.
inline dnnl::memory::format_tag blocked_activations(const Conv2dParams& p) {
  using dnnl::memory;
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto has = [isa](dnnl_cpu_isa_t level) { return (isa & level) == static_cast<unsigned>(level); };
  const int64_t block = has(dnnl_cpu_isa_avx512_core) ? 16 : has(dnnl_cpu_isa_avx2) ? 8 : 0;
  if (block == 0 || p.groups != 1 || p.in_channels % block != 0 || p.out_channels % block != 0)
    return memory::format_tag::any;
  return block == 16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
}

inline Geometry geometry(const Conv2dParams& p) {
  using dnnl::memory;
  const auto f32 = memory::data_type::f32;
  const memory::dims src_dims{p.batch, p.in_channels, p.in_h, p.in_w};
  const memory::dims dst_dims{p.batch, p.out_channels, p.out_h, p.out_w};
  const memory::dims wei_dims =
      p.groups > 1 ? memory::dims{p.groups, p.out_channels / p.groups, p.in_channels / p.groups, p.kernel_h, p.kernel_w}
                   : memory::dims{p.out_channels, p.in_channels, p.kernel_h, p.kernel_w};
  const memory::format_tag activations = p.channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw;
  const memory::format_tag chosen = p.channels_last ? memory::format_tag::nhwc : memory::format_tag::any;
  Geometry g;
  g.user_src = memory::desc(src_dims, f32, activations);
  g.user_dst = memory::desc(dst_dims, f32, activations);
  g.user_wei = memory::desc(wei_dims, f32, p.groups > 1 ? memory::format_tag::goihw : memory::format_tag::oihw);
  g.user_bias = memory::desc({p.out_channels}, f32, memory::format_tag::a);
  g.any_src = memory::desc(src_dims, f32, chosen);
  g.any_dst = memory::desc(dst_dims, f32, chosen);
  g.any_wei = memory::desc(wei_dims, f32, memory::format_tag::any);
  g.strides = {p.stride_h, p.stride_w};
  g.dilates = {p.dilation_h - 1, p.dilation_w - 1};
  g.pad = {p.pad_h, p.pad_w};
  return g;
}

}  // namespace ember::kernels::cpu::dnnl_conv
