// ops/pool3d.cpp — 3-D pooling (avg_pool3d, max_pool3d_with_indices and its backward op
// max_pool3d_with_indices_backward, _adaptive_avg_pool3d) as composites. The input, padded (with zeros for the
// average, -inf for the max) on both sides and past the right edge where ceil_mode's last
// window reaches beyond it, is gathered into its windows with one advanced index of three
// broadcast position tensors (window element k·dilation + output position·stride, from
// aranges), [N, C, oT, oH, oW, kT·kH·kW]; a sum divided by ATen's divisor or a max.dim
// reduces them. max.dim's argmax becomes ATen's index into the unpadded T·H·W input, and
// the gradients come from the ops (to the argmax, or spread over the window), which is
// what ATen's backward kernels compute. The backward op scatters grad_output at the
// indices. _adaptive_avg_pool3d applies one averaging matrix per dim (matmul), the
// windows [⌊o·in/out⌋, ⌈(o+1)·in/out⌉). float16/bfloat16 averages are summed in float. ATen's argument checks and
// messages (pool3d_shape_check). The pools and the backward op compute their geometry
// over SymInt (Pool3d), so a trace with dynamic shapes keeps every dim symbolic: a size
// that multiplies or clamps positions is a sum of ones in the graph (times_size,
// min_size). See Note [nn].
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ops/api.h"
#include "ops/conv_geometry.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

using Triple = std::array<int64_t, 3>;

/// The geometry of a 3-D pooling: per dim (T, H, W) kernel, stride, padding, dilation,
/// input and output sizes (SymInts: symbolic in a trace with dynamic shapes, so the
/// composites below build their graphs over the symbols); `batched` when the input is N,
/// C, T, H, W.
struct Pool3d {
  Triple kernel{}, stride{}, pad{}, dilation{1, 1, 1};
  std::array<SymInt, 3> in{}, out{};
  bool batched = true;
};

/// `t * n`: by a Scalar when `n` is plain; a symbolic `n` is computed in the graph as a
/// sum of ones (a 0-dim int64 tensor, as mean's count), so each call multiplies by its own.
Tensor times_size(const Tensor& t, const SymInt& n) {
  if (!n.is_symbolic()) return t * Scalar(n.hint());
  return t * ones({n}, TensorOptions(kLong).device(t.device())).sum();
}

/// min(t, n) elementwise, `n` as in times_size.
Tensor min_size(const Tensor& t, const SymInt& n) {
  if (!n.is_symbolic()) return clamp_max(t, Scalar(n.hint()));
  return minimum(t, ones({n}, TensorOptions(kLong).device(t.device())).sum());
}

/// An int[3] pooling argument given as one int or three (stride: or omitted, then the kernel).
Triple triple(const std::vector<int64_t>& v, bool ok, const std::string& message, const Triple* if_empty = nullptr) {
  if (v.empty() && if_empty) return *if_empty;
  EMBER_CHECK(ok && (v.size() == 1 || v.size() == 3)) << message;
  return v.size() == 1 ? Triple{v[0], v[0], v[0]} : Triple{v[0], v[1], v[2]};
}

/// Reads and checks the arguments of avg_pool3d (`dilation` null) or max_pool3d_with_indices.
Pool3d pool3d_setup(const Tensor& input, const Stack& a, const std::vector<int64_t>* dilation, bool ceil_mode,
                    const char* name) {
  const std::string n = name;
  const bool avg = dilation == nullptr;
  Pool3d p;
  const auto& kernel = a[1].to_int_list();
  p.kernel = triple(kernel, true, n + (avg ? ": kernel_size must be a single int, or a tuple of three ints"
                                           : ": kernel_size must either be a single int, or a tuple of three ints"));
  p.stride = triple(a[2].to_int_list(), true,
                    n + (avg ? ": stride must be omitted, a single int, or a tuple of three ints"
                             : ": stride must either be omitted, a single int, or a tuple of three ints"),
                    &p.kernel);
  p.pad = triple(a[3].to_int_list(), true, n + (avg ? ": padding must be a single int, or a tuple of three ints"
                                                   : ": padding must either be a single int, or a tuple of three ints"));
  if (dilation) p.dilation = triple(*dilation, true, n + ": dilation must be either a single int, or a tuple of three ints");
  const int64_t nd = input.dim();
  EMBER_CHECK(nd == 4 || nd == 5) << "non-empty 4D or 5D (batch mode) tensor expected for input";
  p.batched = nd == 5;
  for (int d = 0; d < 3; ++d) p.in[d] = sym_size(input, nd - 3 + d);
  for (int d = 0; d < 3; ++d)
    p.out[d] = pooling_output_shape(p.in[d], p.kernel[d], p.pad[d], p.stride[d], p.dilation[d], ceil_mode);
  // pool3d_shape_check
  EMBER_CHECK(p.kernel[0] > 0 && p.kernel[1] > 0 && p.kernel[2] > 0)
      << "kernel sizes should be greater than zero, but got kT: " << p.kernel[0] << " kH: " << p.kernel[1]
      << " kW: " << p.kernel[2];
  EMBER_CHECK(p.stride[0] > 0 && p.stride[1] > 0 && p.stride[2] > 0)
      << "stride should be greater than zero, but got dT: " << p.stride[0] << " dH: " << p.stride[1]
      << " dW: " << p.stride[2];
  EMBER_CHECK(p.dilation[0] > 0 && p.dilation[1] > 0 && p.dilation[2] > 0)
      << "dilation should be greater than zero, but got dilationT: " << p.dilation[0]
      << " dilationH: " << p.dilation[1] << " dilationW: " << p.dilation[2];
  for (int64_t i = nd - 4; i < nd; ++i) {
    EMBER_CHECK(sym_size(input, i) > 0) << n
                                        << ": Expected input's non-batch dimensions to have positive length, but input "
                                        << "has a shape of " << input.sizes() << " and non-batch dimension " << i
                                        << " has length zero!";
  }
  if (avg) {
    EMBER_CHECK(p.in[0] >= p.kernel[0] && p.in[1] >= p.kernel[1] && p.in[2] >= p.kernel[2])
        << "input image (T: " << p.in[0] << " H: " << p.in[1] << " W: " << p.in[2] << ") smaller than kernel size (kT: "
        << p.kernel[0] << " kH: " << p.kernel[1] << " kW: " << p.kernel[2] << ")";
  }
  EMBER_CHECK(p.out[0] >= 1 && p.out[1] >= 1 && p.out[2] >= 1)
      << "Given input size: (" << sym_size(input, nd - 4) << "x" << p.in[0] << "x" << p.in[1] << "x" << p.in[2]
      << "). Calculated output size: (" << sym_size(input, nd - 4) << "x" << p.out[0] << "x" << p.out[1] << "x"
      << p.out[2] << "). Output size is too small";
  return p;
}

/// Window element k·dilation + output position·stride along dim d (in padded coordinates),
/// shaped to broadcast over the index's three dims: [kernel·out] on dim d.
Tensor window_positions(const Pool3d& p, int d, Device device) {
  const TensorOptions o = TensorOptions(kLong).device(device);
  const Tensor k = arange(p.kernel[d], o) * Scalar(p.dilation[d]), i = arange(p.out[d], o) * Scalar(p.stride[d]);
  std::vector<SymInt> shape{1, 1, 1};
  shape[static_cast<size_t>(d)] = p.out[d] * p.kernel[d];
  return (k.unsqueeze(1) + i).reshape(SymIntArrayRef(shape));
}

/// The windows of the batched input x [N, C, T, H, W], padded with `fill`:
/// [N, C, oT, oH, oW, kT·kH·kW].
Tensor windows(const Tensor& x, const Pool3d& p, const Scalar& fill) {
  std::vector<SymInt> pads;  // constant_pad_nd's order: last dim first, (before, after)
  for (int d = 2; d >= 0; --d) {
    const SymInt reach = (p.out[d] - 1) * p.stride[d] + p.dilation[d] * (p.kernel[d] - 1) + 1;
    const SymInt past = reach - p.in[d] - p.pad[d];
    pads.push_back(p.pad[d]);
    pads.push_back(past > p.pad[d] ? past : SymInt(p.pad[d]));
  }
  const Tensor padded = constant_pad_nd(x, SymIntArrayRef(pads), fill);
  const Tensor picked = index(padded, {std::nullopt, std::nullopt, window_positions(p, 0, x.device()),
                                       window_positions(p, 1, x.device()), window_positions(p, 2, x.device())});
  const SymInt n = sym_size(x, 0), c = sym_size(x, 1);
  return picked.reshape({n, c, p.kernel[0], p.out[0], p.kernel[1], p.out[1], p.kernel[2], p.out[2]})
      .permute({0, 1, 3, 5, 7, 2, 4, 6})
      .reshape({n, c, p.out[0], p.out[1], p.out[2], SymInt(p.kernel[0] * p.kernel[1] * p.kernel[2])});
}

/// Per output position along dim d, the window's length within the padded input
/// (`in_padded`) or within the input: ATen's avg_pool3d divisors, [out] on dim d of 3.
Tensor window_lengths(const Pool3d& p, int d, bool in_padded, Device device) {
  const Tensor start = arange(p.out[d], TensorOptions(kLong).device(device)) * Scalar(p.stride[d]) - Scalar(p.pad[d]);
  const Tensor end = min_size(start + Scalar(p.kernel[d]), p.in[d] + p.pad[d]);
  const Tensor len = in_padded ? end - start : min_size(end, p.in[d]) - clamp_min(start, Scalar(int64_t{0}));
  std::vector<int64_t> shape{1, 1, 1};
  shape[static_cast<size_t>(d)] = -1;
  return len.reshape(shape);
}

Stack avg_pool3d(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const bool ceil_mode = a[4].to_bool(), count_include_pad = a[5].to_bool();
  const std::optional<int64_t> divisor = a[6].to_optional_int();
  Pool3d p = pool3d_setup(self, a, nullptr, ceil_mode, "avg_pool3d");
  EMBER_CHECK(!divisor || *divisor != 0) << "divisor must be not zero";
  const ScalarType dt = self.dtype();
  // PyTorch's CPU kernel also averages int64 (truncating); its CUDA kernel does not.
  if (self.is_cuda() && !is_floating_point(dt)) not_implemented("avg_pool3d_out_cuda", dt);
  if (!(is_floating_point(dt) || dt == kLong)) not_implemented("avg_pool3d_out_frame", dt);
  const Tensor x = cast(p.batched ? self : self.unsqueeze(0), is_reduced_float(dt) ? kFloat : dt);
  const Tensor sums = sum(windows(x, p, Scalar(int64_t{0})), {-1});
  Tensor out;
  if (divisor) {
    out = dt == kLong ? div(sums, Scalar(*divisor), "trunc") : sums / Scalar(static_cast<double>(*divisor));
  } else {
    const Tensor divide = window_lengths(p, 0, count_include_pad, x.device()) *
                          window_lengths(p, 1, count_include_pad, x.device()) *
                          window_lengths(p, 2, count_include_pad, x.device());
    out = dt == kLong ? div(sums, divide, "trunc") : sums / divide.to(x.dtype());
  }
  out = cast(out, dt);
  return {p.batched ? out : out.squeeze(0)};
}

Stack max_pool3d_with_indices(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const bool ceil_mode = a[5].to_bool();
  Pool3d p = pool3d_setup(self, a, &a[4].to_int_list(), ceil_mode, "max_pool3d");
  if (!is_floating_point(self.dtype())) not_implemented("max_pool3d_with_indices_cpu", self.dtype());
  const Tensor x = p.batched ? self : self.unsqueeze(0);
  auto [values, k] = max(windows(x, p, Scalar(-std::numeric_limits<double>::infinity())), -1);
  // window element k = (a, b, c) of output position (t, h, w) sits at input
  // (t·sT - pT + a·dT, h·sH - pH + b·dH, w·sW - pW + c·dW)
  const TensorOptions o = TensorOptions(kLong).device(x.device());
  auto start = [&](int d) {
    std::vector<int64_t> shape{1, 1, 1};
    shape[static_cast<size_t>(d)] = -1;
    return (arange(p.out[d], o) * Scalar(p.stride[d]) - Scalar(p.pad[d])).reshape(shape);
  };
  const int64_t kh = p.kernel[1], kw = p.kernel[2];
  const Tensor at = start(0) + div(k, Scalar(kh * kw), "floor") * Scalar(p.dilation[0]);
  const Tensor ah = start(1) + remainder(div(k, Scalar(kw), "floor"), Scalar(kh)) * Scalar(p.dilation[1]);
  const Tensor aw = start(2) + remainder(k, Scalar(kw)) * Scalar(p.dilation[2]);
  const Tensor indices = times_size(times_size(at, p.in[1]) + ah, p.in[2]) + aw;
  if (p.batched) return {values, indices};
  return {values.squeeze(0), indices.squeeze(0)};
}

Stack max_pool3d_with_indices_backward(const Stack& a) {
  const Tensor &grad = a[0].to_tensor(), &self = a[1].to_tensor(), &indices = a[7].to_tensor();
  Stack forward{a[1], a[2], a[3], a[4], a[5], a[6]};
  const Pool3d p = pool3d_setup(self, forward, &a[5].to_int_list(), a[6].to_bool(), "max_pool3d_with_indices_backward");
  const std::vector<SymInt> grad_sizes = sym_sizes(grad), index_sizes = sym_sizes(indices);
  EMBER_CHECK(grad_sizes == index_sizes)
      << "max_pool3d_with_indices_backward: expected grad_output and indices of the same sizes, but got "
      << grad.sizes() << " and " << indices.sizes();
  const int64_t nd = grad.dim();
  EMBER_CHECK(nd >= 3 && grad_sizes[nd - 3] == p.out[0] && grad_sizes[nd - 2] == p.out[1] &&
              grad_sizes[nd - 1] == p.out[2])
      << "max_pool3d_with_indices_backward: expected grad_output of output size (" << p.out[0] << ", " << p.out[1]
      << ", " << p.out[2] << "), but got " << grad.sizes();
  const SymInt volume = p.in[0] * p.in[1] * p.in[2], windows = p.out[0] * p.out[1] * p.out[2];
  SymInt planes = 1;  // the dims before T, H, W
  for (int64_t d = 0; d + 3 < self.dim(); ++d) planes = planes * sym_size(self, d);
  const Tensor flat = zeros({planes, volume}, TensorOptions(grad.dtype()).device(grad.device()));
  return {scatter_add(flat, 1, indices.reshape({planes, windows}), grad.reshape({planes, windows}))
              .reshape(SymIntArrayRef(sym_sizes(self)))};
}

/// The averaging matrix [out, in] of adaptive pooling along a dim: row o averages input
/// positions [⌊o·in/out⌋, ⌈(o+1)·in/out⌉) (ATen's start_index / end_index).
Tensor adaptive_weights(const SymInt& in, int64_t out, ScalarType dt, Device device) {
  const TensorOptions o = TensorOptions(kLong).device(device);
  const Tensor pos = arange(out, o), i = arange(in, o).unsqueeze(0);
  const Scalar by(std::max<int64_t>(out, 1));  // out = 0: no rows, but div checks its divisor
  const Tensor start = div(times_size(pos, in), by, "floor").unsqueeze(1);
  const Tensor end = div(times_size(pos + Scalar(int64_t{1}), in) + Scalar(out - 1), by, "floor").unsqueeze(1);
  return logical_and(ge(i, start), lt(i, end)).to(dt) / (end - start).to(dt);
}

/// _adaptive_avg_pool3d: the averages of each window, as one averaging matrix per dim
/// applied by matmul (W, then H, then T).
Stack adaptive_avg_pool3d(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const std::vector<int64_t>& size = a[1].to_int_list();
  EMBER_CHECK(size.size() == 3) << "adaptive_avg_pool3d: output_size must be 3";
  for (int64_t s : size) {
    EMBER_CHECK(s >= 0) << "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
                           "received {"
                        << size[0] << ", " << size[1] << ", " << size[2] << "}";
  }
  const int64_t nd = self.dim();
  EMBER_CHECK(nd == 4 || nd == 5) << "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got " << self.sizes();
  for (int64_t d = nd - 4; d < nd; ++d) {
    EMBER_CHECK(sym_size(self, d) > 0) << "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch "
                                          "dimensions, but input has sizes "
                                       << self.sizes() << " with dimension " << d << " being empty";
  }
  const ScalarType dt = self.dtype();
  if (!is_floating_point(dt)) not_implemented("adaptive_avg_pool3d_cpu", dt);
  const ScalarType acc = is_reduced_float(dt) ? kFloat : dt;  // float16/bfloat16 averaged in float
  const std::vector<SymInt> sizes = sym_sizes(self);
  const SymInt t = sizes[nd - 3], h = sizes[nd - 2], w = sizes[nd - 1];
  const Device dev = self.device();
  const Tensor x = cast(self, acc);
  const Tensor by_w = matmul(x, adaptive_weights(w, size[2], acc, dev).transpose(0, 1));  // [.., T, H, oW]
  const Tensor by_h = matmul(adaptive_weights(h, size[1], acc, dev), by_w);               // [.., T, oH, oW]
  std::vector<SymInt> flat(sizes.begin(), sizes.end() - 3);
  flat.push_back(t);
  flat.push_back(size[1] * size[2]);
  const Tensor by_t =
      matmul(adaptive_weights(t, size[0], acc, dev), by_h.reshape(SymIntArrayRef(flat)));  // [.., oT, oH·oW]
  std::vector<SymInt> out(sizes.begin(), sizes.end() - 3);
  out.insert(out.end(), size.begin(), size.end());
  return {cast(by_t.reshape(SymIntArrayRef(out)), dt)};
}

}  // namespace

void register_pool3d_ops(Registry& r) {
  r.def("_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor").set_decomposition(adaptive_avg_pool3d);
  r.def("avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor")
      .set_decomposition(avg_pool3d);
  r.def("max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
        "int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)")
      .set_decomposition(max_pool3d_with_indices);
  r.def("max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, "
        "int[3] padding, int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor")
      .set_decomposition(max_pool3d_with_indices_backward);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override, Loc loc) {
  return call_tensor(EMBER_OP("aten::avg_pool3d"),
                     {self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override}, loc);
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                                   Loc loc) {
  return ops::tuple2(ops::call_at(EMBER_OP("aten::max_pool3d_with_indices"),
                                  {self, kernel_size, stride, padding, dilation, ceil_mode}, loc));
}
Tensor max_pool3d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices, Loc loc) {
  return call_tensor(EMBER_OP("aten::max_pool3d_with_indices_backward"),
                     {grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices}, loc);
}

}  // namespace ember
