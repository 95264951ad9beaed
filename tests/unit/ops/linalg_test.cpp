// Matrix products: mm, bmm, addmm, mv, dot, matmul, linear. Expected values come from
// PyTorch 1.13 on the same inputs (arange-based so the inputs need no literals).
#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ember/ember.h"
#include "kernels/cpu/gemm.h"
#include "support/error_of.h"
#include "support/log_capture.h"

namespace ember {
namespace {

void expect_close(const Tensor& t, const std::vector<double>& expected, double rtol = 1.3e-6, double atol = 1e-5) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], atol + rtol * std::fabs(expected[i])) << "at flat index " << i;
}

Tensor ar(int64_t n, ScalarType dt = kFloat) { return arange(n, dt); }

/// alpha * a @ b + beta * c for [B, m, k] @ [B, k, n] in double loops: the reference the
/// BLAS paths are held to (c empty: beta ignored).
std::vector<double> naive_product(const Tensor& a, const Tensor& b, double alpha = 1, double beta = 0,
                                  const std::vector<double>& c = {}) {
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), out(batch * m * n, 0.0);
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += av[(q * m + i) * k + p] * bv[(q * k + p) * n + j];
        const int64_t o = (q * m + i) * n + j;
        out[o] = alpha * acc + (c.empty() ? 0.0 : beta * c[o]);
      }
  return out;
}

/// A rows x cols matrix of smooth values, stored transposed (column-major) when `transposed`.
Tensor operand_matrix(int64_t rows, int64_t cols, bool transposed, ScalarType dt, double phase) {
  if (transposed) return sin(ar(rows * cols, dt).view({cols, rows}) * 0.37 + phase).t();
  return sin(ar(rows * cols, dt).view({rows, cols}) * 0.37 + phase);
}

/// Sets OpenMP's thread count for one test and restores it after.
struct ThreadCount {
  int saved = omp_get_max_threads();
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
};

TEST(Mm, FloatMatchesTorch) {
  Tensor r = mm(ar(6).view({2, 3}), ar(12).view({3, 4}) - 5);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 4}));
  EXPECT_EQ(r.strides(), IntArrayRef({4, 1}));
  expect_close(r, {5, 8, 11, 14, -4, 8, 20, 32});
}

TEST(Mm, TransposedInputsGiveTheSameProduct) {
  Tensor r = mm(ar(6).view({3, 2}).t(), ar(12).view({4, 3}).t());
  expect_close(r, {10, 28, 46, 64, 13, 40, 67, 94});
}

TEST(Mm, SlicedAndBroadcastInputsArePacked) {
  Tensor r = mm(ar(12).view({2, 6}).slice(1, 0, 6, 2), ar(24).view({3, 8}).slice(1, 0, 8, 2));
  expect_close(r, {80, 92, 104, 116, 224, 272, 320, 368});
  Tensor e = mm(ar(3).view({1, 3}).expand({2, 3}), ar(12).view({3, 4}));
  expect_close(e, {20, 23, 26, 29, 20, 23, 26, 29});
}

TEST(Mm, DoubleMatchesTorch) {
  Tensor r = mm(ar(6, kDouble).view({2, 3}) / 3, (ar(12, kDouble).view({3, 4}) - 5) / 7);
  EXPECT_EQ(r.dtype(), kDouble);
  expect_close(r,
               {0.23809523809523805, 0.38095238095238093, 0.5238095238095238, 0.6666666666666666, -0.1904761904761905,
                0.380952380952381, 0.9523809523809524, 1.5238095238095237},
               1e-7, 1e-7);
}

TEST(Mm, IntegersUseExactWrappingArithmetic) {
  Tensor r = mm(ar(6, kInt64).view({2, 3}) - 2, ar(12, kInt64).view({3, 4}));
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{-4, -7, -10, -13, 32, 38, 44, 50}));
  // 100 * 100 * 2 = 20000 wraps to 32 in int8, as in PyTorch.
  Tensor i8 = mm(full({1, 2}, 100, kInt8), full({2, 1}, 100, kInt8));
  EXPECT_EQ(i8.to_vector<int64_t>(), (std::vector<int64_t>{32}));
  Tensor u8 = mm(full({1, 3}, 200, kUInt8), full({3, 1}, 3, kUInt8));
  EXPECT_EQ(u8.to_vector<int64_t>(), (std::vector<int64_t>{8}));
}

TEST(Mm, ReducedFloatsComputeInFloat) {
  Tensor a = ar(6).view({2, 3}) * 0.3, b = (ar(12).view({3, 4}) - 5) * 0.7;
  Tensor bf = mm(a.to(kBFloat16), b.to(kBFloat16));
  EXPECT_EQ(bf.dtype(), kBFloat16);
  expect_close(bf, {1.046875, 1.6796875, 2.3125, 2.9375, -0.84375, 1.671875, 4.1875, 6.6875}, 1.6e-2, 1e-5);
  Tensor h = mm(a.to(kHalf), b.to(kHalf));
  EXPECT_EQ(h.dtype(), kHalf);
  expect_close(h,
               {1.0498046875, 1.6806640625, 2.310546875, 2.939453125, -0.8408203125, 1.6806640625, 4.19921875, 6.71875},
               1e-3, 1e-5);
}

TEST(Mm, EmptyInnerDimGivesZeros) {
  Tensor r = mm(ones({2, 0}), ones({0, 3}));
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 3}));
  expect_close(r, {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(mm(ones({0, 3}), ones({3, 2})).sizes(), IntArrayRef({0, 2}));
}

TEST(Mm, LargeTransposedProductMatchesNaiveDoubleLoop) {
  const int64_t m = 67, k = 45, n = 53;
  Tensor a = sin(ar(k * m).view({k, m})).t();  // column-major operand
  Tensor b = cos(ar(n * k).view({n, k}) * 0.5).t();
  Tensor r = mm(a, b);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), expected(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) expected[i * n + j] += av[i * k + p] * bv[p * n + j];
  expect_close(r, expected, 1e-5, 1e-5);
}

TEST(Mm, EveryTransposeOfOddSizesMatchesNaiveLoop) {
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1},    {1, 37, 1},    {33, 1, 17}, {65, 127, 31},
                                                     {257, 19, 3}, {5, 300, 129}, {1, 70, 45}, {45, 70, 1}};
  for (ScalarType dt : {kFloat, kDouble})
    for (const auto& [m, k, n] : sizes)
      for (int t = 0; t < 4; ++t) {
        SCOPED_TRACE(::testing::Message()
                     << scalar_type_name(dt) << " m=" << m << " k=" << k << " n=" << n << " t=" << t);
        Tensor a = operand_matrix(m, k, t & 1, dt, 0.1), b = operand_matrix(k, n, t & 2, dt, 0.7);
        Tensor c = operand_matrix(m, n, false, dt, 0.3);
        expect_close(mm(a, b), naive_product(a.unsqueeze(0), b.unsqueeze(0)), 1e-5, 1e-4);
        expect_close(addmm(c, a, b, 0.5, -2),
                     naive_product(a.unsqueeze(0), b.unsqueeze(0), -2, 0.5, c.to_vector<double>()), 1e-5, 1e-4);
      }
}

TEST(Mm, ProductsSplitAcrossThreadsMatchNaiveLoop) {
  // The double path splits c into blocks, one per thread: on 3 threads rows of the tall
  // product and 8-aligned columns of the wide one (the last block short), on 4 a 2 x 2
  // grid. float runs on oneDNN's threads.
  for (const auto& [threads, m, k, n] :
       std::vector<std::array<int64_t, 4>>{{3, 403, 67, 35}, {3, 21, 97, 517}, {4, 160, 64, 168}, {2, 256, 300, 200}})
    for (ScalarType dt : {kFloat, kDouble})
      for (int t = 0; t < 4; ++t) {
        ThreadCount count(static_cast<int>(threads));
        SCOPED_TRACE(::testing::Message() << scalar_type_name(dt) << " m=" << m << " n=" << n << " t=" << t);
        Tensor a = operand_matrix(m, k, t & 1, dt, 0.2), b = operand_matrix(k, n, t & 2, dt, 0.9);
        const double tol = dt == kDouble ? 1e-12 : 1e-4;
        expect_close(mm(a, b), naive_product(a.unsqueeze(0), b.unsqueeze(0)), tol, tol);
      }
}

TEST(Mm, EveryFloatGemmImplementationMatchesNaiveLoop) {
  // The autotuner's candidates (Note [sgemm autotuning]), each on every transpose, with a
  // padded output row (ldc > n), below and above the size that is tuned, with alpha = 1,
  // beta = 0 and with alpha = -2, beta = 0.5.
  using kernels::cpu::SgemmImpl;
  for (SgemmImpl impl :
       {SgemmImpl::Dnnl, SgemmImpl::MatmulPrimitive, SgemmImpl::OpenBlas, SgemmImpl::PackedMatmul})
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{67, 45, 53}, {130, 257, 129}})
      for (int t = 0; t < 4; ++t) {
        SCOPED_TRACE(::testing::Message()
                     << kernels::cpu::sgemm_impl_name(impl) << " m=" << m << " k=" << k << " n=" << n << " t=" << t);
        const bool ta = t & 1, tb = t & 2;
        Tensor a = operand_matrix(m, k, ta, kFloat, 0.1), b = operand_matrix(k, n, tb, kFloat, 0.7);
        const int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n + 3;
        for (const auto& [alpha, beta] : std::vector<std::pair<double, double>>{{1, 0}, {-2, 0.5}}) {
          Tensor c = operand_matrix(m, ldc, false, kFloat, 0.3).contiguous();
          Tensor c0 = c.slice(1, 0, n).contiguous();
          kernels::cpu::sgemm_on(impl, ta, tb, m, n, k, static_cast<float>(alpha), a.data_ptr<float>(), lda,
                                 b.data_ptr<float>(), ldb, static_cast<float>(beta), c.data_ptr<float>(), ldc);
          expect_close(c.slice(1, 0, n),
                       naive_product(a.unsqueeze(0), b.unsqueeze(0), alpha, beta, c0.to_vector<double>()), 1e-5, 1e-4);
        }
      }
}

TEST(Mm, LargeFloatProductsAreTimedOncePerShapeAndLogged) {
  testing::LogCapture logs("autotuning");
  const int64_t before = kernels::cpu::sgemm_tunings();
  // 256 x 128 x 160: 5.2M multiply-adds, above the 4M that are tuned.
  Tensor a = operand_matrix(256, 128, false, kFloat, 0.2), b = operand_matrix(128, 160, true, kFloat, 0.4);
  const std::vector<double> want = naive_product(a.unsqueeze(0), b.unsqueeze(0));
  expect_close(mm(a, b), want, 1e-5, 1e-4);
  EXPECT_EQ(kernels::cpu::sgemm_tunings(), before + 1) << "one shape, timed once";
  // b seen a second time: the shape is timed once more, with b's kept pack among the
  // candidates (Note [packed right operands]), and not again after.
  expect_close(mm(a, b), want, 1e-5, 1e-4);
  expect_close(mm(a, b), want, 1e-5, 1e-4);
  EXPECT_EQ(kernels::cpu::sgemm_tunings(), before + 2) << "the shape with b packed, timed once";
  Tensor b2 = operand_matrix(128, 161, true, kFloat, 0.4);
  expect_close(mm(a, b2), naive_product(a.unsqueeze(0), b2.unsqueeze(0)), 1e-5, 1e-4);
  EXPECT_EQ(kernels::cpu::sgemm_tunings(), before + 3) << "another shape, timed once more";
  const std::string text = logs.text();
  EXPECT_NE(text.find("sgemm 256x128x160 B^T"), std::string::npos) << text;
  EXPECT_NE(text.find("dnnl "), std::string::npos) << text;
  EXPECT_NE(text.find("matmul "), std::string::npos) << text;
  EXPECT_NE(text.find("openblas "), std::string::npos) << text;
  EXPECT_NE(text.find("b seen before): "), std::string::npos) << text;
  EXPECT_NE(text.find("packed "), std::string::npos) << text;
  EXPECT_NE(text.find(" -> "), std::string::npos) << text;
  // The packed shape's timing: the unpacked shape's winner beside the packed primitive
  // alone (the others lost already), in that order.
  const size_t first = text.find("sgemm 256x128x160 B^T (");
  const size_t arrow = text.find(" -> ", first), end_first = text.find('\n', arrow);
  ASSERT_NE(end_first, std::string::npos) << text;
  const std::string winner = text.substr(arrow + 4, end_first - arrow - 4);
  const size_t seen = text.find("b seen before): ");
  const std::string timed = text.substr(seen + 16, text.find(" -> ", seen) - seen - 16);
  EXPECT_EQ(timed.rfind(winner + " ", 0), 0u) << "starts with the unpacked winner: " << timed;
  EXPECT_NE(timed.find(", packed "), std::string::npos) << timed;
  size_t candidates = 0;
  for (size_t at = timed.find(" ms"); at != std::string::npos; at = timed.find(" ms", at + 1)) ++candidates;
  EXPECT_EQ(candidates, 2u) << timed;
}

// With EMBER_SGEMM=packed every tuned-size product runs on the packed primitive, so this
// test runs itself in a child process pinned so: a right operand is packed on its second
// sight and kept, packed again after an in-place write changes it, and a new operand in
// freed memory is not taken for the old one (Note [packed right operands]).
TEST(Mm, ARightOperandIsPackedOnItsSecondSightAndPackedAgainAfterAWrite) {
  const char* pinned = std::getenv("EMBER_SGEMM");
  if (pinned && std::string(pinned) == "packed") {
    using kernels::cpu::sgemm_operand_packs;
    NoGradGuard no_grad;
    // A linear layer's product: x [256, 128] @ w^T, w [160, 128] (5.2M multiply-adds,
    // above the 4M that are tuned), bias added as addmm does.
    Tensor x = operand_matrix(256, 128, false, kFloat, 0.2), x2 = operand_matrix(256, 128, false, kFloat, 1.1);
    Tensor bias = operand_matrix(1, 160, false, kFloat, 0.5).view({160});
    auto want = [&](const Tensor& in, const Tensor& w) {
      std::vector<double> c = bias.expand({256, 160}).contiguous().to_vector<double>();
      return naive_product(in.unsqueeze(0), w.t().unsqueeze(0), 1, 1, c);
    };
    const int64_t packs0 = sgemm_operand_packs();
    {
      Tensor w = operand_matrix(160, 128, false, kFloat, 0.7);
      expect_close(addmm(bias, x, w.t()), want(x, w), 1e-5, 1e-4);
      EXPECT_EQ(sgemm_operand_packs(), packs0) << "first sight: packed for the call alone";
      expect_close(addmm(bias, x, w.t()), want(x, w), 1e-5, 1e-4);
      EXPECT_EQ(sgemm_operand_packs(), packs0 + 1) << "second sight: packed and kept";
      expect_close(addmm(bias, x2, w.t()), want(x2, w), 1e-5, 1e-4);
      EXPECT_EQ(sgemm_operand_packs(), packs0 + 1) << "the kept pack serves another left operand";
      EXPECT_GT(kernels::cpu::sgemm_packed_bytes(), 0);
      w.mul_(-0.5);  // an in-place write bumps the storage's version
      expect_close(addmm(bias, x, w.t()), want(x, w), 1e-5, 1e-4);
      expect_close(addmm(bias, x, w.t()), want(x, w), 1e-5, 1e-4);
      EXPECT_EQ(sgemm_operand_packs(), packs0 + 2) << "the changed operand, packed again";
    }
    EXPECT_EQ(kernels::cpu::sgemm_packed_bytes(), 0) << "the pack is dropped with its storage";
    // Another operand of the same size, likely in the freed block: its own values.
    Tensor w2 = operand_matrix(160, 128, false, kFloat, 2.3);
    expect_close(addmm(bias, x, w2.t()), want(x, w2), 1e-5, 1e-4);
    expect_close(addmm(bias, x, w2.t()), want(x, w2), 1e-5, 1e-4);
    return;
  }
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "EMBER_SGEMM=packed '" + exe +
                          "' --gtest_filter=Mm.ARightOperandIsPackedOnItsSecondSightAndPackedAgainAfterAWrite "
                          ">/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "EMBER_SGEMM=packed: the child run failed";
}

// EMBER_SGEMM is read once per process, so this test runs itself in child processes:
// pinned, a large product is not timed and still right; a bad value is a ValueError
// naming the variable.
TEST(Mm, EmberSgemmPinsTheImplementation) {
  if (const char* pinned = std::getenv("EMBER_SGEMM")) {
    Tensor a = operand_matrix(256, 128, false, kFloat, 0.2), b = operand_matrix(128, 160, true, kFloat, 0.4);
    if (std::string(pinned) == "bogus") {
      EXPECT_NE(testing::error_of([&] { (void)mm(a, b); }, ErrorKind::ValueError)
                    .find("EMBER_SGEMM: expected auto, dnnl, matmul, openblas or packed, got 'bogus'"),
                std::string::npos);
      return;
    }
    expect_close(mm(a, b), naive_product(a.unsqueeze(0), b.unsqueeze(0)), 1e-5, 1e-4);
    EXPECT_EQ(kernels::cpu::sgemm_tunings(), 0) << "a pinned implementation is not timed";
    return;
  }
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const char* value : {"openblas", "matmul", "dnnl", "packed", "bogus"}) {
    const std::string cmd = std::string("EMBER_SGEMM=") + value + " '" + exe +
                            "' --gtest_filter=Mm.EmberSgemmPinsTheImplementation >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "EMBER_SGEMM=" << value << ": the child run failed";
  }
}

TEST(Mm, MetaTensorsGetShapeOnly) {
  Tensor r = mm(empty({5, 7}, kMeta), empty({7, 2}, kMeta));
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes(), IntArrayRef({5, 2}));
}

TEST(Bmm, MatchesTorch) {
  Tensor x = ar(24).view({2, 3, 4}) / 10, y = ar(40).view({2, 4, 5}) / 10 - 1;
  Tensor r = bmm(x, y);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 3, 5}));
  expect_close(r, {0.10000000894069672,  0.1600000113248825,  0.2200000286102295,
                   0.2799999713897705,   0.3400000035762787,  -0.29999998211860657,
                   -0.07999992370605469, 0.14000004529953003, 0.3599999248981476,
                   0.5799999833106995,   -0.699999988079071,  -0.3199998736381531,
                   0.06000000238418579,  0.43999993801116943, 0.8199999332427979,
                   9.699999809265137,    10.239998817443848,  10.780000686645508,
                   11.319999694824219,   11.860000610351562,  12.5,
                   13.199999809265137,   13.90000057220459,   14.59999942779541,
                   15.30000114440918,    15.299999237060547,  16.15999984741211,
                   17.020000457763672,   17.8799991607666,    18.739999771118164});
}

TEST(Bmm, BroadcastBatchAndTransposedOperand) {
  Tensor r = bmm(ar(6).view({1, 2, 3}).expand({2, 2, 3}), ar(24).view({2, 4, 3}).transpose(1, 2));
  expect_close(r, {5, 14, 23, 32, 14, 50, 86, 122, 41, 50, 59, 68, 158, 194, 230, 266});
}

TEST(Bmm, EveryBatchStrategyMatchesNaiveLoop) {
  // One product per thread for many small products and for a few mid-sized ones that keep
  // half the threads busy; large products threaded inside each. a is transposed per
  // matrix, b sliced in both dims (packed, per thread when split).
  for (const auto& [threads, batch, m, k, n] :
       std::vector<std::array<int64_t, 5>>{{3, 37, 33, 17, 29}, {3, 4, 100, 100, 100}, {2, 2, 330, 330, 330}}) {
    ThreadCount count(static_cast<int>(threads));
    for (ScalarType dt : {kFloat, kDouble}) {
      SCOPED_TRACE(::testing::Message() << scalar_type_name(dt) << " threads=" << threads << " batch=" << batch);
      Tensor a = sin(ar(batch * k * m, dt).view({batch, k, m}) * 0.11).transpose(1, 2);
      Tensor b = cos(ar(batch * 2 * k * 2 * n, dt).view({batch, 2 * k, 2 * n}) * 0.05)
                     .slice(1, 0, 2 * k, 2)
                     .slice(2, 1, 2 * n, 2);
      expect_close(bmm(a, b), naive_product(a, b), 1e-5, 1e-4);
    }
  }
}

TEST(Addmm, BetaAlphaAndBroadcastSelf) {
  Tensor a = ar(6).view({2, 3}), b = ar(12).view({3, 4}) - 5;
  expect_close(addmm(ar(4) - 1, a, b, 0.5, 2), {9.5, 16, 22.5, 29, -8.5, 16, 40.5, 65});
  expect_close(addmm(ar(2).view({2, 1}) * 10, a, b), {5, 8, 11, 14, 6, 18, 30, 42});
}

TEST(Addmm, BetaZeroIgnoresNanInSelf) {
  Tensor r = addmm(full({2, 3}, NAN), ones({2, 3}), ones({3, 3}), 0);
  expect_close(r, {3, 3, 3, 3, 3, 3});
}

TEST(Addmm, EmptyInnerDimLeavesBetaTimesSelf) {
  // PyTorch 1.13: 4 * 0.5 = 2 whatever alpha is; beta == 0 gives 0 even for a NaN self.
  expect_close(addmm(full({2, 3}, 4.0), ones({2, 0}), ones({0, 3}), 0.5, 3), {2, 2, 2, 2, 2, 2});
  expect_close(addmm(full({2, 3}, 4.0, kDouble), ones({2, 0}, kDouble), ones({0, 3}, kDouble), 0.5, 3),
               {2, 2, 2, 2, 2, 2});
  expect_close(addmm(full({2, 3}, NAN), ones({2, 0}), ones({0, 3}), 0), {0, 0, 0, 0, 0, 0});
}

TEST(Addmm, LargeProductsWithBetaAlphaAndStridedRowsMatchNaiveLoop) {
  // oneDNN's sgemm with beta and alpha on a product large enough to be threaded; rows with
  // a leading dimension past their length (slices) are read in place.
  const int64_t m = 256, k = 300, n = 200;
  for (int t = 0; t < 4; ++t) {
    SCOPED_TRACE(t);
    Tensor a = operand_matrix(m, k, t & 1, kFloat, 0.4), b = operand_matrix(k, n, t & 2, kFloat, 0.6);
    Tensor c = operand_matrix(m, n, false, kFloat, 0.8);
    expect_close(addmm(c, a, b, 0.5, -2), naive_product(a.unsqueeze(0), b.unsqueeze(0), -2, 0.5, c.to_vector<double>()),
                 1e-5, 1e-4);
    expect_close(addmm(full({m, n}, NAN), a, b, 0, 3), naive_product(a.unsqueeze(0), b.unsqueeze(0), 3), 1e-5, 1e-4);
  }
  Tensor a = sin(ar(m * (k + 5)).view({m, k + 5}) * 0.3).slice(1, 2, k + 2);
  Tensor b = cos(ar((k + 3) * n).view({k + 3, n}) * 0.2).slice(0, 1, k + 1);
  expect_close(mm(a, b), naive_product(a.unsqueeze(0), b.unsqueeze(0)), 1e-5, 1e-4);
}

TEST(Addmm, IntegerBetaAlpha) {
  Tensor a = ar(6, kInt64).view({2, 3}), b = ar(12, kInt64).view({3, 4}) - 5;
  Tensor r = addmm(ones({2, 4}, kInt64), a, b, 3, 2);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{13, 19, 25, 31, -5, 19, 43, 67}));
}

TEST(Dot, StridedVectors) {
  Tensor r = dot(ar(5) / 2, ar(10).slice(0, 0, 10, 2));
  EXPECT_EQ(r.dim(), 0);
  expect_close(r, {30});
}

TEST(Mv, TransposedMatrix) { expect_close(mv(ar(6).view({3, 2}).t(), ar(3) + 1), {16, 22}); }

TEST(Matmul, VectorVectorIsDot) {
  Tensor r = matmul(ar(3), ar(3));
  EXPECT_EQ(r.dim(), 0);
  expect_close(r, {5});
}

TEST(Matmul, VectorMatrixAndMatrixVector) {
  Tensor r = matmul(ar(3), ar(12).view({3, 4}));
  EXPECT_EQ(r.sizes(), IntArrayRef({4}));
  expect_close(r, {20, 23, 26, 29});
  Tensor s = matmul(ar(6).view({3, 2}).t(), ar(3) + 1);
  EXPECT_EQ(s.sizes(), IntArrayRef({2}));
  expect_close(s, {16, 22});
}

TEST(Matmul, BatchTimesMatrixFoldsToMm) {
  Tensor x = ar(24).view({2, 3, 4}) / 10;
  Tensor r = matmul(x, ar(20).view({4, 5}) / 10);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 3, 5}));
  expect_close(r, {0.7000000476837158, 0.7600000500679016, 0.8200000524520874,
                   0.8799999952316284, 0.9399999976158142, 1.899999976158142,
                   2.119999885559082,  2.3400001525878906, 2.559999942779541,
                   2.7799999713897705, 3.1000001430511475, 3.4800000190734863,
                   3.8600001335144043, 4.239999771118164,  4.619999885559082,
                   4.300000190734863,  4.840000152587891,  5.380000114440918,
                   5.919999599456787,  6.460000038146973,  5.5,
                   6.200000286102295,  6.900000095367432,  7.599999904632568,
                   8.300000190734863,  6.699999809265137,  7.559999942779541,
                   8.420000076293945,  9.279999732971191,  10.139999389648438});
  Tensor v = matmul(x, ar(4));
  EXPECT_EQ(v.sizes(), IntArrayRef({2, 3}));
  expect_close(v, {1.4000000953674316, 3.799999952316284, 6.200000286102295, 8.600000381469727, 10.999999046325684,
                   13.399999618530273});
}

TEST(Matmul, MatrixTimesBatchIsContiguous) {
  Tensor y = (ar(40).view({2, 4, 5}) / 10 - 1).slice(1, 0, 3);
  Tensor r = matmul(ar(6).view({2, 3}), y);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 2, 5}));
  EXPECT_EQ(r.strides(), IntArrayRef({10, 5, 1}));
  expect_close(r, {-0.5, -0.19999992847442627, 0.10000008344650269, 0.3999999165534973,  0.6999999284744263,
                   -5.0, -3.799999713897705,   -2.5999999046325684, -1.4000000953674316, -0.20000040531158447,
                   5.5,  5.799999713897705,    6.100000381469727,   6.399999618530273,   6.700000286102295,
                   19.0, 20.19999885559082,    21.400001525878906,  22.599998474121094,  23.80000114440918});
}

TEST(Matmul, VectorTimesBatch) {
  Tensor r = matmul(ar(4), ar(40).view({2, 4, 5}) / 10 - 1);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 5}));
  expect_close(r, {1.0, 1.600000023841858, 2.200000286102295, 2.799999713897705, 3.3999996185302734, 13.0,
                   13.600000381469727, 14.199999809265137, 14.800000190734863, 15.400001525878906});
}

TEST(Matmul, BroadcastsBatchDims) {
  Tensor r = matmul(ar(12).view({2, 1, 2, 3}), ar(18).view({3, 3, 2}) / 3);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 3, 2, 2}));
  expect_close(r, {3.3333334922790527, 4.3333330154418945, 9.333333969116211,  13.333333015441895, 9.333333015441895,
                   10.333333969116211, 33.333335876464844, 37.333335876464844, 15.333333969116211, 16.333332061767578,
                   57.333335876464844, 61.33333206176758,  15.333333969116211, 22.333332061767578, 21.33333396911621,
                   31.333332061767578, 57.333335876464844, 64.33333587646484,  81.33332824707031,  91.33333587646484,
                   99.33332824707031,  106.33332824707031, 141.3333282470703,  151.3333282470703});
}

TEST(Matmul, MetaShapesFollowTorch) {
  EXPECT_EQ(matmul(empty({7, 1, 4, 5}, kMeta), empty({3, 5, 6}, kMeta)).sizes(), IntArrayRef({7, 3, 4, 6}));
  EXPECT_EQ(matmul(empty({5}, kMeta), empty({2, 5, 6}, kMeta)).sizes(), IntArrayRef({2, 6}));
  EXPECT_EQ(matmul(empty({2, 4, 5}, kMeta), empty({5}, kMeta)).sizes(), IntArrayRef({2, 4}));
}

TEST(Matmul, TensorMethodForwards) {
  expect_close(ar(6).view({2, 3}).matmul(ar(12).view({3, 4}) - 5), {5, 8, 11, 14, -4, 8, 20, 32});
}

TEST(Linear, TwoDimWithBias) {
  Tensor r = linear(ar(6).view({2, 3}), (ar(12).view({3, 4}) - 5).t(), ar(4));
  expect_close(r, {5, 9, 13, 17, -4, 9, 22, 35});
}

TEST(Linear, ThreeDimContiguousWithBias) {
  Tensor r = linear(ar(24).view({2, 3, 4}) / 10, ar(8).view({2, 4}), tensor<float>({1, -1}));
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 3, 2}));
  expect_close(r, {2.4000000953674316, 2.8000001907348633, 4.800000190734863, 11.59999942779541, 7.200000286102295,
                   20.399999618530273, 9.600000381469727, 29.200000762939453, 12.0, 38.0, 14.399999618530273,
                   46.79999923706055});
}

TEST(Linear, VectorInputWithoutBias) {
  Tensor r = linear(ar(3), ar(6).view({2, 3}));
  EXPECT_EQ(r.sizes(), IntArrayRef({2}));
  expect_close(r, {5, 14});
}

TEST(Linear, NonContiguousFourDimWithBias) {
  Tensor r = linear(ar(24).view({2, 1, 3, 4}).transpose(2, 3), ar(6).view({2, 3}), tensor<float>({0.5, -0.5}));
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 1, 4, 2}));
  expect_close(r, {20.5, 55.5, 23.5, 67.5, 26.5, 79.5, 29.5, 91.5, 56.5, 199.5, 59.5, 211.5, 62.5, 223.5, 65.5, 235.5});
}

}  // namespace
}  // namespace ember
