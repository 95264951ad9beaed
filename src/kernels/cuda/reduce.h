// kernels/cuda/reduce.h — running the row kernels of reduce_source.h on tensors: the
// row geometry of a call (reduced dims inner, the others outer, each side's dims merged
// where the output's and the input's strides allow, at most kMaxDims each), compilation
// through the NVRTC cache, and the launch on the current stream. Shapes, dtypes and
// errors come from the ops' meta functions; these only fill `out`. See Note [cuda]
// (docs/notes/cuda.md), "Reductions and softmax".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/tensor.h"
#include "kernels/cuda/reduce_source.h"

namespace ember::kernels::cuda {

/// out = op over the dims of `self` that `mask` marks (self.dim() entries). `out` has the
/// reduced sizes, with or without the kept size-1 dims, and any dtype (the result dtype);
/// `correction` is var's. An empty row gives the reduction's identity (sum 0, prod 1; mean
/// and var NaN).
void reduce(Reduction op, const Tensor& self, const std::vector<bool>& mask, const Tensor& out, double correction = 0);

/// The row geometry of reducing the dims of `self` that `mask` marks into `out` (the
/// reduced sizes, with or without keepdim's size-1 dims): operand 0 is `out`, whose
/// stride of a reduced dim is 0.
RowGeometry reduction_geometry(const Tensor& self, const std::vector<bool>& mask, const Tensor& out);

/// out = (log_)softmax(self) along `dim` (wrapped); out has self's sizes, any strides.
void softmax(const Tensor& self, int64_t dim, const Tensor& out, bool log);

/// Launches `symbol` (its source from `render`, on first use: get_kernel) on `device`'s
/// current stream: one block per row (blocks stride over the rest past 2^20 rows) of a
/// power of two from 32 to kRowBlock threads, enough for `row_length`. `args` are the
/// kernel's argument addresses. Nothing runs when there are no rows.
void launch_row_kernel(const std::string& symbol, const std::function<std::string()>& render, int device, void** args,
                       int64_t rows, int64_t row_length);

/// Whether rows of `length` elements of `dtype` go a warp each: at most kWarpRowMax
/// elements of at most 4 bytes (a row of doubles would not fit the registers).
bool fits_warp_row(int64_t length, ScalarType dtype);

/// Elements per access of a warp row of `length` elements of `dtype`: 16 bytes' worth when
/// every row of every pointer in `data` starts 16-byte aligned (each pointer aligned, each
/// of `row_strides` a multiple of it) and the row holds a whole number of them, else 1.
int warp_row_vector(int64_t length, ScalarType dtype, std::initializer_list<const void*> data,
                    IntArrayRef row_strides);

/// Elements each lane of a warp row of `length` holds in registers: the power of two that
/// covers the row (1 to 32 slots), and at least one access of `vec` elements. Short rows
/// (attention's 128) then take a few registers and no work on empty slots.
int warp_row_slots(int64_t length, int vec);

/// Launches a warp-row kernel (rows of at most kWarpRowMax elements, a warp each): blocks
/// of kWarpRowBlock threads, enough for every row (blocks stride over the rest past 2^20).
void launch_warp_rows(const std::string& symbol, const std::function<std::string()>& render, int device, void** args,
                      int64_t rows);

/// The row geometry of a call: per input dim, the output's and the input's strides and
/// whether the dim is inner (reduced). Size-1 dims are dropped and neighbours merged;
/// raises NotImplementedError past kMaxDims on either side.
RowGeometry make_row_geometry(IntArrayRef sizes, IntArrayRef out_strides, IntArrayRef in_strides,
                              const std::vector<bool>& inner);

}  // namespace ember::kernels::cuda
