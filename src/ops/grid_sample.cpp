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
// PyTorch's CUDA kernel, half and bfloat16 too (computed in float). Sizes are SymInts,
// and a symbolic height or width enters the pixel arithmetic as a size tensor, so a trace
// with dynamic shapes keeps every dim symbolic (Note [dynamic shapes]). See Note [nn].
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

/// What every sample needs: the input as [N, C, H·W] and its geometry. The sizes are
/// SymInts (symbolic in a trace with dynamic shapes). `S` is how the pixel arithmetic takes
/// the spatial sizes H and W: numbers (`int64_t`) when both are plain, 0-dim int64 tensors
/// (size_tensor) when either is symbolic, since a Scalar holds no symbol; so the same
/// formulas serve every size in one graph, and static sizes compute as they always did.
template <typename S>
struct Source {
  Tensor flat;
  SymInt n, c, ho, wo;
  S h, w;
};

/// `x` clamped to [0, hi]: a number, or a 0-dim tensor.
Tensor clamp_upto(const Tensor& x, double hi) { return clamp(x, Scalar(0.0), Scalar(hi)); }
Tensor clamp_upto(const Tensor& x, int64_t hi) { return clamp(x, Scalar(int64_t{0}), Scalar(hi)); }
Tensor clamp_upto(const Tensor& x, const Tensor& hi) { return minimum(clamp_min(x, Scalar(int64_t{0})), hi); }

/// A spatial size in floating arithmetic: `double` beside a number, the tensor itself
/// (int64, promoted by the ops) beside a tensor.
double as_real(int64_t size) { return static_cast<double>(size); }
const Tensor& as_real(const Tensor& size) { return size; }

/// grid_sampler_unnormalize: [-1, 1] to pixel coordinates along a dim of `size`.
template <typename S>
Tensor unnormalize(const Tensor& coord, const S& size, bool align_corners) {
  const auto& s = as_real(size);
  return align_corners ? (coord + 1.0) * ((s - 1) / 2) : ((coord + 1.0) * s - 1.0) / 2;
}

/// reflect_coordinates: `x` reflected into [min, min + span] (span > 0).
template <typename S>
Tensor reflect(const Tensor& x, double min, const S& span) {
  const Tensor in = abs(x - min);
  const Tensor extra = fmod(in, span), flips = floor(in / span);
  return where(eq(remainder(flips, Scalar(2.0)), Scalar(0.0)), extra + min, (span + min) - extra);
}

/// compute_coordinates: the padding mode applied to pixel coordinates along a dim of `size`.
/// `is_one` says whether the size is 1 (compared as a SymInt: a symbolic size is at least 2).
template <typename S>
Tensor pad_coordinates(const Tensor& x, const S& size, bool is_one, int64_t padding, bool align_corners) {
  if (padding == kZeros) return x;
  const auto& s = as_real(size);
  Tensor r = x;
  if (padding == kReflection) {
    // reflect about the corner pixels' centres [0, size - 1] (align_corners; a single pixel
    // reflects everything onto 0) or about their outer edges [-0.5, size - 0.5]
    if (align_corners)
      r = is_one ? zeros_like(x) : reflect(x, 0.0, s - 1);
    else
      r = reflect(x, -0.5, s);
  }
  return clamp_upto(r, s - 1);
}

/// The input at integer pixels (xi, yi) [N, Ho, Wo] (Long): [N, C, Ho, Wo], 0 outside.
template <typename S>
Tensor read(const Source<S>& s, const Tensor& xi, const Tensor& yi) {
  const Tensor inside = (xi >= Scalar(int64_t{0})) & (xi < s.w) & (yi >= Scalar(int64_t{0})) & (yi < s.h);
  const Tensor idx = clamp_upto(yi, s.h - 1) * s.w + clamp_upto(xi, s.w - 1);
  const Tensor v = gather(s.flat, 2, idx.reshape({s.n, 1, s.ho * s.wo}).expand({s.n, s.c, s.ho * s.wo}));
  return where(inside.unsqueeze(1), v.reshape({s.n, s.c, s.ho, s.wo}), Scalar(0.0));
}

template <typename S>
Tensor bilinear(const Source<S>& s, const Tensor& ix, const Tensor& iy) {
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

template <typename S>
Tensor bicubic(const Source<S>& s, const Tensor& ix, const Tensor& iy, const std::array<bool, 2>& is_one,
               int64_t padding, bool align_corners) {
  const Tensor x0 = floor(ix), y0 = floor(iy);
  const std::array<Tensor, 4> cx = cubic_coefficients(ix - x0), cy = cubic_coefficients(iy - y0);
  // get_value_bounded: each tap's coordinate padded, then truncated to a pixel
  auto tap = [&](const Tensor& base, double offset, const S& size, bool one) {
    return pad_coordinates(base + offset, size, one, padding, align_corners).to(kLong);
  };
  Tensor out;
  for (int j = 0; j < 4; ++j) {
    const Tensor yi = tap(y0, j - 1, s.h, is_one[0]);
    Tensor row;
    for (int i = 0; i < 4; ++i) {
      const Tensor v = read(s, tap(x0, i - 1, s.w, is_one[1]), yi) * cx[static_cast<size_t>(i)].unsqueeze(1);
      row = row.defined() ? row + v : v;
    }
    const Tensor v = row * cy[static_cast<size_t>(j)].unsqueeze(1);
    out = out.defined() ? out + v : v;
  }
  return out;
}

/// The sample of every grid point, with the spatial sizes taken as `S` (Source).
template <typename S>
Tensor sample(const Source<S>& s, const Tensor& grid, const std::array<bool, 2>& is_one, int64_t mode, int64_t padding,
              bool align_corners) {
  const Tensor gx = unnormalize(grid.select(3, 0), s.w, align_corners);
  const Tensor gy = unnormalize(grid.select(3, 1), s.h, align_corners);
  if (mode == kBicubic) return bicubic(s, gx, gy, is_one, padding, align_corners);
  const Tensor ix = pad_coordinates(gx, s.w, is_one[1], padding, align_corners);
  const Tensor iy = pad_coordinates(gy, s.h, is_one[0], padding, align_corners);
  if (mode == kNearest) return read(s, round(ix).to(kLong), round(iy).to(kLong));
  return bilinear(s, ix, iy);
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
  // The sizes are compared and computed with as SymInts (a symbolic one is compared, a
  // guard where its range does not decide, never read as an integer).
  const SymInt n = sym_size(input, 0), c = sym_size(input, 1), h = sym_size(input, 2), w = sym_size(input, 3);
  EMBER_CHECK(n == sym_size(grid, 0))
      << "grid_sampler(): expected grid and input to have same batch size, but got input with sizes " << input.sizes()
      << " and grid with sizes " << grid.sizes();
  EMBER_CHECK(sym_size(grid, 3) == 2) << "grid_sampler(): expected grid to have size 2 in last dimension, but got grid "
                                         "with sizes "
                                      << grid.sizes();
  for (int64_t d = 2; d < 4; ++d) {
    EMBER_CHECK(sym_size(input, d) > 0)
        << "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes " << input.sizes()
        << " with dimension " << d << " being empty";
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
  const Tensor flat = input.reshape({n, c, h * w});
  const SymInt ho = sym_size(grid, 1), wo = sym_size(grid, 2);
  const std::array<bool, 2> is_one{h == 1, w == 1};
  if (!h.is_symbolic() && !w.is_symbolic())
    return {
        sample(Source<int64_t>{flat, n, c, ho, wo, h.hint(), w.hint()}, grid, is_one, mode, padding, align_corners)};
  const Source<Tensor> s{flat, n, c, ho, wo, size_tensor(h, input.device()), size_tensor(w, input.device())};
  return {sample(s, grid, is_one, mode, padding, align_corners)};
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
