// scaled_dot_product_attention and the fused CPU op: the flash kernel (several query and
// key blocks, causal block skipping, masks, float and double) against the math form, and
// which form eager sdpa takes. PyTorch's values are checked by the conformance cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "kernels/cpu/attention.h"

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
  const Tensor mask = randn({37, 45}, dt);
  for (bool causal : {false, true}) {
    for (bool masked : {false, true}) {
      const std::optional<Tensor> m = masked ? std::optional<Tensor>(mask) : std::nullopt;
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

TEST(ScaledDotProductAttention, BoolMaskKeepsWhereTrue) {
  manual_seed(6);
  const Tensor q = randn({2, 2, 9, 4}), k = randn({2, 2, 11, 4}), v = randn({2, 2, 11, 4});
  Tensor keep = rand({9, 11}) > 0.3;
  keep = masked_fill(keep, eye(9, 11, kBool), true);  // no row masked whole
  const Tensor additive = masked_fill(zeros({9, 11}), logical_not(keep), -std::numeric_limits<double>::infinity());
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v, keep), reference(q, k, v, additive, false, 0.5)), 2e-6);
}

TEST(ScaledDotProductAttention, EagerRunsTheFusedOpWithoutGradAndTheMathFormWithIt) {
  manual_seed(7);
  const Tensor q = randn({1, 2, 6, 4}), k = randn({1, 2, 6, 4}), v = randn({1, 2, 6, 4});
  // The fused op's output is contiguous with no grad_fn; the math form's, with q needing a
  // gradient, has one and backpropagates.
  const Tensor eager = scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
  EXPECT_FALSE(eager.requires_grad());
  // Bit for bit the fused op's result (the math form rounds differently).
  const Tensor fused = std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true));
  EXPECT_EQ(eager.to_vector<float>(), fused.to_vector<float>());
  const Tensor qg = q.clone().requires_grad_();
  Tensor out = scaled_dot_product_attention(qg, k, v, std::nullopt, 0.0, true);
  ASSERT_TRUE(out.requires_grad());
  EXPECT_LT(max_abs_diff(out, reference(q, k, v, std::nullopt, true, 0.5)), 2e-6);
  out.sum().backward();
  ASSERT_TRUE(qg.grad().defined());
  EXPECT_EQ(qg.grad().sizes(), q.sizes());
}

TEST(ScaledDotProductAttention, TheFusedOpOnInputsThatRequireGradRaisesInsteadOfDroppingTheGradient) {
  // The fused op has no derivative yet: called on an input that requires grad it raises,
  // never returns a result autograd cannot trace back (sdpa itself takes the math form).
  manual_seed(5);
  const Tensor q = randn({1, 2, 8, 4}).requires_grad_(), k = randn({1, 2, 8, 4}), v = randn({1, 2, 8, 4});
  try {
    _scaled_dot_product_flash_attention_for_cpu(q, k, v);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplementedError);
    EXPECT_NE(std::string(e.what()).find("derivative for 'aten::_scaled_dot_product_flash_attention_for_cpu' is not "
                                         "implemented"),
              std::string::npos)
        << e.what();
  }
  NoGradGuard no_grad;
  EXPECT_EQ(std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v)).sizes().vec(),
            (std::vector<int64_t>{1, 2, 8, 4}));
}

TEST(ScaledDotProductAttention, RejectsMaskWithCausalInTheMathForm) {
  const Tensor q = randn({2, 6, 4});
  EXPECT_THROW(scaled_dot_product_attention(q, q, q, zeros({6, 6}), 0.0, true), Error);
}

}  // namespace
}  // namespace ember
