// inductor/codegen_cuda_prelude.cpp — what the inductor's generated CUDA code needs beyond
// kernels/cuda's device prelude (kernel_source.cpp: Half/BFloat16, cvt, the math of
// scalar_ops.def's rows, Vec): the math constants of the lowering's formulas, the
// combining functors of reductions (min/max propagate NaN, as eager's), warp and block
// reductions whose result every lane reads the same, a typed store, CPU scalars and size
// symbols passed by value. See Note
// [inductor] (docs/notes/inductor.md), "CUDA".
#include "inductor/codegen_cuda.h"

namespace ember::inductor::cuda_codegen {

const char* cuda_codegen_prelude() {
  return R"CUDA(
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
namespace ember_dev {
template <typename T> __device__ __forceinline__ T inf() { return static_cast<T>(__longlong_as_double(0x7ff0000000000000LL)); }
template <typename T> __device__ __forceinline__ void assign(T& dst, T v) { dst = v; }
/// A CPU scalar of the graph passed by value: the launch copies its bytes from host
/// memory; read as in<b>[o] like a buffer broadcast over every element.
template <typename T> struct HostScalar {
  T v;
  template <typename I> __device__ __forceinline__ T operator[](I) const { return v; }
};
/// The values of a graph's size symbols on this call (the wrapper's value slots: the input
/// symbols, then the data-dependent sizes), passed by value to a kernel compiled over them;
/// its size expressions read ks[i] (inductor/symbolic.cpp's c_expr).
template <int N> struct Sizes {
  long long v[N];
  __device__ __forceinline__ long long operator[](int i) const { return v[i]; }
};
__device__ __forceinline__ long long imin(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long imax(long long a, long long b) { return a > b ? a : b; }
struct SumOp { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct ProdOp { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; } };
struct MaxOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return (a != a || a > b) ? a : b; }
};
struct MinOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return (a != a || a < b) ? a : b; }
};
/// The combination of v over the warp's 32 lanes; every lane gets lane 0's result (the
/// butterfly's order differs per lane, so its bits could).
template <typename T, typename Op> __device__ __forceinline__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return __shfl_sync(0xffffffffu, v, 0);
}
/// The combination of v over the block (a multiple of 32 threads): each warp's, then the
/// warps' in order from shared memory (`smem`, 32 elements), the same in every thread.
template <typename T, typename Op> __device__ __forceinline__ T block_reduce(T v, Op op, T* smem) {
  v = warp_reduce(v, op);
  const int warps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x >> 5] = v;
  __syncthreads();
  v = smem[0];
  for (int w = 1; w < warps; ++w) v = op(v, smem[w]);
  __syncthreads();
  return v;
}
/// A column kernel's combination: thread t holds column t % 32's partial result over rows
/// t / 32, t / 32 + groups, …; every thread gets its column's combination of the groups'
/// results, in group order (`smem`: one element per thread of the block).
template <typename T, typename Op> __device__ __forceinline__ T column_reduce(T v, Op op, T* smem) {
  const int column = threadIdx.x & 31, groups = blockDim.x >> 5;
  __syncthreads();  // an earlier pass's reads of smem are done
  smem[threadIdx.x] = v;
  __syncthreads();
  v = smem[column];
  for (int g = 1; g < groups; ++g) v = op(v, smem[g * 32 + column]);
  return v;
}
}  // namespace ember_dev
)CUDA";
}

}  // namespace ember::inductor::cuda_codegen
