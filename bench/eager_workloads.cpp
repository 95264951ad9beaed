// bench/eager_workloads.cpp — times W1–W9 of docs/workloads.md in Ember eager and prints one
// row each (median ms; for the memory-bound W1–W3 also achieved GB/s), beside the
// machine's copy bandwidth measured by a STREAM-style triad in the same run.
// `--json FILE` also writes the rows as JSON; `--only W4,W5` runs the rows whose id
// starts with one of the given prefixes. Threads: OMP_NUM_THREADS, GEMMs included (run
// bench/torch_workloads.py with the same number).
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "training_workloads.h"

int main(int argc, char** argv) {
  const auto options = ember::bench::parse_options(argc, argv);
  if (!options) return 2;
  const auto& [json_path, iters, only] = *options;
  const double triad = ember::bench::triad_gbps();
  std::printf("Ember eager, %d threads; STREAM triad: %.1f GB/s\n", omp_get_max_threads(), triad);
  std::printf("%-8s | %-36s | %10s | %8s | %s\n", "id", "workload", "eager ms", "GB/s", "% of triad");
  std::string json = "{\"threads\": " + std::to_string(omp_get_max_threads()) +
                     ", \"triad_gbps\": " + std::to_string(triad) + ", \"rows\": [";
  bool first = true;
  auto workloads = ember::bench::memory_bound_workloads();
  for (auto& w : ember::bench::block_workloads()) workloads.push_back(std::move(w));
  for (auto& w : ember::bench::training_workloads()) workloads.push_back(std::move(w));
  for (const auto& w : workloads) {
    if (!ember::bench::selected(w.id, only)) continue;
    const double ms = ember::bench::median_ms([&] { (void)w.run(); }, 3, iters);
    json += std::string(first ? "" : ", ") + "{\"id\": \"" + w.id + "\", \"eager_ms\": " + std::to_string(ms);
    if (w.min_bytes > 0) {
      const double gbps = w.min_bytes / (ms * 1e-3) / 1e9;
      std::printf("%-8s | %-36s | %10.2f | %8.1f | %5.1f%%\n", w.id.c_str(), w.what.c_str(), ms, gbps,
                  100 * gbps / triad);
      json += ", \"gbps\": " + std::to_string(gbps);
    } else {
      std::printf("%-8s | %-36s | %10.2f | %8s | %6s\n", w.id.c_str(), w.what.c_str(), ms, "-", "-");
    }
    std::fflush(stdout);
    json += "}";
    first = false;
  }
  json += "]}\n";
  if (json_path) std::ofstream(json_path) << json;
  return 0;
}
