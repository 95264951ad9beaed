// kernels/cuda/loops.h — running rendered pointwise kernels on tensors: the geometry of a
// call (inputs broadcast to the output's sizes, dims merged where every operand allows,
// at most kMaxDims left), compilation through the cache, and the launch on the current
// stream; and copies between the host and devices with dtype conversion (copy_,
// _to_copy, fill_). See Note [cuda] (docs/notes/cuda.md).
#pragma once

#include <vector>

#include "ember/tensor.h"
#include "kernels/cuda/kernel_source.h"

namespace ember::kernels::cuda {

/// out[...] = k(inputs[...]) over out's index space. Inputs broadcast to out's sizes and
/// live on out's device, except 0-dim CPU tensors (PyTorch's CPU scalars), which are
/// copied there.
void pointwise(const PointwiseKernel& k, const Tensor& out, const std::vector<Tensor>& inputs, double p0 = 0);

/// dst[...] = src[...] converted to dst's dtype; src broadcasts to dst's sizes. Either
/// may be on the CPU, the other (or both) on a CUDA device. `non_blocking`: a copy
/// between pinned host memory and a device is left running on the current stream;
/// otherwise the call returns when dst holds the values.
void copy_into(const Tensor& dst, const Tensor& src, bool non_blocking = false);

/// An uninitialized contiguous tensor on a CUDA device (no dispatch, no autograd state).
Tensor empty_device(IntArrayRef sizes, ScalarType dtype, Device device);

/// The geometry of a call: `operands[0]` is the output; the others broadcast to its sizes.
/// Dims of size 1 are dropped and neighbouring dims merged where every operand's strides
/// allow. Raises if more than kMaxDims dims remain.
Geometry make_geometry(const std::vector<Tensor>& operands);

/// Launches `function` (from get_kernel) on `device`'s current stream with enough blocks of
/// 256 threads for `threads` work items (at most 2^20 blocks: the kernel's grid-stride loop
/// takes the rest). Nothing runs for 0 items.
void launch_threads(void* function, Device device, int64_t threads, std::vector<void*> args);

/// Launches `function` on `device`'s current stream with `blocks` blocks (at most 2^20: the
/// kernel strides over the rest) of `threads` threads. Nothing runs for 0 blocks.
void launch_blocks(void* function, Device device, int64_t blocks, unsigned threads, void** args);

}  // namespace ember::kernels::cuda
