// kernels/cuda/host_checks.cpp — see host_checks.h.
#include "kernels/cuda/host_checks.h"

#include "kernels/cpu/copy.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/reduce.h"

namespace ember::kernels::cuda {

std::pair<double, double> value_range(const Tensor& t) {
  EMBER_INTERNAL_ASSERT(t.is_cuda() && t.numel() > 0) << "value_range of an empty or host tensor";
  const Tensor both = empty_device({2}, kDouble, t.device());
  const std::vector<bool> all(static_cast<size_t>(t.dim()), true);
  reduce(Reduction::Min, t, all, cpu::raw_view(both, {}, {}, 0));
  reduce(Reduction::Max, t, all, cpu::raw_view(both, {}, {}, 1));
  const std::vector<double> host = both.to_vector<double>();
  return {host[0], host[1]};
}

}  // namespace ember::kernels::cuda
