// Attention through the inductor (graph_passes.cpp's fuse_attention): each written form of
// softmax(q @ k^T * scale + mask) @ v becomes one extern call of the fused flash op,
// logged with its pattern, and equals eager, in inference and training graphs (whose
// backward then calls the fused op's backward); near misses keep their unfused graph. See
// Note [inductor], "Fusing attention", and Note [flash attention].
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using FuseAttentionTest = testing::CompileDirTest;

constexpr const char* kFlash = "aten::_scaled_dot_product_flash_attention_for_cpu";
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t extern_count(const inductor::CompileReport& r, const std::string& op) {
  size_t n = 0;
  for (const std::string& e : r.extern_calls) n += e == op;
  return n;
}

using AttentionFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&)>;

/// Runs `fn` eagerly and compiled on q, k, v [2, 3, 24, 8] and `mask`; expects the same
/// values, and the flash op called `flash` times with the pattern `pattern` in the log.
void check(const AttentionFn& fn, const Tensor& mask, size_t flash, const std::string& pattern,
           ScalarType dt = kFloat) {
  testing::LogCapture logs("inductor");
  manual_seed(11);
  const Tensor q = randn({2, 3, 24, 8}, dt), k = randn({2, 3, 24, 8}, dt), v = randn({2, 3, 24, 8}, dt);
  NoGradGuard no_grad;
  const Tensor want = fn(q, k, v, mask);
  const Tensor got = compile(fn, {.backend = "inductor"})(q, k, v, mask);
  const inductor::CompileReport rep = inductor::last_compile_report();
  EXPECT_EQ(extern_count(rep, kFlash), flash) << logs.text();
  const bool logged = logs.text().find("fuse_attention: pattern " + pattern) != std::string::npos;
  // An empty pattern: the fused op comes from sdpa itself, not from the pass.
  if (flash && !pattern.empty()) {
    EXPECT_TRUE(logged) << logs.text();
  }
  if (!flash) {
    EXPECT_FALSE(logged) << logs.text();
  }
  expect_close(got, want, dt == kFloat ? 1e-5 : 1e-12, dt == kFloat ? 1e-5 : 1e-12);
}

Tensor causal_bool_mask() { return triu(ones({24, 24}, kBool), 1); }

TEST_F(FuseAttentionTest, MulScaleAndCausalMaskedFillAsGpt2WritesIt) {
  for (ScalarType dt : {kFloat, kDouble})
    check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
      Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(8.0));
      return matmul(softmax(masked_fill(att, m, -kInf), -1), v);
    }, causal_bool_mask(), 1, "matmul -> scale (mul) -> bool mask (masked_fill) -> softmax -> matmul", dt);
}

TEST_F(FuseAttentionTest, ASymbolicLengthIsFusedOnceForEveryLength) {
  // W10's form: the causal mask built in the graph over the symbolic length T. The matcher
  // compares sizes as expressions, so the graph over T takes the fused op, and one compile
  // serves every length.
  testing::LogCapture logs("inductor");
  auto fn = [](const Tensor& q, const Tensor& k, const Tensor& v) {
    const SymInt T = sym_size(q, 2);
    Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(8.0));
    return matmul(softmax(masked_fill(att, triu(ones({T, T}, kBool), 1), -kInf), -1), v);
  };
  auto compiled = compile(fn, {.backend = "inductor", .dynamic = true});
  NoGradGuard no_grad;
  for (int64_t t : {24, 37, 130}) {
    manual_seed(13);
    const Tensor q = randn({2, 3, t, 8}), k = randn({2, 3, t, 8}), v = randn({2, 3, t, 8});
    expect_close(compiled(q, k, v), fn(q, k, v), 1e-5, 1e-5);
  }
  EXPECT_EQ(compiled.cache_size(), 1u);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), kFlash), 1u) << logs.text();
  EXPECT_NE(logs.text().find("fuse_attention: pattern matmul -> scale (mul) -> bool mask (masked_fill) -> softmax"),
            std::string::npos)
      << logs.text();
}

TEST_F(FuseAttentionTest, DivScaleWithoutMask) {
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
    return matmul(softmax(matmul(q, k.transpose(-2, -1)) / 3.0, -1), v);
  }, causal_bool_mask(), 1, "matmul -> scale (div) -> no mask -> softmax -> matmul");
}

TEST_F(FuseAttentionTest, AdditiveMaskBroadcastPerBatch) {
  manual_seed(12);
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
    return matmul(softmax(matmul(q, k.transpose(-2, -1)) * 0.25 + m, -1), v);
  }, randn({2, 1, 24, 24}), 1, "matmul -> scale (mul) -> additive mask -> softmax -> matmul");
}

TEST_F(FuseAttentionTest, NoScaleAndKeyPermuted) {
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
    return matmul(softmax(matmul(q, k.permute({0, 1, 3, 2})), 3), v);
  }, causal_bool_mask(), 1, "matmul -> no scale -> no mask -> softmax -> matmul");
}

TEST_F(FuseAttentionTest, ScaledDotProductAttentionItselfIsTheFusedOp) {
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
    return scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
  }, causal_bool_mask(), 1, "");
}

/// Eager and compiled forward and backward of `fn` on q, k, v [2, 3, 24, 8] that require
/// grad and `mask` (requiring grad when `mask_grad`): the outputs and every gradient
/// agree; returns the extern calls of the flash op in the forward graph and of its
/// backward op in the backward graph.
std::pair<size_t, size_t> check_training(const AttentionFn& fn, const Tensor& mask, bool mask_grad) {
  manual_seed(14);
  const Tensor q0 = randn({2, 3, 24, 8}), k0 = randn({2, 3, 24, 8}), v0 = randn({2, 3, 24, 8});
  const Tensor g = randn({2, 3, 24, 8});
  auto run = [&](const AttentionFn& f, size_t* flash, size_t* backward) {
    std::vector<Tensor> in{q0.clone().requires_grad_(), k0.clone().requires_grad_(), v0.clone().requires_grad_(),
                           mask_grad ? mask.clone().requires_grad_() : mask};
    const Tensor out = f(in[0], in[1], in[2], in[3]);
    if (flash) *flash = extern_count(inductor::last_compile_report(), kFlash);
    (out * g).sum().backward();
    if (backward) *backward = extern_count(inductor::last_compile_report(), std::string(kFlash) + "_backward");
    in.insert(in.begin(), out.detach());
    return in;
  };
  size_t flash = 0, backward = 0;
  const std::vector<Tensor> want = run(fn, nullptr, nullptr);
  const std::vector<Tensor> got = run(compile(fn, {.backend = "inductor"}), &flash, &backward);
  expect_close(got[0], want[0], 1e-5, 1e-5);
  for (size_t i = 1; i < want.size(); ++i) {
    if (i == 4 && !mask_grad) continue;
    EXPECT_TRUE(got[i].grad().defined()) << "input " << i - 1;
    if (!got[i].grad().defined()) continue;
    expect_close(got[i].grad(), want[i].grad(), 1e-4, 1e-5);
  }
  return {flash, backward};
}

TEST_F(FuseAttentionTest, ATrainingGraphTakesTheFusedOpAndItsBackward) {
  // The pass runs on the forward before the joint graph is traced: the fused op's
  // derivative row puts _scaled_dot_product_flash_attention_for_cpu_backward in the
  // backward, which reads the saved out and logsumexp instead of the [L, S] softmax.
  testing::LogCapture logs("inductor");
  auto [flash, backward] = check_training([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
    Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(8.0));
    return matmul(softmax(masked_fill(att, m, -kInf), -1), v);
  }, causal_bool_mask(), false);
  EXPECT_EQ(flash, 1u) << logs.text();
  EXPECT_EQ(backward, 1u) << logs.text();
}

TEST_F(FuseAttentionTest, ATrainingGraphWhoseMaskRequiresGradKeepsTheUnfusedForm) {
  testing::LogCapture logs("inductor");
  manual_seed(15);
  auto [flash, backward] = check_training([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
    return matmul(softmax(matmul(q, k.transpose(-2, -1)) * 0.25 + m, -1), v);
  }, randn({2, 1, 24, 24}), true);
  EXPECT_EQ(flash, 0u) << logs.text();
  EXPECT_EQ(backward, 0u) << logs.text();
  EXPECT_NE(logs.text().find("not fused: its mask may require grad"), std::string::npos) << logs.text();
}

TEST_F(FuseAttentionTest, NearMissesKeepTheUnfusedGraph) {
  // Softmax over the queries' dim.
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
    return matmul(softmax(matmul(q, k.transpose(-2, -1)) * 0.5, -2), v);
  }, causal_bool_mask(), 0, "");
  // A mask of another shape (one row, broadcast over the queries).
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
    return matmul(softmax(masked_fill(matmul(q, k.transpose(-2, -1)) * 0.5, m, -kInf), -1), v);
  }, triu(ones({1, 24}, kBool), 1), 0, "");
  // The scores read twice (also returned through a sum): no single reader.
  check([](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
    Tensor s = matmul(q, k.transpose(-2, -1)) * 0.5;
    return matmul(softmax(s, -1), v) + s.sum({-1}, true);
  }, causal_bool_mask(), 0, "");
}

TEST_F(FuseAttentionTest, TheFusedOutputsLayoutKeepsEveryValueEagersStrides) {
  // GPT-2's block: q, k and v views of one [B, T, 3C] projection, transposed to [B, H, T,
  // D]. The fused op lays its output out like q ([B, T, H, D] memory, Note [flash attention
  // layout]) where the matmuls gave a contiguous [B, H, T, D]: the graph's outputs — the
  // attention itself, its transpose back to [B, T, C] (a copy no more), and a pointwise of
  // it — keep the strides eager gives them, and their values.
  testing::LogCapture logs("inductor");
  manual_seed(12);
  const int64_t B = 2, T = 24, H = 3, D = 8, C = H * D;
  const Tensor x = randn({B, T, 3 * C});
  auto fn = [=](const Tensor& in) -> std::vector<Tensor> {
    auto heads = [&](int64_t i) { return in.narrow(2, i * C, C).view({B, T, H, D}).transpose(1, 2); };
    const Tensor q = heads(0), k = heads(1), v = heads(2);
    Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(D)));
    const Tensor y = matmul(softmax(masked_fill(att, triu(ones({T, T}, kBool), 1), -kInf), -1), v);
    return {y, y.transpose(1, 2).contiguous().view({B, T, C}), y * 2.0};
  };
  NoGradGuard no_grad;
  const std::vector<Tensor> want = fn(x);
  const std::vector<Tensor> got = compile(fn, {.backend = "inductor"})(x);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), kFlash), 1u) << logs.text();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
    EXPECT_EQ(got[i].strides(), want[i].strides()) << "output " << i;
    expect_close(got[i], want[i], 1e-5, 1e-5);
  }
}

TEST_F(FuseAttentionTest, TheHeadsMergedBackAfterTheFusedOpAreNoCopy) {
  // y.transpose(1, 2).contiguous() after attention over GPT-2's transposed heads: the
  // fused output is [B, T, H, D] memory already, so the graph runs no kernel, only the
  // fused op's extern call.
  manual_seed(13);
  const int64_t B = 2, T = 24, H = 3, D = 8, C = H * D;
  const Tensor x = randn({B, T, 3 * C});
  auto fn = [=](const Tensor& in) {
    auto heads = [&](int64_t i) { return in.narrow(2, i * C, C).view({B, T, H, D}).transpose(1, 2); };
    const Tensor att = matmul(heads(0), heads(1).transpose(-2, -1)) * (1.0 / std::sqrt(double(D)));
    return matmul(softmax(att, -1), heads(2)).transpose(1, 2).contiguous().view({B, T, C});
  };
  NoGradGuard no_grad;
  const Tensor want = fn(x);
  const Tensor got = compile(fn, {.backend = "inductor"})(x);
  const inductor::CompileReport rep = inductor::last_compile_report();
  EXPECT_EQ(extern_count(rep, kFlash), 1u);
  std::string names;
  for (const auto& [kernel, nodes] : rep.kernels)
    for (const std::string& node : nodes) names += kernel + ": " + node + "\n";
  EXPECT_TRUE(rep.kernels.empty()) << names;
  EXPECT_EQ(got.strides(), want.strides());
  expect_close(got, want, 1e-5, 1e-5);
}

TEST_F(FuseAttentionTest, AnOutputWhoseEagerStridesNoCloneGivesKeepsTheContiguousFusedOutput) {
  // The attention returned transposed, a view: eager's strides are the contiguous output's
  // transposed, which no memory-format clone gives. The pass then clones the fused output
  // contiguous, so the view after it has eager's strides.
  testing::LogCapture logs("inductor");
  manual_seed(14);
  const int64_t B = 2, T = 24, H = 3, D = 8;
  const Tensor x = randn({B, T, 3 * H * D});
  auto fn = [=](const Tensor& in) {
    auto heads = [&](int64_t i) { return in.narrow(2, i * H * D, H * D).view({B, T, H, D}).transpose(1, 2); };
    const Tensor att = matmul(heads(0), heads(1).transpose(-2, -1)) * (1.0 / std::sqrt(double(D)));
    return matmul(softmax(att, -1), heads(2)).transpose(1, 2);
  };
  NoGradGuard no_grad;
  const Tensor want = fn(x);
  const Tensor got = compile(fn, {.backend = "inductor"})(x);
  EXPECT_EQ(extern_count(inductor::last_compile_report(), kFlash), 1u) << logs.text();
  EXPECT_NE(logs.text().find("the fused output keeps the contiguous layout"), std::string::npos) << logs.text();
  EXPECT_EQ(got.strides(), want.strides());
  expect_close(got, want, 1e-5, 1e-5);
}

}  // namespace
}  // namespace ember
