// kernels/cuda/host_checks.cpp — see host_checks.h.
#include "kernels/cuda/host_checks.h"

#include "kernels/cuda/loops.h"
#include "kernels/cuda/reduce.h"

namespace ember::kernels::cuda {

Tensor strided_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->sizes = sizes.vec();
  impl->strides = strides.vec();
  impl->storage_offset = storage_offset;
  impl->dtype = t.dtype();
  impl->device = t.device();
  impl->refresh();
  return Tensor(std::move(impl));
}

std::pair<double, double> value_range(const Tensor& t) {
  EMBER_INTERNAL_ASSERT(t.is_cuda() && t.numel() > 0) << "value_range of an empty or host tensor";
  const Tensor both = empty_device({2}, kDouble, t.device());
  const std::vector<bool> all(static_cast<size_t>(t.dim()), true);
  reduce(Reduction::Min, t, all, strided_view(both, {}, {}, 0));
  reduce(Reduction::Max, t, all, strided_view(both, {}, {}, 1));
  const std::vector<double> host = both.to_vector<double>();
  return {host[0], host[1]};
}

}  // namespace ember::kernels::cuda
