// Tests of training graphs traced with dynamic shapes (Note [aot], "Dynamic shapes"): the
// joint graph is traced over the forward graph's size symbols, so an MLP and a small
// transformer-ish block trained with a dynamic batch (and sequence length) compile once
// under "aot_eager" and "inductor" and give eager's loss and gradients at every size,
// without the interpreter; the guards the backward adds reach the entry (a test op's
// formula reads sizes as integers); an embedding over a symbolic vocabulary compiles once
// (embedding_dense_backward's num_weights is a SymInt); batch 1 is its
// own static entry, as in PyTorch; the backward reads a symbol that no saved tensor has
// as a size from a saved forward input; the partition is the static one's at the example
// sizes; a CNN with a dynamic image size (ops/spatial_meta.cpp) and one with a dynamic
// batch under layout optimization compile once.
#include <gtest/gtest.h>

#include <cmath>

#include "aot/aot.h"
#include "aot/joint.h"
#include "core/sym_geometry.h"
#include "ember/ember.h"
#include "inductor/inductor.h"
#include "ops/dispatch.h"
#include "ops/registry.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::LogCapture;

class SymbolicTraining : public testing::CompileDirTest, public ::testing::WithParamInterface<std::string> {};
class SymbolicJoint : public testing::CompileDirTest {};

Tensor leaf(std::vector<int64_t> sizes) { return (randn(sizes) * 0.5).detach().requires_grad_(); }

/// The gradients of `params` after `loss.backward()`, cloned, and the slots cleared.
std::vector<Tensor> take_grads(const Tensor& loss, const std::vector<Tensor>& params) {
  loss.backward();
  std::vector<Tensor> out;
  for (const Tensor& p : params) {
    out.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    const_cast<Tensor&>(p).mutable_grad() = Tensor();
  }
  return out;
}

/// The loss and every parameter's gradient of the compiled call equal eager's.
template <typename F, typename C>
void expect_training_matches_eager(F& eager, C& compiled, const std::vector<Tensor>& params, const Tensor& x,
                                   const Tensor& y, const std::string& what) {
  const Tensor loss = compiled(x, y);
  const std::vector<Tensor> grads = take_grads(loss, params);
  const Tensor expected = eager(x, y);
  const std::vector<Tensor> expected_grads = take_grads(expected, params);
  expect_close(loss, expected, 1e-4, 1e-5, what + ": loss");
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << what << ": parameter " << i << " got no gradient";
    expect_close(grads[i], expected_grads[i], 1e-4, 1e-5, what + ": gradient of parameter " + std::to_string(i));
  }
}

struct Mlp {
  Tensor w1 = leaf({32, 16}), b1 = leaf({32}), w2 = leaf({8, 32}), b2 = leaf({8});
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
  Tensor operator()(const Tensor& x, const Tensor& y) const {
    Tensor h = gelu(linear(x, w1, b1));
    return mse_loss(linear(h, w2, b2).relu(), y);
  }
};

/// An embedding, layer norm, one attention head with softmax, GELU and a cross-entropy
/// loss over the vocabulary, on tokens [B, T].
struct Block {
  static constexpr int64_t kVocab = 11, kDim = 16;
  Tensor wte = leaf({kVocab, kDim}), ln_w = leaf({kDim}), ln_b = leaf({kDim});
  Tensor wq = leaf({kDim, kDim}), wk = leaf({kDim, kDim}), wv = leaf({kDim, kDim});
  Tensor w_fc = leaf({kDim, kDim}), b_fc = leaf({kDim}), w_out = leaf({kVocab, kDim});
  std::vector<Tensor> params() const { return {wte, ln_w, ln_b, wq, wk, wv, w_fc, b_fc, w_out}; }
  Tensor operator()(const Tensor& tokens, const Tensor& targets) const {
    Tensor x = embedding(wte, tokens);                        // [B, T, C]
    Tensor h = layer_norm(x, {kDim}, ln_w, ln_b);
    Tensor q = linear(h, wq), k = linear(h, wk), v = linear(h, wv);
    Tensor att = softmax(matmul(q, k.transpose(1, 2)) * (1.0 / std::sqrt(double(kDim))), -1);  // [B, T, T]
    Tensor o = x + gelu(linear(matmul(att, v), w_fc, b_fc));
    Tensor logits = linear(o, w_out);                         // [B, T, V]
    return cross_entropy(logits.view({-1, kVocab}), targets.view({-1}));
  }
};

/// Token ids in [0, Block::kVocab) of sizes [batch, length].
Tensor random_tokens(int64_t batch, int64_t length) {
  return (rand({batch, length}) * static_cast<double>(Block::kVocab)).floor().to(kLong);
}

TEST_P(SymbolicTraining, MlpWithADynamicBatchCompilesOnceAndMatchesEagerGradients) {
  LogCapture logs;
  Mlp mlp;
  int traces = 0;
  auto f = [&](const Tensor& x, const Tensor& y) {
    ++traces;
    return mlp(x, y);
  };
  auto fn = compile(f, {.backend = GetParam(), .name = "mlp", .arg_names = {"x", "y"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (int64_t batch : {6, 9, 33, 6, 128}) {
    Tensor x = randn({batch, 16}), y = randn({batch, 8});
    expect_training_matches_eager(mlp, fn, mlp.params(), x, y, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one entry for every batch size";
  EXPECT_EQ(traces, 1);
  if (GetParam() == "inductor") {
    EXPECT_EQ(inductor::compiler_invocations() - before, 2) << "the forward and the backward, once each";
  }
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_P(SymbolicTraining, BlockWithADynamicBatchAndLengthCompilesOnceAndMatchesEagerGradients) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  Block block;
  int traces = 0;
  auto f = [&](const Tensor& tokens, const Tensor& targets) {
    ++traces;
    return block(tokens, targets);
  };
  auto fn = compile(f, {.backend = GetParam(), .name = "block", .arg_names = {"tokens", "targets"}, .dynamic = true});
  const int64_t before = inductor::compiler_invocations();
  for (auto [batch, length] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {4, 7}, {2, 12}, {6, 9}}) {
    Tensor tokens = random_tokens(batch, length), targets = random_tokens(batch, length);
    expect_training_matches_eager(block, fn, block.params(), tokens, targets,
                                  "batch " + std::to_string(batch) + ", length " + std::to_string(length));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one entry for every batch and length\n" << logs.text();
  EXPECT_EQ(traces, 1);
  if (GetParam() == "inductor") {
    EXPECT_EQ(inductor::compiler_invocations() - before, 2) << "the forward and the backward, once each";
  }
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

TEST_P(SymbolicTraining, BatchOneIsItsOwnStaticEntry) {
  Mlp mlp;
  auto fn = compile([&](const Tensor& x, const Tensor& y) { return mlp(x, y); },
                    {.backend = GetParam(), .name = "mlp", .arg_names = {"x", "y"}, .dynamic = true});
  for (int64_t batch : {5, 1, 7, 1}) {
    Tensor x = randn({batch, 16}), y = randn({batch, 8});
    expect_training_matches_eager(mlp, fn, mlp.params(), x, y, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "batch 1 is static (specialize_zero_one), 5 and 7 share one entry";
}

TEST_P(SymbolicTraining, BackwardReadsASymbolNoSavedTensorHasFromASavedInput) {
  // mean's gradient expands a 0-dim tangent to [s0, 5]: no saved value or tangent has s0
  // as a size, so the partitioner saves x for it (Note [backward symbols]).
  LogCapture logs;
  auto f = [](const Tensor& x) { return (x * 3.0).mean() * 2.0; };
  auto fn = compile(f, {.backend = GetParam(), .name = "mean", .arg_names = {"x"}, .dynamic = true});
  for (int64_t batch : {4, 9, 17}) {
    Tensor x = leaf({batch, 5});
    Tensor loss = fn(x);
    loss.backward();
    const Tensor compiled_grad = x.grad().clone();
    x.mutable_grad() = Tensor();
    Tensor expected = f(x);
    expected.backward();
    expect_close(loss, expected, 1e-5, 1e-6, "batch " + std::to_string(batch));
    expect_close(compiled_grad, x.grad(), 1e-5, 1e-6, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(fn.cache_size(), 1u);
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

/// `ember_test::twice(Tensor self) -> Tensor`, 2 * self, registered once: its meta keeps
/// symbolic sizes symbolic, its derivative formula reads its argument's sizes as integers
/// (`arg_sizes`), so a backward specializes what the forward keeps symbolic. Ember's own
/// formulas read none since embedding's num_weights became a SymInt.
const ops::OpDef& twice_op() {
  static const ops::OpDef& op = []() -> const ops::OpDef& {
    return ops::registry()
        .def("ember_test::twice(Tensor self) -> Tensor")
        .set_meta([](const Stack& a) -> std::vector<TensorMeta> {
          const Tensor& t = a[0].to_tensor();
          return core::over_geometry({&t}, [&]<typename Int>() -> std::vector<TensorMeta> {
            using G = core::Geometry<Int>;
            const auto sizes = G::sizes(t), strides = G::strides(t);
            return {G::meta(std::vector<Int>(sizes.begin(), sizes.end()), std::vector<Int>(strides.begin(), strides.end()),
                            G::offset(t), t.dtype(), t.device())};
          });
        })
        .set_cpu([](const Stack& a, std::vector<Tensor>& out) { out[0].copy_(a[0].to_tensor() * 2.0); })
        .set_derivative("TwiceBackward0", [](const ops::DerivativeContext& c) -> std::vector<Tensor> {
          return {c.grad().reshape(c.arg_sizes(0)) * 2.0};
        });
  }();
  return op;
}
Tensor twice(const Tensor& x) { return ops::call(twice_op(), {x})[0].to_tensor(); }

TEST_P(SymbolicTraining, AGuardTheBackwardAddsReachesTheEntry) {
  // twice's derivative formula reads its argument's sizes as integers: the joint trace
  // specializes the batch, and the entry's guards say so.
  LogCapture logs;
  set_logs("guards,dynamic");
  auto f = [](const Tensor& x) { return twice(x).sum(); };
  auto fn = compile(f, {.backend = GetParam(), .name = "strided", .arg_names = {"x"}, .dynamic = true});
  for (int64_t batch : {5, 8, 5}) {
    Tensor x = leaf({batch, 3});
    Tensor loss = fn(x);
    loss.backward();
    const Tensor compiled_grad = x.grad().clone();
    x.mutable_grad() = Tensor();
    f(x).backward();
    expect_close(compiled_grad, x.grad(), 1e-5, 1e-6, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "each batch size its own entry, guarded by the backward's specialization";
  EXPECT_NE(logs.text().find("ember_test::twice reads sizes as integers"),
            std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("x.size(0) == 5"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("x.size(0) == 8"), std::string::npos) << logs.text();
}

TEST_P(SymbolicTraining, AnEmbeddingOverASymbolicVocabularyCompilesOnceWithEagersGradients) {
  // embedding_dense_backward's num_weights is a SymInt (PyTorch's schema): the weight's
  // symbolic rows stay symbolic in the backward, so two vocabulary sizes share one entry.
  LogCapture logs;
  set_logs("guards,dynamic");
  const Tensor tokens = tensor<int64_t>({0, 3, 1, 3, 2}, {5});
  auto f = [&](const Tensor& wte, const Tensor& y) { return mse_loss(embedding(wte, tokens), y); };
  auto fn = compile(f, {.backend = GetParam(), .name = "vocab", .arg_names = {"wte", "y"}, .dynamic = true});
  for (int64_t vocab : {6, 9, 6}) {
    Tensor wte = leaf({vocab, 4});
    const Tensor y = randn({5, 4});
    expect_training_matches_eager(f, fn, {wte}, wte, y, "vocabulary " + std::to_string(vocab));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("reads sizes as integers"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_P(SymbolicTraining, GuardsOfTheMlpAreTheForwardsAndTheBackwardGraphIsOverTheSymbols) {
  LogCapture logs;
  set_logs("guards,aot_graphs");
  Mlp mlp;
  auto fn = compile([&](const Tensor& x, const Tensor& y) { return mlp(x, y); },
                    {.backend = GetParam(), .name = "mlp", .arg_names = {"x", "y"}, .dynamic = true});
  fn(randn({6, 16}), randn({6, 8})).backward();
  const std::string text = logs.text();
  EXPECT_NE(text.find("tensor 'x': Float [s0, s1] strides [s1, 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("2 <= x.size(0)"), std::string::npos) << text;
  EXPECT_NE(text.find("y.size(0) == x.size(0)"), std::string::npos) << text;
  // The feature sizes meet the weights: linear's and mse_loss's forward specialize them.
  EXPECT_NE(text.find("x.size(1) == 16"), std::string::npos) << text;
  EXPECT_NE(text.find("8 == y.size(1)"), std::string::npos) << text;
  EXPECT_EQ(text.find("x.size(0) == 6"), std::string::npos) << "nothing specialized the batch\n" << text;
  const size_t backward = text.find("aot backward graph");
  ASSERT_NE(backward, std::string::npos) << text;
  EXPECT_NE(text.find("f32[s0, 32]", backward), std::string::npos) << "saved values over the symbols\n" << text;
}

TEST_P(SymbolicTraining, LayoutOptimizationOfAConvolutionWithADynamicBatchCompilesOnce) {
  // aot/layout.cpp's rules compare geometry over the symbols: the batch stays symbolic
  // through the channels_last clone, both convolutions and their backward.
  config().aot.layout_optimization = true;
  LogCapture logs;
  set_logs("aot");
  Tensor w1 = leaf({4, 3, 3, 3}), b1 = leaf({4}), w2 = leaf({4, 4, 3, 3});
  auto f = [&](const Tensor& x, const Tensor& r) { return (conv2d(conv2d(x, w1, b1).relu(), w2) * r).sum(); };
  auto fn = compile(f, {.backend = GetParam(), .name = "cnn", .arg_names = {"x", "r"}, .dynamic = true});
  for (int64_t batch : {2, 3, 5}) {
    Tensor x = randn({batch, 3, 8, 8}), r = randn({batch, 4, 4, 4});
    expect_training_matches_eager(f, fn, {w1, b1, w2}, x, r, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_NE(logs.text().find("convolution inputs made channels_last"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

/// The `aot: partition of …` log line of a training compile of the MLP at batch 6.
std::string mlp_partition_line(const std::string& backend, bool dynamic) {
  LogCapture logs;
  set_logs("aot");
  Mlp mlp;
  auto fn = compile([&](const Tensor& x, const Tensor& y) { return mlp(x, y); },
                    {.backend = backend, .name = "mlp", .arg_names = {"x", "y"}, .dynamic = dynamic});
  fn(randn({6, 16}), randn({6, 8})).backward();
  const std::string text = logs.text();
  const size_t at = text.find("aot: partition of");
  if (at == std::string::npos) return "(no partition line)\n" + text;
  return text.substr(at, text.find('\n', at) - at);
}

TEST_P(SymbolicTraining, PartitionOfTheSymbolicGraphSavesWhatTheStaticOneSavesAtTheExampleSizes) {
  // The byte estimates read the symbols' example values: the min-cut choice, its saved
  // bytes and the forward graph are those of a static compile at batch 6. (The backward
  // differs by mean's count, computed in the graph over the symbols: full, sum, mul.)
  const std::string symbolic = mlp_partition_line(GetParam(), true);
  const std::string fixed = mlp_partition_line(GetParam(), false);
  ASSERT_NE(fixed.find("(min-cut): saves"), std::string::npos) << fixed;
  auto up_to_backward = [](const std::string& line) { return line.substr(0, line.find(", backward")); };
  EXPECT_EQ(up_to_backward(symbolic), up_to_backward(fixed)) << symbolic << "\n" << fixed;
}

/// Two convolutions with max and average pooling between them and a classifier over the
/// adaptive average: every op whose meta is over SymInt in every dim (ops/spatial_meta.cpp).
struct Cnn {
  Tensor w1 = leaf({6, 3, 3, 3}), b1 = leaf({6}), w2 = leaf({8, 6, 3, 3}), fc = leaf({5, 8}), fc_b = leaf({5});
  std::vector<Tensor> params() const { return {w1, b1, w2, fc, fc_b}; }
  Tensor operator()(const Tensor& x, const Tensor& labels) const {
    Tensor h = max_pool2d(conv2d(x, w1, b1, {1, 1}, {1, 1}).relu(), {2, 2});
    h = avg_pool2d(conv2d(h, w2, std::nullopt, {1, 1}, {1, 1}).relu(), {2, 2}, {1, 1}, {0, 0}, /*ceil_mode=*/true);
    return cross_entropy(linear(adaptive_avg_pool2d(h, {1, 1}).flatten(1), fc, fc_b), labels);
  }
};

TEST_P(SymbolicTraining, CnnWithADynamicImageSizeCompilesOnceAndMatchesEagerGradients) {
  LogCapture logs;
  set_logs("dynamic");
  Cnn cnn;
  int traces = 0;
  auto f = [&](const Tensor& x, const Tensor& labels) {
    ++traces;
    return cnn(x, labels);
  };
  auto fn = compile(f, {.backend = GetParam(), .name = "cnn", .arg_names = {"x", "labels"}, .dynamic = true});
  // Batch, height and width all change; no two sizes of a call are equal (duck shaping).
  for (auto [n, h, w] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{2, 8, 10}, {4, 12, 9}, {5, 16, 14}}) {
    Tensor x = randn({n, 3, h, w});
    Tensor labels = (rand({n}) * 5.0).floor().to(kLong);
    expect_training_matches_eager(cnn, fn, cnn.params(), x, labels,
                                  "image " + std::to_string(h) + "x" + std::to_string(w));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_P(SymbolicTraining, GroupedQueryAttentionTrainsWithEagersGradients) {
  // enable_gqa: 6 query heads over 2 key/value heads, the fused op and its backward (the
  // flash path, its metas over the symbols) and, with a key/value batch to broadcast, the
  // math form over repeated heads; key and value gradients summed over their query heads.
  struct Attn {
    Tensor wk = leaf({4, 8}), wv = leaf({4, 8});
    bool broadcast = false;
    std::vector<Tensor> params() const { return {wk, wv}; }
    Tensor operator()(const Tensor& q, const Tensor& x) const {
      const int64_t b = broadcast ? 1 : q.size(0);
      const Tensor kv = broadcast ? x.narrow(0, 0, 1) : x;
      Tensor k = matmul(kv, wk).view({b, 2, 7, 8}), v = matmul(kv, wv).view({b, 2, 7, 8});
      return scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, true).pow(2).mean();
    }
  };
  for (bool broadcast : {false, true}) {
    Attn attn;
    attn.broadcast = broadcast;
    auto fn = compile([&](const Tensor& q, const Tensor& x) { return attn(q, x); },
                      {.backend = GetParam(), .name = "gqa", .arg_names = {"q", "x"}});
    const Tensor q = randn({3, 6, 5, 8}), x = randn({3, 14, 4});
    expect_training_matches_eager(attn, fn, attn.params(), q, x,
                                  broadcast ? "key/value batch broadcast (math form)" : "fused form");
  }
}

TEST_F(SymbolicJoint, ATrainingGraphCompiledAtALaterCallThatSpecializesItsSizeRunsThatCallInTheInterpreter) {
  // The inference graph compiles at the example call (batch 5, no grad); the training
  // graph at the first call needing gradients, batch 8. Its joint graph is traced at the
  // example sizes, and twice's formula specializes the batch to
  // 5: that call is not one the guards admit now, so the interpreter runs it, with eager's
  // gradient.
  twice_op();  // registered before the graph names it
  LogCapture logs;
  std::unique_ptr<Graph> g = parse_graph(
      "graph late {\n"
      "  symbol s0 = 5 for x.size(0) [2, inf]\n"
      "  %x : f32[s0, 3] = placeholder[x]\n"
      "  %idx : i64[2] = placeholder[idx]\n"
      "  %y : f32[s0, 3] = ember_test::twice(%x)\n"
      "  %sum : f32[] = aten::sum(%y, None)\n"
      "  return (%sum)\n"
      "}\n");
  const Backend interpret = [](Graph& graph, const std::vector<Tensor>&) { return eager_backend(graph); };
  const Tensor idx = arange(2, TensorOptions(kLong));
  CompiledGraph fn = aot::aot_compile(*g, {randn({5, 3}), idx}, interpret, "eager");
  Tensor x = leaf({8, 3});
  std::vector<Tensor> out = fn({x, idx});
  out[0].backward();
  const Tensor compiled_grad = x.grad().clone();
  x.mutable_grad() = Tensor();
  Tensor expected = twice(x).sum();
  expected.backward();
  expect_close(out[0], expected);
  expect_close(compiled_grad, x.grad());
  EXPECT_NE(logs.text().find("specialized sizes this call does not have"), std::string::npos) << logs.text();
}

INSTANTIATE_TEST_SUITE_P(Backends, SymbolicTraining, ::testing::Values("aot_eager", "inductor"));

}  // namespace
}  // namespace ember
