// bench/bench_util.h — what the workload benchmark programs share besides the workloads:
// the STREAM-style triad they print beside their GB/s, and the `--only` row filter.
#pragma once

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "workloads.h"

namespace ember::bench {

/// GB/s of a[i] = b[i] + s * c[i] over arrays far larger than the caches, on
/// OMP_NUM_THREADS threads: the copy rate the memory-bound rows are compared with.
inline double triad_gbps() {
  const size_t n = size_t{1} << 25;  // 3 arrays x 128 MiB
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
#pragma omp parallel for
  for (size_t i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  double ms = median_ms(
      [&] {
#pragma omp parallel for
        for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
      },
      2, 9);
  return 3.0 * static_cast<double>(n) * sizeof(float) / (ms * 1e-3) / 1e9;
}

/// The ids of `--only W4,W5`; empty: every row.
inline std::vector<std::string> split_ids(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string id; std::getline(in, id, ',');)
    if (!id.empty()) out.push_back(id);
  return out;
}

/// Whether the row `id` starts with one of the `--only` prefixes (any row when none).
inline bool selected(const std::string& id, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  for (const auto& p : only)
    if (id.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace ember::bench
