// Complex dtypes (Note [complex dtypes]): the ops that take them, the ops that reject them,
// and the FFTW transforms against a direct DFT.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
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

TEST(Complex, OpsWithoutAComplexKernelRaiseNotImplementedNamingTheOpAndDtype) {
  const Tensor a = complex_tensor(kSignal, {5});
  testing::expect_error([&] { sin(a); }, "\"aten::sin\" not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
  // On meta tensors too: a trace fails where eager would.
  const Tensor m = empty({5}, TensorOptions(kComplexFloat).device(kMeta));
  testing::expect_error([&] { maximum(m, m); }, "not implemented for 'ComplexFloat'", ErrorKind::NotImplementedError);
  // A reduction and a factory asked for a complex dtype.
  testing::expect_error([&] { prod(a, 0); }, "not implemented for 'ComplexDouble'", ErrorKind::NotImplementedError);
  testing::expect_error([&] { arange(3, TensorOptions(kComplexFloat)); }, "not implemented for 'ComplexFloat'",
                        ErrorKind::NotImplementedError);
}

// The arithmetic's complex loops are CPU code: those ops are marked complex on the CPU
// only, so the backend refuses a complex argument of a call that runs on CUDA before any
// kernel (OpDef::complex_cpu_only). Copies, fills and abs keep the mark on every device.
TEST(Complex, ArithmeticTakesComplexOnTheCpuOnlyAndCopiesEverywhere) {
  for (const char* name : {"aten::add.Tensor", "aten::mul.Scalar", "aten::div.Tensor", "aten::exp", "aten::sum.dim_IntList",
                           "aten::mean", "aten::where.self", "aten::eq.Tensor"}) {
    const ops::OpDef& op = ops::registry().get(name);
    EXPECT_TRUE(op.complex && op.complex_cpu_only) << name;
  }
  for (const char* name : {"aten::copy_", "aten::_to_copy", "aten::fill.Scalar", "aten::abs"}) {
    const ops::OpDef& op = ops::registry().get(name);
    EXPECT_TRUE(op.complex && !op.complex_cpu_only) << name;
  }
}

TEST(Complex, ACompiledOpWithoutAComplexKernelRaisesTheEagerError) {
  auto f = compile([](const Tensor& x) { return sin(x); }, {.backend = "inductor"});
  testing::expect_error([&] { f(complex_tensor(kSignal, {5})); }, "\"aten::sin\" not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
}

/// Each part of `got` equals `want`'s (NaN where want has NaN), within a relative `tol`.
void expect_parts(const std::vector<C>& got, const std::vector<C>& want, double tol = 0) {
  ASSERT_EQ(got.size(), want.size());
  auto same = [tol](double g, double w) {
    if (std::isnan(w)) return std::isnan(g);
    return g == w || std::abs(g - w) <= tol * std::abs(w);
  };
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(same(got[i].real(), want[i].real()) && same(got[i].imag(), want[i].imag()))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(Complex, ArithmeticFollowsC10sFormulasAtInfinitiesAndZeroDivisors) {
  // The values PyTorch 2.11's CPU kernels give: plain (a+bi)(c+di) products (no C99
  // Annex G recovery), alpha * other as a complex product even for alpha = 1.
  const Tensor a = complex_tensor({{kInf, 0}, {1, 2}, {kInf, kInf}}, {3});
  const Tensor b = complex_tensor({{1, 0}, {kInf, 0}, {0, 0}}, {3});
  expect_parts(complex_values(add(a, b)), {{kInf, 0}, {kInf, kNan}, {kInf, kInf}});
  expect_parts(complex_values(mul(a, b)), {{kInf, kNan}, {kInf, kInf}, {kNan, kNan}});
  expect_parts(complex_values(div(a, b)), {{kInf, kNan}, {0, 0}, {kInf, kInf}});
  const Tensor zero = complex_tensor({{0, 0}}, {1});
  expect_parts(complex_values(div(complex_tensor({{1, 1}, {0, 0}, {1, 0}, {0, 1}}, {4}), zero)),
               {{kInf, kInf}, {kNan, kNan}, {kInf, kNan}, {kNan, kInf}});
  expect_parts(complex_values(reciprocal(complex_tensor({{0, 0}, {kInf, 0}, {kNan, 0}}, {3}))),
               {{kInf, kNan}, {0, 0}, {kNan, kNan}});
}

TEST(Complex, DivisionScalesHugeAndTinyDivisorsWithoutOverflow) {
  // c² + d² overflows (or underflows) here; the scaled division does not.
  const Tensor x = complex_tensor({{1e300, 1e300}, {1, 0}, {1e-300, 2e-300}}, {3});
  const Tensor y = complex_tensor({{1e300, 1e300}, {1e300, 1e300}, {1e-300, 1e-300}}, {3});
  expect_parts(complex_values(div(x, y)), {{1, 0}, {5e-301, -5e-301}, {1.5, 0.5}}, 1e-15);
  expect_parts(complex_values(reciprocal(complex_tensor({{1e300, 1e300}}, {1}))), {{5e-301, -5e-301}}, 1e-15);
  // complex64 as well: 1e30² overflows float.
  const Tensor f = complex_tensor({{1e30, 1e30}}, {1}).to(kComplexFloat);
  expect_parts(complex_values(div(f, f * 2).to(kComplexDouble)), {{0.5, 0}}, 1e-7);
}

TEST(Complex, ResultTypesPromoteWithRealTensorsAndScalarsAsPyTorch) {
  const Tensor c64 = complex_tensor(kSignal, {5}).to(kComplexFloat);
  EXPECT_EQ(add(c64, ones({5}, kDouble)).dtype(), kComplexDouble);  // complex64 with float64
  EXPECT_EQ(mul(c64, ones({}, kDouble)).dtype(), kComplexFloat);    // a 0-dim float64 does not widen
  EXPECT_EQ(sub(c64, Scalar(2.5)).dtype(), kComplexFloat);
  EXPECT_EQ(div(ones({5}, kInt64), c64).dtype(), kComplexFloat);
  EXPECT_EQ(eq(c64, c64).dtype(), kBool);
  expect_parts(complex_values(add(c64, Scalar(2), Scalar(3)).to(kComplexDouble)),
               {{7, 0.5}, {4, 1}, {6.25, -3}, {10, 0}, {5, -1}});
  expect_parts(complex_values(div(complex_tensor(kSignal, {5}), Scalar(2))),
               {{0.5, 0.25}, {-1, 0.5}, {0.125, -1.5}, {2, 0}, {-0.5, -0.5}});
  // In place: a complex result cannot be written into a real tensor; the other way can.
  Tensor real_t = ones({5});
  testing::expect_error([&] { real_t.add_(c64); }, "result type ComplexFloat can't be cast to the desired output type Float");
  Tensor z = c64.clone();
  z.mul_(ones({5}, kFloat) * 2);
  expect_parts(complex_values(z.to(kComplexDouble)), {{2, 1}, {-4, 2}, {0.5, -6}, {8, 0}, {-2, -2}});
}

TEST(Complex, RoundingDivisionsRefuseComplexAsPyTorch) {
  const Tensor z = complex_tensor(kSignal, {5});
  testing::expect_error([&] { div(z, z, "floor"); }, "\"div_floor_cpu\" not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
  testing::expect_error([&] { div(z, Scalar(2), "trunc"); }, "\"div_trunc_cpu\" not implemented for 'ComplexDouble'",
                        ErrorKind::NotImplementedError);
}

TEST(Complex, UnaryOpsAndComparisonsTakeComplexTensors) {
  const Tensor z = complex_tensor(kSignal, {5});
  std::vector<C> neg_want, exp_want, log_want, sqrt_want, conj_want;
  for (const C& v : kSignal) {
    neg_want.push_back(-v);
    exp_want.push_back(std::exp(v));
    log_want.push_back(std::log(v));
    sqrt_want.push_back(std::sqrt(v));
    conj_want.push_back(std::conj(v));
  }
  expect_parts(complex_values(neg(z)), neg_want);
  expect_parts(complex_values(exp(z)), exp_want, 1e-15);
  expect_parts(complex_values(log(z)), log_want, 1e-15);
  expect_parts(complex_values(sqrt(z)), sqrt_want, 1e-15);
  expect_parts(complex_values(conj_physical(z)), conj_want);
  const Tensor other = complex_tensor({{1, 0.5}, {-2, 0}, {0.25, -3}, {4, 1}, {kNan, -1}}, {5});
  EXPECT_EQ(eq(z, other).to_vector<bool>(), (std::vector<bool>{true, false, true, false, false}));
  EXPECT_EQ(ne(z, other).to_vector<bool>(), (std::vector<bool>{false, true, false, true, true}));
  EXPECT_EQ(eq(complex_tensor({{4, 0}, {4, 1}}, {2}), Scalar(4)).to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(Complex, ConjMaterializesAndResolveConjIsTheIdentity) {
  const Tensor z = complex_tensor(kSignal, {5});
  const Tensor c = conj(z);
  EXPECT_NE(c.storage(), z.storage());  // Note [conj materializes]: no lazy conjugate bit
  expect_parts(complex_values(c), complex_values(conj_physical(z)));
  EXPECT_EQ(resolve_conj(z).storage(), z.storage());
  const Tensor r = ones({3});
  EXPECT_EQ(conj(r).storage(), r.storage());  // a real tensor is its own conjugate, as PyTorch's
  EXPECT_EQ(conj_physical(r).storage(), r.storage());
  Tensor w = z.clone();
  conj_physical_(w);
  expect_parts(complex_values(w), complex_values(c));
}

TEST(Complex, SumAndMeanReduceBothPartsOverTheGivenDims) {
  const Tensor z = complex_tensor({{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}}, {2, 3});
  expect_parts(complex_values(z.sum()), {{36, 42}});
  expect_parts(complex_values(z.sum(std::vector<int64_t>{0})), {{8, 10}, {12, 14}, {16, 18}});
  expect_parts(complex_values(z.mean(std::vector<int64_t>{-1}, /*keepdim=*/true)), {{3, 4}, {9, 10}});
  EXPECT_EQ(z.mean(std::vector<int64_t>{-1}, true).sizes(), IntArrayRef({2, 1}));
  expect_parts(complex_values(z.t().mean()), {{6, 7}});  // non-contiguous
  // A real input summed as complex (dtype=complex128).
  expect_parts(complex_values(sum(ones({2, 2}), std::vector<int64_t>{1}, false, kComplexDouble)), {{2, 0}, {2, 0}});
}

TEST(Complex, WhereSelectsComplexValues) {
  const Tensor z = complex_tensor({{1, 2}, {3, 4}}, {2});
  const Tensor cond = tensor(std::vector<bool>{true, false});
  expect_parts(complex_values(where(cond, z, Scalar(-1.5))), {{1, 2}, {-1.5, 0}});
  expect_parts(complex_values(where(cond, ones({2}, kDouble), z)), {{1, 0}, {3, 4}});
}

TEST(Complex, GradientsOfMulAndDivFollowTheConjugateWirtingerConvention) {
  // PyTorch's convention: for L real, the gradient of z is dL/d(conj z); with an upstream
  // gradient g of w = x * y, x gets g * conj(y) and y gets g * conj(x); for w = x / y,
  // x gets g / conj(y) and y gets -g * conj(x / y²).
  Tensor x = complex_tensor({{1, 2}, {-0.5, 1}}, {2}).clone(), y = complex_tensor({{3, -1}, {0.25, 2}}, {2}).clone();
  x.requires_grad_();
  y.requires_grad_();
  const Tensor g = complex_tensor({{1, 0.5}, {-2, 1}}, {2});
  const std::vector<C> xv = complex_values(x), yv = complex_values(y), gv = complex_values(g);
  std::vector<Tensor> grads = autograd::grad({mul(x, y)}, {x, y}, {g});
  expect_parts(complex_values(grads[0]), {gv[0] * std::conj(yv[0]), gv[1] * std::conj(yv[1])}, 1e-15);
  expect_parts(complex_values(grads[1]), {gv[0] * std::conj(xv[0]), gv[1] * std::conj(xv[1])}, 1e-15);
  grads = autograd::grad({div(x, y)}, {x, y}, {g});
  expect_parts(complex_values(grads[0]), {gv[0] / std::conj(yv[0]), gv[1] / std::conj(yv[1])}, 1e-15);
  expect_parts(complex_values(grads[1]),
               {-gv[0] * std::conj(xv[0] / (yv[0] * yv[0])), -gv[1] * std::conj(xv[1] / (yv[1] * yv[1]))}, 1e-15);
  // A real input of a complex product gets the real part (PyTorch's handle_r_to_c).
  Tensor r = tensor(std::vector<double>{2, -1});
  r.requires_grad_();
  const Tensor gr = autograd::grad({mul(r, complex_tensor({{3, -1}, {0.25, 2}}, {2}))}, {r}, {g})[0];
  EXPECT_EQ(gr.dtype(), kDouble);
  const std::vector<double> want = {(gv[0] * std::conj(yv[0])).real(), (gv[1] * std::conj(yv[1])).real()};
  EXPECT_EQ(gr.to_vector<double>(), want);
}

/// The full linear convolution of x and k by its definition.
std::vector<double> direct_convolution(const std::vector<double>& x, const std::vector<double>& k) {
  std::vector<double> out(x.size() + k.size() - 1, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < k.size(); ++j) out[i + j] += x[i] * k[j];
  return out;
}

/// irfft(rfft(x, n) * rfft(k, n), n) over the last dim: a linear convolution once n is at
/// least len(x) + len(k) - 1.
Tensor fft_convolution(const Tensor& x, const Tensor& k, int64_t n) {
  const Tensor xf = _fft_r2c(constant_pad_nd(x, {0, n - x.size(-1)}), {x.dim() - 1}, 0, true);
  const Tensor kf = _fft_r2c(constant_pad_nd(k, {0, n - k.size(-1)}), {k.dim() - 1}, 0, true);
  return _fft_c2r(xf * kf, {x.dim() - 1}, 2, n);
}

TEST(Complex, FftConvolutionEqualsDirectConvolutionEagerAndCompiled) {
  const std::vector<double> x = {0.5, -1, 2, 3.5, -0.25, 1, 0, 2}, k = {1, -0.5, 0.25};
  const std::vector<double> want = direct_convolution(x, k);
  const int64_t n = static_cast<int64_t>(want.size());
  const Tensor eager = fft_convolution(tensor(x), tensor(k), n);
  auto compiled_fn = compile([n](const Tensor& a, const Tensor& b) { return fft_convolution(a, b, n); },
                             {.backend = "inductor"});
  const Tensor compiled = compiled_fn(tensor(x), tensor(k));
  const std::vector<double> e = eager.to_vector<double>(), c = compiled.to_vector<double>();
  ASSERT_EQ(e.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(e[i], want[i], 1e-12) << i;
    EXPECT_EQ(c[i], e[i]) << i;
  }
  // float32, batched, against conv1d (a cross-correlation: the kernel flipped).
  const Tensor xb = randn({3, 1, 20}), kb = randn({1, 1, 5});
  const Tensor direct = conv1d(xb, flip(kb, {2}), std::nullopt, {1}, {4});
  const Tensor viafft = fft_convolution(xb, kb, 24);
  ASSERT_EQ(viafft.sizes(), direct.sizes());
  EXPECT_LT(max(abs(viafft - direct)).item<float>(), 1e-5);
}

TEST(Complex, ACompiledSpectralFilterEqualsEager) {
  // irfft(rfft(x) * k): the complex product runs as an extern call under the inductor.
  auto filter = [](const Tensor& x, const Tensor& k) { return _fft_c2r(_fft_r2c(x, {1}, 0, true) * k, {1}, 2, 16); };
  const Tensor x = randn({4, 16}), k = view_as_complex(randn({9, 2}));
  const Tensor eager = filter(x, k);
  auto compiled = compile(filter, {.backend = "inductor"});
  const Tensor got = compiled(x, k);
  EXPECT_EQ(got.to_vector<float>(), eager.to_vector<float>());
  // Scaling and adding spectra, and a conjugate, too.
  auto spectral = [](const Tensor& x) {
    const Tensor f = _fft_r2c(x, {0}, 0, true);
    return _fft_c2r(conj_physical(f * 0.5 + f) - f, {0}, 2, 8);
  };
  const Tensor v = randn({8});
  auto compiled_spectral = compile(spectral, {.backend = "inductor"});
  EXPECT_EQ(compiled_spectral(v).to_vector<float>(), spectral(v).to_vector<float>());
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
