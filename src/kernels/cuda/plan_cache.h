// kernels/cuda/plan_cache.h — the per-thread caches of library plans (cuBLASLt's and
// cuDNN's descriptors with the algorithm chosen for them), keyed by a call's geometry
// without its pointers. Per thread because library handles are per thread; one cache per
// Plan type. See Note [cuda] (docs/notes/cuda.md), "GEMM and convolution".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace ember::kernels::cuda {

/// The plan cached under `key` on this thread, made by `make(plan)` on the first call of a
/// key. A `make` that throws leaves nothing cached.
template <typename Plan, typename Make>
Plan& cached_plan(std::vector<int64_t> key, Make&& make) {
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans;
  auto it = plans.find(key);
  if (it != plans.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  make(*plan);
  return *plans.emplace(std::move(key), std::move(plan)).first->second;
}

}  // namespace ember::kernels::cuda
