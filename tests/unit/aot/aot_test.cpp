// Tests of the AOT stage (src/aot): functionalization removes copies into intermediates
// and keeps writes the caller or a view can see; each decomposition replaces its op only
// under its condition and gives eager's results; the "aot_eager" backend runs the prepared
// graph; inductor's unfuse_bias_add_to_pointwise pass; the graph rewriter's checks.
#include <gtest/gtest.h>

#include <memory>

#include "aot/aot.h"
#include "ember/ember.h"
#include "graph/rewrite.h"
#include "inductor/pipeline.h"
#include "support/log_capture.h"

namespace ember {
namespace {

void expect_close(const Tensor& actual, const Tensor& expected, double rtol = 1.3e-6, double atol = 1e-5) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], e[i], atol + rtol * std::abs(e[i])) << "at " << i;
}

/// The graph compile() captures for `fn` on `args` (run once with a backend that keeps it).
template <typename F, typename... A>
std::unique_ptr<Graph> capture(F fn, A&&... args) {
  std::unique_ptr<Graph> kept;
  auto keep = [&kept](Graph& g, const std::vector<Tensor>&) {
    kept = g.clone();
    return eager_backend(g);
  };
  auto compiled = compile(fn, {.custom_backend = keep});
  compiled(std::forward<A>(args)...);
  return kept;
}

size_t count_target(const Graph& g, const std::string& target) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->target() == target;
  return n;
}

TEST(Functionalize, ACopyIntoAnIntermediateBecomesARename) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    y.add_(full({}, 1.0));
    return y.relu();
  };
  Tensor x = randn({5, 3});
  auto g = capture(fn, x);
  ASSERT_EQ(count_target(*g, "aten::copy_"), 1u) << *g;
  size_t removed = 0;
  auto f = aot::functionalize(*g, &removed);
  EXPECT_EQ(removed, 1u);
  EXPECT_EQ(count_target(*f, "aten::copy_"), 0u) << *f;
  expect_close(run_graph(*f, {x})[0], fn(x), 0, 0);
}

TEST(Functionalize, AWriteToAnInputStaysForTheCallerToSee) {
  auto fn = [](Tensor x) {
    x.mul_(3);
    return x + 1;
  };
  Tensor x = randn({4});
  auto g = capture(fn, x.clone());
  size_t removed = 0;
  auto f = aot::functionalize(*g, &removed);
  EXPECT_EQ(removed, 0u);
  EXPECT_EQ(count_target(*f, "aten::copy_"), 1u) << *f;
  Tensor a = x.clone();
  const Tensor out = run_graph(*f, {a})[0];
  expect_close(a, x * 3, 0, 0);
  expect_close(out, x * 3 + 1, 0, 0);
}

TEST(Functionalize, AWriteThroughAViewStays) {
  // y's row 0 is written through a view: later readers of y must see it, so the copy_
  // into the view stays.
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    Tensor row = y.select(0, 0);
    row.add_(full({}, 5.0));
    return y + 1;
  };
  Tensor x = randn({3, 4});
  auto g = capture(fn, x);
  auto f = aot::functionalize(*g);
  EXPECT_EQ(count_target(*f, "aten::copy_"), count_target(*g, "aten::copy_"));
  expect_close(run_graph(*f, {x})[0], fn(x), 0, 0);
}

TEST(LiftInputWrites, WritesIntoAnInputBecomeOneExtraOutputAndReadersReadTheWrittenValue) {
  auto fn = [](Tensor x, const Tensor& g) {
    x.mul_(0.5);
    x.add_(g);
    return x * 2;  // reads x after both writes
  };
  Tensor x = randn({6}), g = randn({6});
  auto captured = capture(fn, x.clone(), g);
  ASSERT_EQ(count_target(*captured, "aten::copy_"), 2u) << *captured;
  std::vector<aot::InputWrite> writes;
  auto lifted = aot::lift_input_writes(*aot::functionalize(*captured), &writes);
  EXPECT_EQ(count_target(*lifted, "aten::copy_"), 0u) << *lifted;
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].input, 0u);
  EXPECT_EQ(writes[0].output, 1u);
  Tensor a = x.clone();
  const std::vector<Tensor> outs = run_graph(*lifted, {a, g});
  ASSERT_EQ(outs.size(), 2u);
  expect_close(a, x, 0, 0);  // the graph itself no longer writes
  expect_close(outs[1], x * 0.5 + g, 0, 0);
  expect_close(outs[0], (x * 0.5 + g) * 2, 0, 0);
}

TEST(LiftInputWrites, AnInputThatAViewReadsOrThatIsReturnedKeepsItsWrites) {
  auto viewed = [](Tensor x) {
    x.mul_(2);
    return x.select(0, 1) + 1;
  };
  auto returned = [](Tensor x) { return x.mul_(2); };
  std::vector<std::unique_ptr<Graph>> graphs;
  graphs.push_back(capture(viewed, randn({3, 2})));
  graphs.push_back(capture(returned, randn({3})));
  for (const auto& g : graphs) {
    std::vector<aot::InputWrite> writes;
    auto lifted = aot::lift_input_writes(*aot::functionalize(*g), &writes);
    EXPECT_TRUE(writes.empty()) << *lifted;
    EXPECT_EQ(count_target(*lifted, "aten::copy_"), 1u) << *lifted;
  }
}

TEST(LiftInputWrites, AotEagerCopiesTheWritesBackAndAnInputSharingMemoryWithOneIsReadAfterTheWrite) {
  for (bool shared : {false, true}) {
    Tensor state = randn({4, 3});
    // A tensor the function reaches beside `state`: a view of it made outside (another
    // TensorImpl on the same memory, so the graph has two inputs), or an unrelated tensor.
    Tensor other = shared ? state.view({12}) : randn({12});
    auto fn = compile(
        [&]() {
          NoGradGuard no_grad;
          state.mul_(0.5);
          return other + 1;  // after the write: sees it when `other` shares state's memory
        },
        {.backend = "aot_eager"});
    for (int k = 0; k < 2; ++k) {
      const Tensor before = state.clone();
      const Tensor expected = (shared ? (before * 0.5).view({12}) : other) + 1;
      expect_close(fn(), expected, 0, 0);
      expect_close(state, before * 0.5, 0, 0);
    }
  }
}

TEST(Decompose, BatchNormInEvalModeIsAPerChannelAffineMapEqualToEager) {
  nn::BatchNorm2d bn(6);
  bn.eval();
  {
    NoGradGuard no_grad;
    bn.tensor("running_mean").copy_(randn({6}));
    bn.tensor("running_var").copy_(rand({6}) + 0.5);
    bn.tensor("weight").copy_(randn({6}));
    bn.tensor("bias").copy_(randn({6}));
  }
  auto fn = [](nn::Module& m, const Tensor& x) { return static_cast<nn::BatchNorm2d&>(m).forward(x).relu(); };
  Tensor x = randn({2, 6, 5, 7});
  NoGradGuard no_grad;
  auto g = capture(fn, bn, x);
  ASSERT_EQ(count_target(*g, "aten::native_batch_norm"), 1u) << *g;
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(count_target(*d, "aten::native_batch_norm"), 0u) << *d;
  EXPECT_EQ(count_target(*d, "aten::rsqrt"), 1u) << *d;
  auto compiled = compile(fn, {.backend = "aot_eager"});
  expect_close(compiled(bn, x), fn(bn, x));
}

TEST(Decompose, BatchNormInTrainingModeIsKept) {
  nn::BatchNorm2d bn(3);
  auto fn = [](nn::Module& m, const Tensor& x) { return static_cast<nn::BatchNorm2d&>(m).forward(x); };
  NoGradGuard no_grad;
  auto g = capture(fn, bn, randn({2, 3, 4, 4}));
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(count_target(*d, "aten::native_batch_norm"), 1u);
}

TEST(Decompose, VectorNormIsItsFormulaInInferenceGraphsAndKeptForAJointTrace) {
  auto fn = [](const Tensor& x) { return linalg_vector_norm(x, 2.0, std::vector<int64_t>{1}, true) * 3; };
  Tensor x = randn({4, 6});
  auto g = capture(fn, x);
  ASSERT_EQ(count_target(*g, "aten::linalg_vector_norm"), 1u) << *g;
  auto d = aot::decompose(*g);
  EXPECT_EQ(count_target(*d, "aten::linalg_vector_norm"), 0u) << *d;
  EXPECT_EQ(count_target(*d, "aten::sqrt"), 1u) << *d;
  expect_close(run_graph(*d, {x})[0], fn(x));
  // Autograd through sqrt(sum(x*x)) gives NaN where the norm is 0; the op's own formula 0.
  auto kept = aot::decompose(*g, nullptr, /*for_joint=*/true);
  EXPECT_EQ(count_target(*kept, "aten::linalg_vector_norm"), 1u) << *kept;
}

TEST(Decompose, VectorNormGradientOfAZeroRowIsZeroCompiledAsEager) {
  auto fn = [](const Tensor& x) { return linalg_vector_norm(x, 2.0, std::vector<int64_t>{1}).sum(); };
  Tensor x = randn({3, 4});
  {
    NoGradGuard no_grad;
    x.select(0, 1).zero_();
  }
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    Tensor leaf = x.clone().requires_grad_(true);
    auto compiled = compile(fn, {.backend = backend});
    compiled(leaf).backward();
    const auto grad = leaf.grad().to_vector<double>();
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_FALSE(std::isnan(grad[i])) << backend << " at " << i;
    for (size_t i = 4; i < 8; ++i) EXPECT_EQ(grad[i], 0.0) << backend << " at " << i;
    expect_close(leaf.grad().select(0, 0), x.select(0, 0) / linalg_vector_norm(x.select(0, 0)));
  }
}

TEST(Decompose, MaskedFillOfAFloatTensorIsWhere) {
  auto fn = [](const Tensor& x, const Tensor& mask) { return softmax(masked_fill(x, mask, -1e9), -1); };
  Tensor x = randn({3, 5}), mask = randn({3, 5}) > 0;
  auto g = capture(fn, x, mask);
  auto d = aot::decompose(*g);
  EXPECT_EQ(count_target(*d, "aten::masked_fill.Scalar"), 0u) << *d;
  EXPECT_EQ(count_target(*d, "aten::where.ScalarSelf"), 1u) << *d;
  expect_close(run_graph(*d, {x, mask})[0], fn(x, mask));
}

TEST(Decompose, MaskedFillOfAnIntegerTensorIsKept) {
  // where(mask, 1.5, int tensor) would promote to float; masked_fill keeps int64.
  auto fn = [](const Tensor& x, const Tensor& mask) { return masked_fill(x, mask, 7); };
  Tensor x = arange(6), mask = arange(6) > 2;
  auto g = capture(fn, x, mask);
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 0u);
}

TEST(Decompose, MaskedFillWithAUint8MaskIsKeptSoItStillRaises) {
  // A hand-written graph may hold what capture never records: masked_fill rejects a uint8
  // mask, where accepts one, so the decomposition would silently accept it.
  std::unique_ptr<Graph> g = parse_graph(R"(graph uint8_mask {
  %x : f32[2, 3] = placeholder[x]
  %mask : u8[2, 3] = placeholder[mask]
  %masked_fill : f32[2, 3] = aten::masked_fill.Scalar(%x, %mask, 0.5)
  return (%masked_fill)
})");
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 0u) << *d;
  EXPECT_THROW(run_graph(*d, {randn({2, 3}), zeros({2, 3}, TensorOptions(kUInt8))}), Error);
}

TEST(Decompose, AReplacementThatLaysItsResultOutOtherwiseIsNotTaken) {
  // Eager masked_fill keeps self's layout, where follows its first operand (the mask);
  // eager softmax is contiguous, its decomposition's pointwise ops keep a permuted input's
  // order. Both nodes stay, so a compiled graph gives eager's strides.
  auto fill = [](const Tensor& x, const Tensor& mask) { return masked_fill(x.t(), mask, 0.5); };
  auto soft = [](const Tensor& x) { return softmax(x.permute({2, 1, 0}), 0); };
  Tensor x = randn({4, 3}), mask = randn({3, 4}) > 0, y = randn({4, 3, 2});
  auto g = capture(fill, x, mask);
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 0u) << *d;
  EXPECT_EQ(run_graph(*d, {x, mask})[0].strides().vec(), fill(x, mask).strides().vec());
  auto h = capture(soft, y);
  auto e = aot::decompose(*h, &n);
  EXPECT_EQ(n, 0u) << *e;
  EXPECT_EQ(run_graph(*e, {y})[0].strides().vec(), soft(y).strides().vec());
  // Contiguous, they decompose as before.
  auto c = capture([](const Tensor& x) { return softmax(x, 0); }, y);
  aot::decompose(*c, &n);
  EXPECT_EQ(n, 1u);
}

TEST(Decompose, AMaskedFillOverSizeSymbolsIsKeptAndRunsAtOtherSizes) {
  // A replacement's nodes get the geometry of the example sizes; where over [3, 4] would
  // write 12 elements whatever the call's sizes. masked_fill over [s0, s1] stays, and
  // the inductor lowers it over the symbols.
  std::unique_ptr<Graph> g = parse_graph(R"(graph masked {
  symbol s0 = 3 for x.size(0) [2, inf]
  symbol s1 = 4 for x.size(1) [2, inf]
  %x : f32[s0, s1] = placeholder[x]
  %mask : b8[s0, s1] = placeholder[mask]
  %masked_fill : f32[s0, s1] = aten::masked_fill.Scalar(%x, %mask, 0.5)
  return (%masked_fill)
})");
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 0u) << *d;
  EXPECT_EQ(count_target(*d, "aten::masked_fill.Scalar"), 1u) << *d;
  auto f = [](const Tensor& x, const Tensor& mask) { return masked_fill(x, mask, 0.5); };
  auto fn = compile(f, {.backend = "inductor", .name = "masked", .dynamic = true});
  for (int64_t rows : {3, 4, 9}) {
    Tensor x = randn({rows, rows + 1}), mask = randn({rows, rows + 1}) > 0;
    expect_close(fn(x, mask), f(x, mask));
  }
}

TEST(Decompose, SoftmaxOverAnOuterDimIsReductionsAndPointwiseAndTheLastDimIsKept) {
  auto fn = [](const Tensor& x) { return std::make_tuple(softmax(x, 0), log_softmax(x, 1), softmax(x, -1)); };
  Tensor x = randn({7, 5, 3}) * 4;
  auto g = capture(fn, x);
  size_t n = 0;
  auto d = aot::decompose(*g, &n);
  EXPECT_EQ(n, 2u) << *d;
  EXPECT_EQ(count_target(*d, "aten::_softmax"), 1u) << "the last dim stays one row kernel\n" << *d;
  EXPECT_EQ(count_target(*d, "aten::_log_softmax"), 0u) << *d;
  auto out = run_graph(*d, {x});
  auto [a, b, c] = fn(x);
  expect_close(out[0], a);
  expect_close(out[1], b);
  expect_close(out[2], c, 0, 0);
}

TEST(AotEager, RunsThePreparedGraphAndLogsTheStage) {
  testing::LogCapture logs("+aot,aot_graphs");
  auto fn = [](const Tensor& x, const Tensor& mask) {
    Tensor y = x * 2;
    y.add_(full({}, 1.0));
    return masked_fill(y, mask, 0.5);
  };
  Tensor x = randn({4, 4}), mask = randn({4, 4}) > 0;
  auto compiled = compile(fn, {.backend = "aot_eager"});
  expect_close(compiled(x, mask), fn(x, mask), 0, 0);
  EXPECT_NE(logs.text().find("1 copy_ of intermediates removed, 1 nodes decomposed"), std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("aot forward graph"), std::string::npos) << logs.text();
}

TEST(GraphPasses, AddmmReadOnlyByPointwiseNodesBecomesMmAndAFusableBiasAdd) {
  nn::Linear fc(8, 12);
  auto fn = [](nn::Module& m, const Tensor& x) { return gelu(static_cast<nn::Linear&>(m).forward(x)); };
  Tensor x = randn({2, 3, 8});  // 3-d: the bias add moves past the view back to [2, 3, 12]
  NoGradGuard no_grad;
  auto g = capture(fn, fc, x);
  ASSERT_EQ(count_target(*g, "aten::addmm"), 1u) << *g;
  auto p = inductor::run_graph_passes(*g);
  EXPECT_EQ(count_target(*p, "aten::addmm"), 0u) << *p;
  EXPECT_EQ(count_target(*p, "aten::mm"), 1u) << *p;
  // The add reads the view of mm, in gelu's index space.
  const Node* add = nullptr;
  for (const auto& n : p->nodes())
    if (n->target() == "aten::add.Tensor") add = n.get();
  ASSERT_NE(add, nullptr) << *p;
  EXPECT_EQ(add->meta()[0].sizes, (std::vector<int64_t>{2, 3, 12}));
  std::vector<Tensor> inputs;
  for (Node* in : p->inputs()) inputs.push_back(in->kind() == NodeKind::Attribute ? fc.tensor(in->target()) : x);
  expect_close(run_graph(*p, inputs)[0], fn(fc, x));
}

TEST(GraphPasses, AddmmReadByANonPointwiseNodeIsKept) {
  nn::Linear fc(8, 12);
  auto fn = [](nn::Module& m, const Tensor& x) { return softmax(static_cast<nn::Linear&>(m).forward(x), -1); };
  NoGradGuard no_grad;
  auto g = capture(fn, fc, randn({4, 8}));
  auto p = inductor::run_graph_passes(*g);
  EXPECT_EQ(count_target(*p, "aten::addmm"), 1u) << *p;
}

TEST(GraphRewriter, AReplacementThatChangesAnOutputsShapeIsAnInternalError) {
  auto g = capture([](const Tensor& x) { return x.exp(); }, randn({3, 4}));
  auto bad = [](const Node& n, const std::vector<Arg>& args, graph::GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
    if (n.target() != "aten::exp") return std::nullopt;
    return std::vector<ValueRef>{b.call("aten::sum.dim_IntList", {args[0].value, std::vector<int64_t>{0}})};
  };
  try {
    graph::rewrite(*g, bad);
    FAIL() << "expected an internal error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changes output 0 from Float[3, 4] to Float[4]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ember
