// where and masked_fill on the CPU: each row shape the kernel takes (dense rows with a value
// that is a tensor or a broadcast scalar, and strided rows) picks, element by element, the
// value its condition names, in every dtype family, the bits of the value kept (NaN, -0.0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ember/ember.h"

namespace ember {
namespace {

/// A condition of n elements that changes at random-looking places (as relu's mask does).
Tensor mixed_condition(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>((i * 7919) % 13 < 6));
  return tensor(v, {n}).to(kBool);
}

Tensor ramp(int64_t n, double offset, ScalarType dtype) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i % 97) + offset);
  return tensor(v, {n}).to(dtype);
}

void expect_picked(const Tensor& got, const Tensor& cond, const Tensor& a, const Tensor& b) {
  const auto c = cond.to(kDouble).to_vector<double>();
  const auto x = a.to(kDouble).expand(got.sizes()).contiguous().to_vector<double>();
  const auto y = b.to(kDouble).expand(got.sizes()).contiguous().to_vector<double>();
  const auto r = got.to(kDouble).to_vector<double>();
  ASSERT_EQ(r.size(), c.size());
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], c[i] != 0 ? x[i] : y[i]) << "at " << i;
}

TEST(Where, PicksEachElementOnDenseAndBroadcastRowsInEveryDtype) {
  const int64_t n = 1000;  // past a vector width, with a remainder
  const Tensor cond = mixed_condition(n);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    SCOPED_TRACE(scalar_type_name(dt));
    const Tensor a = ramp(n, 1, dt), b = ramp(n, 3, dt);
    const Tensor sa = scalar_tensor(5, dt), sb = scalar_tensor(2, dt);
    expect_picked(where(cond, a, b), cond, a, b);
    expect_picked(where(cond, sa, b), cond, sa, b);
    expect_picked(where(cond, a, sb), cond, a, sb);
    expect_picked(where(cond, sa, sb), cond, sa, sb);
    expect_picked(masked_fill(b, cond, 0), cond, scalar_tensor(0, dt), b);
  }
}

TEST(Where, PicksEachElementOnStridedRows) {
  const Tensor cond = mixed_condition(600).reshape({20, 30});
  const Tensor a = ramp(600, 1, kFloat).reshape({30, 20}).t();  // column-major
  const Tensor b = ramp(1200, 3, kFloat).reshape({20, 60}).slice(1, 0, 60, 2);  // every other column
  ASSERT_FALSE(a.is_contiguous());
  expect_picked(where(cond, a, b), cond, a, b);
  expect_picked(where(cond.t(), a.t(), b.t()), cond.t(), a.t(), b.t());
}

TEST(Where, KeepsTheBitsOfThePickedValue) {
  const Tensor cond = tensor(std::vector<double>{1, 0, 1, 0}, {4}).to(kBool);
  const Tensor a = tensor(std::vector<double>{-0.0, 1, NAN, 2}, {4}).to(kFloat);
  const Tensor b = tensor(std::vector<double>{5, -0.0, 6, INFINITY}, {4}).to(kFloat);
  const auto r = where(cond, a, b).to_vector<float>();
  EXPECT_TRUE(r[0] == 0.0f && std::signbit(r[0]));
  EXPECT_TRUE(r[1] == 0.0f && std::signbit(r[1]));
  EXPECT_TRUE(std::isnan(r[2]));
  EXPECT_TRUE(std::isinf(r[3]));
}

}  // namespace
}  // namespace ember
