// ops/grid_sample.cpp — grid_sampler_2d as a composite, written as ATen's CPU kernel
// computes it: each grid point (x, y) in [-1, 1] is unnormalized to input coordinates
// (align_corners: the corner pixels' centres, else their outer edges), the padding mode
// applied (zeros: none; border: clipped; reflection: reflected about the edges, then
// clipped), and the input read at the neighbouring pixels (bilinear: 2×2 weighted by
// distance; nearest: the one rounded half to even; bicubic: 4×4 with the cubic
// convolution coefficients, A = -0.75, the padding applied to each tap) with `gather`,
// pixels outside the input reading 0. The gradients for input and grid come from the ops:
// the gather's scatter_add for the input, the weights' and the coordinates' derivatives for
// the grid, which are what grid_sampler_2d_backward computes. ATen's checks; on CUDA, as
// PyTorch's CUDA kernel, half and bfloat16 too (computed in float). See Note [nn].
#include <array>
#include <vector>

#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

enum Interpolation : int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

/// What every sample needs: the input as [N, C, H·W] and its geometry.
struct Source {
  Tensor flat;
  int64_t n, c, h, w, ho, wo;
  ScalarType dtype;
};

/// grid_sampler_unnormalize: [-1, 1] to pixel coordinates along a dim of `size`.
Tensor unnormalize(const Tensor& coord, int64_t size, bool align_corners) {
  const auto s = static_cast<double>(size);
  return align_corners ? (coord + 1.0) * ((s - 1) / 2) : ((coord + 1.0) * s - 1.0) / 2;
}

/// reflect_coordinates: `x` reflected into [twice_low / 2, twice_high / 2].
Tensor reflect(const Tensor& x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return zeros_like(x);
  const double min = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
  const Tensor in = abs(x - min);
  const Tensor extra = fmod(in, Scalar(span)), flips = floor(in / span);
  return where(eq(remainder(flips, Scalar(2.0)), Scalar(0.0)), extra + min, (span + min) - extra);
}

/// compute_coordinates: the padding mode applied to pixel coordinates along a dim of `size`.
Tensor pad_coordinates(const Tensor& x, int64_t size, int64_t padding, bool align_corners) {
  if (padding == kZeros) return x;
  Tensor r = x;
  if (padding == kReflection) r = align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1);
  return clamp(r, Scalar(0.0), Scalar(static_cast<double>(size - 1)));
}

/// The input at integer pixels (xi, yi) [N, Ho, Wo] (Long): [N, C, Ho, Wo], 0 outside.
Tensor read(const Source& s, const Tensor& xi, const Tensor& yi) {
  const Tensor inside = (xi >= Scalar(int64_t{0})) & (xi < Scalar(s.w)) & (yi >= Scalar(int64_t{0})) & (yi < Scalar(s.h));
  const Tensor idx = clamp(yi, Scalar(int64_t{0}), Scalar(s.h - 1)) * Scalar(s.w) +
                     clamp(xi, Scalar(int64_t{0}), Scalar(s.w - 1));
  const Tensor v = gather(s.flat, 2, idx.reshape({s.n, 1, s.ho * s.wo}).expand({s.n, s.c, s.ho * s.wo}));
  return where(inside.unsqueeze(1), v.reshape({s.n, s.c, s.ho, s.wo}), Scalar(0.0));
}

Tensor bilinear(const Source& s, const Tensor& ix, const Tensor& iy) {
  const Tensor x0 = floor(ix), y0 = floor(iy);
  const Tensor x1 = x0 + 1.0, y1 = y0 + 1.0;
  const Tensor wx1 = ix - x0, wx0 = x1 - ix, wy1 = iy - y0, wy0 = y1 - iy;
  const Tensor x0i = x0.to(kLong), y0i = y0.to(kLong), x1i = x1.to(kLong), y1i = y1.to(kLong);
  return read(s, x0i, y0i) * (wx0 * wy0).unsqueeze(1) + read(s, x1i, y0i) * (wx1 * wy0).unsqueeze(1) +
         read(s, x0i, y1i) * (wx0 * wy1).unsqueeze(1) + read(s, x1i, y1i) * (wx1 * wy1).unsqueeze(1);
}

/// get_cubic_upsample_coefficients: the weights of taps -1, 0, 1, 2 at fraction t.
std::array<Tensor, 4> cubic_coefficients(const Tensor& t) {
  constexpr double A = -0.75;
  auto conv1 = [](const Tensor& x) { return ((x * (A + 2)) - (A + 3)) * x * x + 1.0; };
  auto conv2 = [](const Tensor& x) { return ((x * A - 5 * A) * x + 8 * A) * x - 4 * A; };
  const Tensor u = 1.0 - t;
  return {conv2(t + 1.0), conv1(t), conv1(u), conv2(u + 1.0)};
}

Tensor bicubic(const Source& s, const Tensor& ix, const Tensor& iy, int64_t padding, bool align_corners) {
  const Tensor x0 = floor(ix), y0 = floor(iy);
  const std::array<Tensor, 4> cx = cubic_coefficients(ix - x0), cy = cubic_coefficients(iy - y0);
  // get_value_bounded: each tap's coordinate padded, then truncated to a pixel
  auto tap = [&](const Tensor& base, double offset, int64_t size) {
    return pad_coordinates(base + offset, size, padding, align_corners).to(kLong);
  };
  Tensor out;
  for (int j = 0; j < 4; ++j) {
    const Tensor yi = tap(y0, j - 1, s.h);
    Tensor row;
    for (int i = 0; i < 4; ++i) {
      const Tensor v = read(s, tap(x0, i - 1, s.w), yi) * cx[static_cast<size_t>(i)].unsqueeze(1);
      row = row.defined() ? row + v : v;
    }
    const Tensor v = row * cy[static_cast<size_t>(j)].unsqueeze(1);
    out = out.defined() ? out + v : v;
  }
  return out;
}

Stack grid_sampler_2d(const Stack& a) {
  const Tensor &input = a[0].to_tensor(), &grid = a[1].to_tensor();
  const int64_t mode = a[2].to_int(), padding = a[3].to_int();
  const bool align_corners = a[4].to_bool();
  EMBER_CHECK(input.dtype() == grid.dtype())
      << "grid_sampler(): expected input and grid to have same dtype, but input has " << scalar_type_name(input.dtype())
      << " and grid has " << scalar_type_name(grid.dtype());
  EMBER_CHECK(input.device() == grid.device())
      << "grid_sampler(): expected input and grid to be on same device, but input is on " << input.device()
      << " and grid is on " << grid.device();
  EMBER_CHECK(input.dim() == 4 && grid.dim() == 4)
      << "grid_sampler(): expected 4D input and grid with same number of dimensions, but got input with sizes "
      << input.sizes() << " and grid with sizes " << grid.sizes();
  EMBER_CHECK(input.size(0) == grid.size(0))
      << "grid_sampler(): expected grid and input to have same batch size, but got input with sizes " << input.sizes()
      << " and grid with sizes " << grid.sizes();
  EMBER_CHECK(grid.size(3) == 2) << "grid_sampler(): expected grid to have size 2 in last dimension, but got grid "
                                    "with sizes "
                                 << grid.sizes();
  for (int64_t d = 2; d < 4; ++d) {
    EMBER_CHECK(input.size(d) > 0) << "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                                      "has sizes "
                                   << input.sizes() << " with dimension " << d << " being empty";
  }
  EMBER_CHECK(mode >= kBilinear && mode <= kBicubic)
      << "grid_sampler(): expected interpolation_mode 0 (bilinear), 1 (nearest) or 2 (bicubic), but got " << mode;
  EMBER_CHECK(padding >= kZeros && padding <= kReflection)
      << "grid_sampler(): expected padding_mode 0 (zeros), 1 (border) or 2 (reflection), but got " << padding;
  const ScalarType dt = input.dtype();
  if (input.is_cuda() && is_reduced_float(dt)) {
    // PyTorch's CUDA kernel also takes half and bfloat16 (its CPU kernel does not): computed
    // in float and rounded once, the way its CUDA kernel's float arithmetic is.
    const Tensor sampled = call_op_tensor("aten::grid_sampler_2d", {input.to(kFloat), grid.to(kFloat), mode, padding,
                                                                   align_corners});
    return {sampled.to(dt)};
  }
  if (dt != kFloat && dt != kDouble) not_implemented(input.is_cuda() ? "grid_sampler_2d_cuda" : "grid_sampler_2d_cpu", dt);
  Source s{input.reshape({input.size(0), input.size(1), input.size(2) * input.size(3)}), input.size(0), input.size(1), input.size(2),
           input.size(3), grid.size(1), grid.size(2), dt};
  const Tensor gx = unnormalize(grid.select(3, 0), s.w, align_corners);
  const Tensor gy = unnormalize(grid.select(3, 1), s.h, align_corners);
  if (mode == kBicubic) return {bicubic(s, gx, gy, padding, align_corners)};
  const Tensor ix = pad_coordinates(gx, s.w, padding, align_corners);
  const Tensor iy = pad_coordinates(gy, s.h, padding, align_corners);
  if (mode == kNearest) return {read(s, round(ix).to(kLong), round(iy).to(kLong))};
  return {bilinear(s, ix, iy)};
}

}  // namespace

void register_grid_sample_ops(Registry& r) {
  r.def("grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) "
        "-> Tensor")
      .set_decomposition(grid_sampler_2d);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                       bool align_corners, Loc loc) {
  return call_tensor(EMBER_OP("aten::grid_sampler_2d"),
                     {input, grid, interpolation_mode, padding_mode, align_corners}, loc);
}

}  // namespace ember
