// ops/upsample.cpp — upsample_nearest2d.vec and upsample_bilinear2d.vec as composites: per
// spatial dim, the source rows (and, for bilinear, the two rows and their weights) are
// computed with ops from an arange, exactly as ATen's CPU kernels compute them (the same
// float arithmetic), then gathered with index_select; float16/bfloat16 weights are float. The
// gradients come from index_select's (an index_add into zeros), which is what ATen's
// upsample_*_backward kernels compute, and the inductor fuses the index arithmetic. ATen's
// output-size rules and checks. See Note [nn].
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

/// ATen's compute_output_size for 2 spatial dims: exactly one of `output_size` and
/// `scale_factors`, each with one entry per spatial dim; a scale gives
/// floor(input size × scale). Then upsample_2d_common_check's rank and size checks.
std::vector<int64_t> output_size_of(const Tensor& input, const IValue& output_size, const IValue& scale_factors) {
  const int64_t spatial = input.dim() - 2;
  EMBER_CHECK(output_size.is_none() != scale_factors.is_none())
      << "Must specify exactly one of output_size and scale_factors";
  std::vector<int64_t> out;
  if (!output_size.is_none()) {
    out = output_size.to_int_list();
    EMBER_CHECK(static_cast<int64_t>(out.size()) == spatial)
        << "Expected output_size to have " << spatial << " entries (one per spatial dim of an input of sizes "
        << input.sizes() << "), but got " << out.size();
  } else {
    const auto& scales = scale_factors.to_double_list();
    EMBER_CHECK(static_cast<int64_t>(scales.size()) == spatial)
        << "Expected scale_factors to have " << spatial << " entries (one per spatial dim of an input of sizes "
        << input.sizes() << "), but got " << scales.size();
    for (int64_t i = 0; i < spatial; ++i)
      out.push_back(static_cast<int64_t>(static_cast<double>(input.size(i + 2)) * scales[static_cast<size_t>(i)]));
  }
  EMBER_CHECK(input.dim() == 4) << "It is expected input_size equals to 4, but got size " << input.dim();
  const int64_t ih = input.size(2), iw = input.size(3);
  EMBER_CHECK(ih > 0 && iw > 0 && out[0] > 0 && out[1] > 0)
      << "Input and output sizes should be greater than 0, but got input (H: " << ih << ", W: " << iw
      << ") output (H: " << out[0] << ", W: " << out[1] << ")";
  // The element count as a SymInt: a symbolic batch is compared, not read (the spatial
  // sizes above are read: the source indices are computed from them).
  EMBER_CHECK(!(core::sym_numel(input) == core::SymInt(0)) || input.size(1) != 0)
      << "Non-empty 4D data tensor expected but got a tensor with sizes " << input.sizes();
  return out;
}

/// The scale of spatial dim `i` that the .vec overloads pass on: scale_factors[i] or none.
std::optional<double> scale_of(const IValue& scale_factors, size_t i) {
  if (scale_factors.is_none()) return std::nullopt;
  return scale_factors.to_double_list().at(i);
}

/// ATen's compute_scales_value: 1 / scale where a positive scale is given, else
/// in / out, in float (the kernels' accumulate type for every dtype but double).
template <typename T>
T scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

/// The CPU kernel's nearest_neighbor_compute_source_index for every output position along
/// a dim of `in` → `out` elements: min(⌊i · scale⌋, in - 1) in float.
Tensor nearest_source(int64_t in, int64_t out, std::optional<double> scale, Device device) {
  const Tensor i = arange(out, TensorOptions(kLong).device(device));
  const float s = scales_value<float>(scale, in, out);
  return clamp_max(floor(i.to(kFloat) * Scalar(static_cast<double>(s))).to(kLong), Scalar(in - 1));
}

/// Rows i0, i1 and weights w0, w1 (in `acc`) of linear interpolation along a dim of `in`
/// → `out` elements: ATen's area_pixel_compute_scale / _source_index and
/// guard_index_and_lambda.
struct LinearAxis {
  Tensor i0, i1, w0, w1;
};

LinearAxis linear_source(int64_t in, int64_t out, bool align_corners, std::optional<double> scale, ScalarType acc,
                         Device device) {
  double s = 0;  // the kernel's value, rounded to `acc` below
  if (align_corners) {
    s = out > 1 ? (acc == kDouble ? static_cast<double>(in - 1) / static_cast<double>(out - 1)
                                  : static_cast<double>(static_cast<float>(in - 1) / static_cast<float>(out - 1)))
                : 0.0;
  } else {
    s = acc == kDouble ? scales_value<double>(scale, in, out) : static_cast<double>(scales_value<float>(scale, in, out));
  }
  const Tensor dst = arange(out, TensorOptions(acc).device(device));
  const Tensor src = align_corners ? dst * Scalar(s) : clamp_min((dst + Scalar(0.5)) * Scalar(s) - Scalar(0.5), 0.0);
  LinearAxis a;
  a.i0 = clamp_max(floor(src).to(kLong), Scalar(in - 1));
  a.w1 = clamp(src - a.i0.to(acc), Scalar(0.0), Scalar(1.0));
  a.w0 = 1.0 - a.w1;
  a.i1 = clamp_max(a.i0 + Scalar(int64_t{1}), Scalar(in - 1));
  return a;
}

Stack upsample_nearest2d_vec(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const std::vector<int64_t> out = output_size_of(input, a[1], a[2]);
  const ScalarType dt = input.dtype();
  if (!(is_floating_point(dt) || dt == kUInt8)) not_implemented("compute_indices_weights_nearest", dt);
  const Tensor rows = nearest_source(input.size(2), out[0], scale_of(a[2], 0), input.device());
  const Tensor cols = nearest_source(input.size(3), out[1], scale_of(a[2], 1), input.device());
  return {index_select(index_select(input, 2, rows), 3, cols)};
}

Stack upsample_bilinear2d_vec(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const std::vector<int64_t> out = output_size_of(input, a[1], a[3]);
  const bool align_corners = a[2].to_bool();
  const ScalarType dt = input.dtype();
  if (!is_floating_point(dt)) not_implemented("compute_indices_weights_linear", dt);
  const ScalarType acc = dt == kDouble ? kDouble : kFloat;
  const LinearAxis h = linear_source(input.size(2), out[0], align_corners, scale_of(a[3], 0), acc, input.device());
  const LinearAxis w = linear_source(input.size(3), out[1], align_corners, scale_of(a[3], 1), acc, input.device());
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
