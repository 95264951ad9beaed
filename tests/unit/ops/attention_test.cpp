// scaled_dot_product_attention and the fused CPU op: the flash kernel (several query and
// key blocks, causal block skipping, masks, float and double) against the math form, and
// which form eager sdpa takes; the fused op's gradients (its backward op) against the math
// form's. PyTorch's values are checked by the conformance cases.
#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

/// softmax(q @ k^T * scale + mask) @ v in float64, written out (the reference).
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& additive, bool causal,
                 double scale) {
  Tensor s = matmul(q.to(kDouble), k.to(kDouble).transpose(-2, -1)) * scale;
  if (additive) s = s + additive->to(kDouble);
  if (causal) s = masked_fill(s, triu(ones({q.size(2), k.size(2)}, kBool), 1), -std::numeric_limits<double>::infinity());
  return matmul(softmax(s, -1), v.to(kDouble));
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max((a.to(kDouble) - b.to(kDouble)).abs()).item().to_double();
}

/// Small blocks so that a few dozen rows span several query and key blocks.
struct SmallBlocks {
  kernels::cpu::FlashBlocks saved = kernels::cpu::flash_blocks();
  SmallBlocks() { kernels::cpu::set_flash_blocks({.q = 8, .kv = 16}); }
  ~SmallBlocks() { kernels::cpu::set_flash_blocks(saved); }
};

class FlashAttention : public ::testing::TestWithParam<ScalarType> {};

TEST_P(FlashAttention, EqualsTheMathFormOverSeveralBlocksCausalMaskedAndScaled) {
  const ScalarType dt = GetParam();
  const double tol = dt == kFloat ? 2e-6 : 1e-13;
  SmallBlocks blocks;
  manual_seed(3);
  // L = 37 and S = 45: ragged last blocks; Ev != E.
  const Tensor q = randn({2, 3, 37, 8}, dt), k = randn({2, 3, 45, 8}, dt), v = randn({2, 3, 45, 5}, dt);
  // The mask with unit-stride rows (added a vector at a time) and transposed (element by
  // element).
  const Tensor mask = randn({37, 45}, dt), mask_t = randn({45, 37}, dt).t();
  for (bool causal : {false, true}) {
    for (int masked = 0; masked < 3; ++masked) {
      const std::optional<Tensor> m =
          masked == 0 ? std::nullopt : std::optional<Tensor>(masked == 1 ? mask : mask_t);
      auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, m, 0.3);
      EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 37, 5}));
      EXPECT_EQ(lse.sizes(), IntArrayRef({2, 3, 37}));
      EXPECT_LT(max_abs_diff(out, reference(q, k, v, m, causal, 0.3)), tol) << "causal " << causal << " mask " << masked;
    }
  }
}

TEST_P(FlashAttention, LogsumexpIsTheSoftmaxNormalizer) {
  const ScalarType dt = GetParam();
  SmallBlocks blocks;
  manual_seed(4);
  const Tensor q = randn({1, 2, 20, 4}, dt), k = randn({1, 2, 33, 4}, dt), v = randn({1, 2, 33, 4}, dt);
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true);
  Tensor s = matmul(q.to(kDouble), k.to(kDouble).transpose(-2, -1)) * 0.5;
  s = masked_fill(s, triu(ones({20, 33}, kBool), 1), -std::numeric_limits<double>::infinity());
  EXPECT_LT(max_abs_diff(lse, logsumexp(s, {-1})), dt == kFloat ? 1e-5 : 1e-12);
}

TEST_P(FlashAttention, BlocksMaskedWholeAreSkippedWithTheSameResult) {
  // A causal mask given as an additive tensor: the blocks above the diagonal are all -inf.
  const ScalarType dt = GetParam();
  SmallBlocks blocks;
  manual_seed(5);
  const Tensor q = randn({1, 2, 40, 8}, dt), k = randn({1, 2, 40, 8}, dt), v = randn({1, 2, 40, 8}, dt);
  const Tensor additive =
      masked_fill(zeros({40, 40}, dt), triu(ones({40, 40}, kBool), 1), -std::numeric_limits<double>::infinity());
  auto [a, la] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, additive);
  auto [b, lb] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true);
  EXPECT_LT(max_abs_diff(a, b), dt == kFloat ? 1e-6 : 1e-14);
  EXPECT_LT(max_abs_diff(a, reference(q, k, v, std::nullopt, true, 1 / std::sqrt(8.0))), dt == kFloat ? 2e-6 : 1e-13);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FlashAttention, ::testing::Values(kFloat, kDouble));

// PyTorch 2.11's strides (CPU, torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
// and F.scaled_dot_product_attention on the queries below, B, H, L, E = 2, 3, 5, 4).
// Note [flash attention layout].

/// The query layouts of the stride tables: contiguous; [B, L, H, E] memory seen as
/// [B, H, L, E] (a transformer's q); [H, B, L, E] and [L, B, H, E] memory; a last dim of
/// stride L; a batch expanded from 1 (plain and transposed); every other element of a wider
/// last dim (not dense); channels_last.
Tensor strided_query(int kind) {
  switch (kind) {
    case 0: return randn({2, 3, 5, 4});
    case 1: return randn({2, 5, 3, 4}).transpose(1, 2);
    case 2: return randn({3, 2, 5, 4}).permute({1, 0, 2, 3});
    case 3: return randn({5, 2, 3, 4}).permute({1, 2, 0, 3});
    case 4: return randn({2, 3, 4, 5}).transpose(2, 3);
    case 5: return randn({1, 3, 5, 4}).expand({2, 3, 5, 4});
    case 6: return randn({1, 5, 3, 4}).transpose(1, 2).expand({2, 3, 5, 4});
    case 7: return randn({2, 5, 3, 8}).narrow(-1, 0, 4).transpose(1, 2);
    default: return randn({2, 5, 4, 3}).permute({0, 3, 1, 2});
  }
}

TEST(FlashAttentionLayout, TheFusedOpsOutputIsLaidOutLikeTheQueryAsPyTorchs) {
  manual_seed(21);
  const std::vector<std::vector<int64_t>> want{{60, 20, 4, 1}, {60, 4, 12, 1}, {20, 40, 4, 1},
                                               {12, 4, 24, 1}, {60, 20, 1, 5}, {60, 20, 4, 1},
                                               {60, 4, 12, 1}, {60, 4, 12, 1}, {60, 1, 12, 3}};
  for (int kind = 0; kind < 9; ++kind) {
    const Tensor q = strided_query(kind), k = randn({2, 3, 5, 4}), v = randn({2, 3, 5, 4});
    auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v);
    EXPECT_EQ(out.strides(), IntArrayRef(want[kind])) << "query kind " << kind;
    EXPECT_EQ(lse.strides(), IntArrayRef({15, 1, 3})) << "query kind " << kind;
    EXPECT_LT(max_abs_diff(out, reference(q, k, v, std::nullopt, false, 0.5)), 2e-6) << "query kind " << kind;
  }
}

TEST(FlashAttentionLayout, SdpaTakesPyTorchsPathAndSoItsLayout) {
  manual_seed(22);
  const Tensor k = randn({2, 3, 5, 4}), v = randn({2, 3, 5, 4});
  // The fused op where PyTorch's CPU flash runs: the query's layout.
  const std::vector<std::vector<int64_t>> want{{60, 20, 4, 1}, {60, 4, 12, 1}, {20, 40, 4, 1},
                                               {12, 4, 24, 1}, {60, 20, 4, 1}, {60, 20, 4, 1},
                                               {60, 4, 12, 1}, {60, 4, 12, 1}, {60, 20, 4, 1}};
  for (int kind = 0; kind < 9; ++kind) {
    const Tensor q = strided_query(kind);
    const Tensor out = scaled_dot_product_attention(q, k, v);
    EXPECT_EQ(out.strides(), IntArrayRef(want[kind])) << "query kind " << kind;
    EXPECT_LT(max_abs_diff(out, reference(q, k, v, std::nullopt, false, 0.5)), 2e-6) << "query kind " << kind;
  }
  const Tensor q = strided_query(1);
  const std::vector<int64_t> fused{60, 4, 12, 1}, math{60, 20, 4, 1};
  // Causal, a bool [L, S] mask and a [B, 1, L, S] one: fused.
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true).strides(), IntArrayRef(fused));
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, ones({5, 5}, kBool)).strides(), IntArrayRef(fused));
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, zeros({2, 1, 5, 5})).strides(), IntArrayRef(fused));
  // A 3-D mask, a key or value without unit last stride, and dropout: the math form.
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, zeros({3, 5, 5})).strides(), IntArrayRef(math));
  EXPECT_EQ(scaled_dot_product_attention(q, strided_query(4), v).strides(), IntArrayRef(math));
  EXPECT_EQ(scaled_dot_product_attention(q, k, strided_query(4)).strides(), IntArrayRef(math));
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, std::nullopt, 0.5).strides(), IntArrayRef(math));
  // A value head size other than the query's: the math form, contiguous [B, H, L, Ev].
  const Tensor v7 = randn({2, 5, 3, 7}).transpose(1, 2);
  EXPECT_EQ(scaled_dot_product_attention(q, k, v7).strides(), IntArrayRef({105, 35, 7, 1}));
}

TEST(ScaledDotProductAttention, BoolMaskKeepsWhereTrue) {
  manual_seed(6);
  const Tensor q = randn({2, 2, 9, 4}), k = randn({2, 2, 11, 4}), v = randn({2, 2, 11, 4});
  Tensor keep = rand({9, 11}) > 0.3;
  keep = masked_fill(keep, eye(9, 11, kBool), true);  // no row masked whole
  const Tensor additive = masked_fill(zeros({9, 11}), logical_not(keep), -std::numeric_limits<double>::infinity());
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v, keep), reference(q, k, v, additive, false, 0.5)), 2e-6);
}

TEST(ScaledDotProductAttention, EagerRunsTheFusedOpWithAndWithoutGrad) {
  manual_seed(7);
  const Tensor q = randn({1, 2, 6, 4}), k = randn({1, 2, 6, 4}), v = randn({1, 2, 6, 4});
  const Tensor eager = scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
  EXPECT_FALSE(eager.requires_grad());
  // Bit for bit the fused op's result (the math form rounds differently).
  const Tensor fused = std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true));
  EXPECT_EQ(eager.to_vector<float>(), fused.to_vector<float>());
  // With q needing a gradient too, as PyTorch's CPU dispatch: the fused op's grad_fn.
  const Tensor qg = q.clone().requires_grad_();
  Tensor out = scaled_dot_product_attention(qg, k, v, std::nullopt, 0.0, true);
  ASSERT_TRUE(out.requires_grad());
  EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductFlashAttentionForCpuBackward0");
  EXPECT_EQ(out.to_vector<float>(), fused.to_vector<float>());
  out.sum().backward();
  ASSERT_TRUE(qg.grad().defined());
  EXPECT_EQ(qg.grad().sizes(), q.sizes());
}

TEST(ScaledDotProductAttention, AMaskThatRequiresGradTakesTheMathForm) {
  // The fused op has no gradient for its mask (PyTorch's neither).
  manual_seed(8);
  const Tensor q = randn({1, 2, 6, 4}), k = randn({1, 2, 6, 4}), v = randn({1, 2, 6, 4});
  const Tensor m = randn({6, 6}).requires_grad_();
  Tensor out = scaled_dot_product_attention(q, k, v, m);
  EXPECT_NE(out.grad_fn()->name(), "ScaledDotProductFlashAttentionForCpuBackward0");
  out.sum().backward();
  EXPECT_TRUE(m.grad().defined());
}

/// The gradients of sum(out * g) with respect to q, k and v, out from `fn`.
std::vector<Tensor> grads_of(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& fn,
                             const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g) {
  Tensor qg = q.detach().requires_grad_(), kg = k.detach().requires_grad_(), vg = v.detach().requires_grad_();
  (fn(qg, kg, vg) * g).sum().backward();
  return {qg.grad(), kg.grad(), vg.grad()};
}

TEST_P(FlashAttention, GradientsEqualTheMathFormsOverSeveralBlocksCausalMaskedAndScaled) {
  const ScalarType dt = GetParam();
  const double tol = dt == kFloat ? 2e-5 : 1e-12;
  SmallBlocks blocks;
  manual_seed(9);
  // L = 37 and S = 45: ragged last blocks; Ev != E.
  const Tensor q = randn({2, 3, 37, 8}, dt), k = randn({2, 3, 45, 8}, dt), v = randn({2, 3, 45, 5}, dt);
  const Tensor g = randn({2, 3, 37, 5}, dt), mask = randn({37, 45}, dt);
  for (bool causal : {false, true}) {
    for (bool masked : {false, true}) {
      const std::optional<Tensor> m = masked ? std::optional<Tensor>(mask) : std::nullopt;
      const auto fused = grads_of(
          [&](const Tensor& a, const Tensor& b, const Tensor& c) {
            return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(a, b, c, 0.0, causal, m, 0.3));
          },
          q, k, v, g);
      const auto math = grads_of(
          [&](const Tensor& a, const Tensor& b, const Tensor& c) { return reference(a, b, c, m, causal, 0.3); }, q,
          k, v, g);
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(fused[i].sizes(), math[i].sizes());
        EXPECT_LT(max_abs_diff(fused[i], math[i]), tol) << "input " << i << " causal " << causal << " mask " << masked;
      }
    }
  }
}

TEST_P(FlashAttention, BackwardGivesZeroForARowMaskedWholeAndSkipsMaskedBlocks) {
  // Row 3's scores are all -inf (its output is nan): it adds nothing to any gradient, and
  // the others' gradients are those of the math form without that row.
  const ScalarType dt = GetParam();
  SmallBlocks blocks;
  manual_seed(10);
  const Tensor q = randn({1, 2, 40, 8}, dt), k = randn({1, 2, 40, 8}, dt), v = randn({1, 2, 40, 8}, dt);
  const double ninf = -std::numeric_limits<double>::infinity();
  Tensor additive = masked_fill(zeros({40, 40}, dt), triu(ones({40, 40}, kBool), 1), ninf);
  const Tensor row3 = eq(arange(40).view({40, 1}), Scalar(3));
  additive = masked_fill(additive, row3, ninf);
  Tensor g = randn({1, 2, 40, 8}, dt);
  const auto fused = grads_of(
      [&](const Tensor& a, const Tensor& b, const Tensor& c) {
        return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(a, b, c, 0.0, false, additive));
      },
      q, k, v, g);
  g = masked_fill(g, row3, 0.0);
  const Tensor causal_only = masked_fill(zeros({40, 40}, dt), triu(ones({40, 40}, kBool), 1), ninf);
  const auto math = grads_of(
      [&](const Tensor& a, const Tensor& b, const Tensor& c) {
        return reference(a, b, c, causal_only, false, 1 / std::sqrt(8.0));
      },
      q, k, v, g);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sum(isnan(fused[i])).item().to_double(), 0.0) << "input " << i;
    EXPECT_LT(max_abs_diff(fused[i], math[i]), dt == kFloat ? 2e-5 : 1e-12) << "input " << i;
  }
  EXPECT_EQ(max(fused[0].select(2, 3).abs()).item().to_double(), 0.0);
}

TEST(ScaledDotProductAttention, TheFusedOpOnInputsThatRequireGradGivesTheMathFormsGradients) {
  // Its derivative is _scaled_dot_product_flash_attention_for_cpu_backward: q, k and v get
  // the gradients of the math form within float32 rounding, logsumexp none, and a mask
  // that requires grad is an error, as in PyTorch.
  manual_seed(5);
  const Tensor q = randn({1, 2, 8, 4}), k = randn({1, 2, 8, 4}), v = randn({1, 2, 8, 4}), g = randn({1, 2, 8, 4});
  const auto fused = grads_of(
      [](const Tensor& a, const Tensor& b, const Tensor& c) {
        return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(a, b, c));
      },
      q, k, v, g);
  const auto math = grads_of(
      [](const Tensor& a, const Tensor& b, const Tensor& c) { return reference(a, b, c, std::nullopt, false, 0.5); },
      q, k, v, g);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(fused[i].defined()) << "input " << i;
    EXPECT_LT(max_abs_diff(fused[i], math[i]), 1e-5) << "input " << i;
  }
  const Tensor m = randn({8, 8}).requires_grad_();
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q.detach().requires_grad_(), k, v, 0.0, false, m);
  try {
    out.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not differentiable with respect to argument 'attn_mask'"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScaledDotProductAttention, RejectsMaskWithCausalInTheMathForm) {
  const Tensor q = randn({2, 6, 4});
  EXPECT_THROW(scaled_dot_product_attention(q, q, q, zeros({6, 6}), 0.0, true), Error);
}

/// f(arange(n) * 0.37 + off) in float64 with `sizes`: deterministic inputs whose
/// attention PyTorch 2.11 computed for the grouped-query tests below.
Tensor wave(IntArrayRef sizes, const std::function<Tensor(const Tensor&)>& f, double off) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return f(arange(n, TensorOptions(kDouble)) * 0.37 + off).reshape(sizes);
}

TEST(GroupedQueryAttention, ValuesAndGradientsArePyTorchsWithTheKeyValueHeadsGradientsSummed) {
  // torch: q = sin(arange(24)*.37).view(1,4,3,2), k = cos(arange(20)*.37+1).view(1,2,5,2),
  // v = sin(arange(20)*.37+2).view(1,2,5,2); F.scaled_dot_product_attention(q, k, v,
  // is_causal=True, enable_gqa=True), backward of cos(arange(24)*.37+3).view(1,4,3,2).
  const Tensor q = wave(
      {1, 4, 3, 2}, [](const Tensor& t) { return sin(t); }, 0.0);
  const Tensor k = wave(
      {1, 2, 5, 2}, [](const Tensor& t) { return cos(t); }, 1.0);
  const Tensor v = wave(
      {1, 2, 5, 2}, [](const Tensor& t) { return sin(t); }, 2.0);
  const Tensor g = wave(
      {1, 4, 3, 2}, [](const Tensor& t) { return cos(t); }, 3.0);
  const std::vector<double> out_want{
      0.9092974268256817,   0.6972777382599378,   0.747401070639506,   0.4893876707689776,   0.6416494862593893,
      0.38189177321841855,  0.9092974268256817,   0.6972777382599378,  0.6495839212620158,   0.36378129972456136,
      0.10140265052372156,  -0.21278775201842642, -0.5506855425976376, -0.21157416593738504, -0.31350129246587405,
      0.028126122766120146, 0.07235346263854837,  0.36453293011796034, -0.5506855425976376,  -0.21157416593738504,
      -0.06130024453852967, 0.2830025066994023,   0.3313373483589379,  0.5948894244482469};
  const std::vector<double> gk_want{-0.1384461169528684,
                                    -0.2836737331651745,
                                    -0.005050200433282331,
                                    0.07048016955247202,
                                    0.1434963173861508,
                                    0.2131935636127026,
                                    0,
                                    0,
                                    0,
                                    0,
                                    -0.18769440568498724,
                                    -0.03609545319320628,
                                    0.020770755133681394,
                                    -0.025876223498171983,
                                    0.16692365055130587,
                                    0.061971676691378264,
                                    0,
                                    0,
                                    0,
                                    0};
  const std::vector<double> gv_want{-0.597874904159157,
                                    0.10771459275097121,
                                    0.453228785459442,
                                    0.5817663064629819,
                                    0.4468194813985441,
                                    0.3812787591380391,
                                    0,
                                    0,
                                    0,
                                    0,
                                    -1.2648685042367396,
                                    -1.567944172848847,
                                    -0.7259567552382915,
                                    -0.5117104514185916,
                                    -0.19199522445300402,
                                    -0.06248333593817215,
                                    0,
                                    0,
                                    0,
                                    0};
  auto expect_near = [](const Tensor& t, const std::vector<double>& want, const char* what) {
    const std::vector<double> got = t.contiguous().to_vector<double>();
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << what << " at " << i;
  };
  Tensor qg = q.clone().requires_grad_(), kg = k.clone().requires_grad_(), vg = v.clone().requires_grad_();
  Tensor out = scaled_dot_product_attention(qg, kg, vg, std::nullopt, 0.0, true, std::nullopt, /*enable_gqa=*/true);
  // PyTorch's CPU takes its flash kernel here: the fused op, as in Ember.
  EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductFlashAttentionForCpuBackward0");
  EXPECT_EQ(out.sizes(), IntArrayRef({1, 4, 3, 2}));
  EXPECT_EQ(out.strides(), IntArrayRef({24, 6, 2, 1}));
  expect_near(out.detach(), out_want, "out");
  (out * g).sum().backward();
  EXPECT_EQ(kg.grad().sizes(), IntArrayRef({1, 2, 5, 2}));
  expect_near(kg.grad(), gk_want, "grad_key");
  expect_near(vg.grad(), gv_want, "grad_value");
  // The backward op's own layout, as PyTorch 2.11's: [B, H, N, D] over [B, N, H, D].
  auto [o, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true);
  auto [gq, gk, gv] = _scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, o, lse, 0.0, true);
  EXPECT_EQ(gq.strides(), IntArrayRef({24, 2, 8, 1}));
  EXPECT_EQ(gk.strides(), IntArrayRef({20, 2, 4, 1}));
  EXPECT_EQ(gv.strides(), IntArrayRef({20, 2, 4, 1}));
  expect_near(gk, gk_want, "backward op's grad_key");
}

TEST(GroupedQueryAttention, FusedFormEqualsTheMathFormOverRepeatedHeadsOverSeveralBlocks) {
  // The kernel indexes key/value head h / 3; the math form repeats them in memory.
  SmallBlocks small;
  manual_seed(31);
  const Tensor q = randn({2, 6, 37, 8}, kDouble), k = randn({2, 2, 41, 8}, kDouble), v = randn({2, 2, 41, 8}, kDouble);
  const Tensor mask = randn({2, 6, 37, 41}, kDouble), g = randn({2, 6, 37, 8}, kDouble);
  const Tensor kr = k.unsqueeze(2).expand({2, 2, 3, 41, 8}).reshape({2, 6, 41, 8});
  const Tensor vr = v.unsqueeze(2).expand({2, 2, 3, 41, 8}).reshape({2, 6, 41, 8});
  for (bool causal : {false, true}) {
    const std::optional<Tensor> m = causal ? std::nullopt : std::optional<Tensor>(mask);
    const Tensor fused = scaled_dot_product_attention(q, k, v, m, 0.0, causal, 0.3, true);
    EXPECT_LT(max_abs_diff(fused, reference(q, kr, vr, m, causal, 0.3)), 1e-12) << "causal " << causal;
    const auto gqa =
        grads_of([&](const Tensor& a, const Tensor& b,
                     const Tensor& c) { return scaled_dot_product_attention(a, b, c, m, 0.0, causal, 0.3, true); },
                 q, k, v, g);
    const auto rep = grads_of(
        [&](const Tensor& a, const Tensor& b, const Tensor& c) {
          const Tensor br = b.unsqueeze(2).expand({2, 2, 3, 41, 8}).reshape({2, 6, 41, 8});
          const Tensor cr = c.unsqueeze(2).expand({2, 2, 3, 41, 8}).reshape({2, 6, 41, 8});
          return scaled_dot_product_attention(a, br, cr, m, 0.0, causal, 0.3);
        },
        q, k, v, g);
    for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(gqa[i], rep[i]), 1e-10) << "causal " << causal << " grad " << i;
  }
}

TEST(GroupedQueryAttention, TakesPyTorchsPathAndSoItsLayout) {
  manual_seed(32);
  // Heads over [B, L, H, E] memory: the fused form keeps the query's layout.
  const Tensor q = randn({2, 5, 6, 4}).transpose(1, 2), k = randn({2, 7, 2, 4}).transpose(1, 2),
               v = randn({2, 7, 2, 4}).transpose(1, 2);
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, true).strides(),
            IntArrayRef({120, 4, 24, 1}));
  // Key and value of different head counts, or a batch to broadcast: the math form, contiguous.
  const Tensor v3 = randn({2, 7, 3, 4}).transpose(1, 2);
  const Tensor out = scaled_dot_product_attention(q, k, v3, std::nullopt, 0.0, false, std::nullopt, true);
  EXPECT_EQ(out.strides(), IntArrayRef({120, 20, 4, 1}));
  const Tensor kr = k.unsqueeze(2).expand({2, 2, 3, 7, 4}).reshape({2, 6, 7, 4});
  const Tensor vr = v3.unsqueeze(2).expand({2, 3, 2, 7, 4}).reshape({2, 6, 7, 4});
  EXPECT_LT(max_abs_diff(out, reference(q, kr, vr, std::nullopt, false, 0.5)), 2e-6);
  const Tensor k1 = randn({1, 2, 7, 4});
  EXPECT_EQ(scaled_dot_product_attention(q, k1, k1, std::nullopt, 0.0, false, std::nullopt, true).strides(),
            IntArrayRef({120, 20, 4, 1}));
  // 3-D inputs: the math form repeats dim 0.
  EXPECT_EQ(scaled_dot_product_attention(randn({6, 5, 4}), randn({2, 7, 4}), randn({2, 7, 4}), std::nullopt, 0.0, false,
                                         std::nullopt, true)
                .sizes(),
            IntArrayRef({6, 5, 4}));
}

TEST(GroupedQueryAttention, RejectsAKeyValueHeadCountThatDoesNotDivideTheQuerys) {
  const Tensor q = randn({2, 5, 3, 4}), k = randn({2, 2, 7, 4});
  testing::expect_error([&] { scaled_dot_product_attention(q, k, k, std::nullopt, 0.0, false, std::nullopt, true); },
                        "Number of heads in key and value must divide the number of heads in query");
}

TEST(GroupedQueryAttention, RejectsMoreKeyValueHeadsThanQueryHeads) {
  const Tensor q = randn({2, 2, 3, 4}), k = randn({2, 6, 7, 4});
  testing::expect_error([&] { scaled_dot_product_attention(q, k, k, std::nullopt, 0.0, false, std::nullopt, true); },
                        "got 2 query heads, 6 key heads and 6 value heads");
}

TEST(GroupedQueryAttention, RejectsAValueHeadCountThatDoesNotDivideTheQuerysInTheMathForm) {
  const Tensor q = randn({2, 6, 3, 4}), k = randn({2, 2, 7, 4}), v = randn({2, 4, 7, 4});
  testing::expect_error([&] { scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, false, std::nullopt, true); },
                        "got 6 query heads, 2 key heads and 4 value heads");
}

TEST(GroupedQueryAttention, RejectsZeroKeyValueHeads) {
  // PyTorch 2.11 dies of a division by zero here.
  const Tensor q = randn({2, 6, 3, 4}), k = randn({2, 0, 7, 4});
  testing::expect_error([&] { scaled_dot_product_attention(q, k, k, std::nullopt, 0.0, false, std::nullopt, true); },
                        "Number of heads in key and value must divide");
}

TEST(GroupedQueryAttention, RejectsInputsWithoutAHeadDimAsAnIndexError) {
  const Tensor q = randn({5, 4}), k = randn({7, 4});
  testing::expect_error([&] { scaled_dot_product_attention(q, k, k, std::nullopt, 0.0, false, std::nullopt, true); },
                        "enable_gqa expected query, key and value with a head dim", ErrorKind::IndexError);
}

TEST(GroupedQueryAttention, WithoutEnableGqaFewerKeyValueHeadsMustBroadcast) {
  const Tensor q = randn({2, 6, 3, 4}), k = randn({2, 2, 7, 4});
  EXPECT_THROW(scaled_dot_product_attention(q, k, k), Error);
}

TEST(GroupedQueryAttention, TheFusedOpRejectsHeadCountsItCannotMap) {
  // PyTorch 2.11's kernel reads past the key/value heads here; Ember's op refuses.
  const Tensor q = randn({2, 6, 3, 4});
  testing::expect_error(
      [&] {
        _scaled_dot_product_flash_attention_for_cpu(q, randn({2, 4, 7, 4}), randn({2, 4, 7, 4}));
      },
      "expected the key/value head count to divide the query's");
  testing::expect_error(
      [&] {
        _scaled_dot_product_flash_attention_for_cpu(q, randn({2, 2, 7, 4}), randn({2, 3, 7, 4}));
      },
      "expected query [B, H, L, E], key [B, Hkv, S, E] and value [B, Hkv, S, Ev]");
  const Tensor k = randn({2, 2, 7, 4});
  auto [o, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, k);
  testing::expect_error(
      [&] {
        _scaled_dot_product_flash_attention_for_cpu_backward(o, q, randn({2, 4, 7, 4}), randn({2, 4, 7, 4}), o, lse,
                                                             0.0, false);
      },
      "expected the key/value head count to divide the query's");
}

}  // namespace
}  // namespace ember
