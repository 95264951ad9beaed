// Complex dtypes (Note [complex dtypes]): the ops that take them, the ops that reject them,
// and the FFTW transforms against a direct DFT.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ops/op_utils.h"
#include "support/error_of.h"

namespace ember {
namespace {

using C = std::complex<double>;

/// A complex128 tensor of `sizes` holding `values` (row-major).
Tensor complex_tensor(const std::vector<C>& values, std::vector<int64_t> sizes) {
  std::vector<double> parts;
  for (const C& v : values) {
    parts.push_back(v.real());
    parts.push_back(v.imag());
  }
  sizes.push_back(2);
  return view_as_complex(tensor(parts).reshape(sizes));
}

/// The values of a complex tensor, row-major.
std::vector<C> complex_values(const Tensor& t) {
  const std::vector<double> parts = view_as_real(t.contiguous()).contiguous().to_vector<double>();
  std::vector<C> out;
  for (size_t i = 0; i + 1 < parts.size(); i += 2) out.emplace_back(parts[i], parts[i + 1]);
  return out;
}

/// sum_k x[k] e^{sign 2πi jk/n}: the DFT by its definition.
std::vector<C> direct_dft(const std::vector<C>& x, int sign) {
  const size_t n = x.size();
  std::vector<C> out(n);
  for (size_t j = 0; j < n; ++j)
    for (size_t k = 0; k < n; ++k)
      out[j] += x[k] * std::polar(1.0, sign * 2 * std::numbers::pi * static_cast<double>(j * k) / static_cast<double>(n));
  return out;
}

void expect_near(const std::vector<C>& got, const std::vector<C>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(std::abs(got[i] - want[i]), tol) << "element " << i;
}

const std::vector<C> kSignal = {{1, 0.5}, {-2, 1}, {0.25, -3}, {4, 0}, {-1, -1}};

TEST(Complex, AddOfComplexTensorsRaisesNotImplementedNamingTheOpAndDtype) {
  const Tensor a = complex_tensor(kSignal, {5});
  testing::expect_error([&] { add(a, a); }, "\"aten::add.Tensor\" not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
  // On meta tensors too: a trace fails where eager would.
  const Tensor m = empty({5}, TensorOptions(kComplexFloat).device(kMeta));
  testing::expect_error([&] { mul(m, m); }, "not implemented for 'ComplexFloat'", ErrorKind::NotImplementedError);
  // A reduction and a factory asked for a complex dtype.
  testing::expect_error([&] { a.sum(std::vector<int64_t>{0}); }, "not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
  testing::expect_error([&] { arange(3, TensorOptions(kComplexFloat)); }, "not implemented for 'ComplexFloat'",
                        ErrorKind::NotImplementedError);
}

TEST(Complex, ACompiledAddOfComplexTensorsRaisesTheEagerError) {
  auto f = compile([](const Tensor& x) { return add(x, x); }, {.backend = "inductor"});
  testing::expect_error([&] { f(complex_tensor(kSignal, {5})); }, "\"aten::add.Tensor\" not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
}

TEST(Complex, ResultTypeRanksComplexAboveFloatingAsC10) {
  const IValue dim_double = ones({2}, kDouble), zero_dim_c64 = empty({}, kComplexFloat);
  const IValue dim_long = ones({2}, kInt64), dim_c64 = ones({2}, kFloat).to(kComplexFloat);
  const IValue zero_dim_double = ones({}, kDouble);
  // A complex 0-dim tensor lifts a float tensor to the complex of the float's precision,
  // an integer tensor to its own complex type; a 0-dim float does not widen complex64.
  EXPECT_EQ(ops::result_type({&dim_double, &zero_dim_c64}), kComplexDouble);
  EXPECT_EQ(ops::result_type({&dim_long, &zero_dim_c64}), kComplexFloat);
  EXPECT_EQ(ops::result_type({&dim_c64, &zero_dim_double}), kComplexFloat);
}

TEST(Complex, ViewAsRealAndViewAsComplexShareStorageWithDoubledStrides) {
  const Tensor z = complex_tensor(kSignal, {5});
  const Tensor r = view_as_real(z);
  EXPECT_EQ(r.dtype(), kDouble);
  EXPECT_EQ(r.sizes(), IntArrayRef({5, 2}));
  EXPECT_EQ(r.strides(), IntArrayRef({2, 1}));
  EXPECT_EQ(r.storage(), z.storage());
  const Tensor tail = view_as_complex(r.slice(0, 2, 5));  // offset 4 real elements: 2 complex
  EXPECT_EQ(tail.storage_offset(), 2);
  expect_near(complex_values(tail), {kSignal[2], kSignal[3], kSignal[4]}, 0);
  EXPECT_EQ(real(z).to_vector<double>(), (std::vector<double>{1, -2, 0.25, 4, -1}));
  EXPECT_EQ(imag(z).to_vector<double>(), (std::vector<double>{0.5, 1, -3, 0, -1}));
  testing::expect_error([&] { view_as_complex(ones({3, 2}).t()); }, "Tensor must have a last dimension of size 2");
  testing::expect_error([&] { view_as_complex(ones({4, 2}).slice(1, 0, 2, 2)); }, "last dimension of size 2");
  testing::expect_error([&] { imag(ones({3})); }, "imag is not implemented for tensors with non-complex dtypes");
}

TEST(Complex, CopiesConvertBetweenComplexAndRealTypes) {
  const Tensor z = complex_tensor(kSignal, {5});
  const Tensor f = z.to(kComplexFloat);
  EXPECT_EQ(f.dtype(), kComplexFloat);
  expect_near(complex_values(f.to(kComplexDouble)), kSignal, 1e-6);
  // Real into complex: zero imaginary parts; complex into real keeps the real parts.
  expect_near(complex_values(tensor(std::vector<double>{1.5, -2.0}, {}, TensorOptions(kFloat)).to(kComplexDouble)), {{1.5, 0}, {-2, 0}}, 0);
  EXPECT_EQ(z.to(kDouble).to_vector<double>(), (std::vector<double>{1, -2, 0.25, 4, -1}));
  const Tensor zeroed = zeros({2, 3}, TensorOptions(kComplexFloat));
  expect_near(complex_values(zeroed), std::vector<C>(6, C(0, 0)), 0);
  expect_near(complex_values(complex_tensor(kSignal, {5}).clone()), kSignal, 0);
}

TEST(Complex, AbsIsTheModulusWithoutOverflowAndItsGradientIsZeroAtZero) {
  Tensor z = complex_tensor({{3, 4}, {0, 0}, {-3e200, 4e200}}, {3}).clone();
  const Tensor m = abs(z);
  EXPECT_EQ(m.dtype(), kDouble);
  const std::vector<double> v = m.to_vector<double>();
  EXPECT_EQ(v[0], 5);
  EXPECT_EQ(v[1], 0);
  EXPECT_NEAR(v[2] / 5e200, 1, 1e-15);  // |z|² would overflow
  z.requires_grad_();
  const std::vector<Tensor> g = autograd::grad({abs(z).sum()}, {z});
  // d|z| in PyTorch's convention: z / |z| (sgn), 0 at 0.
  expect_near(complex_values(g[0]), {{0.6, 0.8}, {0, 0}, {-0.6, 0.8}}, 1e-15);
}

TEST(Complex, FftC2CMatchesTheDirectDftBothWays) {
  const Tensor z = complex_tensor(kSignal, {5});
  expect_near(complex_values(_fft_c2c(z, {0}, 0, /*forward=*/true)), direct_dft(kSignal, -1), 1e-12);
  std::vector<C> inverse = direct_dft(kSignal, +1);
  for (C& v : inverse) v /= 5.0;  // normalization 2: by 1/n
  expect_near(complex_values(_fft_c2c(z, {0}, 2, /*forward=*/false)), inverse, 1e-12);
}

TEST(Complex, FftR2CIsTheFirstHalfOfTheC2COfTheRealSignal) {
  const std::vector<double> x = {0.5, -1, 2, 3.5, -0.25, 1, 0};
  std::vector<C> as_complex;
  for (double v : x) as_complex.emplace_back(v, 0);
  std::vector<C> full = direct_dft(as_complex, -1);
  for (C& v : full) v /= std::sqrt(7.0);  // normalization 1
  const Tensor one = _fft_r2c(tensor(x), {0}, 1, /*onesided=*/true);
  EXPECT_EQ(one.sizes(), IntArrayRef({4}));
  expect_near(complex_values(one), std::vector<C>(full.begin(), full.begin() + 4), 1e-12);
  expect_near(complex_values(_fft_r2c(tensor(x), {0}, 1, /*onesided=*/false)), full, 1e-12);
  // c2r inverts the onesided transform (unnormalized c2r times 1/n after an unnormalized r2c).
  const Tensor back = _fft_c2r(_fft_r2c(tensor(x), {0}, 0, true), {0}, 2, 7);
  const std::vector<double> got = back.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], x[i], 1e-12);
  testing::expect_error([&] { _fft_c2r(one, {0}, 0, 9); }, "a onesided signal of 9 points has 5 entries");
  testing::expect_error([&] { _fft_r2c(tensor(x, {}, TensorOptions(kHalf)), {0}, 0, true); }, "Only supports floating-point dtypes");
}

TEST(Complex, FftsOfManyThreadsAtOnceAgreeWithOneThread) {
  // Plans are made under one mutex (FFTW's planner is not thread-safe) and shared.
  const Tensor x = randn({8, 6, 10}, TensorOptions(kFloat));
  const std::vector<double> want = view_as_real(_fft_r2c(x, {1, 2}, 0, true)).to_vector<double>();
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = view_as_real(_fft_r2c(x, {1, 2}, 0, true)).to_vector<double>(); });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(Complex, GradientsFlowThroughTheTransformsAndViews) {
  // d/dx sum(real(c2c(view_as_complex(x)))) for x of (n, 2): the adjoint of the DFT of
  // ones, i.e. n at frequency 0 in the real part and 0 elsewhere.
  Tensor x = randn({4, 2}, TensorOptions(kDouble));
  x.requires_grad_();
  const Tensor y = real(_fft_c2c(view_as_complex(x), {0}, 0, true)).sum();
  const std::vector<Tensor> g = autograd::grad({y}, {x});
  const std::vector<double> got = g[0].to_vector<double>();
  const std::vector<double> want = {4, 0, 0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

}  // namespace
}  // namespace ember
