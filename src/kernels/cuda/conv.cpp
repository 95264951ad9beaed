// kernels/cuda/conv.cpp — see conv.h.
#include "kernels/cuda/conv.h"

#include <algorithm>

#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/reduce.h"

namespace ember::kernels::cuda {
namespace {

using cpu::Conv2dParams;

/// `t`'s values as a contiguous tensor viewed with `sizes` (same element count): 1-D
/// convolution tensors gain their height of 1.
Tensor nchw(const Tensor& t, std::vector<int64_t> sizes) {
  Tensor c = t;
  if (!t.is_contiguous()) {
    c = empty_device(t.sizes(), t.dtype(), t.device());
    copy_into(c, t);
  }
  auto impl = std::make_shared<TensorImpl>(*c.impl());
  impl->strides = {sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3], sizes[3], 1};
  impl->sizes = std::move(sizes);
  impl->refresh();
  return Tensor(std::move(impl));
}

/// The convolution y = conv(x, w) that every pass is phrased in: for a plain convolution
/// x is the input and y the output; for a transposed one (the data gradient of a
/// convolution) the other way round.
struct Roles {
  std::vector<int64_t> x, w, y;
};

Roles roles(const Conv2dParams& p, bool transposed) {
  const std::vector<int64_t> in{p.batch, p.in_channels, p.in_h, p.in_w};
  const std::vector<int64_t> out{p.batch, p.out_channels, p.out_h, p.out_w};
  if (!transposed) return {in, {p.out_channels, p.in_channels / p.groups, p.kernel_h, p.kernel_w}, out};
  return {out, {p.in_channels, p.out_channels / p.groups, p.kernel_h, p.kernel_w}, in};
}

/// An output (written through the view, so it must be contiguous, as meta functions make
/// outputs) viewed with `sizes`.
Tensor nchw_out(const Tensor& t, std::vector<int64_t> sizes) {
  EMBER_INTERNAL_ASSERT(t.is_contiguous()) << "CUDA convolution output of strides " << t.strides();
  return nchw(t, std::move(sizes));
}

void run(ConvPass pass, const Conv2dParams& p, const Roles& r, const Tensor& x, const Tensor& w, const Tensor& y,
         bool allow_tf32) {
  CudnnConv c;
  c.pass = pass;
  c.dtype = x.dtype();
  c.allow_tf32 = allow_tf32;
  for (int i = 0; i < 4; ++i) {
    c.x[i] = r.x[static_cast<size_t>(i)];
    c.w[i] = r.w[static_cast<size_t>(i)];
    c.y[i] = r.y[static_cast<size_t>(i)];
  }
  c.pad[0] = p.pad_h;
  c.pad[1] = p.pad_w;
  c.stride[0] = p.stride_h;
  c.stride[1] = p.stride_w;
  c.dilation[0] = p.dilation_h;
  c.dilation[1] = p.dilation_w;
  c.groups = p.groups;
  c.x_ptr = x.raw_data_ptr();
  c.w_ptr = w.raw_data_ptr();
  c.y_ptr = y.raw_data_ptr();
  c.device = x.device().index;
  cudnn_convolution(c);
}

void fill_zero(const Tensor& t) { pointwise(empty_product_kernel(t.dtype(), false), t, {}); }

/// Whether the convolution sums over nothing (no input channels, an empty kernel) or has
/// no batch: cuDNN takes no empty tensor, and the results are zeros (and the bias).
bool sums_nothing(const Conv2dParams& p) {
  return p.batch == 0 || p.in_channels == 0 || p.out_channels == 0 || p.kernel_h == 0 || p.kernel_w == 0;
}

/// A transposed convolution whose output_padding reaches its stride has no cuDNN geometry
/// (the convolution of its output is longer than its input). It is computed on the full
/// output of padding 0 (every position an input reaches, F = (in - 1)·stride +
/// dilation·(kernel - 1) + 1), of which the output is the window starting at the padding;
/// output positions past the full one are reached by no input.
Conv2dParams full_geometry(const Conv2dParams& p) {
  Conv2dParams f = p;
  f.pad_h = f.pad_w = 0;
  f.out_h = (p.in_h - 1) * p.stride_h + p.dilation_h * (p.kernel_h - 1) + 1;
  f.out_w = (p.in_w - 1) * p.stride_w + p.dilation_w * (p.kernel_w - 1) + 1;
  return f;
}

/// Rows [h0, h0 + hn) and columns [w0, w0 + wn) of a 4-D tensor, as a view.
Tensor window(const Tensor& t, int64_t h0, int64_t hn, int64_t w0, int64_t wn) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->sizes = {t.size(0), t.size(1), hn, wn};
  impl->storage_offset += h0 * t.stride(2) + w0 * t.stride(3);
  impl->refresh();
  return Tensor(std::move(impl));
}

/// The part of the output (out_h x out_w) inside the full output: the output's
/// window [0, n) is the full one's [pad, pad + n).
std::pair<int64_t, int64_t> overlap(const Conv2dParams& p, const Conv2dParams& full) {
  return {std::max<int64_t>(0, std::min(p.out_h, full.out_h - p.pad_h)),
          std::max<int64_t>(0, std::min(p.out_w, full.out_w - p.pad_w))};
}

}  // namespace

bool cudnn_fits(const Conv2dParams& p, bool transposed) {
  if (!transposed) return true;
  // The size of the convolution of the output must be the input's.
  const int64_t h = (p.out_h + 2 * p.pad_h - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  const int64_t w = (p.out_w + 2 * p.pad_w - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  return h == p.in_h && w == p.in_w;
}

PointwiseKernel bias_add_kernel(ScalarType dtype) {
  return {.name = "add_bias", .expr = "a + b", .helpers = {}, .inputs = {dtype, dtype}, .compute = dtype, .out = dtype};
}

void conv_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Conv2dParams& p, bool transposed, bool allow_tf32) {
  if (out.numel() == 0) return;
  const Roles r = roles(p, transposed);
  const Tensor o = nchw_out(out, transposed ? r.x : r.y);
  if (sums_nothing(p)) {
    fill_zero(o);
  } else {
    const Tensor in = nchw(input, transposed ? r.y : r.x);
    const Tensor w = nchw(weight, r.w);
    if (!transposed) {
      run(ConvPass::Forward, p, r, in, w, o, allow_tf32);
    } else if (cudnn_fits(p, true)) {
      run(ConvPass::BackwardData, p, r, o, w, in, allow_tf32);
    } else {
      const Conv2dParams f = full_geometry(p);
      const Roles rf = roles(f, true);
      const Tensor full = empty_device(rf.x, out.dtype(), out.device());
      run(ConvPass::BackwardData, f, rf, full, w, in, allow_tf32);
      const auto [nh, nw] = overlap(p, f);
      if (nh < p.out_h || nw < p.out_w) fill_zero(o);
      copy_into(window(o, 0, nh, 0, nw), window(full, p.pad_h, nh, p.pad_w, nw));
    }
  }
  if (bias.defined()) {
    auto impl = std::make_shared<TensorImpl>(*bias.impl());
    impl->sizes = o.sizes().vec();
    impl->strides = {0, bias.stride(0), 0, 0};
    impl->refresh();
    pointwise(bias_add_kernel(out.dtype()), o, {o, Tensor(std::move(impl))});
  }
}

void conv_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                   const std::vector<Tensor>& grads, const Conv2dParams& p, bool transposed, bool allow_tf32) {
  const Roles r = roles(p, transposed);
  const std::vector<int64_t>& out_sizes = transposed ? r.x : r.y;
  const std::vector<int64_t>& in_sizes = transposed ? r.y : r.x;
  const Tensor grad = nchw(grad_output, out_sizes);
  if (grads[2].defined() && grads[2].numel() > 0) {
    if (grad.numel() == 0) fill_zero(grads[2]);
    else reduce(Reduction::Sum, grad, {true, false, true, true}, grads[2]);
  }
  const bool want_input = grads[0].defined() && grads[0].numel() > 0;
  const bool want_weight = grads[1].defined() && grads[1].numel() > 0;
  if (!want_input && !want_weight) return;
  if (sums_nothing(p)) {
    if (want_input) fill_zero(grads[0]);
    if (want_weight) fill_zero(grads[1]);
    return;
  }
  const Tensor w = nchw(weight, r.w);
  if (!transposed) {
    if (want_input) run(ConvPass::BackwardData, p, r, nchw_out(grads[0], in_sizes), w, grad, allow_tf32);
    if (want_weight) run(ConvPass::BackwardFilter, p, r, nchw(input, in_sizes), nchw_out(grads[1], r.w), grad, allow_tf32);
    return;
  }
  // A transposed convolution is the convolution of its output: x is grad_output (or, for a
  // geometry cuDNN lacks, grad_output placed into the full output of padding 0).
  Conv2dParams g = p;
  Roles rg = r;
  Tensor x = grad;
  if (!cudnn_fits(p, true)) {
    g = full_geometry(p);
    rg = roles(g, true);
    x = empty_device(rg.x, grad.dtype(), grad.device());
    fill_zero(x);
    const auto [nh, nw] = overlap(p, g);
    copy_into(window(x, p.pad_h, nh, p.pad_w, nw), window(grad, 0, nh, 0, nw));
  }
  if (want_input) run(ConvPass::Forward, g, rg, x, w, nchw_out(grads[0], in_sizes), allow_tf32);
  if (want_weight) run(ConvPass::BackwardFilter, g, rg, x, nchw_out(grads[1], r.w), nchw(input, in_sizes), allow_tf32);
}

}  // namespace ember::kernels::cuda
