// Finite-difference gradcheck (float64) of every op that has a derivative formula, on
// broadcast, strided and multi-output cases; a coverage test fails when an op gains a
// formula without a case here.
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "autograd/gradcheck.h"
#include "ember/ember.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

using autograd::GradcheckFn;
using ops::call_op;
using ops::call_op_tensor;
using V = std::vector<Tensor>;

/// Deterministic values in [lo, hi], with a random sign when `signed_` (|v| >= lo then).
Tensor rnd(std::vector<int64_t> sizes, uint32_t seed, double lo = -1, double hi = 1, bool signed_ = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  uint64_t state = seed * 2654435761u + 12345;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) / static_cast<double>(1ull << 53);
    double x = lo + (hi - lo) * u;
    if (signed_ && ((state >> 7) & 1)) x = -x;
    v.push_back(x);
  }
  return tensor(v, sizes);
}

Tensor mask23() { return tensor<bool>({true, false, true, false, false, true}, {2, 3}); }

struct Case {
  std::string op;  // the registry op whose formula the case exercises
  GradcheckFn fn;
  V inputs;
};

/// Convolution, pooling, batch norm and embedding (formulas calling the backward ops).
void nn_cases(std::vector<Case>& c) {
  auto conv = [](bool transposed, std::vector<int64_t> stride, std::vector<int64_t> padding,
                 std::vector<int64_t> dilation, std::vector<int64_t> output_padding, int64_t groups) {
    return [=](const V& v) {
      std::optional<Tensor> bias = v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt;
      return V{convolution(v[0], v[1], bias, stride, padding, dilation, transposed, output_padding, groups)};
    };
  };
  c.push_back({"aten::convolution", conv(false, {2, 1}, {1, 0}, {1, 2}, {0, 0}, 2),
               {rnd({2, 4, 5, 6}, 40), rnd({4, 2, 3, 2}, 41), rnd({4}, 42)}});
  c.push_back({"aten::convolution", conv(false, {1}, {1}, {1}, {0}, 1), {rnd({2, 3, 7}, 43), rnd({2, 3, 3}, 44)}});
  c.push_back({"aten::convolution", conv(true, {2, 2}, {1, 0}, {1, 1}, {1, 0}, 2),
               {rnd({1, 4, 3, 3}, 45), rnd({4, 1, 3, 2}, 46), rnd({2}, 47)}});
  // output_padding >= stride (allowed below the dilation): the input gradient is cropped.
  c.push_back({"aten::convolution", conv(true, {1}, {0}, {2}, {1}, 1), {rnd({2, 2, 4}, 48), rnd({2, 3, 2}, 49)}});

  Tensor img = rnd({2, 2, 5, 5}, 50);  // distinct values: no ties between window maxima
  c.push_back({"aten::max_pool2d_with_indices",
               [](const V& v) { return V{std::get<0>(max_pool2d_with_indices(v[0], {3, 3}, {2, 1}, {1, 1}))}; },
               {img}});
  c.push_back({"aten::max_pool2d_with_indices",
               [](const V& v) { return V{std::get<0>(max_pool2d_with_indices(v[0], {2, 2}, {}, {0, 0}, {2, 2}, true))}; },
               {img}});
  c.push_back({"aten::avg_pool2d", [](const V& v) { return V{avg_pool2d(v[0], {3, 2}, {2, 2}, {1, 1}, true, false)}; },
               {img}});
  c.push_back({"aten::avg_pool2d", [](const V& v) { return V{avg_pool2d(v[0], {2, 2}, {1, 1}, {0, 0}, false, true, 3)}; },
               {img}});
  c.push_back({"aten::_adaptive_avg_pool2d", [](const V& v) { return V{adaptive_avg_pool2d(v[0], {3, 2})}; },
               {img}});

  auto bn = [](bool train, bool affine) {
    return [=](const V& v) {
      std::optional<Tensor> w, b;
      if (affine) {
        w = v[1];
        b = v[2];
      }
      Tensor rm = zeros({3}, kDouble), rv = ones({3}, kDouble) * 1.5;
      return V{std::get<0>(native_batch_norm(v[0], w, b, rm, rv, train, 0.1, 1e-5))};
    };
  };
  Tensor bx = rnd({4, 3, 2}, 51), bw = rnd({3}, 52, 0.5, 1.5), bb = rnd({3}, 53);
  c.push_back({"aten::native_batch_norm", bn(true, true), {bx, bw, bb}});
  c.push_back({"aten::native_batch_norm", bn(true, false), {rnd({5, 3}, 54)}});
  c.push_back({"aten::native_batch_norm", bn(false, true), {bx, bw, bb}});

  // The fused attention: its formula is the backward op (Note [flash attention backward]).
  auto attention = [](bool causal, std::optional<Tensor> mask, std::optional<double> scale) {
    return [=](const V& v) {
      return V{std::get<0>(_scaled_dot_product_flash_attention_for_cpu(v[0], v[1], v[2], 0.0, causal, mask, scale))};
    };
  };
  c.push_back({"aten::_scaled_dot_product_flash_attention_for_cpu", attention(true, std::nullopt, std::nullopt),
               {rnd({2, 2, 5, 3}, 55), rnd({2, 2, 6, 3}, 56), rnd({2, 2, 6, 4}, 57)}});
  c.push_back({"aten::_scaled_dot_product_flash_attention_for_cpu", attention(false, rnd({5, 6}, 58), 0.7),
               {rnd({1, 2, 5, 3}, 59), rnd({1, 2, 6, 3}, 60).transpose(1, 2).contiguous().transpose(1, 2),
                rnd({1, 2, 6, 3}, 61)}});

}

/// Sorting, scattering, indexing and the remaining elementwise and linalg formulas.
/// The complex views and the transforms, as real functions of real tensors: a complex
/// value enters as view_as_complex of its (real, imaginary) pairs and leaves as
/// view_as_real (gradcheck differentiates real values; Note [complex dtypes]).
void fft_cases(std::vector<Case>& c) {
  const Tensor pairs = rnd({4, 2}, 81), grid = rnd({3, 4, 2}, 82), half = rnd({3, 3, 2}, 83), sig = rnd({3, 5}, 84);
  c.push_back({"aten::view_as_real",
               [](const V& v) { return V{view_as_real(_fft_c2c(view_as_complex(v[0]), {0}, 0, true))}; }, {pairs}});
  c.push_back({"aten::view_as_complex", [](const V& v) { return V{_fft_c2r(view_as_complex(v[0]), {0}, 2, 6)}; },
               {pairs}});
  c.push_back({"aten::_fft_c2c",
               [](const V& v) { return V{view_as_real(_fft_c2c(view_as_complex(v[0]), {0, 1}, 1, false))}; },
               {grid}});
  c.push_back({"aten::_fft_r2c", [](const V& v) { return V{view_as_real(_fft_r2c(v[0], {1}, 0, true))}; }, {sig}});
  c.push_back({"aten::_fft_r2c", [](const V& v) { return V{view_as_real(_fft_r2c(v[0], {0, 1}, 2, false))}; }, {sig}});
  c.push_back({"aten::_fft_c2r", [](const V& v) { return V{_fft_c2r(view_as_complex(v[0]), {0, 1}, 1, 5)}; }, {half}});
  c.push_back({"aten::_fft_c2r", [](const V& v) { return V{_fft_c2r(view_as_complex(v[0]), {1}, 0, 4)}; }, {half}});
}

/// Complex arithmetic, as real functions of (real, imaginary) pairs like fft_cases: the
/// finite differences check the conjugate Wirtinger convention of the formulas (Note
/// [complex dtypes]), a real operand of a complex product included (its gradient is the
/// real part).
void complex_arith_cases(std::vector<Case>& c) {
  const Tensor a = rnd({3, 4, 2}, 91), b = rnd({4, 2}, 92, 0.5, 1.5, true), r = rnd({3, 4}, 93);
  auto vc = [](const Tensor& t) { return view_as_complex(t); };
  c.push_back({"aten::_conj_physical", [vc](const V& v) { return V{view_as_real(conj_physical(vc(v[0])))}; }, {a}});
  c.push_back({"aten::mul.Tensor", [vc](const V& v) { return V{view_as_real(mul(vc(v[0]), vc(v[1])))}; }, {a, b}});
  c.push_back({"aten::mul.Tensor", [vc](const V& v) { return V{view_as_real(mul(vc(v[0]), v[1]))}; }, {a, r}});
  c.push_back({"aten::div.Tensor", [vc](const V& v) { return V{view_as_real(div(vc(v[0]), vc(v[1])))}; }, {a, b}});
  c.push_back({"aten::div.Tensor", [vc](const V& v) { return V{view_as_real(div(v[0], vc(v[1])))}; }, {r, b}});
  c.push_back({"aten::add.Tensor", [vc](const V& v) { return V{view_as_real(add(vc(v[0]), vc(v[1]), 2.5))}; }, {a, b}});
  c.push_back({"aten::sub.Tensor", [vc](const V& v) { return V{view_as_real(sub(vc(v[0]), v[1], -1.5))}; }, {a, r}});
  c.push_back({"aten::neg", [vc](const V& v) { return V{view_as_real(neg(vc(v[0])))}; }, {a}});
  c.push_back({"aten::exp", [vc](const V& v) { return V{view_as_real(exp(vc(v[0])))}; }, {a}});
  c.push_back({"aten::log", [vc](const V& v) { return V{view_as_real(log(vc(v[0])))}; }, {b}});
  c.push_back({"aten::sqrt", [vc](const V& v) { return V{view_as_real(sqrt(vc(v[0])))}; }, {b}});
  c.push_back({"aten::reciprocal", [vc](const V& v) { return V{view_as_real(reciprocal(vc(v[0])))}; }, {b}});
  c.push_back({"aten::mean.dim", [vc](const V& v) { return V{view_as_real(vc(v[0]).mean(std::vector<int64_t>{0}))}; },
               {a}});
  c.push_back({"aten::sum",
               [vc](const V& v) { return V{view_as_real((vc(v[0]) * vc(v[0])).sum())}; }, {a}});  // z used twice
}

void more_cases(std::vector<Case>& c) {
  fft_cases(c);
  complex_arith_cases(c);
  Tensor m = rnd({3, 4}, 60);
  c.push_back({"aten::sort", [](const V& v) { return V{std::get<0>(sort(v[0], 0, true))}; }, {m}});
  c.push_back({"aten::sort.stable",
               [](const V& v) {
                 return V{call_op("aten::sort.stable", {v[0], true, int64_t{-1}, false}).at(0).to_tensor()};
               },
               {m}});
  c.push_back({"aten::topk", [](const V& v) { return V{std::get<0>(topk(v[0], 2, 1, false))}; }, {m}});
  // (ties share the gradient evenly, which finite differences cannot see: checked against PyTorch instead)
  c.push_back({"aten::max", [](const V& v) { return V{max(v[0])}; }, {m}});
  c.push_back({"aten::min", [](const V& v) { return V{min(v[0])}; }, {m}});

  Tensor sidx = tensor<int64_t>({1, 3, 0, 2, 0, 3}, {2, 3});  // distinct per row: no write races
  c.push_back({"aten::scatter.src", [sidx](const V& v) { return V{scatter(v[0], 1, sidx, v[1])}; },
               {m, rnd({2, 4}, 61)}});
  c.push_back({"aten::scatter.value", [sidx](const V& v) { return V{scatter(v[0], 1, sidx, Scalar(2.0))}; }, {m}});
  Tensor rows = tensor<int64_t>({2, 0}, {2});
  c.push_back({"aten::index_put", [rows](const V& v) { return V{index_put(v[0], {rows}, v[1])}; },
               {m, rnd({4}, 62)}});
  c.push_back({"aten::index_put",
               [](const V& v) { return V{index_put(v[0], {tensor<int64_t>({1, 1, 0}, {3})}, v[1], true)}; },
               {m, rnd({3, 4}, 63)}});

  Tensor a = rnd({2, 3}, 64), b = rnd({3}, 65, 0.3, 1, true);
  c.push_back({"aten::dot", [](const V& v) { return V{dot(v[0], v[1])}; }, {rnd({4}, 66), rnd({4}, 67)}});
  c.push_back({"aten::mv", [](const V& v) { return V{mv(v[0], v[1])}; }, {a, rnd({3}, 68)}});
  Tensor num = rnd({2, 3}, 69, -3, 3);  // kept away from multiples of b, where fmod jumps
  c.push_back({"aten::fmod.Tensor", [](const V& v) { return V{fmod(v[0], v[1])}; }, {num, b}});
  c.push_back({"aten::fmod.Scalar", [](const V& v) { return V{fmod(v[0], Scalar(0.7))}; }, {num}});
  c.push_back({"aten::remainder.Tensor", [](const V& v) { return V{remainder(v[0], v[1])}; }, {num, b}});
  c.push_back({"aten::remainder.Scalar", [](const V& v) { return V{remainder(v[0], Scalar(0.7))}; }, {num}});
  c.push_back({"aten::_div_trunc", [](const V& v) { return V{div(v[0], v[1], "trunc")}; }, {num, b}});
  c.push_back({"aten::_div_floor", [](const V& v) { return V{div(v[0], v[1], "floor")}; }, {num, b}});
  c.push_back({"aten::bernoulli",
               [](const V& v) {
                 manual_seed(3);
                 return V{bernoulli(v[0]) * v[0]};
               },
               {rnd({3, 4}, 70, 0.2, 0.8)}});
  c.push_back({"aten::as_strided", [](const V& v) { return V{v[0].as_strided({2, 2}, {1, 2}, 1)}; }, {m}});
  c.push_back({"aten::as_strided", [](const V& v) { return V{v[0].expand({3, 4}).as_strided({2, 3}, {1, 1})}; },
               {rnd({4}, 71)}});
}

std::vector<Case> cases() {
  std::vector<Case> c;
  auto unary = [&](const char* op, Tensor (*f)(const Tensor&, Loc), Tensor x) {
    c.push_back({op, [f](const V& v) { return V{f(v[0], Loc::current())}; }, {x}});
  };
  Tensor any = rnd({2, 3}, 1, -2, 2);
  Tensor pos = rnd({2, 3}, 2, 0.2, 2);
  Tensor away = rnd({2, 3}, 3, 0.2, 1, true);  // |x| >= 0.2: away from kinks at 0
  unary("aten::abs", abs, away);
  unary("aten::neg", neg, any);
  unary("aten::exp", exp, any);
  unary("aten::expm1", expm1, any);
  unary("aten::log", log, pos);
  unary("aten::log1p", log1p, pos);
  unary("aten::log2", log2, pos);
  unary("aten::sqrt", sqrt, pos);
  unary("aten::rsqrt", rsqrt, pos);
  unary("aten::reciprocal", reciprocal, away);
  unary("aten::sin", sin, any);
  unary("aten::cos", cos, any);
  unary("aten::tanh", tanh, any);
  unary("aten::sigmoid", sigmoid, any);
  unary("aten::relu", relu, away);
  unary("aten::silu", silu, any);
  unary("aten::erf", erf, any);
  unary("aten::sign", sign, away);
  Tensor off_grid = rnd({2, 3}, 4, 0.1, 0.4) + tensor<double>({-2, -1, 0, 1, 2, 3}, {2, 3});
  unary("aten::floor", floor, off_grid);
  unary("aten::ceil", ceil, off_grid);
  unary("aten::round", round, off_grid);
  unary("aten::trunc", trunc, off_grid);
  c.push_back({"aten::gelu", [](const V& v) { return V{gelu(v[0])}; }, {any}});
  c.push_back({"aten::gelu", [](const V& v) { return V{gelu(v[0], "tanh")}; }, {any}});
  Tensor unit = rnd({2, 3}, 8, -0.8, 0.8), above1 = rnd({2, 3}, 9, 1.2, 3);
  unary("aten::acos", acos, unit);
  unary("aten::asin", asin, unit);
  unary("aten::atan", atan, any);
  unary("aten::acosh", acosh, above1);
  unary("aten::asinh", asinh, any);
  unary("aten::atanh", atanh, unit);
  unary("aten::sinh", sinh, any);
  unary("aten::cosh", cosh, any);
  unary("aten::tan", tan, unit);
  unary("aten::log10", log10, pos);

  Tensor a = rnd({2, 3}, 5), b = rnd({3}, 6), b_away = rnd({3}, 7, 0.3, 1, true);
  c.push_back({"aten::add.Tensor", [](const V& v) { return V{add(v[0], v[1], 2.5)}; }, {a, b}});
  c.push_back({"aten::add.Scalar", [](const V& v) { return V{add(v[0], Scalar(2.0))}; }, {a}});
  c.push_back({"aten::sub.Tensor", [](const V& v) { return V{sub(v[1], v[0], 0.5)}; }, {a, b}});
  c.push_back({"aten::sub.Scalar", [](const V& v) { return V{sub(v[0], Scalar(2.0))}; }, {a}});
  c.push_back({"aten::mul.Tensor", [](const V& v) { return V{v[0] * v[1]}; }, {a, b}});
  c.push_back({"aten::mul.Scalar", [](const V& v) { return V{v[0] * 3.0}; }, {a}});
  c.push_back({"aten::div.Tensor", [](const V& v) { return V{v[0] / v[1]}; }, {a, b_away}});
  c.push_back({"aten::div.Scalar", [](const V& v) { return V{v[0] / 4.0}; }, {a}});
  c.push_back({"aten::pow.Tensor_Scalar", [](const V& v) { return V{pow(v[0], Scalar(2.5))}; }, {pos}});
  c.push_back({"aten::pow.Tensor_Scalar", [](const V& v) { return V{pow(v[0], Scalar(3))}; }, {any}});
  c.push_back({"aten::pow.Tensor_Scalar", [](const V& v) { return V{pow(v[0], Scalar(0))}; }, {any}});
  c.push_back({"aten::pow.Tensor_Tensor", [](const V& v) { return V{pow(v[0], v[1])}; }, {pos, rnd({3}, 8)}});
  Tensor a2 = rnd({2, 3}, 9);  // distinct from `a` everywhere (no ties)
  c.push_back({"aten::maximum", [](const V& v) { return V{maximum(v[0], v[1])}; }, {a, a2}});
  c.push_back({"aten::minimum", [](const V& v) { return V{minimum(v[0], v[1])}; }, {a, a2}});
  c.push_back({"aten::atan2", [](const V& v) { return V{atan2(v[0], v[1])}; }, {a, b_away}});
  c.push_back({"aten::where.self", [](const V& v) { return V{where(v[0], v[1], v[2])}; }, {mask23(), a, b}});
  c.push_back({"aten::where.ScalarSelf", [](const V& v) { return V{where(v[0], Scalar(1.5), v[1])}; }, {mask23(), a}});
  c.push_back({"aten::where.ScalarOther", [](const V& v) { return V{where(v[0], v[1], Scalar(1.5))}; }, {mask23(), a}});
  c.push_back({"aten::clamp",
               [](const V& v) { return V{clamp(v[0], std::optional<Scalar>(-0.5), std::optional<Scalar>(0.5))}; },
               {rnd({2, 3}, 10, 0.05, 0.95, true)}});
  c.push_back({"aten::clamp", [](const V& v) { return V{clamp(v[0], std::optional<Scalar>(0.1), std::nullopt)}; },
               {away}});
  c.push_back({"aten::clamp.Tensor",
               [](const V& v) {
                 return V{clamp(v[0], std::optional<Tensor>(v[1]), std::optional<Tensor>(v[2]))};
               },
               {a, rnd({3}, 11, -0.5, -0.1), rnd({2, 1}, 12, 0.1, 0.5)}});
  c.push_back({"aten::clamp.Tensor",
               [](const V& v) { return V{clamp(v[0], std::optional<Tensor>(v[1]), std::nullopt)}; },
               {a, a2}});
  c.push_back({"aten::clamp.Tensor",
               [](const V& v) { return V{clamp(v[0], std::nullopt, std::optional<Tensor>(v[1]))}; },
               {a, a2}});
  c.push_back({"aten::masked_fill.Scalar", [](const V& v) { return V{masked_fill(v[0], v[1], 2.0)}; },
               {a, mask23()}});
  c.push_back({"aten::masked_fill.Tensor", [](const V& v) { return V{masked_fill(v[0], v[1], v[2])}; },
               {a, mask23(), scalar_tensor(0.25, kDouble)}});

  // copy_ into a non-leaf: history rebased onto the copy (src broadcast over rows).
  c.push_back({"aten::copy_",
               [](const V& v) {
                 Tensor buf = v[0] * 2;
                 Tensor before = buf * 1;  // uses the overwritten value: its gradient must still flow
                 buf.copy_(v[1]);
                 return V{buf * buf, before};
               },
               {a, b}});
  c.push_back({"aten::fill_.Scalar",
               [](const V& v) {
                 Tensor buf = v[0] * 2;
                 buf.fill_(3.0);
                 return V{buf + v[0]};
               },
               {a}});
  c.push_back({"aten::fill_.Tensor",
               [](const V& v) {
                 Tensor buf = v[0] * 2;
                 call_op("aten::fill_.Tensor", {buf, v[1]});
                 return V{buf * v[0]};
               },
               {a, scalar_tensor(0.5, kDouble)}});
  // The functional forms: self's values are replaced (zero gradient), src's flow through.
  c.push_back({"aten::fill.Scalar", [](const V& v) { return V{fill(v[0], 3.0) * v[0]}; }, {a}});
  c.push_back({"aten::copy", [](const V& v) { return V{copy(v[0], v[1]) * v[0]}; }, {a, b}});
  c.push_back({"aten::_to_copy", [](const V& v) { return V{call_op_tensor("aten::_to_copy", {v[0], kDouble})}; },
               {a}});
  c.push_back({"aten::clone", [](const V& v) { return V{v[0].t().clone() * v[0].t()}; }, {a}});

  Tensor x = rnd({2, 1, 3}, 13);
  c.push_back({"aten::view", [](const V& v) { return V{v[0].view({3, 2})}; }, {x}});
  c.push_back({"aten::_reshape_alias",
               [](const V& v) { return V{call_op_tensor("aten::_reshape_alias", {v[0], std::vector<int64_t>{6}, std::vector<int64_t>{1}})}; },
               {x}});
  c.push_back({"aten::squeeze", [](const V& v) { return V{v[0].squeeze()}; }, {x}});
  c.push_back({"aten::squeeze.dim", [](const V& v) { return V{v[0].squeeze(1)}; }, {x}});
  c.push_back({"aten::squeeze.dims",
               [](const V& v) { return V{call_op_tensor("aten::squeeze.dims", {v[0], std::vector<int64_t>{1}})}; },
               {x}});
  c.push_back({"aten::unsqueeze", [](const V& v) { return V{v[0].unsqueeze(-1)}; }, {a}});
  c.push_back({"aten::alias", [](const V& v) { return V{alias(v[0]) * v[0]}; }, {a}});
  c.push_back({"aten::expand", [](const V& v) { return V{v[0].expand({4, 2, 3})}; }, {rnd({2, 1}, 14)}});
  c.push_back({"aten::permute", [](const V& v) { return V{v[0].permute({2, -3, 1})}; }, {x}});
  c.push_back({"aten::transpose.int", [](const V& v) { return V{v[0].transpose(0, -1)}; }, {x}});
  Tensor m = rnd({5, 4}, 15);
  c.push_back({"aten::slice.Tensor", [](const V& v) { return V{v[0].slice(0, 1, 4)}; }, {m}});
  c.push_back({"aten::slice.Tensor", [](const V& v) { return V{v[0].slice(1, -3, std::nullopt, 2)}; }, {m}});
  c.push_back({"aten::select.int", [](const V& v) { return V{v[0].select(1, -2)}; }, {m}});
  c.push_back({"aten::split_with_sizes",
               [](const V& v) {
                 V parts = split_with_sizes(v[0], {1, 3, 1}, 0);
                 return V{parts[0], parts[2]};  // the middle part gets no gradient
               },
               {m}});
  c.push_back({"aten::unbind.int", [](const V& v) { return V{unbind(v[0], 1)[3] * 2}; }, {m}});

  c.push_back({"aten::sum", [](const V& v) { return V{sum(v[0])}; }, {a}});
  c.push_back({"aten::sum.dim_IntList", [](const V& v) { return V{sum(v[0], {0, -1})}; }, {x}});
  c.push_back({"aten::sum.dim_IntList", [](const V& v) { return V{sum(v[0], {1}, true)}; }, {a}});
  c.push_back({"aten::mean", [](const V& v) { return V{mean(v[0])}; }, {a}});
  c.push_back({"aten::mean.dim", [](const V& v) { return V{mean(v[0], {-1})}; }, {x}});
  c.push_back({"aten::amax", [](const V& v) { return V{amax(v[0], {1})}; }, {m}});
  c.push_back({"aten::amin", [](const V& v) { return V{amin(v[0], {0}, true)}; }, {m}});
  c.push_back({"aten::amax", [](const V& v) { return V{amax(v[0])}; }, {m}});
  c.push_back({"aten::mm", [](const V& v) { return V{mm(v[0], v[1])}; }, {a, rnd({3, 4}, 16)}});
  c.push_back({"aten::bmm", [](const V& v) { return V{bmm(v[0], v[1])}; }, {rnd({2, 2, 3}, 17), rnd({2, 3, 2}, 18)}});
  c.push_back({"aten::addmm", [](const V& v) { return V{addmm(v[0], v[1], v[2], 0.5, 2.0)}; },
               {rnd({4}, 19), a, rnd({3, 4}, 20)}});
  c.push_back({"aten::_softmax", [](const V& v) { return V{_softmax(v[0], 1)}; }, {a}});
  c.push_back({"aten::_log_softmax", [](const V& v) { return V{_log_softmax(v[0], 0)}; }, {a}});
  c.push_back({"aten::native_layer_norm",
               [](const V& v) {
                 auto [out, mean_, rstd] = native_layer_norm(v[0], {3}, v[1], v[2], 1e-5);
                 return V{out};
               },
               {rnd({2, 2, 3}, 21), rnd({3}, 22), rnd({3}, 23)}});
  c.push_back({"aten::native_layer_norm",
               [](const V& v) {
                 auto [out, mean_, rstd] = native_layer_norm(v[0], {2, 3}, std::nullopt, std::nullopt, 1e-5);
                 return V{out};
               },
               {rnd({2, 2, 3}, 24)}});
  // nll_loss_forward: every reduction, class weights, an ignored target (its row gets none).
  for (int64_t reduction : {0, 1, 2}) {
    c.push_back(
        {"aten::nll_loss_forward",
         [reduction](const V& v) {
           const Tensor weight = abs(rnd({5}, 26)) + 0.5;
           return V{std::get<0>(nll_loss_forward(v[0], tensor<int64_t>({1, -100, 4, 0}), weight, reduction, -100))};
         },
         {rnd({4, 5}, 27)}});
  }
  c.push_back(
      {"aten::nll_loss_forward",
       [](const V& v) { return V{std::get<0>(nll_loss_forward(v[0], full({}, 2, kLong), std::nullopt, 1, -100))}; },
       {rnd({5}, 28)}});
  // (padding_idx rows get no gradient although they are read: checked by value elsewhere)
  c.push_back({"aten::embedding", [](const V& v) { return V{embedding(v[0], v[1])}; },
               {rnd({4, 3}, 25), tensor<int64_t>({0, 2, 3, 0, 1, 3}, {2, 3})}});

  // Shape and indexing ops.
  c.push_back({"aten::cat", [](const V& v) { return V{cat({v[0], v[1], v[0]}, -1)}; }, {a, rnd({2, 2}, 31)}});
  c.push_back({"aten::cat", [](const V& v) { return V{cat({v[0], v[1]}, 0)}; }, {a, rnd({1, 3}, 32)}});
  c.push_back({"aten::flip", [](const V& v) { return V{flip(v[0], {0, -1})}; }, {x}});
  c.push_back({"aten::repeat", [](const V& v) { return V{repeat(v[0], {2, 1, 3})}; }, {a}});
  c.push_back({"aten::repeat", [](const V& v) { return V{repeat(v[0], {2, 2})}; }, {a}});
  c.push_back({"aten::tril", [](const V& v) { return V{tril(v[0], -1)}; }, {m}});
  c.push_back({"aten::triu", [](const V& v) { return V{triu(v[0], 1)}; }, {m}});
  c.push_back({"aten::constant_pad_nd", [](const V& v) { return V{constant_pad_nd(v[0], {1, 2, 0, 1}, 0.5)}; }, {a}});
  c.push_back({"aten::constant_pad_nd", [](const V& v) { return V{constant_pad_nd(v[0], {-1, 1})}; }, {a}});
  Tensor idx = tensor<int64_t>({2, 0, 2, 1}, {4});
  c.push_back({"aten::index_select", [idx](const V& v) { return V{index_select(v[0], 1, idx)}; }, {m}});
  c.push_back({"aten::index_select", [idx](const V& v) { return V{index_select(v[0], 0, idx)}; }, {m}});
  Tensor gidx = tensor<int64_t>({0, 3, 3, 1, 2, 2}, {2, 3});
  c.push_back({"aten::gather", [gidx](const V& v) { return V{gather(v[0], 1, gidx)}; }, {m}});
  c.push_back({"aten::scatter_add", [gidx](const V& v) { return V{scatter_add(v[0], 1, gidx, v[1])}; },
               {m, rnd({2, 3}, 33)}});
  c.push_back({"aten::scatter_add", [gidx](const V& v) { return V{scatter_add(v[0], 1, gidx, v[1])}; },
               {m, rnd({3, 4}, 35)}});  // src larger than index: the rest of src gets zero
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (const bool include_self : {true, false}) {
      c.push_back({"aten::scatter_reduce.two",
                   [gidx, reduce, include_self](const V& v) {
                     return V{scatter_reduce(v[0], 1, gidx, v[1], reduce, include_self)};
                   },
                   {m, rnd({2, 3}, 36, 0.5, 1.5, true)}});
    }
  }
  c.push_back({"aten::masked_scatter", [](const V& v) { return V{masked_scatter(v[0], mask23(), v[1])}; },
               {rnd({2, 3}, 37), rnd({4}, 38)}});  // source longer than the mask's ones
  c.push_back({"aten::diagonal", [](const V& v) { return V{diagonal(v[0], 1)}; }, {m}});
  c.push_back({"aten::diagonal", [](const V& v) { return V{diagonal(v[0].unsqueeze(0), -1, 2, 1)}; }, {m}});
  c.push_back({"aten::index.Tensor",
               [](const V& v) {
                 return V{index(v[0], {tensor<int64_t>({0, 4, 0}, {3}), tensor<int64_t>({1, 2, 1}, {3})})};
               },
               {m}});
  c.push_back({"aten::index.Tensor",
               [](const V& v) { return V{index(v[0], {std::nullopt, tensor<int64_t>({3, 3, 0}, {3})})}; }, {m}});

  // Reductions.
  c.push_back({"aten::var.correction", [](const V& v) { return V{var(v[0])}; }, {m}});
  c.push_back({"aten::var.correction",
               [](const V& v) { return V{var(v[0], std::vector<int64_t>{1}, Scalar(0), true)}; }, {m}});
  // linalg_vector_norm away from zeros and ties (its gradient there is PyTorch's choice,
  // checked by the conformance cases): ord 2, 1, 3, 0.5 and inf, over a dim and over all.
  for (double ord : {2.0, 1.0, 3.0, 0.5, std::numeric_limits<double>::infinity()})
    c.push_back({"aten::linalg_vector_norm",
                 [ord](const V& v) { return V{linalg_vector_norm(v[0], ord, std::vector<int64_t>{1}, false)}; }, {m}});
  c.push_back({"aten::linalg_vector_norm", [](const V& v) { return V{linalg_vector_norm(v[0])}; }, {m}});
  c.push_back({"aten::cumsum", [](const V& v) { return V{cumsum(v[0], -1)}; }, {x}});
  c.push_back({"aten::cumsum", [](const V& v) { return V{cumsum(v[0], 0)}; }, {m}});
  Tensor with_zeros = tensor<double>({0.5, 0, 2, -1.5, 0, 0, 1.2, 0.8, -0.7, 1.1, 0, 0.9}, {3, 4});
  c.push_back({"aten::prod", [](const V& v) { return V{prod(v[0])}; }, {a}});
  c.push_back({"aten::prod", [](const V& v) { return V{prod(v[0])}; }, {tensor<double>({0.5, 0, 2, -1.5}, {2, 2})}});
  c.push_back({"aten::prod.dim_int", [](const V& v) { return V{prod(v[0], 1)}; }, {with_zeros}});
  c.push_back({"aten::prod.dim_int", [](const V& v) { return V{prod(v[0], 0, true)}; }, {with_zeros}});
  c.push_back({"aten::max.dim", [](const V& v) { return V{std::get<0>(max(v[0], 1))}; }, {m}});
  c.push_back({"aten::min.dim", [](const V& v) { return V{std::get<0>(min(v[0], 0, true))}; }, {m}});
  // Random: the same seed each call, so every evaluation draws the same mask.
  c.push_back({"aten::native_dropout",
               [](const V& v) {
                 manual_seed(7);
                 return V{std::get<0>(native_dropout(v[0], 0.4, true))};
               },
               {rnd({4, 5}, 34)}});
  c.push_back({"aten::native_dropout", [](const V& v) { return V{std::get<0>(native_dropout(v[0], 0.4, false))}; },
               {a}});
  nn_cases(c);
  more_cases(c);
  return c;
}

class Gradcheck : public ::testing::TestWithParam<size_t> {};

TEST_P(Gradcheck, MatchesFiniteDifferences) {
  static const std::vector<Case> all = cases();
  const Case& c = all[GetParam()];
  autograd::GradcheckResult r = autograd::gradcheck(c.fn, c.inputs);
  EXPECT_TRUE(r.ok) << c.op << ": " << r.message;
}

INSTANTIATE_TEST_SUITE_P(Ops, Gradcheck, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name = cases()[info.param].op.substr(6) + "_" + std::to_string(info.param);
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(GradcheckCoverage, EveryOpWithAFormulaHasACase) {
  std::set<std::string> covered;
  for (const Case& c : cases()) covered.insert(c.op);
  for (const ops::OpDef* op : ops::registry().all()) {
    if (!op->derivative) continue;
    EXPECT_TRUE(covered.count(op->name)) << op->name << " has a derivative but no gradcheck case";
  }
}

TEST(GradcheckCoverage, EveryDifferentiableOpHasAFormula) {
  // Ops that reach the autograd layer without a formula, each needing none: their outputs
  // are never floating, or they take no floating tensor, or they are backward ops (Ember
  // has no double backward). Any other op without a formula is an omission.
  const std::set<std::string> integral_outputs = {
      "aten::all", "aten::all.dim", "aten::any", "aten::any.dim", "aten::argmax", "aten::argmin", "aten::isnan", "aten::isinf", "aten::any.dims",
      "aten::nonzero", "aten::logical_and", "aten::logical_not", "aten::logical_or", "aten::logical_xor",
      "aten::bitwise_not", "aten::bitwise_and.Scalar", "aten::bitwise_and.Tensor", "aten::bitwise_or.Scalar",
      "aten::bitwise_or.Tensor", "aten::bitwise_xor.Scalar", "aten::bitwise_xor.Tensor", "aten::eq.Scalar",
      "aten::eq.Tensor", "aten::ne.Scalar", "aten::ne.Tensor", "aten::lt.Scalar", "aten::lt.Tensor", "aten::le.Scalar",
      "aten::le.Tensor", "aten::gt.Scalar", "aten::gt.Tensor", "aten::ge.Scalar", "aten::ge.Tensor"};
  const std::set<std::string> no_floating_input = {
      "aten::arange.start_step", "aten::empty.memory_format", "aten::empty_strided", "aten::eye.m", "aten::full",
      "aten::linspace", "aten::rand", "aten::randn", "aten::randperm", "aten::scalar_tensor", "aten::where.Scalar"};
  // PyTorch has no derivative for these either (its grad_fn raises "not implemented", as
  // Ember's autograd layer does for an op without a formula).
  const std::set<std::string> none_in_pytorch = {"aten::batch_norm_update_stats"};
  for (const ops::OpDef* op : ops::registry().all()) {
    if (op->kind == ops::OpKind::Composite || op->kind == ops::OpKind::InPlace) continue;
    if (op->derivative || op->not_differentiable) continue;
    const bool backward_op = op->name.size() > 9 && op->name.substr(op->name.size() - 9) == "_backward";
    EXPECT_TRUE(backward_op || integral_outputs.count(op->name) || no_floating_input.count(op->name) ||
                none_in_pytorch.count(op->name))
        << op->name << " has no derivative formula: add a row to src/ops/derivatives*.cpp (or list why it needs none)";
  }
}

TEST(GradcheckCoverage, DetectsAWrongFormula) {
  // gradcheck itself must fail on a wrong gradient: a hook doubles the true one.
  GradcheckFn fn = [](const V& v) {
    Tensor y = v[0] * 1;
    if (y.requires_grad()) y.register_hook([](const Tensor& g) { return g * 2; });
    return V{y};
  };
  EXPECT_FALSE(autograd::gradcheck(fn, {rnd({3}, 30)}).ok);
}

}  // namespace
}  // namespace ember
