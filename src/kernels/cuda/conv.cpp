// kernels/cuda/conv.cpp — see conv.h.
#include "kernels/cuda/conv.h"

#include <algorithm>
#include <array>

#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/reduce.h"

namespace ember::kernels::cuda {
namespace {

using cpu::Conv2dParams;
using cpu::Conv3dParams;

/// The convolution y = conv(x, w) that every pass is phrased in, over `spatial` dims (2:
/// 1-D convolutions as 2-D of height 1; or 3): for a plain convolution x is the op's input
/// and y its output; for a transposed one (the data gradient of a convolution) the other
/// way round. The weight is [y_channels, x_channels / groups, kernel...] either way.
struct Geometry {
  int spatial = 2;
  bool transposed = false;
  int64_t batch = 0, x_channels = 0, y_channels = 0, groups = 1;
  std::array<int64_t, 3> x{}, y{}, kernel{}, stride{1, 1, 1}, pad{}, dilation{1, 1, 1};
};

/// A 1-D or 2-D convolution's geometry (Conv2dParams: in and out are the op's).
Geometry geometry(const Conv2dParams& p, bool transposed) {
  Geometry g;
  g.transposed = transposed;
  g.batch = p.batch;
  g.groups = p.groups;
  g.x_channels = transposed ? p.out_channels : p.in_channels;
  g.y_channels = transposed ? p.in_channels : p.out_channels;
  const std::array<int64_t, 3> in{p.in_h, p.in_w, 0}, out{p.out_h, p.out_w, 0};
  g.x = transposed ? out : in;
  g.y = transposed ? in : out;
  g.kernel = {p.kernel_h, p.kernel_w, 0};
  g.stride = {p.stride_h, p.stride_w, 1};
  g.pad = {p.pad_h, p.pad_w, 0};
  g.dilation = {p.dilation_h, p.dilation_w, 1};
  return g;
}

/// A 3-D convolution's geometry (Conv3dParams already runs from x to y: for a transposed
/// convolution, from its output back to its input).
Geometry geometry(const Conv3dParams& q, bool transposed) {
  Geometry g;
  g.spatial = 3;
  g.transposed = transposed;
  g.batch = q.batch;
  g.groups = q.groups;
  g.x_channels = q.in_channels;
  g.y_channels = q.out_channels;
  g.x = q.in;
  g.y = q.out;
  g.kernel = q.kernel;
  g.stride = q.stride;
  g.pad = q.pad;
  g.dilation = q.dilation;
  return g;
}

/// Sizes [batch, channels, spatial...] of x, w and y.
std::vector<int64_t> sizes(int64_t a, int64_t b, const std::array<int64_t, 3>& spatial, int n) {
  std::vector<int64_t> s{a, b};
  s.insert(s.end(), spatial.begin(), spatial.begin() + n);
  return s;
}
std::vector<int64_t> x_sizes(const Geometry& g) { return sizes(g.batch, g.x_channels, g.x, g.spatial); }
std::vector<int64_t> w_sizes(const Geometry& g) {
  return sizes(g.y_channels, g.x_channels / g.groups, g.kernel, g.spatial);
}
std::vector<int64_t> y_sizes(const Geometry& g) { return sizes(g.batch, g.y_channels, g.y, g.spatial); }
/// The op's input and output (its gradients): y and x for a transposed convolution.
std::vector<int64_t> in_sizes(const Geometry& g) { return g.transposed ? y_sizes(g) : x_sizes(g); }
std::vector<int64_t> out_sizes(const Geometry& g) { return g.transposed ? x_sizes(g) : y_sizes(g); }

/// `t`'s values as a contiguous tensor viewed with `sizes` (same element count): 1-D
/// convolution tensors gain their height of 1.
Tensor dense_view(const Tensor& t, std::vector<int64_t> sizes) {
  Tensor c = t;
  if (!t.is_contiguous()) {
    c = empty_device(t.sizes(), t.dtype(), t.device());
    copy_into(c, t);
  }
  auto impl = std::make_shared<TensorImpl>(*c.impl());
  impl->strides.assign(sizes.size(), 1);
  for (size_t i = sizes.size() - 1; i > 0; --i) impl->strides[i - 1] = impl->strides[i] * sizes[i];
  impl->sizes = std::move(sizes);
  impl->refresh();
  return Tensor(std::move(impl));
}

/// An output (written through the view, so it must be contiguous, as meta functions make
/// outputs) viewed with `sizes`.
Tensor dense_out(const Tensor& t, std::vector<int64_t> sizes) {
  EMBER_INTERNAL_ASSERT(t.is_contiguous()) << "CUDA convolution output of strides " << t.strides();
  return dense_view(t, std::move(sizes));
}

void run(ConvPass pass, const Geometry& g, const Tensor& x, const Tensor& w, const Tensor& y, bool allow_tf32) {
  CudnnConv c;
  c.pass = pass;
  c.dtype = x.dtype();
  c.allow_tf32 = allow_tf32;
  c.spatial = g.spatial;
  const std::vector<int64_t> xs = x_sizes(g), ws = w_sizes(g), ys = y_sizes(g);
  for (size_t i = 0; i < xs.size(); ++i) {
    c.x[i] = xs[i];
    c.w[i] = ws[i];
    c.y[i] = ys[i];
  }
  for (size_t i = 0; i < 3; ++i) {
    c.pad[i] = g.pad[i];
    c.stride[i] = g.stride[i];
    c.dilation[i] = g.dilation[i];
  }
  c.groups = g.groups;
  c.x_ptr = x.raw_data_ptr();
  c.w_ptr = w.raw_data_ptr();
  c.y_ptr = y.raw_data_ptr();
  c.device = x.device().index;
  cudnn_convolution(c);
}

void fill_zero(const Tensor& t) { pointwise(empty_product_kernel(t.dtype(), false), t, {}); }

/// Whether the convolution sums over nothing (no input channels, an empty kernel) or has
/// no batch: cuDNN takes no empty tensor, and the results are zeros (and the bias).
bool sums_nothing(const Geometry& g) {
  bool empty = g.batch == 0 || g.x_channels == 0 || g.y_channels == 0;
  for (int i = 0; i < g.spatial; ++i) empty |= g.kernel[static_cast<size_t>(i)] == 0;
  return empty;
}

/// Whether cuDNN takes this geometry as it is: the convolution of x must have y's sizes
/// (a transposed convolution's output_padding below its stride).
bool fits(const Geometry& g) {
  for (size_t i = 0; i < static_cast<size_t>(g.spatial); ++i)
    if ((g.x[i] + 2 * g.pad[i] - g.dilation[i] * (g.kernel[i] - 1) - 1) / g.stride[i] + 1 != g.y[i]) return false;
  return true;
}

/// A transposed convolution whose output_padding reaches its stride has no cuDNN geometry
/// (the convolution of its output is longer than its input). It is computed on the full
/// output of padding 0 (every position an input reaches, F = (in - 1)·stride +
/// dilation·(kernel - 1) + 1), of which the output is the window starting at the padding;
/// output positions past the full one are reached by no input.
Geometry full_geometry(const Geometry& g) {
  Geometry f = g;
  for (size_t i = 0; i < static_cast<size_t>(g.spatial); ++i) {
    f.pad[i] = 0;
    f.x[i] = (g.y[i] - 1) * g.stride[i] + g.dilation[i] * (g.kernel[i] - 1) + 1;
  }
  return f;
}

/// The spatial window [start, start + length) of every spatial dim of `t`, as a view.
Tensor window(const Tensor& t, const std::array<int64_t, 3>& start, const std::array<int64_t, 3>& length) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  for (size_t i = 2; i < impl->sizes.size(); ++i) {
    impl->sizes[i] = length[i - 2];
    impl->storage_offset += start[i - 2] * t.stride(static_cast<int64_t>(i));
  }
  impl->refresh();
  return Tensor(std::move(impl));
}

/// The part of the output (x's sizes) inside the full output: the output's window
/// [0, n) is the full one's [pad, pad + n).
std::array<int64_t, 3> overlap(const Geometry& g, const Geometry& full) {
  std::array<int64_t, 3> n{};
  for (size_t i = 0; i < static_cast<size_t>(g.spatial); ++i)
    n[i] = std::max<int64_t>(0, std::min(g.x[i], full.x[i] - g.pad[i]));
  return n;
}

bool covers(const Geometry& g, const std::array<int64_t, 3>& n) {
  for (size_t i = 0; i < static_cast<size_t>(g.spatial); ++i)
    if (n[i] < g.x[i]) return false;
  return true;
}

void forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out, const Geometry& g,
             bool allow_tf32) {
  if (out.numel() == 0) return;
  const Tensor o = dense_out(out, out_sizes(g));
  if (sums_nothing(g)) {
    fill_zero(o);
  } else {
    const Tensor in = dense_view(input, in_sizes(g));
    const Tensor w = dense_view(weight, w_sizes(g));
    if (!g.transposed) {
      run(ConvPass::Forward, g, in, w, o, allow_tf32);
    } else if (fits(g)) {
      run(ConvPass::BackwardData, g, o, w, in, allow_tf32);
    } else {
      const Geometry f = full_geometry(g);
      const Tensor full = empty_device(x_sizes(f), out.dtype(), out.device());
      run(ConvPass::BackwardData, f, full, w, in, allow_tf32);
      const std::array<int64_t, 3> n = overlap(g, f);
      if (!covers(g, n)) fill_zero(o);
      copy_into(window(o, {}, n), window(full, g.pad, n));
    }
  }
  if (bias.defined()) {
    auto impl = std::make_shared<TensorImpl>(*bias.impl());
    impl->sizes = o.sizes().vec();
    impl->strides.assign(impl->sizes.size(), 0);
    impl->strides[1] = bias.stride(0);
    impl->refresh();
    pointwise(bias_add_kernel(out.dtype()), o, {o, Tensor(std::move(impl))});
  }
}

void backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight, const std::vector<Tensor>& grads,
              const Geometry& g, bool allow_tf32) {
  const Tensor grad = dense_view(grad_output, out_sizes(g));
  if (grads[2].defined() && grads[2].numel() > 0) {
    if (grad.numel() == 0) {
      fill_zero(grads[2]);
    } else {
      std::vector<bool> over(static_cast<size_t>(g.spatial) + 2, true);
      over[1] = false;  // a sum over all but the channels
      reduce(Reduction::Sum, grad, over, grads[2]);
    }
  }
  const bool want_input = grads[0].defined() && grads[0].numel() > 0;
  const bool want_weight = grads[1].defined() && grads[1].numel() > 0;
  if (!want_input && !want_weight) return;
  if (sums_nothing(g)) {
    if (want_input) fill_zero(grads[0]);
    if (want_weight) fill_zero(grads[1]);
    return;
  }
  const Tensor w = dense_view(weight, w_sizes(g));
  if (!g.transposed) {
    if (want_input) run(ConvPass::BackwardData, g, dense_out(grads[0], x_sizes(g)), w, grad, allow_tf32);
    if (want_weight)
      run(ConvPass::BackwardFilter, g, dense_view(input, x_sizes(g)), dense_out(grads[1], w_sizes(g)), grad,
          allow_tf32);
    return;
  }
  // A transposed convolution is the convolution of its output: x is grad_output (or, for a
  // geometry cuDNN lacks, grad_output placed into the full output of padding 0).
  Geometry h = g;
  Tensor x = grad;
  if (!fits(g)) {
    h = full_geometry(g);
    x = empty_device(x_sizes(h), grad.dtype(), grad.device());
    fill_zero(x);
    const std::array<int64_t, 3> n = overlap(g, h);
    copy_into(window(x, g.pad, n), window(grad, {}, n));
  }
  if (want_input) run(ConvPass::Forward, h, x, w, dense_out(grads[0], y_sizes(g)), allow_tf32);
  if (want_weight)
    run(ConvPass::BackwardFilter, h, x, dense_out(grads[1], w_sizes(g)), dense_view(input, y_sizes(g)), allow_tf32);
}

}  // namespace

bool cudnn_fits(const Conv2dParams& p, bool transposed) { return !transposed || fits(geometry(p, true)); }
bool cudnn_fits(const Conv3dParams& p, bool transposed) { return !transposed || fits(geometry(p, true)); }

PointwiseKernel bias_add_kernel(ScalarType dtype) {
  return {.name = "add_bias", .expr = "a + b", .helpers = {}, .inputs = {dtype, dtype}, .compute = dtype, .out = dtype};
}

void conv_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Conv2dParams& p, bool transposed, bool allow_tf32) {
  forward(input, weight, bias, out, geometry(p, transposed), allow_tf32);
}

void conv_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Conv3dParams& p, bool transposed, bool allow_tf32) {
  forward(input, weight, bias, out, geometry(p, transposed), allow_tf32);
}

void conv_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                   const std::vector<Tensor>& grads, const Conv2dParams& p, bool transposed, bool allow_tf32) {
  backward(grad_output, input, weight, grads, geometry(p, transposed), allow_tf32);
}

void conv_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                   const std::vector<Tensor>& grads, const Conv3dParams& p, bool transposed, bool allow_tf32) {
  backward(grad_output, input, weight, grads, geometry(p, transposed), allow_tf32);
}

}  // namespace ember::kernels::cuda
