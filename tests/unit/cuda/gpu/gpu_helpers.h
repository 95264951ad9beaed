// Shared by the GPU tests: the fixture that skips without a device (saying why), and
// PyTorch's assert_close with the conformance suite's tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ember/cuda.h"
#include "ember/ember.h"

namespace ember::gpu_test {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  }
};

/// assert_close's default tolerances (tests/ops/case_runner.cpp).
inline std::pair<double, double> tolerances(ScalarType t) {
  switch (t) {
    case kFloat: return {1.3e-6, 1e-5};
    case kDouble: return {1e-7, 1e-7};
    case kHalf: return {1e-3, 1e-5};
    case kBFloat16: return {1.6e-2, 1e-5};
    default: return {0, 0};
  }
}

/// Empty when `actual` (any device) equals `expected` (CPU) in dtype, sizes, strides and
/// values within tolerance (NaN equals NaN); otherwise what differs.
inline std::string mismatch(const Tensor& actual, const Tensor& expected) {
  std::ostringstream os;
  if (actual.dtype() != expected.dtype()) {
    os << "dtype " << actual.dtype() << ", expected " << expected.dtype();
    return os.str();
  }
  if (actual.sizes() != expected.sizes()) {
    os << "sizes " << actual.sizes() << ", expected " << expected.sizes();
    return os.str();
  }
  for (int64_t d = 0; d < expected.dim(); ++d) {
    if (expected.size(d) > 1 && actual.stride(d) != expected.stride(d)) {
      os << "strides " << actual.strides() << ", expected " << expected.strides();
      return os.str();
    }
  }
  const auto a = actual.to_vector<double>();
  const auto e = expected.to_vector<double>();
  const auto [rtol, atol] = tolerances(expected.dtype());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;
    if (std::isfinite(a[i]) && std::isfinite(e[i]) && std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i])) continue;
    os.precision(9);
    os << "element " << i << ": got " << a[i] << ", expected " << e[i];
    return os.str();
  }
  return "";
}

}  // namespace ember::gpu_test
