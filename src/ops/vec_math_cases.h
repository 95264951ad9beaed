// ops/vec_math_cases.h — measuring the float32 math of kernels/cpu/vec.h against float64:
// the functions measured (each as the ops compute it, beside its float64 reference), the
// error of one result in units in the last place, and a sweep over float bit patterns. bench/vec_math_ulp.cpp sweeps
// every float; tests/unit/ops/vec_math_test.cpp bounds each function on a sample.
// See Note [vectorized math] (docs/notes/vec_math.md).
#pragma once

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/vec.h"
#include "ops/scalar_rows.h"

namespace ember::vec::ulp {

/// The error of a float result `got` against the exact value `want`, in units in the last
/// place of float at `want` (the spacing of floats there; 2^-149 among the subnormals).
/// NaN, infinities and overflow (`want` rounds to an infinity) must match exactly: a
/// mismatch is an infinite error.
inline double ulp_error(float got, double want) {
  const auto w = static_cast<float>(want);
  if (std::isnan(w) || std::isnan(got) || std::isinf(w) || std::isinf(got)) {
    return (std::isnan(w) && std::isnan(got)) || w == got ? 0.0 : HUGE_VAL;
  }
  int e = -200;
  if (want != 0) std::frexp(want, &e);  // |want| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e - 1, -126) - 23);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

/// The error against PyTorch's default float32 comparison (torch.testing: atol 1e-5,
/// rtol 1.3e-6): at most 1 passes. Special values as in ulp_error.
inline double tolerance_ratio(float got, double want) {
  if (ulp_error(got, want) == HUGE_VAL) return HUGE_VAL;
  if (std::isnan(got) || std::isinf(got)) return 0.0;
  return std::fabs(static_cast<double>(got) - want) / (1e-5 + 1.3e-6 * std::fabs(want));
}

/// One function as the float32 kernels compute it (the Vectorized<float> lanes, the path
/// of every dense float32 kernel, eager or generated) beside its float64 reference.
struct MathCase {
  const char* name;
  VecF (*vec)(VecF);
  double (*ref)(double);
};

inline const std::vector<MathCase>& math_cases() {
  static const std::vector<MathCase> cases = {
      {"exp", [](VecF x) { return exp(x); }, [](double x) { return std::exp(x); }},
      {"log", [](VecF x) { return log(x); }, [](double x) { return std::log(x); }},
      {"tanh", [](VecF x) { return tanh(x); }, [](double x) { return std::tanh(x); }},
      {"erf", [](VecF x) { return erf(x); }, [](double x) { return std::erf(x); }},
      {"sigmoid", [](VecF x) { return fns::sigmoid_op{}(x); }, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"gelu", [](VecF x) { return fns::GeluErf{}(x); }, [](double x) { return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2)); }},
      {"gelu_tanh", [](VecF x) { return fns::GeluTanh{}(x); }, [](double x) { return fns::GeluTanh{}(x); }},
  };
  return cases;
}

/// The worst results of a sweep: the largest ulp error and where, the same over the
/// results whose exact value is a normal float (|want| >= 2^-126), and the largest
/// tolerance_ratio and where.
struct SweepResult {
  double max_ulp = 0;
  float max_ulp_at = 0;
  double max_ulp_normal = 0;
  float max_ulp_normal_at = 0;
  double max_ratio = 0;
  float max_ratio_at = 0;
  uint64_t count = 0;
};

/// Evaluates `c` on every float whose bit pattern is a multiple of `stride` (stride 1:
/// all 2^32 of them, both signs, NaNs and infinities included), in parallel.
inline SweepResult sweep(const MathCase& c, uint64_t stride) {
  constexpr int W = VecF::size();
  const uint64_t n = ((uint64_t{1} << 32) + stride - 1) / stride;
  const int64_t blocks = static_cast<int64_t>((n + W - 1) / W);
  SweepResult total;
#pragma omp parallel
  {
    SweepResult mine;
#pragma omp for schedule(static, 4096)
    for (int64_t b = 0; b < blocks; ++b) {
      float in[W], out[W];
      int lanes = 0;
      for (; lanes < W && static_cast<uint64_t>(b) * W + lanes < n; ++lanes) {
        const auto pattern = static_cast<uint32_t>((static_cast<uint64_t>(b) * W + lanes) * stride);
        std::memcpy(&in[lanes], &pattern, sizeof pattern);
      }
      for (int i = lanes; i < W; ++i) in[i] = 0;
      c.vec(VecF::load(in)).store(out);
      for (int i = 0; i < lanes; ++i) {
        const double want = c.ref(static_cast<double>(in[i]));
        const double u = ulp_error(out[i], want), r = tolerance_ratio(out[i], want);
        if (u > mine.max_ulp) mine.max_ulp = u, mine.max_ulp_at = in[i];
        if (u > mine.max_ulp_normal && !(std::fabs(want) < 0x1p-126)) mine.max_ulp_normal = u, mine.max_ulp_normal_at = in[i];
        if (r > mine.max_ratio) mine.max_ratio = r, mine.max_ratio_at = in[i];
      }
      mine.count += lanes;
    }
#pragma omp critical
    {
      if (mine.max_ulp > total.max_ulp) total.max_ulp = mine.max_ulp, total.max_ulp_at = mine.max_ulp_at;
      if (mine.max_ulp_normal > total.max_ulp_normal) {
        total.max_ulp_normal = mine.max_ulp_normal, total.max_ulp_normal_at = mine.max_ulp_normal_at;
      }
      if (mine.max_ratio > total.max_ratio) total.max_ratio = mine.max_ratio, total.max_ratio_at = mine.max_ratio_at;
      total.count += mine.count;
    }
  }
  return total;
}

}  // namespace ember::vec::ulp
