// The lowerings that training graphs' backward halves need, compiled against eager:
// comparisons as masks fused into the where() that reads them (relu's backward), stored as
// bool when read elsewhere; reductions over the last dim whose users run over the row
// (softmax's backward, a row-shaped epilogue); two means over the same rows in one kernel
// (layer norm's backward); and the backward graphs of relu, softmax, layer norm and GELU
// blocks trained through the inductor. Odd sizes (vector tails), f32 and f64, transposed
// inputs. See Note [inductor], "Training graphs".
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/dispatch.h"
#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;
using BackwardLoweringTest = testing::CompileDirTest;

Tensor call1(const std::string& op, Stack args) { return call_op(op, std::move(args)).at(0).to_tensor(); }

/// Every value equal (the compiled formula is eager's, operation by operation).
void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.to(kDouble).to_vector<double>(), want.to(kDouble).to_vector<double>()) << what;
}

size_t extern_count(const inductor::CompileReport& r, const std::string& op) {
  size_t n = 0;
  for (const std::string& e : r.extern_calls) n += e == op;
  return n;
}

class ComparisonCase : public BackwardLoweringTest, public ::testing::WithParamInterface<ScalarType> {};

// where(cmp(x, y), g, -g) for every comparison overload: one kernel, eager's values, on a
// transposed x of odd sizes; ties (x == y in places) exercise eq/le/ge.
TEST_P(ComparisonCase, EveryComparisonFusesIntoItsWhereAndEqualsEager) {
  const ScalarType dtype = GetParam();
  testing::LogCapture logs("inductor,fusion");
  auto fn = [](const Tensor& xt, const Tensor& y, const Tensor& g) {
    const Tensor x = xt.t();
    std::vector<Tensor> outs;
    for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      outs.push_back(where(call1(std::string("aten::") + op + ".Tensor", {x, y}), g, -g));
      outs.push_back(where(call1(std::string("aten::") + op + ".Scalar", {x, Scalar(0.25)}), g, g * 2));
    }
    return outs;
  };
  Tensor xt = randn({13, 7}, dtype), y = randn({7, 13}, dtype), g = randn({7, 13}, dtype);
  {
    NoGradGuard no_grad;
    xt.t().slice(1, 0, 4).copy_(y.slice(1, 0, 4));  // ties
    xt.t().slice(1, 4, 6).fill_(0.25);
  }
  auto compiled = compile(fn, {.backend = "inductor"});
  const std::vector<Tensor> got = compiled(xt, y, g), want = fn(xt, y, g);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_equal(got[i], want[i], "output " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  // Twelve outputs read x, y or g: sibling fusion makes them one kernel.
  EXPECT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("extern fallback"), std::string::npos) << logs.text();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ComparisonCase, ::testing::Values(kFloat, kDouble),
                         [](const ::testing::TestParamInfo<ScalarType>& i) { return i.param == kFloat ? "F32" : "F64"; });

TEST_F(BackwardLoweringTest, AComparisonReadOutsideItsKernelIsStoredAsBool) {
  // (x > y) is a graph output and where's condition: the kernel computes the mask once,
  // stores it as bool (vector lanes and the scalar tail: 37 elements) and selects with it.
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor m = x > y;
    return std::vector<Tensor>{m, where(m, x, y), x.t() <= 0.5};
  };
  const Tensor x = randn({37}), y = randn({37});
  auto compiled = compile(fn, {.backend = "inductor"});
  const Tensor x2 = randn({5, 5}), y2 = randn({5, 5});
  auto fn2 = [](const Tensor& x, const Tensor& y) { return std::vector<Tensor>{x > y, where(x > y, x, y), x.t() <= 0.5}; };
  auto compiled2 = compile(fn2, {.backend = "inductor"});
  for (const auto& [got, want] : {std::pair{compiled(x, y), fn(x, y)}, std::pair{compiled2(x2, y2), fn2(x2, y2)}}) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_equal(got[i], want[i], "output " + std::to_string(i));
    EXPECT_EQ(got[0].dtype(), kBool);
  }
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty());
  EXPECT_NE(r.source.find("st_mask("), std::string::npos) << "a vector loop storing a mask";
}

TEST_F(BackwardLoweringTest, AComparisonOfTwoDtypesStaysAnExternCallWithItsReason) {
  // Eager compares f32 with f64 in f64 (the promoted type); the lowering declines.
  testing::LogCapture logs("inductor");
  auto fn = [](const Tensor& x, const Tensor& y) { return where(x <= y, x, x * 2); };
  const Tensor x = randn({4, 5}), y = randn({4, 5}, kDouble);
  auto compiled = compile(fn, {.backend = "inductor"});
  expect_equal(compiled(x, y), fn(x, y), "where(x <= y, …)");
  EXPECT_EQ(extern_count(inductor::last_compile_report(), "aten::le.Tensor"), 1u);
  EXPECT_NE(logs.text().find("aten::le.Tensor (%le): its inputs' dtypes differ"), std::string::npos) << logs.text();
}

class RowEpilogueCase : public BackwardLoweringTest, public ::testing::WithParamInterface<ScalarType> {};

// Softmax's backward formula: gy = g * y; gy - y * sum(gy, -1, keepdim). The sum and its
// row-shaped epilogue are one row kernel; y is read transposed.
TEST_P(RowEpilogueCase, SoftmaxBackwardIsOneRowKernelAndEqualsEager) {
  const ScalarType dtype = GetParam();
  testing::LogCapture logs("fusion");
  auto fn = [](const Tensor& yt, const Tensor& g) {
    const Tensor y = yt.t();
    const Tensor gy = g * y;
    return gy - y * sum(gy, {-1}, /*keepdim=*/true);
  };
  const Tensor yt = softmax(randn({37, 9}, dtype), 0), g = randn({9, 37}, dtype);
  auto compiled = compile(fn, {.backend = "inductor"});
  const Tensor got = compiled(yt, g);
  const inductor::CompileReport r = inductor::last_compile_report();
  expect_close(got, fn(yt, g), dtype == kFloat ? 1e-6 : 1e-14, dtype == kFloat ? 1e-6 : 1e-14, r.source);
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_EQ(r.kernels[0].second.size(), 4u) << "mul, sum, mul, sub\n" << logs.text();
  EXPECT_NE(logs.text().find("fused %sum (sum row) with its epilogue"), std::string::npos) << logs.text();
}

// Layer norm's backward formula (derivatives_nn.cpp): two means over the row, each its own
// pass, and the input gradient in the last pass: one kernel.
TEST_P(RowEpilogueCase, LayerNormBackwardsTwoMeansShareOneRowKernel) {
  const ScalarType dtype = GetParam();
  testing::LogCapture logs("fusion");
  auto fn = [](const Tensor& x, const Tensor& g, const Tensor& w, const Tensor& mu, const Tensor& rstd) {
    const Tensor x_hat = (x - mu) * rstd;
    const Tensor g_hat = g * w;
    const Tensor a = mean(g_hat, {-1}, /*keepdim=*/true);
    const Tensor b = mean(g_hat * x_hat, {-1}, /*keepdim=*/true);
    return (g_hat - a - x_hat * b) * rstd;
  };
  const Tensor x = randn({11, 45}, dtype), g = randn({11, 45}, dtype), w = randn({45}, dtype);
  const Tensor mu = mean(x, {-1}, true), rstd = rsqrt(var(x, std::vector<int64_t>{-1}, Scalar(0), true) + 1e-5);
  auto compiled = compile(fn, {.backend = "inductor"});
  expect_close(compiled(x, g, w, mu, rstd), fn(x, g, w, mu, rstd), dtype == kFloat ? 1e-5 : 1e-13,
               dtype == kFloat ? 1e-5 : 1e-13);
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_NE(logs.text().find("a further reduction over the rows of"), std::string::npos) << logs.text();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RowEpilogueCase, ::testing::Values(kFloat, kDouble),
                         [](const ::testing::TestParamInfo<ScalarType>& i) { return i.param == kFloat ? "F32" : "F64"; });

TEST_F(BackwardLoweringTest, RowShapedEpiloguesOfLongRowsAndBesideSoftmaxOrLayerNormEqualEager) {
  // One row of 40001 (a reduction to one row splits across threads), three of them, and a
  // reduction whose readers also read a layer norm or softmax of the same rows (those keep
  // a kernel of their own: a further row joins only a reduction's).
  auto fn = [](const Tensor& x, const Tensor& w) {
    const Tensor gy = x * w;
    const Tensor m = mean(x, {-1}, true);  // before the layer norm: the scheduler meets it second
    const Tensor ln = layer_norm(x, {x.size(-1)}, std::nullopt, std::nullopt, 1e-5);
    return std::vector<Tensor>{gy - x * sum(gy, {-1}, true),
                               (gy - mean(gy, {-1}, true) - x * mean(gy * x, {-1}, true)) * 0.5,
                               ln * m, softmax(x, -1) - sum(x, {-1}, true)};
  };
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{1, 40001}, std::vector<int64_t>{3, 40001}}) {
    const Tensor x = randn(sizes), w = randn({sizes.back()});
    auto compiled = compile(fn, {.backend = "inductor"});
    const std::vector<Tensor> got = compiled(x, w), want = fn(x, w);
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-4, 1e-4, "output " + std::to_string(i));
    EXPECT_TRUE(inductor::last_compile_report().extern_calls.empty());
  }
}

TEST_F(BackwardLoweringTest, AMeanReadByAnotherReductionsInputIsNotAFurtherRowOfItsKernel) {
  // A variance written out: the second mean's input (x - mean)^2 reads the first mean, so
  // that mean must be computed before the second's pass: it keeps a row kernel of its own.
  testing::LogCapture logs("fusion");
  auto fn = [](const Tensor& x) {
    const Tensor d = x - mean(x, {-1}, true);
    return d * mean(d * d, {-1}, true);
  };
  const Tensor x = randn({6, 37});
  auto compiled = compile(fn, {.backend = "inductor"});
  expect_close(compiled(x), fn(x), 1e-5, 1e-5);
  EXPECT_EQ(inductor::last_compile_report().kernels.size(), 2u) << logs.text();
  EXPECT_NE(logs.text().find("computes the input of its kernel's reduction"), std::string::npos) << logs.text();
}

TEST_F(BackwardLoweringTest, OnlyAKeepdimReductionOverTheLastDimFeedsARowShapedEpilogue) {
  // x - sum(x, -1) (no keepdim) broadcasts the sums along the *last* dim: its reader is no
  // row-shaped epilogue. Nor is a column sum's reader, x - sum(x, 0, keepdim).
  auto fn = [](const Tensor& x) {
    return std::vector<Tensor>{x - sum(x, {-1}), x - sum(x, {0}, true), x * sum(x.t(), {-1}, true)};
  };
  const Tensor x = randn({9, 9});
  auto compiled = compile(fn, {.backend = "inductor"});
  const std::vector<Tensor> got = compiled(x), want = fn(x);
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-6, 1e-6, "output " + std::to_string(i));
}

class TrainedBackwardCase : public BackwardLoweringTest, public ::testing::WithParamInterface<ScalarType> {};

// relu's derivative is masked_fill(grad, result <= 0, 0), GELU's (both forms), tanh's and
// sigmoid's chains of pointwise ops: the backward graph is one kernel, no extern call,
// eager's gradients.
TEST_P(TrainedBackwardCase, ReluGeluTanhSigmoidBackwardIsOneKernelWithoutExternCalls) {
  const ScalarType dtype = GetParam();
  testing::LogCapture logs("inductor,fusion,aot_graphs");
  auto fn = [](const Tensor& x) {
    return gelu(relu(x) * 2 - 0.5, "tanh") + gelu(x, "none") * tanh(x) - sigmoid(x * 3);
  };
  const Tensor x0 = randn({7, 13}, dtype), g = randn({7, 13}, dtype);
  auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f) {
    Tensor x = x0.detach().clone().requires_grad_();
    f(x).backward(g);
    return x.grad();
  };
  auto compiled = compile(fn, {.backend = "inductor", .name = "fn"});
  const Tensor got = grad_of([&](const Tensor& x) { return compiled(x); }), want = grad_of(fn);
  expect_close(got, want, dtype == kFloat ? 1e-6 : 1e-14, dtype == kFloat ? 1e-6 : 1e-14);
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.graph_name, "fn_backward");
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  EXPECT_EQ(r.kernels.size(), 1u) << logs.text();
}

// Softmax's and layer norm's backward through a compiled training step: their reductions
// fuse with the row-shaped epilogue, and the bias-gradient sums are column kernels.
TEST_P(TrainedBackwardCase, SoftmaxAndLayerNormBackwardEqualEager) {
  const ScalarType dtype = GetParam();
  testing::LogCapture logs("inductor,fusion");
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return softmax(layer_norm(x, {x.size(-1)}, w, b, 1e-5), -1) * 3;
  };
  const Tensor x0 = randn({5, 9, 37}, dtype), w0 = randn({37}, dtype), b0 = randn({37}, dtype),
               g = randn({5, 9, 37}, dtype);
  auto grads_of = [&](const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f) {
    Tensor x = x0.detach().clone().requires_grad_(), w = w0.detach().clone().requires_grad_(),
           b = b0.detach().clone().requires_grad_();
    f(x, w, b).backward(g);
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  auto compiled = compile(fn, {.backend = "inductor", .name = "fn"});
  const std::vector<Tensor> got = grads_of([&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return compiled(x, w, b);
  });
  const std::vector<Tensor> want = grads_of(fn);
  const double tol = dtype == kFloat ? 2e-5 : 1e-12;
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], tol, tol, "gradient " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.graph_name, "fn_backward");
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  EXPECT_NE(logs.text().find("a further reduction over the rows of"), std::string::npos) << logs.text();
}

// A sum over dim 1 of a 3-, 4- and 5-D input, compiled, then backward: its formula expands
// the unsqueezed gradient back over dim 1 (a stride-0 view the backward graph records), and
// the gradient that reaches the backward graph is either contiguous or itself an expanded
// scalar (`.sum().backward()`): both give eager's gradient, under both backends.
class ReducedGradExpandCase : public BackwardLoweringTest,
                              public ::testing::WithParamInterface<std::tuple<int64_t, std::string>> {};

TEST_P(ReducedGradExpandCase, SumOverDimOneBackwardEqualsEagerForContiguousAndExpandedGradients) {
  const auto [rank, backend] = GetParam();
  const std::vector<int64_t> all{2, 3, 4, 5, 6};
  const std::vector<int64_t> sizes(all.begin(), all.begin() + rank);
  auto fn = [](const Tensor& x) { return (relu(x) * 2).sum({1}); };
  const Tensor x0 = randn(sizes);
  std::vector<int64_t> out_sizes = sizes;
  out_sizes.erase(out_sizes.begin() + 1);
  const Tensor g = randn(out_sizes);
  auto compiled = compile(fn, {.backend = backend, .name = "fn"});
  for (const bool expanded : {false, true}) {
    auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f) {
      Tensor x = x0.detach().clone().requires_grad_();
      if (expanded) f(x).sum().backward();
      else f(x).backward(g);
      return x.grad();
    };
    const Tensor got = grad_of([&](const Tensor& x) { return compiled(x); }), want = grad_of(fn);
    expect_close(got, want, 1e-6, 1e-6, expanded ? "expanded gradient" : "contiguous gradient");
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReducedGradExpandCase,
                         ::testing::Combine(::testing::Values(int64_t{3}, int64_t{4}, int64_t{5}),
                                            ::testing::Values(std::string("aot_eager"), std::string("inductor"))),
                         [](const ::testing::TestParamInfo<std::tuple<int64_t, std::string>>& i) {
                           return std::to_string(std::get<0>(i.param)) + "D_" + std::get<1>(i.param);
                         });

INSTANTIATE_TEST_SUITE_P(Dtypes, TrainedBackwardCase, ::testing::Values(kFloat, kDouble),
                         [](const ::testing::TestParamInfo<ScalarType>& i) { return i.param == kFloat ? "F32" : "F64"; });

}  // namespace
}  // namespace ember
