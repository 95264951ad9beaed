// kernels/cuda/scan.cpp — see scan.h.
#include "kernels/cuda/scan.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "core/shape.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/nvrtc.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_source.h"

namespace ember::kernels::cuda {
namespace {

/// Each partial sum is rounded to the result dtype, and the sums are combined in PyTorch's
/// CUDA order (ScanUtils.cuh), so the results are PyTorch's bits, half and bfloat16 too.
constexpr const char* kScanSource = R"CUDA(
namespace ember_dev {
/// a + b in the result dtype: in its math type, rounded back (PyTorch's std::plus<scalar_t>).
template <typename Out> __device__ __forceinline__ Out add_(Out a, Out b) {
  typedef typename OpMath<Out>::type M;
  return cvt<Out>(cvt<M>(a) + cvt<M>(b));
}

/// A block per row: chunks of 2^log_chunk elements in shared memory, each chunk's first
/// element plus the previous chunk's total, then Sklansky's scan of the chunk (at level m,
/// every element whose index has bit m set adds the last element of the half below it).
template <typename Out, typename In>
__device__ void cumsum_chunked_rows(Out* out, const In* in, const RowGeometry& g, int log_chunk) {
  __shared__ Out buf[EMBER_SCAN_CHUNK];
  const long long n = g.inner_numel;
  const int chunk = 1 << log_chunk;
  const Out zero = cvt<Out>(0);
  for (long long o = blockIdx.x; o < g.outer_numel; o += gridDim.x) {
    const In* x = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    Out* y = out + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0]);
    Out total = zero;
    for (long long base = 0; base < n; base += chunk) {
      for (int i = threadIdx.x; i < chunk; i += blockDim.x)
        buf[i] = base + i < n ? cvt<Out>(x[offset_of(base + i, g.inner_ndim, g.inner_sizes, g.inner_strides[1])]) : zero;
      __syncthreads();
      if (threadIdx.x == 0) buf[0] = add_(buf[0], total);
      __syncthreads();
      for (int m = 0; m < log_chunk; ++m) {
        const int s = 1 << m;
        for (int p = threadIdx.x; p < chunk / 2; p += blockDim.x) {
          const int a = ((p >> m) << (m + 1)) | s;
          const int ti = a + (p & (s - 1));
          buf[ti] = add_(buf[ti], buf[a - 1]);
        }
        __syncthreads();
      }
      for (int i = threadIdx.x; i < chunk; i += blockDim.x)
        if (base + i < n) y[offset_of(base + i, g.inner_ndim, g.inner_sizes, g.inner_strides[0])] = buf[i];
      total = buf[chunk - 1];
      __syncthreads();
    }
  }
}

/// A thread per row, adding its elements one after another.
template <typename Out, typename In>
__device__ void cumsum_sequential_rows(Out* out, const In* in, const RowGeometry& g) {
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long o = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; o < g.outer_numel; o += step) {
    const In* x = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    Out* y = out + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0]);
    Out acc = cvt<Out>(0);
    for (long long j = 0; j < g.inner_numel; ++j) {
      acc = add_(acc, cvt<Out>(x[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[1])]));
      y[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[0])] = acc;
    }
  }
}
}  // namespace ember_dev
)CUDA";

/// The largest chunk (2 x 512 threads' worth in PyTorch).
constexpr int kMaxLogChunk = 10;
/// A tensor that is one line at most this long is added in order.
constexpr int64_t kShortLine = 16;

}  // namespace

int inner_scan_log_chunk(int64_t rows, int64_t row_size) {
  uint32_t log_x = 0, log_y = 0;
  while ((int64_t{1} << log_x) < row_size) ++log_x;
  while ((int64_t{1} << log_y) < rows) ++log_y;
  const uint32_t diff = log_x - log_y;
  const uint32_t threads = std::min<uint32_t>(std::max<uint32_t>(4, (9u + diff) / 2u), 9);
  return static_cast<int>(threads) + 1;
}

namespace {

}  // namespace

std::string kernel_symbol(const ScanKernel& k) {
  return std::string(k.sequential ? "ember_cumsum_sequential_" : "ember_cumsum_") + dtype_tag(k.in) + "_to_" +
         dtype_tag(k.out);
}

std::string render_cumsum(const ScanKernel& k) {
  std::ostringstream os;
  os << "// cumsum along rows\n" << render_row_head() << "#define EMBER_SCAN_CHUNK " << (1 << kMaxLogChunk) << "\n"
     << kScanSource << "\n";
  os << "extern \"C\" __global__ void " << kernel_symbol(k) << "(" << cuda_type_name(k.out) << "* out, const "
     << cuda_type_name(k.in) << "* in, double p0, ember_dev::RowGeometry g) {\n";
  if (k.sequential) os << "  ember_dev::cumsum_sequential_rows(out, in, g);\n}\n";
  else os << "  ember_dev::cumsum_chunked_rows(out, in, g, static_cast<int>(p0));\n}\n";
  return os.str();
}

void cumsum(const Tensor& self, int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  std::vector<bool> inner(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) inner[core::wrap_dim(dim, self.dim())] = true;
  RowGeometry g = make_row_geometry(self.sizes(), out.strides(), self.strides(), inner);
  // PyTorch's three cases (scan_dim): a tensor that is all one line (CUB's scan there,
  // whose first thread adds a short line in order; here a short line is added in order
  // and a long one scanned in chunks of the largest size), the last dim (chunked),
  // another dim (a thread per line, adding in order).
  const int64_t d = self.dim() > 0 ? core::wrap_dim(dim, self.dim()) : 0;
  const int64_t row_size = self.dim() > 0 ? self.size(d) : 1;
  const bool one_line = self.numel() == row_size;
  const bool sequential = one_line ? row_size <= kShortLine : d != self.dim() - 1;
  const ScanKernel k{.in = self.dtype(), .out = out.dtype(), .sequential = sequential};
  void* out_ptr = out.raw_data_ptr();
  void* in_ptr = self.raw_data_ptr();
  double p0 = one_line ? kMaxLogChunk : inner_scan_log_chunk(self.numel() / row_size, row_size);
  void* args[] = {&out_ptr, &in_ptr, &p0, &g};
  const auto render = [&] { return render_cumsum(k); };
  if (k.sequential) {
    launch_threads(get_kernel(kernel_symbol(k), out.device().index, render), out.device(), g.outer_numel,
                   {args[0], args[1], args[2], args[3]});
    return;
  }
  launch_row_kernel(kernel_symbol(k), render, out.device().index, args, g.outer_numel, g.inner_numel);
}

}  // namespace ember::kernels::cuda
