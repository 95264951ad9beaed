// kernels/cuda/conv.cpp — see conv.h.
#include "kernels/cuda/conv.h"

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

void check_fits(const Conv2dParams& p, bool transposed) {
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, cudnn_fits(p, transposed))
      << "CUDA transposed convolutions need output_padding smaller than the stride (cuDNN computes them); got an "
         "output of "
      << p.out_h << " x " << p.out_w << " from an input of " << p.in_h << " x " << p.in_w << " with stride "
      << p.stride_h << " x " << p.stride_w;
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
    check_fits(p, transposed);
    const Tensor in = nchw(input, transposed ? r.y : r.x);
    const Tensor w = nchw(weight, r.w);
    if (transposed) run(ConvPass::BackwardData, p, r, o, w, in, allow_tf32);
    else run(ConvPass::Forward, p, r, in, w, o, allow_tf32);
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
  check_fits(p, transposed);
  const Tensor w = nchw(weight, r.w);
  if (want_input) {
    const Tensor gi = nchw_out(grads[0], in_sizes);
    if (transposed) run(ConvPass::Forward, p, r, grad, w, gi, allow_tf32);
    else run(ConvPass::BackwardData, p, r, gi, w, grad, allow_tf32);
  }
  if (want_weight) {
    const Tensor in = nchw(input, in_sizes);
    const Tensor gw = nchw_out(grads[1], r.w);
    if (transposed) run(ConvPass::BackwardFilter, p, r, grad, gw, in, allow_tf32);
    else run(ConvPass::BackwardFilter, p, r, in, gw, grad, allow_tf32);
  }
}

}  // namespace ember::kernels::cuda
