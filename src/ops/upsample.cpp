// ops/upsample.cpp — upsample_nearest2d.vec and upsample_bilinear2d.vec as composites: per
// spatial dim, the source rows (and, for bilinear, the two rows and their weights) are
// computed with ops from an arange, exactly as ATen's CPU kernels compute them (the same
// float arithmetic), then gathered with index_select; float16/bfloat16 weights are float. The
// gradients come from index_select's (an index_add into zeros), which is what ATen's
// upsample_*_backward kernels compute, and the inductor fuses the index arithmetic. ATen's
// output-size rules and checks. See Note [nn].
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

/// floor(n × scale) over a symbolic n, when the scale is p / 2^k (2, 3, 0.5, 0.75, 1.5): then
/// the float64 product of any size below 2^32 is exact, so (n · p) // 2^k is the same
/// integer. Other scales (1.7) give none, and the caller reads n as an integer.
std::optional<SymInt> scaled_size(const SymInt& n, double scale) {
  if (!(scale > 0)) return std::nullopt;
  for (int64_t k = 0, den = 1; k <= 16; ++k, den *= 2) {
    const double p = scale * static_cast<double>(den);
    if (p == std::floor(p) && p < 65536) return n * SymInt(static_cast<int64_t>(p)) / SymInt(den);
  }
  return std::nullopt;
}

/// ATen's compute_output_size for 2 spatial dims: exactly one of `output_size` and
/// `scale_factors`, each with one entry per spatial dim; a scale gives
/// floor(input size × scale). Then upsample_2d_common_check's rank and size checks. Over
/// size symbols the sizes stay SymInts where the scale allows (scaled_size).
std::vector<SymInt> output_size_of(const Tensor& input, const IValue& output_size, const IValue& scale_factors) {
  const int64_t spatial = input.dim() - 2;
  EMBER_CHECK(output_size.is_none() != scale_factors.is_none())
      << "Must specify exactly one of output_size and scale_factors";
  std::vector<SymInt> out;
  if (!output_size.is_none()) {
    for (const core::SymInt& s : core::sym_int_list(output_size)) out.emplace_back(s);
    EMBER_CHECK(static_cast<int64_t>(out.size()) == spatial)
        << "Expected output_size to have " << spatial << " entries (one per spatial dim of an input of sizes "
        << IntArrayRef(input.impl()->sizes) << "), but got " << out.size();
  } else {
    const auto& scales = scale_factors.to_double_list();
    EMBER_CHECK(static_cast<int64_t>(scales.size()) == spatial)
        << "Expected scale_factors to have " << spatial << " entries (one per spatial dim of an input of sizes "
        << IntArrayRef(input.impl()->sizes) << "), but got " << scales.size();
    for (int64_t i = 0; i < spatial; ++i) {
      const double scale = scales[static_cast<size_t>(i)];
      const SymInt in = sym_size(input, i + 2);
      const std::optional<SymInt> exact = in.is_symbolic() ? scaled_size(in, scale) : std::nullopt;
      // Otherwise the size is read as an integer (a symbolic one is specialized, naming this op).
      out.push_back(exact ? *exact : SymInt(static_cast<int64_t>(static_cast<double>(input.size(i + 2)) * scale)));
    }
  }
  EMBER_CHECK(input.dim() == 4) << "It is expected input_size equals to 4, but got size " << input.dim();
  const SymInt ih = sym_size(input, 2), iw = sym_size(input, 3);
  EMBER_CHECK(ih > SymInt(0) && iw > SymInt(0) && out[0] > SymInt(0) && out[1] > SymInt(0))
      << "Input and output sizes should be greater than 0, but got input (H: " << ih << ", W: " << iw
      << ") output (H: " << out[0] << ", W: " << out[1] << ")";
  // The element count as a SymInt: a symbolic batch is compared, not read.
  EMBER_CHECK(!(core::sym_numel(input) == core::SymInt(0)) || sym_size(input, 1) != SymInt(0))
      << "Non-empty 4D data tensor expected but got a tensor with sizes " << IntArrayRef(input.impl()->sizes);
  return out;
}

/// The scale of spatial dim `i` that the .vec overloads pass on: scale_factors[i] or none.
std::optional<double> scale_of(const IValue& scale_factors, size_t i) {
  if (scale_factors.is_none()) return std::nullopt;
  return scale_factors.to_double_list().at(i);
}

/// A factor computed from sizes in `acc` (float, or double for double inputs): a number
/// when the sizes are plain, a 0-dim tensor of `acc` over size symbols — the same
/// arithmetic in the same type, so both give the same bits.
struct SizeFactor {
  double value = 0;
  Tensor tensor;
  Tensor times(const Tensor& x) const { return tensor.defined() ? x * tensor : x * Scalar(value); }
};

/// a / b in `acc`, as the kernels divide two sizes.
SizeFactor size_ratio(const SymInt& a, const SymInt& b, ScalarType acc, Device device) {
  if (!a.is_symbolic() && !b.is_symbolic()) {
    const double v = acc == kDouble ? static_cast<double>(a.hint()) / static_cast<double>(b.hint())
                                    : static_cast<double>(static_cast<float>(a.hint()) / static_cast<float>(b.hint()));
    return {v, Tensor()};
  }
  return {0, size_tensor(a, device, acc) / size_tensor(b, device, acc)};
}

/// ATen's compute_scales_value: 1 / scale where a positive scale is given, else in / out,
/// in `acc` (the kernels' accumulate type: float for every dtype but double).
SizeFactor scales_value(std::optional<double> scale, const SymInt& in, const SymInt& out, ScalarType acc,
                        Device device) {
  if (scale && *scale > 0)
    return {acc == kDouble ? 1.0 / *scale : static_cast<double>(static_cast<float>(1.0 / *scale)), Tensor()};
  return size_ratio(in, out, acc, device);
}

/// min(x, bound) for an integer tensor: clamp_max by a number, or by a 0-dim tensor over
/// size symbols.
Tensor at_most(const Tensor& x, const SymInt& bound) {
  return bound.is_symbolic() ? minimum(x, size_tensor(bound, x.device())) : clamp_max(x, Scalar(bound.hint()));
}

/// The CPU kernel's nearest_neighbor_compute_source_index for every output position along
/// a dim of `in` → `out` elements: min(⌊i · scale⌋, in - 1) in float.
Tensor nearest_source(const SymInt& in, const SymInt& out, std::optional<double> scale, Device device) {
  const Tensor i = arange(out, TensorOptions(kLong).device(device));
  const SizeFactor s = scales_value(scale, in, out, kFloat, device);
  return at_most(floor(s.times(i.to(kFloat))).to(kLong), in - SymInt(1));
}

/// Rows i0, i1 and weights w0, w1 (in `acc`) of linear interpolation along a dim of `in`
/// → `out` elements: ATen's area_pixel_compute_scale / _source_index and
/// guard_index_and_lambda.
struct LinearAxis {
  Tensor i0, i1, w0, w1;
};

LinearAxis linear_source(const SymInt& in, const SymInt& out, bool align_corners, std::optional<double> scale,
                         ScalarType acc, Device device) {
  SizeFactor s;  // the kernel's value, in `acc`
  if (align_corners) {
    if (out > SymInt(1)) s = size_ratio(in - SymInt(1), out - SymInt(1), acc, device);
  } else {
    s = scales_value(scale, in, out, acc, device);
  }
  const Tensor dst = arange(out, TensorOptions(acc).device(device));
  const Tensor src = align_corners ? s.times(dst) : clamp_min(s.times(dst + Scalar(0.5)) - Scalar(0.5), 0.0);
  LinearAxis a;
  a.i0 = at_most(floor(src).to(kLong), in - SymInt(1));
  a.w1 = clamp(src - a.i0.to(acc), Scalar(0.0), Scalar(1.0));
  a.w0 = 1.0 - a.w1;
  a.i1 = at_most(a.i0 + Scalar(int64_t{1}), in - SymInt(1));
  return a;
}

Stack upsample_nearest2d_vec(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const std::vector<SymInt> out = output_size_of(input, a[1], a[2]);
  const ScalarType dt = input.dtype();
  if (!(is_floating_point(dt) || dt == kUInt8)) not_implemented("compute_indices_weights_nearest", dt);
  const Tensor rows = nearest_source(sym_size(input, 2), out[0], scale_of(a[2], 0), input.device());
  const Tensor cols = nearest_source(sym_size(input, 3), out[1], scale_of(a[2], 1), input.device());
  return {index_select(index_select(input, 2, rows), 3, cols)};
}

Stack upsample_bilinear2d_vec(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const std::vector<SymInt> out = output_size_of(input, a[1], a[3]);
  const bool align_corners = a[2].to_bool();
  const ScalarType dt = input.dtype();
  if (!is_floating_point(dt)) not_implemented("compute_indices_weights_linear", dt);
  const ScalarType acc = dt == kDouble ? kDouble : kFloat;
  const LinearAxis h = linear_source(sym_size(input, 2), out[0], align_corners, scale_of(a[3], 0), acc, input.device());
  const LinearAxis w = linear_source(sym_size(input, 3), out[1], align_corners, scale_of(a[3], 1), acc, input.device());
  const Tensor rows =
      index_select(input, 2, h.i0) * h.w0.unsqueeze(1) + index_select(input, 2, h.i1) * h.w1.unsqueeze(1);
  const Tensor both = index_select(rows, 3, w.i0) * w.w0 + index_select(rows, 3, w.i1) * w.w1;
  return {both.to(dt)};
}

}  // namespace

void register_upsample_ops(Registry& r) {
  r.def("upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor")
      .set_decomposition(upsample_nearest2d_vec);
  r.def("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) "
        "-> Tensor")
      .set_decomposition(upsample_bilinear2d_vec);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor upsample_nearest2d(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                          std::optional<std::vector<double>> scale_factors, Loc loc) {
  return call_tensor(EMBER_OP("aten::upsample_nearest2d.vec"), {input, output_size, scale_factors}, loc);
}
Tensor upsample_bilinear2d(const Tensor& input, std::optional<std::vector<int64_t>> output_size, bool align_corners,
                           std::optional<std::vector<double>> scale_factors, Loc loc) {
  return call_tensor(EMBER_OP("aten::upsample_bilinear2d.vec"), {input, output_size, align_corners, scale_factors},
                     loc);
}

}  // namespace ember
