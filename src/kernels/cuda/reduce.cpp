// kernels/cuda/reduce.cpp — see reduce.h.
#include "kernels/cuda/reduce.h"

#include <algorithm>

#include "core/cuda.h"
#include "core/shape.h"
#include "ember/cuda.h"
#include "kernels/cuda/nvrtc.h"

namespace ember::kernels::cuda {
namespace {

constexpr int64_t kMaxGrid = int64_t{1} << 20;  // blocks stride over the rest of the rows

/// One side (outer or inner) of a row geometry: dims innermost first, merged.
struct Side {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides[2];
  int64_t numel = 1;
};

Side side_of(IntArrayRef sizes, IntArrayRef out_strides, IntArrayRef in_strides, const std::vector<bool>& inner,
             bool want_inner) {
  Side s;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (inner[static_cast<size_t>(d)] != want_inner) continue;
    const int64_t size = sizes[d];
    s.numel *= size;
    if (size == 1) continue;
    const int64_t st[2] = {out_strides[d], in_strides[d]};
    if (!s.sizes.empty() && st[0] == s.strides[0].back() * s.sizes.back() &&
        st[1] == s.strides[1].back() * s.sizes.back()) {
      s.sizes.back() *= size;
      continue;
    }
    s.sizes.push_back(size);
    for (int k = 0; k < 2; ++k) s.strides[k].push_back(st[k]);
  }
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, s.sizes.size() <= static_cast<size_t>(kMaxDims))
      << "CUDA reduction and softmax kernels index at most " << kMaxDims << " " << (want_inner ? "reduced" : "kept")
      << " dims after merging contiguous ones; this call has " << s.sizes.size();
  return s;
}

/// Copies a side into the geometry's arrays, outermost dim first.
void fill(const Side& s, int& ndim, long long* sizes, long long (*strides)[kMaxDims]) {
  ndim = static_cast<int>(s.sizes.size());
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    const size_t at = s.sizes.size() - 1 - i;
    sizes[at] = s.sizes[i];
    for (int k = 0; k < 2; ++k) strides[k][at] = s.strides[k][i];
  }
}

/// A power of two from 32 to kRowBlock threads, enough for one row.
unsigned block_for(int64_t row) {
  unsigned b = 32;
  while (b < static_cast<unsigned>(kRowBlock) && static_cast<int64_t>(b) < row) b *= 2;
  return b;
}

void launch_rows(const std::string& symbol, const std::function<std::string()>& render, const Tensor& out,
                 const Tensor& in, RowGeometry g, double p0, bool warp_rows = false) {
  EMBER_INTERNAL_ASSERT(out.is_cuda() && in.device() == out.device())
      << "CUDA row kernel '" << symbol << "' with tensors on " << in.device() << " and " << out.device();
  void* out_ptr = out.raw_data_ptr();
  void* in_ptr = in.raw_data_ptr();
  void* args[] = {&out_ptr, &in_ptr, &p0, &g};
  if (warp_rows) return launch_warp_rows(symbol, render, out.device().index, args, g.outer_numel);
  launch_row_kernel(symbol, render, out.device().index, args, g.outer_numel, g.inner_numel);
}

}  // namespace

void launch_row_kernel(const std::string& symbol, const std::function<std::string()>& render, int device, void** args,
                       int64_t rows, int64_t row_length) {
  if (rows == 0) return;
  void* fn = get_kernel(symbol, device, render);
  const int64_t blocks = std::min<int64_t>(rows, kMaxGrid);
  ember::cuda::DeviceGuard guard(device);
  launch_kernel(fn, static_cast<unsigned>(blocks), block_for(row_length), args,
                core::cuda::current_stream_handle(device));
}

bool fits_warp_row(int64_t length, ScalarType dtype) {
  return length <= kWarpRowMax && element_size(dtype) <= 4;
}

int warp_row_vector(int64_t length, ScalarType dtype, std::initializer_list<const void*> data,
                    IntArrayRef row_strides) {
  const int64_t v = 16 / static_cast<int64_t>(element_size(dtype));
  if (v <= 1 || length % v != 0) return 1;
  for (const void* p : data)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return 1;
  for (int64_t s : row_strides)
    if (s % v != 0) return 1;
  return static_cast<int>(v);
}

int warp_row_slots(int64_t length, int vec) {
  int slots = 1;
  while (slots < 32 && int64_t{32} * slots < length) slots *= 2;
  return std::max(slots, vec);
}

void launch_warp_rows(const std::string& symbol, const std::function<std::string()>& render, int device, void** args,
                      int64_t rows) {
  if (rows == 0) return;
  void* fn = get_kernel(symbol, device, render);
  const int64_t warps = kWarpRowBlock / 32;
  const int64_t blocks = std::min<int64_t>((rows + warps - 1) / warps, kMaxGrid);
  ember::cuda::DeviceGuard guard(device);
  launch_kernel(fn, static_cast<unsigned>(blocks), kWarpRowBlock, args, core::cuda::current_stream_handle(device));
}

RowGeometry make_row_geometry(IntArrayRef sizes, IntArrayRef out_strides, IntArrayRef in_strides,
                              const std::vector<bool>& inner) {
  const Side outer = side_of(sizes, out_strides, in_strides, inner, false);
  const Side reduced = side_of(sizes, out_strides, in_strides, inner, true);
  RowGeometry g;
  g.outer_numel = outer.numel;
  g.inner_numel = reduced.numel;
  fill(outer, g.outer_ndim, g.outer_sizes, g.outer_strides);
  fill(reduced, g.inner_ndim, g.inner_sizes, g.inner_strides);
  return g;
}

RowGeometry reduction_geometry(const Tensor& self, const std::vector<bool>& mask, const Tensor& out) {
  EMBER_INTERNAL_ASSERT(mask.size() == static_cast<size_t>(self.dim())) << "reduction mask of " << mask.size()
                                                                         << " dims for a " << self.dim() << "-d input";
  // The output's stride for each input dim: kept dims in order (with or without keepdim's
  // size-1 dims between them), 0 for reduced ones.
  const bool keepdim = out.dim() == self.dim();
  std::vector<int64_t> out_strides(static_cast<size_t>(self.dim()), 0);
  int64_t next = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (keepdim) out_strides[d] = mask[d] ? 0 : out.stride(d);
    else if (!mask[d]) out_strides[d] = out.stride(next++);
  }
  return make_row_geometry(self.sizes(), out_strides, self.strides(), mask);
}

void reduce(Reduction op, const Tensor& self, const std::vector<bool>& mask, const Tensor& out, double correction) {
  if (out.numel() == 0) return;
  const RowGeometry g = reduction_geometry(self, mask, out);
  const ReduceKernel k{.op = op, .in = self.dtype(), .out = out.dtype()};
  launch_rows(kernel_symbol(k), [&] { return render_reduce(k); }, out, self, g, correction);
}

void softmax(const Tensor& self, int64_t dim, const Tensor& out, bool log) {
  std::vector<bool> inner(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) inner[core::wrap_dim(dim, self.dim())] = true;
  const RowGeometry g = make_row_geometry(self.sizes(), out.strides(), self.strides(), inner);
  // Short rows of unit stride (the last dim of a contiguous tensor) go a warp each.
  const bool unit = g.inner_ndim == 0 || (g.inner_ndim == 1 && g.inner_strides[0][0] == 1 && g.inner_strides[1][0] == 1);
  const bool warp_rows = unit && fits_warp_row(g.inner_numel, self.dtype());
  int vec = 1;
  if (warp_rows) {
    // Rows start at multiples of the outer strides of both sides; the wider dtype sets V.
    int64_t strides[2 * kMaxDims];
    for (int d = 0; d < g.outer_ndim; ++d) {
      strides[2 * d] = g.outer_strides[0][d];
      strides[2 * d + 1] = g.outer_strides[1][d];
    }
    const ScalarType wider = element_size(out.dtype()) > element_size(self.dtype()) ? out.dtype() : self.dtype();
    vec = warp_row_vector(g.inner_numel, wider, {self.raw_data_ptr(), out.raw_data_ptr()},
                          IntArrayRef(strides, static_cast<size_t>(2 * g.outer_ndim)));
  }
  const SoftmaxKernel k{.log = log,
                        .warp_rows = warp_rows,
                        .vec = vec,
                        .slots = warp_rows ? warp_row_slots(g.inner_numel, vec) : 0,
                        .in = self.dtype(),
                        .out = out.dtype()};
  launch_rows(kernel_symbol(k), [&] { return render_softmax(k); }, out, self, g, 0, k.warp_rows);
}

}  // namespace ember::kernels::cuda
