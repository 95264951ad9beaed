// tests/support/pattern_tensors.h — inputs written as a formula, so that a test and the
// PyTorch lines that made its expected values build the same tensor without pasting data,
// and the check of a result against those values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ember/ember.h"

namespace ember::testing {

/// A tensor of `sizes` holding ((i*a) % m - s) / d at flat index i, as `dtype`.
inline Tensor pattern(std::vector<int64_t> sizes, int a, int m, int s, double d, ScalarType dtype = kDouble) {
  int64_t n = 1;
  for (int64_t v : sizes) n *= v;
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<double>((i * a) % m - s) / d);
  return tensor(values, sizes).to(dtype);
}

/// Expects t's elements, in logical order, within atol + rtol * |expected| of `expected`
/// (a NaN expected wants a NaN).
inline void expect_close(const Tensor& t, const std::vector<double>& expected, double atol, double rtol = 0) {
  std::vector<double> got = t.contiguous().to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i])) << "at " << i;
  }
}

}  // namespace ember::testing
