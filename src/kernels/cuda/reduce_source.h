// kernels/cuda/reduce_source.h — CUDA C++ source for eager row kernels: reductions (sum,
// mean, prod, amax, amin, var) and softmax/log_softmax, rendered at run time for the
// dtypes of one call and compiled by NVRTC like the pointwise kernels. Every kernel walks
// "rows": an outer index space (one row per output element, or per softmax row) and an
// inner one (the reduced dims, or the softmax dim), each of up to kMaxDims dims with the
// output's and the input's element strides. A block takes a row (grid-stride over rows),
// its threads stride over the row and combine in shared memory with a tree reduction.
// See Note [cuda] (docs/notes/cuda.md), "Reductions and softmax".
#pragma once

#include <string>

#include "ember/dtype.h"
#include "kernels/cuda/kernel_source.h"

namespace ember::kernels::cuda {

/// Threads per block of a row kernel at most (a power of two; the shared buffers' size).
inline constexpr int kRowBlock = 256;
/// The longest row a warp-row kernel takes (32 lanes times 32 registers).
inline constexpr int64_t kWarpRowMax = 32 * 32;
/// Threads per block of a warp-row kernel (4 rows per block).
inline constexpr unsigned kWarpRowBlock = 128;
/// What a warp-row kernel's signature starts with: its launch bounds, 8 blocks of
/// kWarpRowBlock threads per SM (at most 64 registers a thread, which the row in registers
/// fits without spilling), for the latency of its loads to hide behind other warps.
std::string warp_row_kernel_head();

enum class Reduction { Sum, Mean, Prod, Max, Min, Var };

/// One reduction kernel: each output element combines its row of the input. Each input
/// element is read in `in`, converted to `out` (as the CPU's cast to the result dtype
/// does) and then to the accumulation type (PyTorch's CUDA rules: float for half and
/// bfloat16, int64 for integer sums and products, the dtype itself otherwise; var
/// accumulates Welford statistics in float, or double for double).
struct ReduceKernel {
  Reduction op = Reduction::Sum;
  ScalarType in = kFloat;
  ScalarType out = kFloat;
};

/// One softmax kernel: rows of `in` to rows of `out`, computed in in's math type.
struct SoftmaxKernel {
  bool log = false;
  bool warp_rows = false;  ///< a warp per row (rows of at most kWarpRowMax): launch_warp_rows
  int vec = 1;             ///< a warp row's elements per access: warp_row_vector
  int slots = 32;          ///< a warp row's elements per lane: warp_row_slots
  ScalarType in = kFloat;
  ScalarType out = kFloat;
};

const char* reduction_name(Reduction op);
/// "ember_reduce_sum_f16_to_f16", "ember_softmax_f32_to_f32", "ember_log_softmax_…".
std::string kernel_symbol(const ReduceKernel& k);
std::string kernel_symbol(const SoftmaxKernel& k);
/// The whole translation unit: the pointwise prelude, the row helpers and one extern "C"
/// kernel `(Out* out, const In* in, double p0, RowGeometry g)`; p0 is var's correction.
std::string render_reduce(const ReduceKernel& k);
std::string render_softmax(const SoftmaxKernel& k);
/// What every row kernel's translation unit starts with: the pointwise prelude and the row
/// helpers (RowGeometry, offset_of, the reduction structs with Welford's VarOp, lowest_ /
/// highest_, block_combine). Other row kernels (kernels/cuda/norm.cpp, arg_reduce.cpp)
/// render their own templates after it.
std::string render_row_head();

/// The kernels' geometry argument, laid out as the rendered `RowGeometry`. Operand 0 is
/// the output, 1 the input; strides are in elements.
struct RowGeometry {
  long long outer_numel = 1;
  long long inner_numel = 1;
  int outer_ndim = 0;
  int inner_ndim = 0;
  long long outer_sizes[kMaxDims] = {};
  long long inner_sizes[kMaxDims] = {};
  long long outer_strides[2][kMaxDims] = {};
  long long inner_strides[2][kMaxDims] = {};
};

}  // namespace ember::kernels::cuda
