// bench/eager_workloads.cpp — times W1–W3 of WORKLOADS.md in Ember eager and prints one
// row each (median ms, achieved GB/s), beside the machine's copy bandwidth measured by a
// STREAM-style triad in the same run. `--json FILE` also writes the rows as JSON.
// Threads: OMP_NUM_THREADS (run bench/torch_workloads.py with the same number).
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "workloads.h"

namespace {

/// GB/s of a[i] = b[i] + s * c[i] over arrays far larger than the caches.
double triad_gbps() {
  const size_t n = size_t{1} << 25;  // 3 arrays x 128 MiB
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
#pragma omp parallel for
  for (size_t i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  double ms = ember::bench::median_ms(
      [&] {
#pragma omp parallel for
        for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
      },
      2, 9);
  return 3.0 * static_cast<double>(n) * sizeof(float) / (ms * 1e-3) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  int iters = 21;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
  }
  const double triad = triad_gbps();
  std::printf("Ember eager, %d threads; STREAM triad: %.1f GB/s\n", omp_get_max_threads(), triad);
  std::printf("%-4s | %-32s | %10s | %8s | %s\n", "id", "workload", "eager ms", "GB/s", "% of triad");
  std::string json = "{\"threads\": " + std::to_string(omp_get_max_threads()) +
                     ", \"triad_gbps\": " + std::to_string(triad) + ", \"rows\": [";
  bool first = true;
  for (const auto& w : ember::bench::memory_bound_workloads()) {
    const double ms = ember::bench::median_ms([&] { (void)w.run(); }, 3, iters);
    const double gbps = w.min_bytes / (ms * 1e-3) / 1e9;
    std::printf("%-4s | %-32s | %10.2f | %8.1f | %5.1f%%\n", w.id.c_str(), w.what.c_str(), ms, gbps, 100 * gbps / triad);
    json += std::string(first ? "" : ", ") + "{\"id\": \"" + w.id + "\", \"eager_ms\": " + std::to_string(ms) +
            ", \"gbps\": " + std::to_string(gbps) + "}";
    first = false;
  }
  json += "]}\n";
  if (json_path) std::ofstream(json_path) << json;
  return 0;
}
