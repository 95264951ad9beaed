// Tests of autocast at dispatch (ops/autocast.h, Note [autocast]): the policy table against
// PyTorch's lists, each cast rule on CPU tensors (CPU autocast is PyTorch's too), scopes and
// their nesting, the weight cache, autograd through the casts, and the errors.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "ember/ember.h"
#include "ops/autocast.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"

namespace ember {
namespace {

using ops::CastPolicy;
using testing::error_of;
using testing::expect_identical;

// PyTorch's lists (aten/src/ATen/autocast_mode.cpp): the CUDA key's AT_FORALL_* lists and
// the banned op, and the AutocastCPU key's list, as "name" or "name.overload".
const std::vector<std::string> kCudaLowerPrecisionFp = {
    "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu", "addmm", "addmv", "addr", "matmul",
    "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
    "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
    "cudnn_convolution", "cudnn_convolution_transpose"};
const std::vector<std::string> kCudaFp32 = {
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm",
    "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim",
    "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
    "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp"};
const std::vector<std::string> kCudaFp32SetOptDtype = {
    "prod", "prod.dim_int", "prod.dim_Dimname", "softmax.int", "softmax.Dimname", "log_softmax.int",
    "log_softmax.Dimname", "cumprod", "cumprod.dimname", "cumsum", "cumsum.dimname", "linalg_vector_norm",
    "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList", "sum.dim_DimnameList"};
const std::vector<std::string> kCudaPromote = {"addcdiv", "addcmul", "atan2", "bilinear", "cross",
                                               "dot", "grid_sampler", "index_put", "tensordot", "scatter_add"};
const std::vector<std::string> kCudaBanned = {"binary_cross_entropy"};
const std::vector<std::string> kCpuLowerPrecisionFp = {
    "conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d", "conv3d.padding", "bmm", "mm",
    "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear", "_convolution.deprecated", "matmul", "conv_tbc",
    "mkldnn_rnn_layer", "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "prelu",
    "scaled_dot_product_attention", "_native_multi_head_attention"};
const std::vector<std::string> kCpuFp32 = {
    "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "prod.dim_int", "prod.dim_Dimname",
    "quantile", "quantile.scalar", "nanquantile", "nanquantile.scalar", "stft", "stft.center", "cdist",
    "grid_sampler_2d", "_grid_sampler_2d_cpu_fallback", "grid_sampler_3d", "trace", "view_as_complex", "cholesky",
    "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
    "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d", "reflection_pad2d",
    "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss", "cosine_embedding_loss",
    "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss",
    "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "ctc_loss.IntList", "ctc_loss.Tensor", "kl_div", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn",
    "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft",
    "linalg_cond", "linalg_cond.p_str", "linalg_matrix_rank", "linalg_matrix_rank.tol_tensor",
    "linalg_matrix_rank.atol_rtol_tensor", "linalg_matrix_rank.atol_rtol_float", "linalg_solve",
    "linalg_cholesky", "linalg_svdvals", "linalg_eigvals", "linalg_eigvalsh", "linalg_inv",
    "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve", "fake_quantize_per_tensor_affine",
    "geqrf", "_lu_with_info", "qr", "svd", "triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d",
    "adaptive_max_pool3d", "multilabel_margin_loss_forward", "linalg_qr", "linalg_cholesky_ex", "linalg_svd",
    "linalg_eig", "linalg_eigh", "linalg_lstsq", "linalg_inv_ex"};
const std::vector<std::string> kCpuPromote = {"stack", "cat", "index_copy", "index_copy.dimname"};

std::map<std::string, CastPolicy> policies_of(
    const std::vector<std::pair<const std::vector<std::string>*, CastPolicy>>& lists) {
  std::map<std::string, CastPolicy> out;
  for (const auto& [names, policy] : lists)
    for (const std::string& n : *names) out["aten::" + n] = policy;
  return out;
}

TEST(AutocastTable, EveryRegisteredOpHasPyTorchsPolicyOnCudaAndCpu) {
  const auto cuda = policies_of({{&kCudaLowerPrecisionFp, CastPolicy::LowerPrecisionFp},
                                 {&kCudaFp32, CastPolicy::Fp32},
                                 {&kCudaFp32SetOptDtype, CastPolicy::Fp32SetOptDtype},
                                 {&kCudaPromote, CastPolicy::Promote},
                                 {&kCudaBanned, CastPolicy::Banned}});
  const auto cpu = policies_of({{&kCpuLowerPrecisionFp, CastPolicy::LowerPrecisionFp},
                                {&kCpuFp32, CastPolicy::Fp32},
                                {&kCpuPromote, CastPolicy::Promote}});
  auto expected = [](const std::map<std::string, CastPolicy>& m, const std::string& op) {
    auto it = m.find(op);
    return it == m.end() ? CastPolicy::None : it->second;
  };
  size_t listed = 0;
  for (const ops::OpDef* op : ops::registry().all()) {
    const CastPolicy want_cuda = expected(cuda, op->name), want_cpu = expected(cpu, op->name);
    EXPECT_EQ(ops::cast_policy_name(ops::autocast_policy(*op, DeviceType::CUDA)), std::string(ops::cast_policy_name(want_cuda)))
        << op->name << " on CUDA";
    EXPECT_EQ(ops::cast_policy_name(ops::autocast_policy(*op, DeviceType::CPU)), std::string(ops::cast_policy_name(want_cpu)))
        << op->name << " on CPU";
    listed += want_cuda != CastPolicy::None || want_cpu != CastPolicy::None;
  }
  EXPECT_EQ(listed, ops::autocast_rows().size()) << "every row of the table is an op of PyTorch's lists";
  EXPECT_GE(listed, 40u);
}

TEST(AutocastTable, FunctionsWithAnOptionalDtypeHaveADtypeArgument) {
  for (const ops::AutocastRow& row : ops::autocast_rows()) {
    if (row.cuda != CastPolicy::Fp32SetOptDtype) continue;
    EXPECT_GE(ops::registry().get(row.op).schema.index_of("dtype"), 0) << row.op;
  }
}

class Autocast : public ::testing::Test {
 protected:
  void SetUp() override { manual_seed(0); }
  void TearDown() override {
    EXPECT_FALSE(amp::is_autocast_enabled(kCPU)) << "a test left a scope open";
    EXPECT_EQ(ops::autocast_cache_size(), 0u);
  }
};

TEST_F(Autocast, CpuScopeRunsMatmulsInBFloat16) {
  const Tensor a = randn({5, 7}), b = randn({7, 3}), bias = randn({3}), w = randn({3, 7});
  Tensor mm_out, matmul_out, linear_out, addmm_out;
  {
    autocast scope(kCPU);
    EXPECT_TRUE(amp::is_autocast_enabled(kCPU));
    EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
    mm_out = mm(a, b);
    matmul_out = matmul(a, b);
    linear_out = linear(a, w, bias);
    addmm_out = addmm(bias, a, b);
  }
  const Tensor a16 = a.to(kBFloat16), b16 = b.to(kBFloat16), w16 = w.to(kBFloat16), bias16 = bias.to(kBFloat16);
  expect_identical(mm_out, mm(a16, b16), "mm");
  expect_identical(matmul_out, matmul(a16, b16), "matmul");
  expect_identical(linear_out, linear(a16, w16, bias16), "linear");
  expect_identical(addmm_out, addmm(bias16, a16, b16), "addmm");
  EXPECT_EQ(mm(a, b).dtype(), kFloat) << "outside the scope nothing is cast";
}

TEST_F(Autocast, CpuScopeRunsConvolutionsInItsDtype) {
  const Tensor x = randn({2, 3, 6, 6}), w = randn({4, 3, 3, 3}), bias = randn({4});
  Tensor out;
  {
    autocast scope(kCPU, kHalf);
    out = conv2d(x, w, bias, {1, 1}, {1, 1});
  }
  expect_identical(out, conv2d(x.to(kHalf), w.to(kHalf), bias.to(kHalf), {1, 1}, {1, 1}));
}

TEST_F(Autocast, CpuLossesRunInFloat32) {
  const Tensor in = randn({4, 5}).to(kBFloat16), target = randn({4, 5}).to(kBFloat16);
  const Tensor labels = tensor(std::vector<int64_t>{0, 3, 4, 1});
  Tensor mse, ce, l1, nll;
  {
    autocast scope(kCPU);
    mse = mse_loss(in, target);
    ce = cross_entropy(in, labels);
    l1 = l1_loss(in, target);
    nll = nll_loss(log_softmax(in.to(kFloat), 1).to(kBFloat16), labels);
  }
  expect_identical(mse, mse_loss(in.to(kFloat), target.to(kFloat)), "mse_loss");
  expect_identical(ce, cross_entropy(in.to(kFloat), labels), "cross_entropy");
  expect_identical(l1, l1_loss(in.to(kFloat), target.to(kFloat)), "l1_loss");
  EXPECT_EQ(nll.dtype(), kFloat) << "nll_loss_nd is on no list; the nll_loss it expands into is";
}

TEST_F(Autocast, CpuBinaryCrossEntropyRunsInFloat32WhereCudaBansIt) {
  const Tensor p = sigmoid(randn({6})).to(kBFloat16), t = rand({6}).to(kBFloat16);
  Tensor bce;
  {
    autocast scope(kCPU);
    bce = binary_cross_entropy(p, t);
  }
  expect_identical(bce, binary_cross_entropy(p.to(kFloat), t.to(kFloat)));
}

TEST_F(Autocast, CpuProdRunsInFloat32AndSoftmaxIsNotOnTheCpuList) {
  const Tensor x = (randn({3, 4}) * 0.5 + 1).to(kBFloat16);
  Tensor p, s;
  {
    autocast scope(kCPU);
    p = prod(x);
    s = softmax(x, 1);
  }
  expect_identical(p, prod(x.to(kFloat)));
  EXPECT_EQ(s.dtype(), kBFloat16) << "PyTorch's CPU list has no softmax";
}

TEST_F(Autocast, CpuCatAndStackPromoteToTheWidestFloatingInput) {
  const Tensor lo = randn({2, 3}).to(kBFloat16), hi = randn({2, 3}), dbl = randn({2, 3}).to(kDouble);
  const Tensor ints = tensor(std::vector<int64_t>{1, 2, 3}).reshape({1, 3});
  autocast scope(kCPU);
  EXPECT_EQ(cat({lo, hi}).dtype(), kFloat);
  expect_identical(cat({lo, hi}), cat({lo.to(kFloat), hi}));
  EXPECT_EQ(stack({lo, lo}).dtype(), kBFloat16);
  EXPECT_EQ(cat({lo, dbl}).dtype(), kDouble) << "float64 is ignored by the promotion and left alone";
  EXPECT_EQ(cat({lo, ints}).dtype(), kBFloat16) << "integer tensors are not cast";
}

TEST_F(Autocast, OnlyFloatingTensorsOfTheScopesDeviceTypeAreCast) {
  const Tensor a = randn({3, 3}), d = randn({3, 3}).to(kDouble);
  const Tensor i = tensor(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}).reshape({3, 3});
  {
    autocast scope(kCUDA, kBFloat16);
    EXPECT_EQ(mm(a, a).dtype(), kFloat) << "a CUDA scope leaves CPU tensors alone";
  }
  autocast scope(kCPU);
  EXPECT_EQ(mm(d, d).dtype(), kDouble) << "float64 is never cast";
  EXPECT_EQ(mm(i, i).dtype(), kLong) << "integer tensors are never cast";
}

TEST_F(Autocast, NestedScopesInheritTheDtypeAndRestoreTheState) {
  const Tensor a = randn({3, 3});
  {
    autocast outer(kCPU, kHalf);
    {
      autocast inner(kCPU);  // no dtype: the current one
      EXPECT_EQ(mm(a, a).dtype(), kHalf);
      {
        autocast off(kCPU, std::nullopt, /*enabled=*/false);
        EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
        EXPECT_EQ(mm(a, a).dtype(), kFloat) << "enabled=false runs the region in float32";
      }
      EXPECT_EQ(mm(a, a).dtype(), kHalf);
    }
    EXPECT_EQ(amp::get_autocast_dtype(kCPU), kHalf);
  }
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16) << "the default returns when the outer scope ends";
}

TEST_F(Autocast, WeightCastsAreCachedWithinTheOutermostScopeAndDroppedAtItsEnd) {
  const Tensor w = randn({4, 4}).requires_grad_();
  const Tensor x = randn({2, 4});
  const Tensor activation = randn({4, 4}) * 1;  // not a leaf that requires grad
  {
    autocast scope(kCPU);
    mm(x, w);
    EXPECT_EQ(ops::autocast_cache_size(), 1u);
    {
      autocast inner(kCPU);
      mm(x, w);
    }
    EXPECT_EQ(ops::autocast_cache_size(), 1u) << "the second use of the weight reuses its cast";
    mm(x, activation);
    mm(x, w.detach());
    EXPECT_EQ(ops::autocast_cache_size(), 1u) << "only float32 leaves that require grad are cached";
  }
  EXPECT_EQ(ops::autocast_cache_size(), 0u);
  {
    autocast scope(kCPU, std::nullopt, true, /*cache_enabled=*/false);
    mm(x, w);
    EXPECT_EQ(ops::autocast_cache_size(), 0u);
    EXPECT_FALSE(amp::is_autocast_cache_enabled());
  }
  EXPECT_TRUE(amp::is_autocast_cache_enabled());
}

TEST_F(Autocast, GradientsFlowThroughTheCastsToFloat32Weights) {
  const Tensor w = randn({3, 5}).requires_grad_(), b = randn({3}).requires_grad_();
  const Tensor x = randn({4, 5});
  Tensor loss;
  {
    autocast scope(kCPU);
    Tensor y = linear(x, w, b);
    EXPECT_EQ(y.dtype(), kBFloat16);
    loss = mse_loss(y, zeros({4, 3}));  // fp32
  }
  EXPECT_EQ(loss.dtype(), kFloat);
  loss.backward();
  // The same graph written with explicit casts.
  const Tensor w16 = w.detach().to(kBFloat16).requires_grad_(), b16 = b.detach().to(kBFloat16).requires_grad_();
  mse_loss(linear(x.to(kBFloat16), w16, b16).to(kFloat), zeros({4, 3})).backward();
  expect_identical(w.grad(), w16.grad().to(kFloat), "weight");
  expect_identical(b.grad(), b16.grad().to(kFloat), "bias");
}

TEST_F(Autocast, BackwardInsideAScopeIsNotCast) {
  const Tensor w = randn({6, 6}).requires_grad_(), x = randn({6, 6});
  mm(mm(x, w), w).sum().backward();
  const Tensor outside = w.grad().clone();
  w.mutable_grad() = Tensor();
  Tensor loss = mm(mm(x, w), w).sum();
  {
    autocast scope(kCPU);
    loss.backward();
  }
  expect_identical(w.grad(), outside);
}

TEST_F(Autocast, PolicyFp32SetOptDtypeSetsFloat32OnlyWhenNoDtypeIsGiven) {
  // CUDA's policy for softmax, applied to CPU tensors: the rule is the same.
  const ops::OpDef& softmax_op = ops::registry().get("aten::softmax.int");
  const Tensor x = randn({2, 3}).to(kBFloat16);
  autocast scope(kCPU);
  Stack set = ops::apply_cast_policy(CastPolicy::Fp32SetOptDtype, DeviceType::CPU, softmax_op, {x, int64_t{1}, IValue()});
  EXPECT_EQ(set[2].to_scalar_type(), kFloat);
  EXPECT_TRUE(set[0].to_tensor().is_same(x)) << "the input is not cast; the op converts it";
  Stack kept = ops::apply_cast_policy(CastPolicy::Fp32SetOptDtype, DeviceType::CPU, softmax_op,
                                      {x, int64_t{1}, IValue(kBFloat16)});
  EXPECT_EQ(kept[2].to_scalar_type(), kBFloat16);
  Stack ineligible = ops::apply_cast_policy(CastPolicy::Fp32SetOptDtype, DeviceType::CPU, softmax_op,
                                            {x.to(kDouble), int64_t{1}, IValue()});
  EXPECT_TRUE(ineligible[2].is_none()) << "a float64 input keeps its own promotion";
}

TEST_F(Autocast, PolicyFp32CastsEveryEligibleTensor) {
  const ops::OpDef& ln = ops::registry().get("aten::layer_norm");
  const Tensor x = randn({2, 4}).to(kBFloat16), w = randn({4}).to(kBFloat16);
  autocast scope(kCPU);
  Stack out = ops::apply_cast_policy(CastPolicy::Fp32, DeviceType::CPU, ln,
                                     {x, std::vector<int64_t>{4}, w, IValue(), 1e-5, true});
  EXPECT_EQ(out[0].to_tensor().dtype(), kFloat);
  EXPECT_EQ(out[2].to_tensor().dtype(), kFloat);
  EXPECT_TRUE(out[3].is_none());
}

TEST_F(Autocast, PromotionOfTheOtherLowPrecisionTypeRaises) {
  const ops::OpDef& cat_op = ops::registry().get("aten::cat");
  autocast scope(kCPU, kBFloat16);
  const std::string msg = error_of([&] {
    ops::apply_cast_policy(CastPolicy::Promote, DeviceType::CPU, cat_op,
                           {std::vector<Tensor>{ones({2}, kBFloat16), ones({2}, kHalf)}, int64_t{0}});
  });
  EXPECT_NE(msg.find("an argument is Half"), std::string::npos) << msg;
}

TEST_F(Autocast, BannedPolicyNamesTheSafeAlternative) {
  const ops::OpDef& bce = ops::registry().get("aten::binary_cross_entropy");
  autocast scope(kCPU);
  const std::string msg = error_of([&] {
    ops::apply_cast_policy(CastPolicy::Banned, DeviceType::CPU, bce, {ones({2}), ones({2}), IValue(), int64_t{1}});
  });
  EXPECT_NE(msg.find("unsafe to autocast"), std::string::npos) << msg;
  EXPECT_NE(msg.find("binary_cross_entropy_with_logits"), std::string::npos) << msg;
}

TEST_F(Autocast, ScopeRejectsADeviceIndexAnotherDeviceTypeAndOtherDtypes) {
  const int line = __LINE__ + 1;
  std::string msg = error_of([] { autocast s(Device("cuda:0")); });
  EXPECT_NE(msg.find("without an index"), std::string::npos) << msg;
  EXPECT_NE(msg.find("autocast_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
  msg = error_of([] { autocast s(kMeta); });
  EXPECT_NE(msg.find("kCPU and kCUDA, got meta"), std::string::npos) << msg;
  msg = error_of([] { autocast s(kCPU, kFloat); });
  EXPECT_NE(msg.find("float16 or bfloat16, got Float"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
