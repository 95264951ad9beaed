// kernels/cuda/scan.cpp — see scan.h.
#include "kernels/cuda/scan.h"

#include <sstream>

#include "core/shape.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_source.h"

namespace ember::kernels::cuda {
namespace {

constexpr const char* kScanSource = R"CUDA(
namespace ember_dev {
/// Hillis and Steele's inclusive scan of one value per thread; returns the sum of the
/// values of the threads before this one. blockDim.x is at most EMBER_ROW_BLOCK.
template <typename A> __device__ A block_exclusive_sum(A v, A* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s <<= 1) {
    const A before = threadIdx.x >= s ? buf[threadIdx.x - s] : A(0);
    __syncthreads();
    buf[threadIdx.x] += before;
    __syncthreads();
  }
  const A r = threadIdx.x > 0 ? buf[threadIdx.x - 1] : A(0);
  __syncthreads();
  return r;
}

template <typename Out, typename In>
__device__ void cumsum_rows(Out* out, const In* in, const RowGeometry& g) {
  typedef typename SumAcc<Out>::type A;
  __shared__ A buf[EMBER_ROW_BLOCK];
  const long long n = g.inner_numel;
  const long long piece = (n + blockDim.x - 1) / blockDim.x;
  const long long j0 = piece * threadIdx.x, j1 = j0 + piece < n ? j0 + piece : n;
  for (long long o = blockIdx.x; o < g.outer_numel; o += gridDim.x) {
    const In* x = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    Out* y = out + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0]);
    A sum = A(0);
    for (long long j = j0; j < j1; ++j)
      sum += cvt<A>(cvt<Out>(x[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[1])]));
    A run = block_exclusive_sum(sum, buf);
    for (long long j = j0; j < j1; ++j) {
      run += cvt<A>(cvt<Out>(x[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[1])]));
      y[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[0])] = cvt<Out>(run);
    }
  }
}
}  // namespace ember_dev
)CUDA";

}  // namespace

std::string kernel_symbol(const ScanKernel& k) {
  return std::string("ember_cumsum_") + dtype_tag(k.in) + "_to_" + dtype_tag(k.out);
}

std::string render_cumsum(const ScanKernel& k) {
  std::ostringstream os;
  os << "// cumsum along rows\n" << render_row_head() << kScanSource << "\n";
  os << "extern \"C\" __global__ void " << kernel_symbol(k) << "(" << cuda_type_name(k.out) << "* out, const "
     << cuda_type_name(k.in) << "* in, double p0, ember_dev::RowGeometry g) {\n";
  os << "  ember_dev::cumsum_rows(out, in, g);\n}\n";
  return os.str();
}

void cumsum(const Tensor& self, int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  std::vector<bool> inner(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) inner[core::wrap_dim(dim, self.dim())] = true;
  RowGeometry g = make_row_geometry(self.sizes(), out.strides(), self.strides(), inner);
  const ScanKernel k{.in = self.dtype(), .out = out.dtype()};
  void* out_ptr = out.raw_data_ptr();
  void* in_ptr = self.raw_data_ptr();
  double p0 = 0;
  void* args[] = {&out_ptr, &in_ptr, &p0, &g};
  launch_row_kernel(kernel_symbol(k), [&] { return render_cumsum(k); }, out.device().index, args, g.outer_numel, g.inner_numel);
}

}  // namespace ember::kernels::cuda
