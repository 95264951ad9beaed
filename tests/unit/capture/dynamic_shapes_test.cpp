// Tests of dynamic shapes in ember::compile (Note [dynamic shapes]): under the "eager"
// and "aot_eager" backends a function called with many batch sizes compiles a static
// entry and then one symbolic entry (automatic dynamic shapes) whose results are eager's;
// the guards of a symbolic entry check the relations the trace recorded; mark_dynamic and
// mark_static choose the symbolic sizes; code that reads sizes as integers specializes
// them, and the `dynamic`, `guards` and `recompiles` logs say what happened; "inductor"
// specializes a graph it cannot compile over its symbols.
#include <gtest/gtest.h>

#include "core/shape_env.h"
#include "ember/ember.h"
#include "graph/text.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::expect_identical;
using testing::LogCapture;

class DynamicShapes : public testing::CompileDirTest {};
class DynamicShapesPerBackend : public testing::CompileDirTest, public ::testing::WithParamInterface<const char*> {};

/// A small model over the op families whose meta functions are written over SymInt:
/// linear (t + addmm), pointwise with broadcasting, softmax, layer_norm, view with -1,
/// transpose, unsqueeze, slice, select, cat, sum and mean over dims.
std::vector<Tensor> model(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor h = (linear(x, w, b).relu() * 2.0 + 1.0) - x.sum({1}, true);
  Tensor s = softmax(h, -1);
  Tensor n = layer_norm(h, {8});
  Tensor v = h.view({-1, 2, 4}).transpose(1, 2);  // [B, 4, 2], a non-contiguous view
  Tensor c = cat({s, n}, 1);                       // [B, 16]
  Tensor sl = c.slice(1, 2, 10) + c.select(1, 0).unsqueeze(1);
  return {c.sum({1}), v * 3.0, c.mean({0}), sl};
}

TEST_P(DynamicShapesPerBackend, BatchSizesOneToSixtyFourCompileTwiceAndMatchEager) {
  Tensor w = randn({8, 16}), b = randn({8});
  int traces = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++traces;
        std::vector<Tensor> out = model(x, w, b);
        return std::make_tuple(out[0], out[1], out[2], out[3]);
      },
      {.backend = GetParam(), .name = "batched", .arg_names = {"x"}});
  for (int64_t batch = 1; batch <= 64; ++batch) {
    Tensor x = randn({batch, 16});
    const auto [a, v, m, sl] = fn(x);
    const std::vector<Tensor> expected = model(x, w, b);
    const std::string what = "batch " + std::to_string(batch);
    expect_identical(a, expected[0], what);
    expect_identical(v, expected[1], what);
    expect_close(m, expected[2], 1e-6, 1e-6, what);
    ASSERT_EQ(m.strides().vec(), expected[2].strides().vec()) << what;
    expect_identical(sl, expected[3], what);
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "a static entry for batch 1, one symbolic entry for 2..64";
  EXPECT_EQ(traces, 2);
}

INSTANTIATE_TEST_SUITE_P(InterpretingBackends, DynamicShapesPerBackend, ::testing::Values("eager", "aot_eager"),
                         [](const auto& info) { return std::string(info.param); });

Tensor sum_both(const Tensor& x, const Tensor& y) { return x.sum({0}) + y.sum({0}); }

TEST_F(DynamicShapes, GuardsRejectACallThatBreaksARecordedEqualityAndRecompile) {
  LogCapture logs;
  set_logs("guards,recompiles");
  auto fn = compile(sum_both, {.backend = "eager", .name = "sum_both", .arg_names = {"x", "y"}, .dynamic = true});
  // Equal first sizes: one symbol stands for both (duck shaping), and their equality is a guard.
  Tensor x = randn({4, 3}), y = randn({4, 3});
  expect_identical(fn(x, y), sum_both(x, y));
  EXPECT_NE(logs.text().find("2 <= x.size(0)"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("y.size(0) == x.size(0)"), std::string::npos) << logs.text();
  Tensor x7 = randn({7, 5}), y7 = randn({7, 5});
  expect_identical(fn(x7, y7), sum_both(x7, y7));
  EXPECT_EQ(fn.cache_size(), 1u) << "equal sizes again: the symbolic entry serves them";
  Tensor y9 = randn({9, 5});
  expect_identical(fn(x7, y9), sum_both(x7, y9));
  EXPECT_EQ(fn.cache_size(), 2u) << "y.size(0) == x.size(0) no longer holds: a new entry";
  EXPECT_NE(logs.text().find("y.size(0) == x.size(0) (9 vs 7)"), std::string::npos) << logs.text();
}

TEST_F(DynamicShapes, GuardsCheckTheRangesOfMarkDynamic) {
  auto fn = compile([](const Tensor& x) { return x.relu() * 2.0; }, {.backend = "eager", .arg_names = {"x"}});
  for (int64_t n : {3, 4, 10, 12}) {
    Tensor x = randn({n, 2});
    if (n <= 10) mark_dynamic(x, 0, 2, 10);
    expect_identical(fn(x), x.relu() * 2.0);
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "3, 4 and 10 share the entry made for [2, 10]; 12 is outside it";
}

TEST_F(DynamicShapes, MarkStaticKeepsADimStaticUnderDynamicTrue) {
  auto fn = compile([](const Tensor& x) { return x * 2.0; }, {.backend = "eager", .dynamic = true});
  for (int64_t n : {3, 4}) {
    Tensor x = randn({n, 5});
    mark_static(x, 0);
    expect_identical(fn(x), x * 2.0);
  }
  EXPECT_EQ(fn.cache_size(), 2u);
  Tensor x = randn({3, 6});
  expect_identical(fn(x), x * 2.0);
  EXPECT_EQ(fn.cache_size(), 2u) << "dim 1 of the unmarked [3, 6] is symbolic in the first entry";
}

TEST_F(DynamicShapes, DynamicFalseCompilesEverySize) {
  auto fn = compile([](const Tensor& x) { return x * 2.0; }, {.backend = "eager", .dynamic = false});
  for (int64_t n : {3, 4, 5}) {
    Tensor x = randn({n});
    expect_identical(fn(x), x * 2.0);
  }
  EXPECT_EQ(fn.cache_size(), 3u);
}

TEST_F(DynamicShapes, InPlaceOpsKeepSizesSymbolic) {
  auto f = [](const Tensor& x, const Tensor& y) {
    Tensor z = x * 2.0;
    z.add_(y);  // the functional add, then copy_ into z: both compare sizes over SymInt
    z.relu_();
    return z;
  };
  auto fn = compile(f, {.backend = "eager", .dynamic = true});
  for (int64_t n : {3, 4, 9}) {
    Tensor x = randn({n, 5}), y = randn({5});
    expect_identical(fn(x, y), f(x, y));
  }
  EXPECT_EQ(fn.cache_size(), 1u);
}

TEST_F(DynamicShapes, ReadingASizeAsAnIntegerSpecializesItAndTheLogSaysWhere) {
  LogCapture logs;
  set_logs("dynamic");
  auto fn = compile([](const Tensor& x) { return x.view({x.size(0) * 2, -1}); },
                    {.backend = "eager", .name = "reads_size", .arg_names = {"x"}, .dynamic = true});
  for (int64_t n : {4, 6}) {
    Tensor x = randn({n, 6});
    expect_identical(fn(x), x.view({n * 2, -1}));
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "x.size(0) was specialized: each size is its own entry";
  EXPECT_NE(logs.text().find("create_symbol s0 = 4 for x.size(0)"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("specialized s0 (x.size(0)) = 4: user code read the sizes as integers"),
            std::string::npos)
      << logs.text();
}

TEST_F(DynamicShapes, AnOpWithoutASymbolicMetaFunctionSpecializesItsInputAndIsNamed) {
  LogCapture logs;
  set_logs("dynamic");
  // upsample_nearest2d's output size under a scale of 1.7 is floor(size * 1.7) in float64,
  // which no size expression writes exactly: the size is read as an integer.
  auto up = [](const Tensor& x) { return upsample_nearest2d(x.relu(), std::nullopt, std::vector<double>{1.7, 1.7}); };
  auto fn = compile(up, {.backend = "eager", .name = "upsample_fn", .arg_names = {"x"}, .dynamic = true});
  for (int64_t h : {4, 5}) {
    Tensor x = randn({2, 3, h, 6});
    expect_identical(fn(x), up(x));
  }
  EXPECT_EQ(fn.cache_size(), 2u);
  EXPECT_NE(logs.text().find("specialized s2 (x.size(2)) = 4: aten::upsample_nearest2d.vec reads sizes as integers"),
            std::string::npos)
      << logs.text();
}

// _pdist_forward's pair indices are computed in closed form over the row count as a
// SymInt (a 0-dim float64 tensor in the formula, the same float64 operations as a static
// count's): under dynamic=true one entry serves every row count, with eager's bits. It read
// the count as an integer before, and each new count recompiled.
TEST_F(DynamicShapes, PdistKeepsTheRowCountSymbolic) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  auto f = [](const Tensor& x) { return _pdist_forward(x.relu(), 2.0) + _pdist_forward(x, 1.5); };
  for (const char* backend : {"eager", "inductor"}) {
    auto fn = compile(f, {.backend = backend, .name = "pdist_fn", .arg_names = {"x"}, .dynamic = true});
    for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {7, 5}, {12, 4}}) {
      const Tensor x = randn({n, m});
      const Tensor got = fn(x), want = f(x);
      ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << backend << " " << n;
      expect_close(got, want, 1e-6, 1e-6, std::string(backend) + " n=" + std::to_string(n));
    }
    EXPECT_EQ(fn.cache_size(), 1u) << backend << "\n" << logs.text();
  }
}

TEST_F(DynamicShapes, CopiesRepeatAndCrossEntropyKeepTheBatchSymbolic) {
  // A copy of a transposed tensor keeps its strides over the symbols (like()), repeat
  // computes its sizes over them, and cross_entropy compares the batch of input and target
  // as SymInts: nothing reads the batch as an integer, so one entry serves every batch.
  LogCapture logs;
  set_logs("dynamic");
  auto f = [](const Tensor& x, const Tensor& target) {
    const Tensor copied = x.transpose(0, 1).clone().to(kDouble);
    return std::make_tuple(copied, repeat(x, {2, 1}), cross_entropy(x, target));
  };
  auto fn = compile(f, {.backend = "eager", .name = "copies", .arg_names = {"x", "target"}, .dynamic = true});
  for (int64_t n : {4, 6, 9}) {
    Tensor x = randn({n, 5});
    Tensor target = remainder(arange(n), 5);
    const auto [a, b, c] = fn(x, target);
    const auto [ea, eb, ec] = f(x, target);
    expect_identical(a, ea);
    EXPECT_EQ(a.strides(), ea.strides());
    expect_identical(b, eb);
    expect_close(c, ec);
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  // nll_loss_forward's meta is written over SymInt: the classes stay symbolic too.
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

TEST_F(DynamicShapes, PaddingToAMultipleOfASymbolicLengthKeepsOneCompile) {
  // constant_pad_nd's amounts computed from a symbolic length stay expressions (its meta
  // computes over SymInt), so padding every length up to a multiple of 8 compiles once and
  // the kernel after it runs over the padded length's expression.
  LogCapture logs;
  set_logs("dynamic");
  auto f = [](const Tensor& x) {
    const SymInt T = sym_size(x, 1);
    return constant_pad_nd(x, {0, (8 - T % 8) % 8}, 0.5) * 2;
  };
  auto fn = compile(f, {.backend = "inductor", .name = "pad8", .arg_names = {"x"}, .dynamic = true});
  for (int64_t t : {5, 9, 16, 21}) {
    const Tensor x = randn({3, t});
    const Tensor got = fn(x), want = f(x);
    EXPECT_EQ(got.size(1), (t + 7) / 8 * 8);
    expect_identical(got, want);
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("(x.size(1)) ="), std::string::npos) << "the length stays symbolic:\n" << logs.text();
}

TEST_F(DynamicShapes, CatOfFourDimensionalTensorsAsksTheirMemoryFormatWithoutSpecializing) {
  // cat keeps its inputs' common memory format, so it asks whether 4-D inputs are
  // channels_last (PyTorch's suggest_memory_format). The rule runs over the symbols: neither
  // contiguous nor channels_last (NHWC memory, permuted) inputs have a size specialized or a
  // guard added, one entry serves every size, and the result has eager's strides.
  for (const bool nhwc : {false, true}) {
    LogCapture logs;
    set_logs("dynamic");
    auto f = [](const Tensor& a, const Tensor& b) { return cat({a, b}, 1); };
    auto fn = compile(f, {.backend = "inductor", .name = "cat4d", .arg_names = {"a", "b"}, .dynamic = true});
    for (int64_t n : {3, 5, 9}) {
      auto make = [&](int64_t c) {
        return nhwc ? randn({n, n + 1, n + 2, c}).permute({0, 3, 1, 2}) : randn({n, c, n + 1, n + 2});
      };
      const Tensor a = make(13), b = make(17);
      const Tensor got = fn(a, b), want = f(a, b);
      const std::string what = std::string(nhwc ? "channels_last" : "contiguous") + " n " + std::to_string(n);
      EXPECT_EQ(got.strides().vec(), want.strides().vec()) << what;
      expect_identical(got, want, what);
    }
    EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
    EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
    EXPECT_EQ(logs.text().find("[guard added]"), std::string::npos) << logs.text();
  }
}

TEST_F(DynamicShapes, RecompilesLogSaysWhichSizesAutomaticDynamicMadeSymbolic) {
  LogCapture logs;
  set_logs("recompiles");
  auto fn = compile([](const Tensor& x) { return x.exp(); }, {.backend = "eager", .name = "grows", .arg_names = {"x"}});
  for (int64_t n : {5, 6, 7, 1}) fn(randn({n, 2}));
  EXPECT_EQ(fn.cache_size(), 3u) << "5, then 6 and 7 in one symbolic entry, then 1 (sizes 0 and 1 stay static)";
  EXPECT_NE(logs.text().find("automatic dynamic shapes: grows recompiles because only sizes changed (x.size(0) 5 -> 6)"),
            std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("size mismatch at index 0. expected 5, actual 6"), std::string::npos)
      << "the failed guard of the static entry\n"
      << logs.text();
  EXPECT_NE(logs.text().find("2 <= x.size(0) (x.size(0) is 1)"), std::string::npos) << logs.text();
}

/// A custom backend that runs the interpreter and records, per graph, whether its first
/// input's sizes are symbols.
Backend recording_backend(std::shared_ptr<std::vector<bool>> symbolic) {
  return [symbolic](Graph& g, const std::vector<Tensor>&) {
    symbolic->push_back(g.inputs().at(0)->meta().at(0).sym != nullptr);
    return eager_backend(g);
  };
}

// A custom backend is handed graphs of fixed sizes (one per shape) unless it is declared
// with with_symbolic_sizes; declared, automatic dynamic shapes give it one symbolic graph
// for every later size, as for "eager".
TEST_F(DynamicShapes, CustomBackendsGetSymbolicGraphsOnlyWhenDeclaredToTakeThem) {
  auto f = [](const Tensor& x) { return (x * 2).relu().sum({0}); };
  auto fixed_graphs = std::make_shared<std::vector<bool>>();
  auto symbolic_graphs = std::make_shared<std::vector<bool>>();
  auto fixed = compile(f, {.custom_backend = recording_backend(fixed_graphs), .name = "fixed"});
  auto symbolic = compile(f, {.custom_backend = with_symbolic_sizes(recording_backend(symbolic_graphs)),
                              .name = "symbolic"});
  for (int64_t n : {3, 4, 5, 6}) {
    const Tensor x = randn({n, 2});
    expect_identical(fixed(x), f(x));
    expect_identical(symbolic(x), f(x));
  }
  EXPECT_EQ(*fixed_graphs, (std::vector<bool>{false, false, false, false})) << "a graph per size, each static";
  EXPECT_EQ(*symbolic_graphs, (std::vector<bool>{false, true})) << "static, then one symbolic graph";
  EXPECT_EQ(symbolic.cache_size(), 2u);
}

TEST_F(DynamicShapes, TheRegisteredInterpretingAndCompilingBackendsTakeSymbolicSizes) {
  register_builtin_backends();
  for (const char* name : {"eager", "aot_eager", "inductor"}) EXPECT_TRUE(takes_symbolic_sizes(lookup_backend(name))) << name;
  // The code generator alone (what AOT repros run) is not declared.
  EXPECT_FALSE(takes_symbolic_sizes(lookup_backend("inductor_inner")));
  const Backend plain = [](Graph& g, const std::vector<Tensor>&) { return eager_backend(g); };
  EXPECT_FALSE(takes_symbolic_sizes(plain));
  const Backend declared = with_symbolic_sizes(plain);
  EXPECT_TRUE(takes_symbolic_sizes(declared));
  EXPECT_TRUE(takes_symbolic_sizes(with_symbolic_sizes(declared)));
  EXPECT_THROW(with_symbolic_sizes(Backend{}), Error);
}

TEST_F(DynamicShapes, AotEagerTrainingOfASymbolicGraphMatchesEagerGradients) {
  Tensor w = randn({3, 4}).requires_grad_();
  auto f = [&w](const Tensor& x) { return x.matmul(w).tanh().sum(); };
  auto fn = compile(f, {.backend = "aot_eager", .dynamic = true});
  for (int64_t n : {2, 5}) {
    Tensor x = randn({n, 3});
    w.mutable_grad() = Tensor();
    Tensor loss = fn(x);
    loss.backward();
    const Tensor compiled_grad = w.grad().clone();
    w.mutable_grad() = Tensor();
    f(x).backward();
    expect_close(compiled_grad, w.grad());
    expect_close(loss, f(x));
  }
  EXPECT_EQ(fn.cache_size(), 1u);
}

// scaled_dot_product_attention chooses between its fused op and the math form by the
// inputs' geometry; over symbolic batch, heads and lengths that choice compares symbols
// and reads no size as an integer, so one compile serves every size.
TEST_F(DynamicShapes, ScaledDotProductAttentionOverSymbolicSizesCompilesOnce) {
  LogCapture logs;
  set_logs("dynamic");
  for (const char* backend : {"eager", "inductor"}) {
    auto f = [](const Tensor& q, const Tensor& k, const Tensor& v) {
      return scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
    };
    auto fn = compile(f, {.backend = backend, .name = "attention", .dynamic = true});
    for (auto [b, h, t] : {std::tuple<int64_t, int64_t, int64_t>{2, 3, 5}, {3, 2, 9}, {4, 3, 17}}) {
      const Tensor q = randn({b, h, t, 8}), k = randn({b, h, t + 2, 8}), v = randn({b, h, t + 2, 8});
      expect_close(fn(q, k, v), f(q, k, v));
    }
    EXPECT_EQ(fn.cache_size(), 1u) << backend << "\n" << logs.text();
  }
  EXPECT_EQ(logs.text().find("specializ"), std::string::npos) << logs.text();
}

// Under dynamic=true every size is a symbol, the channels and classes too, and equal
// sizes share one (a weight's [C] is the input's channel symbol). Batch norm in training
// with running stats, cross entropy with class weights (nll_loss_forward and its
// backward) and a matrix-vector product compare those sizes as SymInts and build their
// outputs over them, so each compiles once for every size.
TEST_F(DynamicShapes, BatchNormWeightedCrossEntropyAndMatrixVectorProductsCompileOnceUnderDynamicTrue) {
  LogCapture logs;
  set_logs("dynamic");
  auto bn = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv) {
    return std::get<0>(native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5));
  };
  auto ce = [](const Tensor& x, const Tensor& t, const Tensor& w) { return cross_entropy(x, t, w); };
  auto mv = [](const Tensor& m, const Tensor& v) { return matmul(m, v); };
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    auto bn_c = compile(bn, {.backend = backend, .name = "bn", .dynamic = true});
    auto ce_c = compile(ce, {.backend = backend, .name = "ce", .dynamic = true});
    auto mv_c = compile(mv, {.backend = backend, .name = "mv", .dynamic = true});
    for (int64_t n : {2, 3, 5}) {
      const int64_t c = n + 1;
      const Tensor x = randn({n, c, 4, 5}), w = randn({c}), b = randn({c});
      Tensor rm1 = zeros({c}), rv1 = ones({c}), rm2 = zeros({c}), rv2 = ones({c});
      expect_close(bn_c(x, w, b, rm1, rv1), bn(x, w, b, rm2, rv2));
      expect_close(rm1, rm2);
      expect_close(rv1, rv2);
      const Tensor logits = randn({n + 2, c});
      const Tensor target = remainder(arange(n + 2, TensorOptions(kInt64)), Scalar(c));
      const Tensor loss = ce_c(logits, target, w.abs());
      expect_close(loss, ce(logits, target, w.abs()));
      const Tensor m = randn({c, n}), v = randn({n});
      expect_close(mv_c(m, v), mv(m, v));
    }
    EXPECT_EQ(bn_c.cache_size(), 1u) << backend << "\n" << logs.text();
    EXPECT_EQ(ce_c.cache_size(), 1u) << backend << "\n" << logs.text();
    EXPECT_EQ(mv_c.cache_size(), 1u) << backend << "\n" << logs.text();
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// stack and the binary cross entropies check that their tensors have one size by
// comparing SymInts (same_sizes), and cross entropy against probabilities counts its batch
// as a SymInt: a size made symbolic by automatic dynamic shapes stays symbolic, where
// reading it as an integer specialized it and every new size recompiled.
TEST_F(DynamicShapes, StackAndBinaryCrossEntropyKeepAnAutomaticDynamicSizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  auto bce = [](const Tensor& p, const Tensor& t) { return binary_cross_entropy(sigmoid(p), t); };
  auto logits = [](const Tensor& p, const Tensor& t) { return binary_cross_entropy_with_logits(p, t); };
  auto bce_c = compile(bce, {.backend = "inductor", .name = "bce"});
  auto logits_c = compile(logits, {.backend = "inductor", .name = "bce_logits"});
  for (int64_t n : {3, 4, 6, 9}) {
    const Tensor p = randn({n, 5}), t = rand({n, 5});
    expect_close(bce_c(p, t), bce(p, t));
    expect_close(logits_c(p, t), logits(p, t));
  }
  EXPECT_EQ(bce_c.cache_size(), 2u) << "static, then one symbolic entry\n" << logs.text();
  EXPECT_EQ(logits_c.cache_size(), 2u) << logs.text();
  auto st = [](const Tensor& x, const Tensor& y) { return stack({x, y}, 1); };
  auto st_c = compile(st, {.backend = "inductor", .name = "stacked"});
  for (int64_t n : {3, 4, 6, 9}) {
    const Tensor x = randn({n, 3}), y = randn({n, 3});
    expect_identical(st_c(x, y), st(x, y));
  }
  EXPECT_EQ(st_c.cache_size(), 2u) << logs.text();
  // Cross entropy against class probabilities: its mean divides by the batch it counts.
  auto soft = [](const Tensor& x, const Tensor& p) { return cross_entropy(x, p); };
  auto soft_c = compile(soft, {.backend = "inductor", .name = "soft_targets"});
  for (int64_t n : {3, 4, 6, 9}) {
    const Tensor x = randn({n, 5}), p = softmax(randn({n, 5}), 1);
    expect_close(soft_c(x, p), soft(x, p));
  }
  EXPECT_EQ(soft_c.cache_size(), 2u) << logs.text();
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// topk and sort over a symbolic dim, logsumexp's emptiness test, unbind's other dims and
// dropout's meta compare or build sizes as SymInts: under automatic dynamic shapes each
// compiles a static and then one symbolic entry for four batch sizes (each recompiled
// for every size before).
TEST_F(DynamicShapes, TopkSortLogsumexpUnbindAndDropoutKeepAnAutomaticDynamicSizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> fns = {
      {"topk_rows", [](const Tensor& x) { return std::get<0>(topk(x, 2, 1)); }},
      {"topk_batch", [](const Tensor& x) { return std::get<1>(topk(x, 2, 0)); }},
      {"sort_batch", [](const Tensor& x) { return std::get<0>(sort(x, 0)); }},
      {"logsumexp_batch", [](const Tensor& x) { return logsumexp(x, {0}); }},
      {"unbind_columns", [](const Tensor& x) { return unbind(x.t(), 0)[1] * 2; }},
  };
  for (const auto& [name, f] : fns) {
    auto fn = compile(f, {.backend = "inductor", .name = name});
    for (int64_t n : {5, 6, 7, 9}) {
      const Tensor x = randn({n, 4});
      expect_close(fn(x), f(x));
    }
    EXPECT_EQ(fn.cache_size(), 2u) << name << "\n" << logs.text();
  }
  auto drop = compile([](const Tensor& x) { return dropout(x, 0.5, true); }, {.backend = "inductor", .name = "drop"});
  for (int64_t n : {5, 6, 7, 9}) {
    const Tensor y = drop(ones({n, 4}));
    EXPECT_EQ(y.sizes(), IntArrayRef({n, 4}));
    // Kept values are scaled by 1 / (1 - p), dropped ones are 0.
    EXPECT_TRUE(all(logical_or(eq(y, 0.0), eq(y, 2.0))).item<bool>());
  }
  EXPECT_EQ(drop.cache_size(), 2u) << logs.text();
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// The upsamples read the spatial sizes (their source indices are computed from them) but
// compare the element count as a SymInt, so a batch made symbolic by automatic dynamic
// shapes stays symbolic (before: a recompile for every batch).
TEST_F(DynamicShapes, UpsamplingKeepsAnAutomaticDynamicBatchSymbolic) {
  auto nearest = [](const Tensor& x) { return upsample_nearest2d(x, std::vector<int64_t>{6, 8}, std::nullopt); };
  auto bilinear = [](const Tensor& x) {
    return upsample_bilinear2d(x, std::vector<int64_t>{6, 8}, false, std::nullopt);
  };
  auto nearest_c = compile(nearest, {.backend = "inductor", .name = "nearest"});
  auto bilinear_c = compile(bilinear, {.backend = "inductor", .name = "bilinear"});
  for (int64_t n : {2, 3, 5, 7}) {
    const Tensor x = randn({n, 3, 4, 5});
    expect_close(nearest_c(x), nearest(x));
    expect_close(bilinear_c(x), bilinear(x));
  }
  EXPECT_EQ(nearest_c.cache_size(), 2u);
  EXPECT_EQ(bilinear_c.cache_size(), 2u);
}

/// Calls `compiled` and the eager `f` with `xs` and asserts eager's sizes, strides and values.
template <typename C, typename F, typename... Ts>
void expect_eager_result(C& compiled, const F& f, const std::string& what, const Ts&... xs) {
  const Tensor got = compiled(xs...), want = f(xs...);
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.strides().vec(), want.strides().vec()) << what;
  expect_close(got, want, 1e-5, 1e-5, what);
}

// Under dynamic=true the upsamples keep the spatial sizes symbolic where the output size is
// exact over them: a given output size, or scales p / 2^k (2, 0.5, 1.5), whose output size
// floor(n * scale) is (n * p) // 2^k. Their source indices and weights take the sizes as
// 0-dim tensors of the kernels' float type (the same arithmetic as a static size's numbers).
// They read every spatial size as an integer before, and each new size recompiled.
TEST_F(DynamicShapes, UpsamplingByExactScalesOrToAGivenSizeKeepsTheSpatialSizesSymbolic) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  auto nearest = [](const Tensor& x) {
    return upsample_nearest2d(x, std::nullopt, std::vector<double>{2.0, 0.5}) * 2 +
           upsample_nearest2d(x, std::vector<int64_t>{9, 4}, std::nullopt).sum();
  };
  auto bilinear = [](const Tensor& x) {
    return upsample_bilinear2d(x, std::nullopt, false, std::vector<double>{1.5, 2.0}) +
           upsample_bilinear2d(x, std::vector<int64_t>{7, 5}, true, std::nullopt).sum() +
           upsample_bilinear2d(x.to(kDouble), std::vector<int64_t>{6, 3}, false, std::nullopt).sum().to(kFloat);
  };
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    auto c1 = compile(nearest, {.backend = backend, .name = "nearest", .dynamic = true});
    auto c2 = compile(bilinear, {.backend = backend, .name = "bilinear", .dynamic = true});
    for (const auto& [n, h, w] : std::vector<std::array<int64_t, 3>>{{2, 4, 6}, {3, 7, 5}, {2, 10, 9}}) {
      const Tensor x = randn({n, 3, h, w});
      const std::string at =
          b + " [" + std::to_string(n) + ", 3, " + std::to_string(h) + ", " + std::to_string(w) + "]";
      expect_eager_result(c1, nearest, "nearest " + at, x);
      expect_eager_result(c2, bilinear, "bilinear " + at, x);
    }
    EXPECT_EQ(c1.cache_size(), 1u) << b << "\n" << logs.text();
    EXPECT_EQ(c2.cache_size(), 1u) << b << "\n" << logs.text();
  }
}

// _embedding_bag over a varying number of indices and bags (a recommendation model's batch):
// its positions' bags, counts and sums are computed over the SymInts, and its offsets are
// checked on the data path, so one entry serves every batch and bad offsets still raise.
// It read both counts as integers before, and each batch recompiled.
TEST_F(DynamicShapes, EmbeddingBagKeepsTheNumbersOfIndicesAndBagsSymbolic) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  const Tensor weight = randn({20, 4});
  const auto bags = [&](int64_t mode) {
    return [&weight, mode](const Tensor& idx, const Tensor& off) {
      const auto [out, offset2bag, bag_size, max_indices] =
          _embedding_bag(weight, idx, off, mode != 2, mode, false, std::nullopt, false, -1);
      return out * 2 + bag_size.unsqueeze(1).to(kFloat) + max_indices.to(kFloat).sum();
    };
  };
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    for (int64_t mode : {0, 1, 2}) {
      const std::string what = std::string(backend) + ", mode " + std::to_string(mode);
      auto f = bags(mode);
      auto c = compile(f, {.backend = backend, .name = "bags", .dynamic = true});
      for (const auto& [n, b] : std::vector<std::pair<int64_t, int64_t>>{{8, 3}, {13, 5}, {21, 4}}) {
        std::vector<int64_t> offsets;
        for (int64_t k = 0; k < b; ++k) offsets.push_back(k * n / b);  // bags of about n / b indices
        const Tensor idx = remainder(arange(n, TensorOptions(kLong)) * 7, 20), off = tensor(offsets);
        expect_eager_result(c, f, what + ", " + std::to_string(n) + " indices in " + std::to_string(b) + " bags", idx,
                            off);
      }
      EXPECT_EQ(c.cache_size(), 1u) << what << "\n" << logs.text();
      const std::string msg = testing::error_of([&] { c(arange(5, TensorOptions(kLong)), tensor<int64_t>({2, 4})); });
      EXPECT_NE(msg.find("offsets[0] has to be 0"), std::string::npos) << what << ": " << msg;
    }
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// Copies of a tensor that is not dense (a slice with a step, an expanded dim) get
// empty_like's strides: its dims' order, the gaps closed (infer_dense_strides). Over the
// symbols (the order's comparisons decided by the ranges or guarded), clone, ones_like and
// the functional fill keep every size symbolic under dynamic=true; they read them as
// integers before, and every new size recompiled.
TEST_F(DynamicShapes, CopiesOfStridedAndExpandedTensorsKeepEverySizeSymbolic) {
  auto stepped = [](const Tensor& x) { return x.slice(1, std::nullopt, std::nullopt, 2).clone() * 2; };
  auto transposed = [](const Tensor& x) { return x.t().slice(0, std::nullopt, std::nullopt, 2).clone() + 1; };
  auto ones = [](const Tensor& x) { return ones_like(x.slice(1, std::nullopt, std::nullopt, 2)) + x.sum(); };
  auto expanded = [](const Tensor& x) {
    return x.unsqueeze(1).expand({sym_size(x, 0), SymInt(3), sym_size(x, 1)}).clone() - 1;
  };
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    auto c1 = compile(stepped, {.backend = backend, .name = "stepped", .dynamic = true});
    auto c2 = compile(transposed, {.backend = backend, .name = "transposed", .dynamic = true});
    auto c3 = compile(ones, {.backend = backend, .name = "ones", .dynamic = true});
    auto c4 = compile(expanded, {.backend = backend, .name = "expanded", .dynamic = true});
    for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{4, 6}, {5, 9}, {7, 10}}) {
      const Tensor x = randn({n, m});
      const std::string at = b + " [" + std::to_string(n) + ", " + std::to_string(m) + "]";
      expect_eager_result(c1, stepped, "stepped " + at, x);
      expect_eager_result(c2, transposed, "transposed " + at, x);
      expect_eager_result(c3, ones, "ones_like " + at, x);
      expect_eager_result(c4, expanded, "expanded " + at, x);
    }
    EXPECT_EQ(c1.cache_size(), 1u) << b;
    EXPECT_EQ(c2.cache_size(), 1u) << b;
    EXPECT_EQ(c3.cache_size(), 1u) << b;
    EXPECT_EQ(c4.cache_size(), 1u) << b;
  }
}

// im2col and col2im (unfold and fold) compute their block counts, reshapes and output over
// SymInt (ops/fold.cpp): under dynamic=true one entry serves every size, the fold's output
// size given as SymInts as a compiled graph passes it. They read their sizes as integers
// before, and every new size recompiled.
TEST_F(DynamicShapes, UnfoldAndFoldKeepEverySizeSymbolic) {
  auto unfold = [](const Tensor& x) { return im2col(x, {3, 2}, {1, 2}, {1, 0}, {2, 1}) * 2; };
  auto fold_sym = [](const Tensor& x) {
    const Tensor cols = im2col(x, {3, 2}, {1, 2}, {1, 0}, {2, 1});
    return call_op("aten::col2im",
                   {cols, std::vector<SymInt>{sym_size(x, 2), sym_size(x, 3)}, std::vector<int64_t>{3, 2},
                    std::vector<int64_t>{1, 2}, std::vector<int64_t>{1, 0}, std::vector<int64_t>{2, 1}})[0]
        .to_tensor();
  };
  auto fold = [](const Tensor& x) {
    return col2im(im2col(x, {3, 2}, {1, 2}, {1, 0}, {2, 1}), {x.size(2), x.size(3)}, {3, 2}, {1, 2}, {1, 0}, {2, 1});
  };
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    auto c1 = compile(unfold, {.backend = backend, .name = "unfold", .dynamic = true});
    auto c2 = compile(fold_sym, {.backend = backend, .name = "fold", .dynamic = true});
    for (const auto& [n, c, h, w] : std::vector<std::array<int64_t, 4>>{{2, 3, 7, 9}, {3, 4, 8, 11}, {5, 2, 9, 6}}) {
      const Tensor x = randn({n, c, h, w});
      const std::string at = b + " [" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " +
                             std::to_string(w) + "]";
      expect_eager_result(c1, unfold, "unfold " + at, x);
      expect_eager_result(c2, fold, "fold " + at, x);
    }
    EXPECT_EQ(c1.cache_size(), 1u) << b;
    EXPECT_EQ(c2.cache_size(), 1u) << b;
  }
}

// native_layer_norm_backward computes over the SymInts of its input and normalized shape
// (ops/norm.cpp): called as a compiled training graph calls it, with the normalized shape
// as SymInts, one entry under dynamic=true serves every batch and hidden size. It read
// every size as an integer before, and each new size recompiled.
TEST_F(DynamicShapes, LayerNormBackwardKeepsEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  auto backward_sym = [](const Tensor& g, const Tensor& x, const Tensor& w) {
    const std::vector<SymInt> shape{sym_size(x, 2)};
    const Stack fw = call_op("aten::native_layer_norm", {x, shape, w, IValue(), 1e-5});
    const Stack bw = call_op("aten::native_layer_norm_backward",
                             {g, x, shape, fw[1], fw[2], w, IValue(), std::vector<bool>{true, true, false}});
    return bw[0].to_tensor() * 2 + bw[1].to_tensor().sum();
  };
  auto backward = [](const Tensor& g, const Tensor& x, const Tensor& w) {
    const auto [y, mean, rstd] = native_layer_norm(x, {x.size(2)}, w, std::nullopt, 1e-5);
    const auto [gi, gw, gb] =
        native_layer_norm_backward(g, x, {x.size(2)}, mean, rstd, w, std::nullopt, {true, true, false});
    return gi * 2 + gw.sum();
  };
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    auto every = compile(backward_sym, {.backend = backend, .name = "layer_norm_backward", .dynamic = true});
    for (const auto& [n, t, h] : std::vector<std::array<int64_t, 3>>{{2, 5, 8}, {3, 7, 12}, {4, 6, 16}}) {
      const Tensor x = randn({n, t, h}), g = randn({n, t, h}), w = randn({h});
      expect_eager_result(every, backward,
                          b + " [" + std::to_string(n) + ", " + std::to_string(t) + ", " + std::to_string(h) + "]", g,
                          x, w);
    }
    EXPECT_EQ(every.cache_size(), 1u) << b << "\n" << logs.text();
  }
}

// cumsum's meta builds its result over the input's SymInts: under dynamic=true one entry
// serves every size (its symbolic-batch row kept only the batch symbolic, and every other
// size recompiled).
TEST_F(DynamicShapes, CumsumKeepsEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  auto f = [](const Tensor& x) { return cumsum(x * 2, 1) + cumsum(x, 2, kDouble).to(kFloat); };
  for (const char* backend : {"eager", "inductor"}) {
    auto c = compile(f, {.backend = backend, .name = "cumsum", .dynamic = true});
    for (const auto& [n, m, k] : std::vector<std::array<int64_t, 3>>{{2, 5, 7}, {3, 8, 4}, {6, 3, 9}})
      expect_eager_result(
          c, f,
          std::string(backend) + " [" + std::to_string(n) + ", " + std::to_string(m) + ", " + std::to_string(k) + "]",
          randn({n, m, k}));
    EXPECT_EQ(c.cache_size(), 1u) << backend << "\n" << logs.text();
  }
}

// rand_like, randn_like and both bernoullis make a contiguous result over the input's
// SymInts (ops/random.cpp): under dynamic=true one entry serves every size, and from one seed
// the compiled function draws eager's numbers. They read every size as an integer before,
// and each new size recompiled.
TEST_F(DynamicShapes, RandomLikeOpsKeepEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  auto f = [](const Tensor& x) {
    return rand_like(x) + randn_like(x) * x + bernoulli(sigmoid(x)) - bernoulli(x.abs() / (1 + x.abs()), 0.3);
  };
  for (const char* backend : {"eager", "inductor"}) {
    auto c = compile(f, {.backend = backend, .name = "random_like", .dynamic = true});
    for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {4, 9}, {7, 6}}) {
      const Tensor x = randn({n, m});
      manual_seed(11);
      const Tensor got = c(x);
      manual_seed(11);
      const Tensor want = f(x);
      expect_close(got, want, 1e-6, 1e-6,
                   std::string(backend) + " [" + std::to_string(n) + ", " + std::to_string(m) + "]");
    }
    EXPECT_EQ(c.cache_size(), 1u) << backend << "\n" << logs.text();
  }
}

// Cross entropy with label smoothing, and against class probabilities, divides by the class
// count: as a SymInt (a 0-dim tensor of the loss's dtype when symbolic), so under
// dynamic=true one entry serves every batch and class count. It read the count as an
// integer before, and every new class count recompiled.
TEST_F(DynamicShapes, CrossEntropyWithLabelSmoothingKeepsTheClassCountSymbolic) {
  auto smooth = [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, std::nullopt, -100, "mean", 0.1); };
  auto probs = [](const Tensor& x, const Tensor& p) { return cross_entropy(x, p, std::nullopt, -100, "none", 0.2); };
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    auto c1 = compile(smooth, {.backend = backend, .name = "smooth", .dynamic = true});
    auto c2 = compile(probs, {.backend = backend, .name = "probs", .dynamic = true});
    for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{{4, 5}, {6, 3}, {3, 7}}) {
      std::vector<int64_t> classes(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) classes[static_cast<size_t>(i)] = (i * 2) % c;
      const Tensor x = randn({n, c}), t = tensor(classes), p = softmax(randn({n, c}), 1);
      const std::string at = b + " [" + std::to_string(n) + ", " + std::to_string(c) + "]";
      expect_eager_result(c1, smooth, "label smoothing " + at, x, t);
      expect_eager_result(c2, probs, "class probabilities " + at, x, p);
    }
    EXPECT_EQ(c1.cache_size(), 1u) << b;
    EXPECT_EQ(c2.cache_size(), 1u) << b;
  }
}

// Batch norm in training without affine parameters or running stats
// (_native_batch_norm_legit.no_stats) has no per-channel tensor for symbolic channels to
// meet; its statistics are [C] over the channel symbol, so under dynamic=true one entry
// serves every size. Its geometry rule gave up without such a tensor before, and every new
// size recompiled.
TEST_F(DynamicShapes, BatchNormWithoutParametersOrRunningStatsKeepsEverySizeSymbolic) {
  auto f = [](const Tensor& x) {
    const auto [y, mean, invstd] = _native_batch_norm_legit(x, std::nullopt, std::nullopt, true, 0.1, 1e-5);
    return y * 2 + mean.sum() + invstd.sum();
  };
  for (const char* backend : {"eager", "inductor"}) {
    auto c = compile(f, {.backend = backend, .name = "batch_norm_no_stats", .dynamic = true});
    for (const auto& [n, ch, h, w] : std::vector<std::array<int64_t, 4>>{{2, 3, 4, 5}, {3, 5, 6, 2}, {4, 2, 3, 7}})
      expect_eager_result(c, f, std::string(backend) + " [" + std::to_string(n) + ", " + std::to_string(ch) + "]",
                          randn({n, ch, h, w}));
    EXPECT_EQ(c.cache_size(), 1u) << backend;
  }
}

// group_norm computes N, C and HxW as SymInts (native_group_norm's schema takes them so) and
// its backward's 1 / (HxW * C/group) from a size tensor: under automatic dynamic shapes a
// changing batch is one symbolic entry after the static one, and under dynamic=true every
// size, the channels too (their divisibility by the groups a guard), is one entry.
TEST_F(DynamicShapes, GroupNormKeepsEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) { return group_norm(x, 2, w, b); };
  auto backward = [](const Tensor& g, const Tensor& x, const Tensor& w) {
    const auto [y, mean, rstd] =
        native_group_norm(x, w, std::nullopt, x.size(0), x.size(1), x.size(2) * x.size(3), 2, 1e-5);
    return std::get<0>(native_group_norm_backward(g, x, mean, rstd, w, x.size(0), x.size(1), x.size(2) * x.size(3), 2,
                                                  {true, false, false}));
  };
  // The backward with its sizes as SymInts, as a compiled training graph calls it.
  auto backward_sym = [](const Tensor& g, const Tensor& x, const Tensor& w) {
    const SymInt n = sym_size(x, 0), c = sym_size(x, 1), hw = sym_size(x, 2) * sym_size(x, 3);
    const Stack fw = call_op("aten::native_group_norm", {x, w, IValue(), n, c, hw, int64_t{2}, 1e-5});
    return call_op("aten::native_group_norm_backward",
                   {g, x, fw[1], fw[2], w, n, c, hw, int64_t{2}, std::vector<bool>{true, false, false}})[0]
        .to_tensor();
  };
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    auto batch = compile(f, {.backend = backend, .name = "group_norm_batch"});
    auto grads = compile(backward_sym, {.backend = backend, .name = "group_norm_backward_batch"});
    const Tensor w = randn({6}), bias = randn({6});
    for (int64_t n : {2, 3, 5, 7}) {
      const Tensor x = randn({n, 6, 4, 5}), g = randn({n, 6, 4, 5});
      expect_eager_result(batch, f, b + " batch " + std::to_string(n), x, w, bias);
      expect_eager_result(grads, backward, b + " backward batch " + std::to_string(n), g, x, w);
    }
    EXPECT_EQ(batch.cache_size(), 2u) << b << ": a static entry, then a symbolic one\n" << logs.text();
    EXPECT_EQ(grads.cache_size(), 2u) << b << "\n" << logs.text();
    auto every = compile(f, {.backend = backend, .name = "group_norm_sizes", .dynamic = true});
    auto every_grads =
        compile(backward_sym, {.backend = backend, .name = "group_norm_backward_sizes", .dynamic = true});
    for (int64_t k : {2, 3, 5, 7}) {
      const Tensor x = randn({k, 2 * k, k + 1, k + 3}), g = randn({k, 2 * k, k + 1, k + 3});
      const Tensor wk = randn({2 * k}), bk = randn({2 * k});
      expect_eager_result(every, f, b + " sizes " + std::to_string(k), x, wk, bk);
      expect_eager_result(every_grads, backward, b + " backward sizes " + std::to_string(k), g, x, wk);
    }
    EXPECT_EQ(every.cache_size(), 1u) << b << "\n" << logs.text();
    EXPECT_EQ(every_grads.cache_size(), 1u) << b << "\n" << logs.text();
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// native_group_norm checks `C % group == 0` (the guard `Mod(s1, 3) == 0`) and reshapes x to
// [N, group, (C // group) * HxW]; the reshape's `3*(s1//3)*s2*s3 == s1*s2*s3` is decided by
// that fact (Note [dynamic shapes], "Divisibility facts"), so it is the only guard besides the
// ranges and every (N, C, H, W) with C a multiple of 3 runs from one entry. Before, the
// reshape's check was a second guard, and one that does not isolate a symbol.
TEST_F(DynamicShapes, GroupNormWithChannelsAMultipleOfTheGroupsGuardsOnlyTheDivisibility) {
  LogCapture logs;
  set_logs("dynamic");
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) { return group_norm(x, 3, w, b); };
  const std::vector<std::array<int64_t, 4>> sizes = {{2, 6, 4, 5}, {3, 9, 5, 7}, {5, 12, 3, 4}, {4, 15, 6, 2}};
  for (const char* backend : {"eager", "inductor"}) {
    const std::string b = backend;
    logs.lines.clear();
    auto every = compile(f, {.backend = backend, .name = "group_norm_divisible", .dynamic = true});
    for (const auto& [n, c, h, w] : sizes) {
      const Tensor x = randn({n, c, h, w}), weight = randn({c}), bias = randn({c});
      expect_eager_result(every, f, b + " " + std::to_string(n) + "x" + std::to_string(c), x, weight, bias);
    }
    EXPECT_EQ(every.cache_size(), 1u) << b << "\n" << logs.text();
    std::vector<std::string> guards;
    for (const std::string& line : logs.lines) {
      const size_t eval = line.find("eval "), added = line.find(" [guard added]");
      if (eval != std::string::npos && added != std::string::npos) guards.push_back(line.substr(eval, added - eval));
    }
    EXPECT_EQ(guards, std::vector<std::string>{"eval Mod(s1, 3) == 0"}) << b << "\n" << logs.text();
  }
}

// nll_loss_nd over (N, C, d1, ...) inputs (cross entropy over images, a per-pixel loss)
// compares the target's sizes and lays the input out as rows over SymInts: a changing
// batch compiles a static and then one symbolic entry, and under dynamic=true the batch
// and every size stays symbolic, the classes too (each recompiled for every size before).
TEST_F(DynamicShapes, SpatialCrossEntropyKeepsEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  // A pixel's class: its flat position modulo c (every class occurs).
  auto targets = [](int64_t n, int64_t c, int64_t h, int64_t w) {
    return remainder(arange(n * h * w, TensorOptions(kInt64)), Scalar(c)).reshape({n, h, w});
  };
  for (const char* how : {"none", "mean", "sum"}) {
    const std::string r = std::string("reduction ") + how;
    auto ce = [how](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, std::nullopt, -100, how); };
    auto batch = compile(ce, {.backend = "inductor", .name = "pixel_ce_batch"});
    for (int64_t n : {2, 3, 5, 7}) {
      const Tensor x = randn({n, 4, 3, 5}), t = targets(n, 4, 3, 5);
      expect_eager_result(batch, ce, r + " batch " + std::to_string(n), x, t);
    }
    EXPECT_EQ(batch.cache_size(), 2u) << r << "\n" << logs.text();
    auto every = compile(ce, {.backend = "inductor", .name = "pixel_ce_sizes", .dynamic = true});
    for (int64_t k : {2, 3, 5, 7}) {
      const Tensor x = randn({k, k + 2, k + 1, k + 3}), t = targets(k, k + 2, k + 1, k + 3);
      expect_eager_result(every, ce, r + " sizes " + std::to_string(k), x, t);
    }
    EXPECT_EQ(every.cache_size(), 1u) << r << "\n" << logs.text();
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// grid_sampler_2d compares its sizes as SymInts, reshapes and gathers over them, and takes
// the input's height and width in its pixel arithmetic as size tensors when they are
// symbolic: every interpolation and padding mode keeps every size symbolic.
TEST_F(DynamicShapes, GridSamplerKeepsEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  // (interpolation, padding, align_corners): bilinear/zeros, nearest/border, bicubic/reflection
  // both ways, bilinear/reflection.
  const std::vector<std::tuple<int64_t, int64_t, bool>> modes = {
      {0, 0, false}, {1, 1, true}, {2, 2, false}, {2, 2, true}, {0, 2, false}};
  for (const char* backend : {"eager", "inductor"}) {
    for (const auto& [mode, padding, align] : modes) {
      const std::string b = std::string(backend) + " mode " + std::to_string(mode) + " padding " +
                            std::to_string(padding) + (align ? " align" : "");
      auto f = [mode, padding, align](const Tensor& x, const Tensor& grid) {
        return grid_sampler_2d(x, grid, mode, padding, align);
      };
      auto batch = compile(f, {.backend = backend, .name = "grid_sample_batch"});
      for (int64_t n : {2, 3, 5, 7}) {
        const Tensor x = randn({n, 3, 5, 6}), grid = rand({n, 4, 7, 2}) * 2.4 - 1.2;
        expect_eager_result(batch, f, b + " batch " + std::to_string(n), x, grid);
      }
      EXPECT_EQ(batch.cache_size(), 2u) << b << "\n" << logs.text();
      auto every = compile(f, {.backend = backend, .name = "grid_sample_sizes", .dynamic = true});
      for (int64_t k : {3, 4, 6, 9}) {
        const Tensor x = randn({k, k + 1, k + 3, k + 4}), grid = rand({k, k + 5, k + 6, 2}) * 2.4 - 1.2;
        expect_eager_result(every, f, b + " sizes " + std::to_string(k), x, grid);
      }
      EXPECT_EQ(every.cache_size(), 1u) << b << "\n" << logs.text();
    }
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// _cdist_forward compares its column counts as SymInts, broadcasts its batch dims over
// them, and compares a symbolic row count with 25 (ATen's choice of the matmul form: a
// guard on that symbol's range): every size stays symbolic for every p and mode.
TEST_F(DynamicShapes, CdistKeepsEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  const std::vector<std::pair<double, std::optional<int64_t>>> ps = {
      {2.0, std::nullopt}, {2.0, 1}, {1.0, std::nullopt}, {0.5, 2}, {INFINITY, std::nullopt}};
  for (const char* backend : {"eager", "inductor"}) {
    for (const auto& [p, mode] : ps) {
      const std::string b =
          std::string(backend) + " p " + std::to_string(p) + " mode " + std::to_string(mode.value_or(0));
      auto f = [p, mode](const Tensor& x1, const Tensor& x2) { return _cdist_forward(x1, x2, p, mode); };
      auto batch = compile(f, {.backend = backend, .name = "cdist_batch"});
      for (int64_t n : {2, 3, 5, 7}) {
        const Tensor x1 = randn({n, 5, 3}), x2 = randn({n, 6, 3});
        expect_eager_result(batch, f, b + " batch " + std::to_string(n), x1, x2);
      }
      EXPECT_EQ(batch.cache_size(), 2u) << b << "\n" << logs.text();
      auto every = compile(f, {.backend = backend, .name = "cdist_sizes", .dynamic = true});
      for (int64_t k : {3, 4, 6, 9}) {
        const Tensor x1 = randn({k, k + 1, k + 2}), x2 = randn({k, k + 3, k + 2});
        expect_eager_result(every, f, b + " sizes " + std::to_string(k), x1, x2);
      }
      EXPECT_EQ(every.cache_size(), 1u) << b << "\n" << logs.text();
    }
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// The reflection and replication pads compare sizes and pads as SymInts and compute their
// source positions from an arange over the padded size and the last position as a size
// tensor: every dim stays symbolic, the padded ones too.
TEST_F(DynamicShapes, ReflectionAndReplicationPadsKeepEverySizeSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> pads = {
      {"reflection_pad1d",
       [](const Tensor& x) {
         return reflection_pad1d(x.select(3, 0).select(3, 0), {2, 3});
       }},
      {"reflection_pad2d",
       [](const Tensor& x) {
         return reflection_pad2d(x.select(4, 0), {1, 3, 2, -1});
       }},
      {"replication_pad2d",
       [](const Tensor& x) {
         return replication_pad2d(x.select(4, 0), {3, 1, -1, 2});
       }},
      {"reflection_pad3d",
       [](const Tensor& x) {
         return reflection_pad3d(x, {1, 2, 3, 0, 2, 1});
       }},
      {"replication_pad3d",
       [](const Tensor& x) {
         return replication_pad3d(x, {2, 1, 0, 3, 1, 2});
       }},
  };
  for (const char* backend : {"eager", "inductor"}) {
    for (const auto& [name, f] : pads) {
      const std::string b = std::string(backend) + " " + name;
      auto batch = compile(f, {.backend = backend, .name = name + "_batch"});
      for (int64_t n : {2, 3, 5, 7}) {
        const Tensor x = randn({n, 3, 4, 5, 6});
        expect_eager_result(batch, f, b + " batch " + std::to_string(n), x);
      }
      EXPECT_EQ(batch.cache_size(), 2u) << b << "\n" << logs.text();
      auto every = compile(f, {.backend = backend, .name = name + "_sizes", .dynamic = true});
      for (int64_t k : {4, 5, 7, 9}) {
        const Tensor x = randn({k, k + 1, k + 2, k + 3, k + 4});
        expect_eager_result(every, f, b + " sizes " + std::to_string(k), x);
      }
      EXPECT_EQ(every.cache_size(), 1u) << b << "\n" << logs.text();
    }
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

// Training through the four composites: AOT autograd traces the joint graph over the same
// symbols, so the gradients of group_norm (its weight's too), grid_sampler_2d (input and
// grid), _cdist_forward and a reflection pad keep an automatic dynamic batch symbolic.
TEST_F(DynamicShapes, TrainingThroughGroupNormGridSamplerCdistAndPadsKeepsAnAutomaticDynamicBatchSymbolic) {
  LogCapture logs;
  set_logs("dynamic");
  for (const char* backend : {"aot_eager", "inductor"}) {
    const Tensor w = randn({6}).requires_grad_();
    auto f = [&w](const Tensor& x, const Tensor& grid, const Tensor& y) {
      return (group_norm(x, 2, w) * 2).sum() + grid_sampler_2d(x, grid, 0, 2, false).sum() +
             reflection_pad2d(x, {1, 2, 2, 1}).pow(2).sum() + _cdist_forward(x.flatten(2), y, 2.0).sum();
    };
    auto fn = compile(f, {.backend = backend, .name = "composites_training"});
    for (int64_t n : {2, 3, 5, 7}) {
      const Tensor x = randn({n, 6, 4, 5}).requires_grad_(), grid = (rand({n, 3, 4, 2}) * 2.4 - 1.2).requires_grad_();
      const Tensor y = randn({n, 3, 20}).requires_grad_();
      std::vector<Tensor> compiled_grads;
      fn(x, grid, y).backward();
      for (const Tensor& t : {w, x, grid, y}) {
        compiled_grads.push_back(t.grad().clone());
        t.mutable_grad() = Tensor();
      }
      f(x, grid, y).backward();
      size_t i = 0;
      for (const Tensor& t : {w, x, grid, y}) {
        expect_close(compiled_grads[i++], t.grad(), 1e-4, 1e-4, std::string(backend) + " batch " + std::to_string(n));
        t.mutable_grad() = Tensor();
      }
    }
    EXPECT_EQ(fn.cache_size(), 2u) << backend << "\n" << logs.text();
  }
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

TEST_F(DynamicShapes, GraphCodeLogPrintsTheSymbolsAndTheTextParsesBack) {
  LogCapture logs;
  set_logs("graph_code,graph_sizes");
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return (linear(x, w, b).relu() * 2.0).transpose(0, 1);
  };
  auto fn = compile(f, {.backend = "eager", .name = "dyn", .arg_names = {"x", "w", "b"}});
  Tensor x = randn({6, 16}), w = randn({8, 16}), b = randn({8});
  mark_dynamic(x, 0);
  expect_identical(fn(x, w, b), f(x, w, b));
  const std::string text = logs.text();
  const size_t start = text.find("graph dyn {\n");
  ASSERT_NE(start, std::string::npos) << text;
  const std::string graph = text.substr(start, text.find("\n}\n", start) + 3 - start);
  EXPECT_NE(graph.find("  symbol s0 = 6 for x.size(0) [2, inf]\n"), std::string::npos) << graph;
  EXPECT_NE(graph.find(": f32[s0, 16] = placeholder[x]"), std::string::npos) << graph;
  EXPECT_NE(graph.find(": f32[8, s0] strides=[1, 8] = aten::transpose.int("), std::string::npos) << graph;
  EXPECT_NE(text.find("x: [s0, 16]"), std::string::npos) << "graph_sizes names the symbols\n" << text;
  // The text reads back into the same graph, over a shape environment of its own, and runs
  // at the example sizes.
  std::unique_ptr<Graph> parsed = parse_graph(graph);
  EXPECT_EQ(to_string(*parsed), graph);
  const core::ShapeEnv* env = graph_text::shape_env_of(*parsed);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->symbol(0).source, "x.size(0)");
  ASSERT_EQ(parsed->inputs().size(), 3u);
  expect_identical(run_graph(*parsed, {x, w, b}).at(0), f(x, w, b));
}

}  // namespace
}  // namespace ember
