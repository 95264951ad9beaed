// bench/bench_util.h — what the workload benchmark programs share besides the workloads:
// the STREAM-style triad they print beside their GB/s, their command-line options and the
// `--only` row filter.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
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

/// The options of the workload programs: `--iters N` timed calls per row (default 21),
/// `--only W1,W4` the rows whose id starts with one of these, `--json FILE` the rows as JSON.
struct Options {
  const char* json_path = nullptr;
  int iters = 21;
  std::vector<std::string> only;
};

/// Removes every `flag` (a program's own option, beside parse_options' common ones) from
/// `args` (argv as a vector, program name first) and says whether there was one.
inline bool take_flag(std::vector<char*>& args, const std::string& flag) {
  const auto n = args.size();
  args.erase(std::remove_if(args.begin() + (args.empty() ? 0 : 1), args.end(),
                            [&](const char* a) { return flag == a; }),
             args.end());
  return args.size() != n;
}

/// The options of argv; nullopt, after saying why on stderr, for an unknown argument or
/// an --iters below 1.
inline std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      o.json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      o.iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      o.only = split_ids(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--iters N] [--only W1,W4] [--json FILE]\n", argv[0]);
      return std::nullopt;
    }
  }
  if (o.iters < 1) {
    std::fprintf(stderr, "--iters: expected a positive number, got %d\n", o.iters);
    return std::nullopt;
  }
  return o;
}

/// Whether the row `id` starts with one of the `--only` prefixes (any row when none).
inline bool selected(const std::string& id, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  for (const auto& p : only)
    if (id.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace ember::bench
