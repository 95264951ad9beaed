// kernels/cuda/host_checks.h — reading a few facts about a device tensor's values back to
// the host, so that ops raise an ember::Error where PyTorch checks values (indices in
// range, probabilities in [0, 1]) instead of a device-side assert, which leaves a CUDA
// context unusable. Each check is one small reduction and one 16-byte copy; only when it
// fails does the op copy the tensor to the host and run the CPU's own check, so the
// message names the same value as on the CPU. See Note [cuda] (docs/notes/cuda.md),
// "Indexing".
#pragma once

#include <utility>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

/// The smallest and largest value of a non-empty device tensor, as doubles; NaN when any
/// value is NaN (min and max propagate it, as PyTorch's do). Waits for the stream.
std::pair<double, double> value_range(const Tensor& t);

}  // namespace ember::kernels::cuda
