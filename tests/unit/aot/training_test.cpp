// Tests of AOT autograd (src/aot/joint.cpp, partition.cpp, min_cut.cpp, runtime.cpp): the
// joint graph's tangents and gradients, what each partitioner saves, and compiled
// training through aot_eager and inductor giving eager's gradients with eager's autograd
// semantics (one CompiledFunctionBackward node, hooks, retain_graph, the version check,
// a compiled region inside an eager graph, written-back batch-norm statistics, dropout's
// mask under fallback_random).
#include <gtest/gtest.h>

#include "aot/aot.h"
#include "aot/joint.h"
#include "ember/ember.h"
#include "core/shape.h"
#include "ember/nn/blocks.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;

class AotTraining : public testing::CompileDirTest, public ::testing::WithParamInterface<std::string> {};
class AotPartition : public testing::CompileDirTest {};

/// The graph compile() captures for `fn` on `args`, functionalized and decomposed.
template <typename F, typename... A>
std::unique_ptr<Graph> prepared_graph(F fn, A&&... args) {
  std::unique_ptr<Graph> kept;
  auto keep = [&kept](Graph& g, const std::vector<Tensor>&) {
    kept = aot::prepare_inference_graph(g);
    return eager_backend(g);
  };
  compile(fn, {.custom_backend = keep})(std::forward<A>(args)...);
  return kept;
}

size_t count_target(const Graph& g, const std::string& target) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->target() == target;
  return n;
}

Tensor leaf(std::vector<int64_t> sizes) { return randn(sizes).requires_grad_(); }

TEST_F(AotPartition, JointGraphHasATangentPerOutputThatRequiresGradAndAGradientPerInputThatDoes) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& c) {
    return std::make_tuple((x * w).sigmoid(), c * 2, (x + 1).sum());
  };
  Tensor x = leaf({3, 4}), w = leaf({4}), c = randn({2});
  auto g = prepared_graph(fn, x, w, c);
  aot::JointGraph joint = aot::make_joint_graph(*g, {true, true, false});
  EXPECT_EQ(joint.tangent_of_output, (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(joint.grad_of_input, (std::vector<int>{0, 1, -1}));
  EXPECT_EQ(joint.graph->inputs().size(), 5u) << *joint.graph;
  EXPECT_EQ(joint.graph->outputs().size(), 5u) << *joint.graph;
  EXPECT_NE(to_string(*joint.graph).find("tangents_2"), std::string::npos) << *joint.graph;
}

TEST_F(AotPartition, MinCutRecomputesAPointwiseChainThatSaveAllSaves) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    return (ember::cos(ember::exp(ember::sin(ember::mm(x, w))) * 3)).sum();
  };
  Tensor x = leaf({16, 32}), w = leaf({32, 64});
  auto g = prepared_graph(fn, x, w);
  aot::JointGraph joint = aot::make_joint_graph(*g, {true, true});
  aot::Partition all = aot::partition_joint_graph(joint, aot::Partitioner::SaveAll);
  aot::Partition cut = aot::partition_joint_graph(joint, aot::Partitioner::MinCut);
  EXPECT_LT(cut.saved_bytes, all.saved_bytes);
  // The product is saved, never recomputed: the backward has the two gradient products only.
  EXPECT_EQ(count_target(*cut.backward, "aten::mm"), 2u) << *cut.backward;
  // The pointwise chain after it is recomputed from the product instead of saved.
  EXPECT_EQ(cut.saved_outputs, 1u) << *cut.forward;
  EXPECT_EQ(count_target(*cut.backward, "aten::exp"), 1u) << *cut.backward;
  EXPECT_EQ(count_target(*all.backward, "aten::exp"), 0u) << *all.backward;
  EXPECT_GT(all.saved_outputs, 1u) << *all.forward;
}

TEST_F(AotPartition, MinCutSavesAPointwiseValueABackwardGemmReadsInsteadOfRecomputingIt) {
  // fc2's weight gradient is a product reading gelu(fc1): recomputed in the backward, GELU
  // would run again and its result be written to memory for that product anyway.
  auto fn = [](const Tensor& x, const Tensor& w1, const Tensor& w2) {
    return ember::mm(ember::gelu(ember::mm(x, w1)), w2).sum();
  };
  Tensor x = leaf({16, 32}), w1 = leaf({32, 64}), w2 = leaf({64, 8});
  auto g = prepared_graph(fn, x, w1, w2);
  aot::JointGraph joint = aot::make_joint_graph(*g, {true, true, true});
  aot::Partition cut = aot::partition_joint_graph(joint, aot::Partitioner::MinCut);
  EXPECT_EQ(count_target(*cut.backward, "aten::gelu"), 0u) << *cut.backward;
  EXPECT_EQ(cut.saved_outputs, 2u) << *cut.forward;  // fc1's product (GELU's derivative reads it) and GELU's value
}

/// A small MLP block: linear, gelu, layer norm, linear, a loss.
Tensor mlp_loss(nn::Module& m, const Tensor& x) {
  auto& seq = static_cast<nn::Sequential&>(m);
  return seq.forward(x).pow(2).mean();
}

std::unique_ptr<nn::Sequential> make_mlp() {
  auto seq = std::make_unique<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Linear>(8, 16));
  seq->push_back(std::make_shared<nn::GELU>());
  seq->push_back(std::make_shared<nn::LayerNorm>(std::vector<int64_t>{16}));
  seq->push_back(std::make_shared<nn::Linear>(16, 4));
  return seq;
}

TEST_P(AotTraining, CompiledTrainingGivesEagersGradientsThroughOneCompiledFunctionBackward) {
  auto owned = make_mlp();
  nn::Sequential& model = *owned;
  Tensor x = leaf({5, 8});
  Tensor loss_eager = mlp_loss(model, x);
  loss_eager.backward();
  std::vector<Tensor> eager_grads{x.grad().clone()};
  for (auto& [name, p] : model.named_parameters()) eager_grads.push_back(p.grad().clone());
  x.mutable_grad() = Tensor();
  for (auto& [name, p] : model.named_parameters()) p.mutable_grad() = Tensor();

  auto compiled = compile(mlp_loss, {.backend = GetParam()});
  Tensor loss = compiled(model, x);
  ASSERT_TRUE(loss.grad_fn());
  EXPECT_EQ(loss.grad_fn()->name(), "CompiledFunctionBackward");
  expect_close(loss, loss_eager, 1e-5, 1e-6, "loss");
  loss.backward();
  expect_close(x.grad(), eager_grads[0], 1e-4, 1e-6, "x.grad");
  size_t i = 1;
  for (auto& [name, p] : model.named_parameters()) expect_close(p.grad(), eager_grads[i++], 1e-4, 1e-6, name);
}

TEST_P(AotTraining, HooksAndRetainGraphBehaveAsEager) {
  Tensor w = leaf({6});
  int calls = 0;
  w.register_hook([&calls](const Tensor& g) {
    ++calls;
    return g * 2;
  });
  auto compiled =
      compile([](const Tensor& x, const Tensor& w) { return (x * w).tanh().sum(); }, {.backend = GetParam()});
  Tensor x = randn({6});
  Tensor loss = compiled(x, w);
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  EXPECT_EQ(calls, 2);
  Tensor expected = (1 - (x * w).tanh().pow(2)) * x * 4;  // two backward passes, each hooked x2
  expect_close(w.grad(), expected.detach(), 1e-5, 1e-6, "w.grad");
}

TEST_P(AotTraining, AGradientTheCompiledBackwardReturnsBecomesTheLeafsGradWithoutACopy) {
  Tensor x = randn({8, 16}), w = leaf({16, 32});
  const void* seen = nullptr;  // the buffer the backward graph returned (the hook keeps no handle)
  w.register_hook([&seen](const Tensor& g) {
    seen = g.raw_data_ptr();
    return Tensor();
  });
  auto compiled = compile([](const Tensor& x, const Tensor& w) { return mm(x, w).tanh().sum(); },
                          {.backend = GetParam()});
  compiled(x, w).backward();
  EXPECT_EQ(w.grad().raw_data_ptr(), seen);
  const Tensor t = mm(x, w.detach()).tanh();
  expect_close(w.grad(), mm(x.t(), 1 - t * t), 1e-4, 1e-5, "w.grad");
}

TEST_P(AotTraining, ASecondBackwardWithoutRetainGraphRaisesEagersMessage) {
  auto compiled = compile([](const Tensor& x) { return x.exp().sum(); }, {.backend = GetParam()});
  Tensor x = leaf({4});
  Tensor loss = compiled(x);
  loss.backward();
  try {
    loss.backward();
    FAIL() << "a second backward through freed saved tensors did not raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"), std::string::npos)
        << e.what();
  }
}

TEST_P(AotTraining, ModifyingASavedInputBeforeBackwardRaisesTheVersionError) {
  auto compiled = compile([](const Tensor& x, const Tensor& w) { return (x * w).sum(); }, {.backend = GetParam()});
  Tensor x = leaf({4}), w = randn({4});
  Tensor loss = compiled(x, w);
  w.add_(ones({4}));
  try {
    loss.backward();
    FAIL() << "backward after writing a saved input did not raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one of the variables needed for gradient computation has been modified by "
                                         "an inplace operation: [torch.FloatTensor [4]]"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("is at version 1; expected version 0 instead"), std::string::npos) << e.what();
  }
}

TEST_P(AotTraining, GradientsFlowThroughACompiledRegionInsideAnEagerGraph) {
  Tensor x = leaf({3, 5}), w = leaf({5, 2});
  auto region =
      compile([](const Tensor& a, const Tensor& w) { return ember::mm(a, w).relu(); }, {.backend = GetParam()});
  auto run = [&](bool compiled) {
    Tensor a = ember::sin(x);  // eager before
    Tensor h = compiled ? region(a, w) : ember::mm(a, w).relu();
    return (h * 3).sum();  // eager after
  };
  run(false).backward();
  Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.mutable_grad() = Tensor();
  w.mutable_grad() = Tensor();
  run(true).backward();
  expect_close(x.grad(), gx, 1e-5, 1e-6, "x.grad");
  expect_close(w.grad(), gw, 1e-5, 1e-6, "w.grad");
}

TEST_P(AotTraining, BatchNormInTrainingWritesRunningStatsBackAsEagerDoes) {
  auto make = [] {
    manual_seed(3);
    auto seq = std::make_unique<nn::Sequential>();
    seq->push_back(std::make_shared<nn::Conv2d>(2, 3, std::vector<int64_t>{3, 3}));
    seq->push_back(std::make_shared<nn::BatchNorm2d>(3));
    return seq;
  };
  auto loss_of = [](nn::Module& m, const Tensor& x) { return static_cast<nn::Sequential&>(m).forward(x).relu().sum(); };
  auto eager_owned = make(), model_owned = make();
  nn::Sequential &eager = *eager_owned, &model = *model_owned;
  Tensor x = randn({4, 2, 6, 6});
  loss_of(eager, x).backward();
  auto compiled = compile(loss_of, {.backend = GetParam()});
  compiled(model, x).backward();
  const auto e = eager.named_buffers(), c = model.named_buffers();
  ASSERT_EQ(e.size(), c.size());
  for (size_t i = 0; i < e.size(); ++i) expect_close(c[i].second, e[i].second, 1e-5, 1e-6, c[i].first);
  const auto ep = eager.named_parameters(), cp = model.named_parameters();
  for (size_t i = 0; i < ep.size(); ++i)
    expect_close(cp[i].second.grad(), ep[i].second.grad(), 1e-4, 1e-5, cp[i].first);
}

TEST_P(AotTraining, DropoutInACompiledTrainingGraphGivesEagersMaskWithFallbackRandom) {
  config().inductor.fallback_random = true;
  Tensor x = leaf({64});
  auto fn = [](const Tensor& x) { return dropout(x * 2, 0.5, true).sum(); };
  manual_seed(7);
  fn(x).backward();
  Tensor eager = x.grad().clone();
  x.mutable_grad() = Tensor();
  auto compiled = compile(fn, {.backend = GetParam()});
  manual_seed(7);
  compiled(x).backward();
  expect_close(x.grad(), eager, 0, 0, "x.grad (the mask times 2 / (1 - p))");
}

TEST_P(AotTraining, OneFunctionRunsItsTrainingGraphWithGradAndItsInferenceGraphWithout) {
  Tensor w = leaf({5});
  auto compiled = compile([&w](const Tensor& x) { return (x * w).exp(); }, {.backend = GetParam()});
  Tensor x = randn({5});
  Tensor y = compiled(x);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
  NoGradGuard no_grad;
  Tensor z = compiled(x);
  EXPECT_FALSE(z.requires_grad());
  expect_close(z, (x * w).exp(), 1e-6, 1e-6, "inference result");
}

TEST_P(AotTraining, AValueReadFromAnInputTheGraphWritesIsSavedNotRecomputed) {
  // exp(buf) is cheap to recompute from buf, and buf is smaller than the product the
  // formula reads; but the graph writes buf afterwards, so the backward must not read it.
  auto fn = [](const Tensor& x, Tensor buf) {
    Tensor scale = buf.exp().expand({16, 8}) * 2;
    Tensor loss = (x * scale).sum();
    buf.add_(ones({1, 8}));
    return loss;
  };
  Tensor x = leaf({16, 8});
  Tensor buf = randn({1, 8});
  Tensor buf_eager = buf.clone();
  fn(x, buf_eager).backward();
  Tensor expected = x.grad().clone();
  x.mutable_grad() = Tensor();
  compile(fn, {.backend = GetParam()})(x, buf).backward();
  expect_close(buf, buf_eager, 0, 0, "buf written back");
  expect_close(x.grad(), expected, 1e-6, 1e-6, "x.grad");
}

class AotLayout : public testing::CompileDirTest {};

/// Whether `m` is laid out NHWC (channels fastest) and dense.
bool nhwc_meta(const TensorMeta& m) { return m.sizes.size() == 4 && m.strides == core::channels_last_strides(m.sizes); }

/// A training BasicBlock (conv-bn-relu-conv-bn, residual add, relu) of 4 channels.
std::shared_ptr<nn::BasicBlock> small_block() {
  manual_seed(11);
  auto block = std::make_shared<nn::BasicBlock>(4);
  block->train();
  return block;
}

TEST_F(AotLayout, ChannelsLastConvolutionsConvertTheBlockInputOnceAndKeepActivationsNhwc) {
  auto block = small_block();
  Tensor x = randn({2, 4, 8, 8});
  auto g = prepared_graph([&block](const Tensor& t) { return block->forward(t); }, x);
  size_t converted = 0;
  std::unique_ptr<Graph> nhwc = aot::channels_last_convolutions(*g, &converted);
  ASSERT_TRUE(nhwc) << *g;
  // conv2 reads relu(bn1(conv1)), NHWC already: only the block's input is converted.
  EXPECT_EQ(converted, 1u) << *nhwc;
  EXPECT_EQ(count_target(*nhwc, "aten::clone"), 1u) << *nhwc;
  size_t convs = 0;
  for (const auto& n : nhwc->nodes()) {
    if (n->target() == "aten::convolution") {
      ++convs;
      const Arg& in = n->args()[0];
      EXPECT_TRUE(nhwc_meta(in.value.node->meta()[in.value.index])) << "input of %" << n->name() << "\n" << *nhwc;
    }
    if (n->target() == "aten::relu" || n->target() == "aten::native_batch_norm" || n->target() == "aten::add.Tensor") {
      EXPECT_TRUE(nhwc_meta(n->meta()[0])) << "%" << n->name() << "\n" << *nhwc;
    }
  }
  EXPECT_EQ(convs, 2u);
  // The captured graph runs both convolutions over NCHW.
  for (const auto& n : g->nodes())
    if (n->target() == "aten::convolution") {
      EXPECT_FALSE(nhwc_meta(n->meta()[0])) << *g;
    }
}

TEST_F(AotLayout, ChannelsLastConvolutionsLeaveAGraphWithoutFloatConvolutionsAlone) {
  Tensor x = randn({2, 4, 8, 8}, TensorOptions(kDouble)), w = randn({4, 4, 3, 3}, TensorOptions(kDouble));
  auto g = prepared_graph([](const Tensor& a, const Tensor& b) { return conv2d(a, b).relu(); }, x, w);
  EXPECT_EQ(aot::channels_last_convolutions(*g), nullptr) << "float64 convolutions stay NCHW";
}

TEST_F(AotLayout, InferenceGraphWithoutActivationOutputsRunsChannelsLastAndGivesEagersValuesAndStrides) {
  // The exported CNN's shape: conv -> batch norm -> relu -> max pool -> conv (stride 2) ->
  // batch norm -> relu -> mean -> linear. Its output is 2-D, so the rewrite needs no copy
  // back to NCHW and applies (on by default).
  ASSERT_TRUE(config().aot.inference_layout_optimization);
  testing::LogCapture log("aot");
  Tensor w1 = randn({16, 3, 3, 3}) * 0.2, b1 = randn({16}), w2 = randn({32, 16, 3, 3}) * 0.1, b2 = randn({32});
  Tensor m1 = randn({16}) * 0.1, v1 = rand({16}) + 0.5, m2 = randn({32}) * 0.1, v2 = rand({32}) + 0.5;
  Tensor fw = randn({10, 32}), fb = randn({10});
  auto cnn = [&](const Tensor& x) {
    Tensor y = batch_norm(conv2d(x, w1, b1, {1, 1}, {1, 1}), std::nullopt, std::nullopt, m1, v1, false, 0.1, 1e-5).relu();
    y = max_pool2d(y, {2, 2});
    y = batch_norm(conv2d(y, w2, b2, {2, 2}, {1, 1}), std::nullopt, std::nullopt, m2, v2, false, 0.1, 1e-5).relu();
    return linear(mean(y, {2, 3}), fw, fb);
  };
  NoGradGuard no_grad;
  Tensor x = randn({4, 3, 16, 16});
  Tensor want = cnn(x);
  auto compiled = compile(cnn, {.backend = "inductor", .fullgraph = true});
  Tensor got = compiled(x);
  EXPECT_NE(log.text().find("layout optimization of inference graph"), std::string::npos) << log.text();
  // Only the input is converted: the pooling keeps the NHWC activations (Note [channels_last
  // max pooling]), so the second convolution reads them as they are.
  EXPECT_NE(log.text().find("1 convolution inputs made channels_last"), std::string::npos) << log.text();
  EXPECT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(got.strides(), want.strides());
  EXPECT_EQ(got.dtype(), want.dtype());
  expect_close(got, want, 1e-4, 1e-4, "output");
}

TEST_F(AotLayout, InferenceGraphReturningAnActivationKeepsEagersLayout) {
  // W6's block returns its last activation: channels_last inside would need a copy back to
  // NCHW for the output, which costs more than the reorders saved, so the graph stays NCHW.
  testing::LogCapture log("aot");
  auto block = small_block();
  block->eval();
  NoGradGuard no_grad;
  Tensor x = randn({2, 4, 8, 8});
  Tensor want = block->forward(x);
  auto compiled = compile([](nn::Module& m, const Tensor& t) { return static_cast<nn::BasicBlock&>(m).forward(t); },
                          {.backend = "inductor"});
  Tensor got = compiled(*block, x);
  EXPECT_NE(log.text().find("would need its eager layout back"), std::string::npos) << log.text();
  EXPECT_EQ(log.text().find("convolution inputs made channels_last"), std::string::npos) << log.text();
  EXPECT_EQ(got.strides(), want.strides());
  expect_close(got, want, 1e-4, 1e-4, "output");
}

TEST_F(AotLayout, CompiledTrainingWithLayoutOptimizationGivesEagersValuesStridesGradientsAndRunningStats) {
  config().aot.layout_optimization = true;
  testing::LogCapture log("aot");
  auto eager = small_block(), model = small_block();
  Tensor xe = randn({2, 4, 8, 8}).requires_grad_(), r = randn({2, 4, 8, 8});
  Tensor xc = xe.detach().clone().requires_grad_();
  // The gradients as they reach each leaf (a hook sees them before AccumulateGrad lays
  // them out as the leaf is): the compiled backward's outputs as they are.
  const std::vector<Tensor> ep = eager->parameters(), cp = model->parameters();
  std::vector<Tensor> eager_leaves{xe}, compiled_leaves{xc};
  eager_leaves.insert(eager_leaves.end(), ep.begin(), ep.end());
  compiled_leaves.insert(compiled_leaves.end(), cp.begin(), cp.end());
  std::vector<std::vector<int64_t>> eager_strides(eager_leaves.size()), compiled_strides(compiled_leaves.size());
  for (size_t i = 0; i < eager_leaves.size(); ++i) {
    eager_leaves[i].register_hook([&eager_strides, i](const Tensor& g) {
      eager_strides[i] = g.strides().vec();
      return Tensor();
    });
    compiled_leaves[i].register_hook([&compiled_strides, i](const Tensor& g) {
      compiled_strides[i] = g.strides().vec();
      return Tensor();
    });
  }
  Tensor y_eager = eager->forward(xe);
  (y_eager * r).sum().backward();

  auto compiled = compile([](nn::Module& m, const Tensor& t) { return static_cast<nn::BasicBlock&>(m).forward(t); },
                          {.backend = "inductor"});
  Tensor y = compiled(*model, xc);
  EXPECT_NE(log.text().find("layout optimization of graph"), std::string::npos) << log.text();
  EXPECT_EQ(y.strides().vec(), y_eager.strides().vec()) << "the output's strides";
  expect_close(y, y_eager, 1e-4, 1e-4, "output");
  (y * r).sum().backward();
  for (size_t i = 0; i < eager_leaves.size(); ++i) {
    ASSERT_FALSE(eager_strides[i].empty()) << "leaf " << i << " got no gradient";
    EXPECT_EQ(compiled_strides[i], eager_strides[i]) << "leaf " << i << "'s gradient strides";
    EXPECT_EQ(compiled_leaves[i].grad().strides().vec(), eager_leaves[i].grad().strides().vec()) << "leaf " << i;
    expect_close(compiled_leaves[i].grad(), eager_leaves[i].grad(), 1e-4, 1e-4, "leaf " + std::to_string(i) + ".grad");
  }
  const auto eb = eager->named_buffers(), cb = model->named_buffers();
  ASSERT_EQ(eb.size(), cb.size());
  for (size_t i = 0; i < eb.size(); ++i) expect_close(cb[i].second, eb[i].second, 1e-5, 1e-6, cb[i].first);
}

INSTANTIATE_TEST_SUITE_P(Backends, AotTraining, ::testing::Values("aot_eager", "inductor"));

}  // namespace
}  // namespace ember
