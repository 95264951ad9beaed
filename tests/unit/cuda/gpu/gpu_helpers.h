// Shared by the GPU tests: the fixture that skips without a device (saying why), and
// PyTorch's assert_close with the conformance suite's tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
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

/// (rtol, atol); none means tolerances(dtype).
using Tolerance = std::optional<std::pair<double, double>>;

/// Compiled results may differ from eager's by the rounding eager does between ops in
/// half and bfloat16 (generated kernels keep float between fused ops, as PyTorch's inductor),
/// and in float32 by the order of a reduction's sums (a column of 300 summed in order
/// against eager's tree lands 1.7e-5 off a result of 0.6 that cancels terms up to 2):
/// float32 at 1e-4, the tolerance PyTorch's own compiled-against-eager check uses.
inline Tolerance compiled_tolerance(ScalarType t) {
  switch (t) {
    case kHalf: return std::pair{1e-2, 1e-2};
    case kBFloat16: return std::pair{5e-2, 5e-2};
    default: return std::pair{1e-4, 1e-4};
  }
}

/// Gradients through autograd: sums in another order than the CPU's and, for half and
/// bfloat16, products rounded on the way (the CPU reference runs on float32 copies or
/// rounds each addition).
inline Tolerance gradient_tolerance(ScalarType t) {
  switch (t) {
    case kFloat: return std::pair{1e-4, 1e-5};
    case kDouble: return std::pair{1e-7, 1e-7};
    case kHalf: return std::pair{1e-2, 1e-2};
    default: return std::pair{5e-2, 5e-2};
  }
}

/// Empty when `actual` (any device) equals `expected` (CPU) in dtype, sizes, strides and
/// values within tolerance (NaN equals NaN); otherwise what differs.
inline std::string mismatch(const Tensor& actual, const Tensor& expected, Tolerance tol = std::nullopt) {
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
  const auto [rtol, atol] = tol ? *tol : tolerances(expected.dtype());
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

/// Runs `op` on `cpu_args` and on `gpu_args` (the same values on the GPU); both must raise
/// or agree. Returns a failure message, empty on success.
inline std::string compare(const std::string& op, const Stack& cpu_args, const Stack& gpu_args,
                           Tolerance tol = std::nullopt) {
  std::optional<Tensor> expected;
  std::string cpu_error;
  try {
    expected = call_op(op, cpu_args).at(0).to_tensor();
  } catch (const Error& e) {
    cpu_error = e.what();
  }
  try {
    Tensor actual = call_op(op, gpu_args).at(0).to_tensor();
    if (!expected) return op + ": the CPU raised (" + cpu_error + ") but CUDA did not";
    if (!actual.is_cuda()) return op + ": result on " + actual.device().str();
    std::string m = mismatch(actual, *expected, tol);
    return m.empty() ? "" : op + ": " + m;
  } catch (const Error& e) {
    if (expected) return op + ": CUDA raised but the CPU did not: " + e.what();
    return "";
  }
}

/// `sizes` filled with deterministic values spread over [lo, hi) (a seeded linear
/// congruential generator), as `dtype`: integers are rounded, bool is `> (lo + hi) / 2`.
inline Tensor random_values(IntArrayRef sizes, ScalarType dtype, double lo = -1, double hi = 2, uint64_t seed = 7) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t state = seed;
  for (double& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
  Tensor t = tensor(v, {n}, TensorOptions(kDouble)).reshape(sizes);
  if (dtype == kBool) return gt(t, (lo + hi) / 2);
  if (is_floating_point(dtype)) return t.to(dtype);
  return round(t).to(dtype);
}

/// compare() with the CPU arguments' tensors copied to the GPU.
inline std::string compare(const std::string& op, const Stack& cpu_args, Tolerance tol = std::nullopt) {
  Stack gpu_args;
  for (const IValue& v : cpu_args) gpu_args.push_back(v.is_tensor() ? IValue(v.to_tensor().cuda()) : v);
  return compare(op, cpu_args, gpu_args, tol);
}

/// Every output of `op` on `cpu_args` and on the same arguments with their tensors copied
/// to the GPU (ops with several results: max.dim's values and indices). Both must raise or
/// agree; returns a failure message, empty on success.
inline std::string compare_outputs(const std::string& op, const Stack& cpu_args, Tolerance tol = std::nullopt) {
  Stack gpu_args;
  for (const IValue& v : cpu_args) gpu_args.push_back(v.is_tensor() ? IValue(v.to_tensor().cuda()) : v);
  Stack want, got;
  std::string cpu_error;
  try {
    want = call_op(op, cpu_args);
  } catch (const Error& e) {
    cpu_error = e.what();
  }
  try {
    got = call_op(op, gpu_args);
  } catch (const Error& e) {
    return cpu_error.empty() ? op + ": CUDA raised but the CPU did not: " + e.what() : "";
  }
  if (!cpu_error.empty()) return op + ": the CPU raised (" + cpu_error + ") but CUDA did not";
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& g = got.at(i).to_tensor();
    if (!g.is_cuda()) return op + ": output " + std::to_string(i) + " on " + g.device().str();
    const std::string m = mismatch(g, want[i].to_tensor(), tol);
    if (!m.empty()) return op + " output " + std::to_string(i) + ": " + m;
  }
  return "";
}

}  // namespace ember::gpu_test
