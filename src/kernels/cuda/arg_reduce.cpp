// kernels/cuda/arg_reduce.cpp — see arg_reduce.h.
#include "kernels/cuda/arg_reduce.h"

#include <sstream>

#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_source.h"

namespace ember::kernels::cuda {
namespace {

/// A (value, index) pair per thread, folded with block_combine; index -1 is "nothing
/// yet", so the identity needs no value (a row of -inf still names its first element).
constexpr const char* kArgReduceSource = R"CUDA(
namespace ember_dev {
template <typename A> struct ValueIndex { A value; long long index; };
template <bool IsMax, typename A> struct ArgOp {
  typedef ValueIndex<A> Acc;
  /// PyTorch's: NaN beats numbers, the first of two NaNs or of two equal values wins.
  static __device__ Acc combine(Acc a, Acc b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool first = a.index < b.index;
    if (isnan(a.value)) return (isnan(b.value) && !first) ? b : a;
    if (isnan(b.value)) return b;
    if (a.value == b.value) return first ? a : b;
    if (IsMax) return a.value > b.value ? a : b;
    return a.value < b.value ? a : b;
  }
};

template <bool IsMax, typename T>
__device__ void arg_reduce_rows(T* values, long long* indices, const T* in, const RowGeometry& g) {
  typedef typename OpMath<T>::type A;
  typedef ArgOp<IsMax, A> Op;
  __shared__ typename Op::Acc buf[EMBER_ROW_BLOCK];
  for (long long o = blockIdx.x; o < g.outer_numel; o += gridDim.x) {
    const T* row = in + offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[1]);
    typename Op::Acc acc{A(0), -1};
    for (long long j = threadIdx.x; j < g.inner_numel; j += blockDim.x) {
      const typename Op::Acc x{cvt<A>(row[offset_of(j, g.inner_ndim, g.inner_sizes, g.inner_strides[1])]), j};
      acc = Op::combine(acc, x);
    }
    acc = block_combine<Op>(acc, buf);
    if (threadIdx.x == 0) {
      const long long off = offset_of(o, g.outer_ndim, g.outer_sizes, g.outer_strides[0]);
      if (values) values[off] = cvt<T>(acc.value);
      indices[off] = acc.index;
    }
  }
}
}  // namespace ember_dev
)CUDA";

}  // namespace

std::string kernel_symbol(const ArgReduceKernel& k) {
  return std::string(k.is_max ? "ember_argmax_" : "ember_argmin_") + dtype_tag(k.in);
}

std::string render_arg_reduce(const ArgReduceKernel& k) {
  const std::string T = cuda_type_name(k.in);
  std::ostringstream os;
  os << "// " << (k.is_max ? "argmax" : "argmin") << " over rows\n" << render_row_head() << kArgReduceSource << "\n";
  os << "extern \"C\" __global__ void " << kernel_symbol(k) << "(" << T << "* values, long long* indices, const " << T
     << "* in, ember_dev::RowGeometry g) {\n";
  os << "  ember_dev::arg_reduce_rows<" << (k.is_max ? "true" : "false") << ">(values, indices, in, g);\n}\n";
  return os.str();
}

void arg_reduce(const Tensor& self, const std::vector<bool>& mask, const Tensor& values, const Tensor& indices,
                bool is_max) {
  EMBER_INTERNAL_ASSERT(!values.defined() || values.strides() == indices.strides())
      << "max/min values and indices with different layouts";
  if (indices.numel() == 0) return;
  RowGeometry g = reduction_geometry(self, mask, indices);
  const ArgReduceKernel k{.is_max = is_max, .in = self.dtype()};
  void* values_ptr = values.defined() ? values.raw_data_ptr() : nullptr;
  void* indices_ptr = indices.raw_data_ptr();
  void* in_ptr = self.raw_data_ptr();
  void* args[] = {&values_ptr, &indices_ptr, &in_ptr, &g};
  launch_row_kernel(kernel_symbol(k), [&] { return render_arg_reduce(k); }, indices.device().index, args, g.outer_numel, g.inner_numel);
}

}  // namespace ember::kernels::cuda
