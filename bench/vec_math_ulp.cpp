// bench/vec_math_ulp.cpp — the accuracy of the float32 math functions of
// kernels/cpu/vec.h (exp, log, tanh, erf, and sigmoid and both GELUs as the ops compute
// them): each evaluated on every float (all 2^32 bit patterns, NaNs and infinities
// included) against float64, printing the largest error in ulps (over all results, and
// over those whose exact value is a normal float) and the largest error against PyTorch's default float32 tolerance (atol 1e-5 + rtol 1.3e-6 *
// |expected|; at most 1 passes). See Note [vectorized math] (docs/notes/vec_math.md).
//
// usage: bench_vec_math_ulp [--stride N] [--only exp,tanh]
//   --stride N: every N-th bit pattern only (a quicker, sampled sweep).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/vec_math_cases.h"

int main(int argc, char** argv) {
  uint64_t stride = 1;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--stride") && i + 1 < argc) {
      stride = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else {
      std::fprintf(stderr, "usage: %s [--stride N] [--only exp,tanh]\n", argv[0]);
      return 2;
    }
  }
  if (stride == 0) stride = 1;
  std::printf("float32 math of kernels/cpu/vec.h against float64, %s, %d threads\n",
              stride == 1 ? "every float" : ("every " + std::to_string(stride) + "th bit pattern").c_str(),
              omp_get_max_threads());
  std::printf("%-10s | %11s | %8s | %12s | %13s | %12s | %13s | %12s | %5s\n", "function", "floats", "max ulp",
              "at x", "ulp (normal)", "at x", "max err / tol", "at x", "s");
  for (const auto& c : ember::vec::ulp::math_cases()) {
    if (!only.empty() && only.find("," + std::string(c.name) + ",") == std::string::npos) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = ember::vec::ulp::sweep(c, stride);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-10s | %11llu | %8.3g | %12.6g | %13.3g | %12.6g | %13.3g | %12.6g | %5.1f\n", c.name,
                static_cast<unsigned long long>(r.count), r.max_ulp, r.max_ulp_at, r.max_ulp_normal, r.max_ulp_normal_at,
                r.max_ratio, r.max_ratio_at, s);
  }
  return 0;
}
