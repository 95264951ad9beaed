// nn::Module and the torch.nn layers: names and shapes as PyTorch's, forwards against
// values computed with torch 1.13 on the same weights, state_dict round trips and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/nn/modules.h"
#include "ember/ops/creation.h"
#include "ember/ops/random.h"

using namespace ember;
using namespace ember::nn;

namespace {

using Names = std::vector<std::pair<std::string, std::vector<int64_t>>>;

Names names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  Names out;
  for (auto& [n, t] : named) out.emplace_back(n, std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
  return out;
}

void expect_close(const Tensor& t, const std::vector<float>& expected) {
  auto got = t.contiguous().to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5 + 1.3e-6 * std::abs(expected[i])) << i;
}

float abs_max(const Tensor& t) {
  float m = 0;
  for (float v : t.contiguous().to_vector<float>()) m = std::max(m, std::abs(v));
  return m;
}

std::string load_error(Module& m, const std::map<std::string, Tensor>& sd, bool strict = true) {
  try {
    m.load_state_dict(sd, strict);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

// Linear(3, 2) -> LayerNorm(2) -> GELU(tanh), weights as in the PyTorch reference.
std::shared_ptr<Sequential> reference_mlp() {
  auto seq = std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
      std::make_shared<Linear>(3, 2), std::make_shared<LayerNorm>(std::vector<int64_t>{2}),
      std::make_shared<GELU>("tanh")});
  seq->load_state_dict({
      {"0.weight", tensor<float>({0.11684493720531464f, 0.36710208654403687f, 0.5468928217887878f,
                                  0.36664968729019165f, 0.5481441617012024f, -0.04175492376089096f},
                                 {2, 3})},
      {"0.bias", tensor<float>({-0.5186461806297302f, -0.27370861172676086f}, {2})},
      {"1.weight", tensor<float>({1.5f, -0.5f}, {2})},
      {"1.bias", tensor<float>({0.1f, 0.2f}, {2})},
  });
  return seq;
}

}  // namespace

TEST(NnModule, SequentialNamesMatchPyTorch) {
  Sequential seq({std::make_shared<Linear>(3, 4), std::make_shared<LayerNorm>(std::vector<int64_t>{4}),
                  std::make_shared<GELU>(), std::make_shared<Linear>(4, 2, false)});
  Names expected = {{"0.weight", {4, 3}}, {"0.bias", {4}}, {"1.weight", {4}}, {"1.bias", {4}}, {"3.weight", {2, 4}}};
  EXPECT_EQ(names_of(seq.named_parameters()), expected);
  for (auto& p : seq.parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(seq.named_parameters(false).size(), 0u);
}

TEST(NnModule, ModuleListAndEmbeddingNames) {
  ModuleList list({std::make_shared<Linear>(2, 2), std::make_shared<LayerNorm>(std::vector<int64_t>{2})});
  Names expected = {{"0.weight", {2, 2}}, {"0.bias", {2}}, {"1.weight", {2}}, {"1.bias", {2}}};
  EXPECT_EQ(names_of(list.named_parameters()), expected);
  Embedding emb(5, 3);
  EXPECT_EQ(names_of(emb.named_parameters()), (Names{{"weight", {5, 3}}}));
}

TEST(NnModule, Conv2dAndBatchNorm2dNames) {
  Conv2d conv(2, 4, {3});
  EXPECT_EQ(names_of(conv.named_parameters()), (Names{{"weight", {4, 2, 3, 3}}, {"bias", {4}}}));
  BatchNorm2d bn(3);
  EXPECT_EQ(names_of(bn.named_parameters()), (Names{{"weight", {3}}, {"bias", {3}}}));
  EXPECT_EQ(names_of(bn.named_buffers()), (Names{{"running_mean", {3}}, {"running_var", {3}}, {"num_batches_tracked", {}}}));
  EXPECT_EQ(bn.named_buffers()[2].second.scalar_type(), kLong);
  EXPECT_EQ(bn.state_dict().size(), 5u);
}

TEST(NnModule, NestedChildrenGetDottedNames) {
  struct Block : UnaryModule {
    std::shared_ptr<Linear> fc = register_module("fc", std::make_shared<Linear>(2, 2));
    std::shared_ptr<LayerNorm> ln = register_module("ln", std::make_shared<LayerNorm>(std::vector<int64_t>{2}));
    Tensor forward(const Tensor& x) override { return (*ln)((*fc)(x)); }
  };
  Sequential seq({std::make_shared<Block>()});
  Names expected = {{"0.fc.weight", {2, 2}}, {"0.fc.bias", {2}}, {"0.ln.weight", {2}}, {"0.ln.bias", {2}}};
  EXPECT_EQ(names_of(seq.named_parameters()), expected);
  auto mods = seq.named_modules();
  ASSERT_EQ(mods.size(), 4u);
  EXPECT_EQ(mods[2].first, "0.fc");
  EXPECT_EQ(mods[3].first, "0.ln");
}

TEST(NnModule, DefaultInitBounds) {
  manual_seed(0);
  Linear lin(16, 8);
  double bound = 1.0 / 4.0;
  EXPECT_LE(abs_max(lin.weight()), bound);
  EXPECT_LE(abs_max(lin.bias()), bound);
  EXPECT_GT(abs_max(lin.weight()), 0.5 * bound);
  LayerNorm ln({3});
  expect_close(ln.tensor("weight"), {1, 1, 1});
  expect_close(ln.tensor("bias"), {0, 0, 0});
  Embedding emb(100, 10);
  double sum = 0, sq = 0;
  for (float v : emb.weight().to_vector<float>()) {
    sum += v;
    sq += double(v) * v;
  }
  EXPECT_NEAR(sum / 1000, 0.0, 0.15);
  EXPECT_NEAR(std::sqrt(sq / 1000 - (sum / 1000) * (sum / 1000)), 1.0, 0.15);
  Embedding padded(4, 2, 1);
  expect_close(padded.weight().select(0, 1), {0, 0});
}

TEST(NnModule, SequentialForwardMatchesPyTorch) {
  auto seq = reference_mlp();
  Tensor x = tensor<float>({0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}, {2, 3});
  expect_close((*seq)(x), {1.512102484703064f, 0.5305600762367249f, -0.11329510062932968f, -0.11462689936161041f});
}

TEST(NnModule, ActivationsMatchPyTorch) {
  Tensor x = tensor<float>({0.5f, -1.0f, 2.0f, 3.0f}, {1, 4});
  expect_close(GELU()(x), {0.3457311987876892f, -0.1586552858352661f, 1.9544999599456787f, 2.995950222015381f});
  expect_close(SiLU()(x), {0.3112296760082245f, -0.2689414322376251f, 1.7615940570831299f, 2.857722520828247f});
  expect_close(ReLU()(x), {0.5f, 0.0f, 2.0f, 3.0f});
  EXPECT_THROW(GELU("fast"), Error);
}

TEST(NnModule, EmbeddingForwardMatchesPyTorch) {
  Embedding emb(4, 2);
  emb.load_state_dict({{"weight", tensor<float>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2})}});
  Tensor out = emb(tensor<int64_t>({3, 0, 1, 1}, {2, 2}));
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 2, 2}));
  expect_close(out, {6, 7, 0, 1, 2, 3, 2, 3});
}

TEST(NnModule, Conv2dForwardMatchesPyTorch) {
  Conv2d conv(1, 2, {2});
  conv.load_state_dict({{"weight", tensor<float>({0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f}, {2, 1, 2, 2})},
                        {"bias", tensor<float>({0.05f, -0.05f}, {2})}});
  Tensor x = tensor<float>({0, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2}, {1, 1, 3, 3});
  Tensor out = conv(x);
  expect_close(out, {0.275f, 0.375f, 0.575f, 0.675f, 1.125f, 1.475f, 2.175f, 2.525f});
  EXPECT_TRUE(out.requires_grad());  // through ConvolutionBackward0 (see tests/unit/autograd/nn_training_test.cpp)
}

TEST(NnModule, BatchNorm2dTrainUpdatesRunningStatsEvalUsesThem) {
  BatchNorm2d bn(2);
  Tensor y = tensor<float>({0.5f, -1.f, 2.f, 3.f, 1.f, 2.f, -0.5f, 0.25f}, {2, 2, 2, 1});
  Tensor out = bn(y);
  expect_close(out, {-0.11546957492828369f, -1.5011043548583984f, 0.5866802334785461f, 1.3087482452392578f,
                     0.3464086651802063f, 1.270165205001831f, -1.2184897661209106f, -0.6769387722015381f});
  EXPECT_TRUE(out.requires_grad());  // the affine parameters require grad: NativeBatchNormBackward0
  expect_close(bn.tensor("running_mean"), {0.0625f, 0.11874999850988388f});
  expect_close(bn.tensor("running_var"), {1.056249976158142f, 1.1557291746139526f});
  EXPECT_EQ(bn.tensor("num_batches_tracked").item<int64_t>(), 1);
  bn.eval();
  expect_close(bn(y), {0.4256891906261444f, -1.0338165760040283f, 1.7499135732650757f, 2.680100202560425f,
                       0.9121911525726318f, 1.885195016860962f, -0.5755529999732971f, 0.12208699434995651f});
  EXPECT_EQ(bn.tensor("num_batches_tracked").item<int64_t>(), 1);
}

TEST(NnModule, StateDictRoundTripsThroughSafetensors) {
  auto seq = reference_mlp();
  auto path = (std::filesystem::temp_directory_path() / "ember_nn_roundtrip.safetensors").string();
  seq->save(path);
  manual_seed(7);
  auto fresh = std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
      std::make_shared<Linear>(3, 2), std::make_shared<LayerNorm>(std::vector<int64_t>{2}),
      std::make_shared<GELU>("tanh")});
  fresh->load(path);
  std::filesystem::remove(path);
  auto a = seq->state_dict(), b = fresh->state_dict();
  ASSERT_EQ(a.size(), 4u);
  for (auto& [k, t] : a) expect_close(b.at(k), t.to_vector<float>());
  Tensor x = tensor<float>({0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}, {2, 3});
  expect_close((*fresh)(x), {1.512102484703064f, 0.5305600762367249f, -0.11329510062932968f, -0.11462689936161041f});
  for (auto& p : fresh->parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(NnModule, LoadStateDictNamesMissingKey) {
  Linear lin(2, 4);
  std::string msg = load_error(lin, {{"weight", zeros({4, 2})}});
  EXPECT_NE(msg.find("Error(s) in loading state_dict for Linear:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Missing key(s) in state_dict: \"bias\". "), std::string::npos) << msg;
  EXPECT_EQ(load_error(lin, {{"weight", zeros({4, 2})}}, false), "");
}

TEST(NnModule, LoadStateDictNamesUnexpectedKey) {
  Linear lin(2, 4);
  std::string msg = load_error(lin, {{"weight", zeros({4, 2})}, {"bias", zeros({4})}, {"extra", zeros({1})}});
  EXPECT_NE(msg.find("Unexpected key(s) in state_dict: \"extra\". "), std::string::npos) << msg;
}

TEST(NnModule, LoadStateDictReportsSizeMismatchAndLeavesModuleUntouched) {
  Linear lin(2, 4);
  Tensor before = lin.weight().clone();
  std::string msg = load_error(lin, {{"weight", zeros({4, 3})}, {"bias", zeros({4})}}, false);
  EXPECT_NE(msg.find("size mismatch for weight: copying a param with shape [4, 3] from checkpoint, the shape in "
                     "current model is [4, 2]."),
            std::string::npos)
      << msg;
  expect_close(lin.weight(), before.to_vector<float>());
}

TEST(NnModule, TrainEvalPropagatesAndDropoutIsIdentityInEval) {
  auto drop = std::make_shared<Dropout>(0.5);
  Sequential seq({std::make_shared<Linear>(2, 2), drop});
  EXPECT_TRUE(seq.is_training());
  EXPECT_TRUE(drop->is_training());
  Tensor x = ones({64, 64});
  manual_seed(0);
  auto dropped = (*drop)(x).to_vector<float>();
  int zeros_seen = 0;
  for (float v : dropped) {
    EXPECT_TRUE(v == 0.f || v == 2.f);
    zeros_seen += v == 0.f;
  }
  EXPECT_GT(zeros_seen, 1500);
  EXPECT_LT(zeros_seen, 2600);
  seq.eval();
  EXPECT_FALSE(seq.is_training());
  EXPECT_FALSE(drop->is_training());
  expect_close((*drop)(x), std::vector<float>(64 * 64, 1.f));
  seq.train();
  EXPECT_TRUE(drop->is_training());
}

TEST(NnModule, ZeroGradAfterBackward) {
  Linear lin(3, 2);
  lin(ones({4, 3})).sum().backward();
  ASSERT_TRUE(lin.weight().grad().defined());
  expect_close(lin.bias().grad(), {4, 4});
  lin.zero_grad(false);
  expect_close(lin.weight().grad(), std::vector<float>(6, 0.f));
  lin.zero_grad();
  EXPECT_FALSE(lin.weight().grad().defined());
  EXPECT_FALSE(lin.bias().grad().defined());
}

TEST(NnModule, ToDtypeConvertsParametersKeepingRequiresGrad) {
  BatchNorm2d bn(2);
  bn.to(kDouble);
  for (auto& p : bn.parameters()) {
    EXPECT_EQ(p.scalar_type(), kDouble);
    EXPECT_TRUE(p.requires_grad());
  }
  EXPECT_EQ(bn.tensor("running_mean").scalar_type(), kDouble);
  EXPECT_EQ(bn.tensor("num_batches_tracked").scalar_type(), kLong);
  Linear lin(2, 2);
  lin.to(kDouble);
  EXPECT_EQ(lin(ones({1, 2}, TensorOptions().dtype(kDouble))).scalar_type(), kDouble);
}

TEST(NnModule, ToDeviceMovesParametersGradientsAndBuffersKeepingRequiresGrad) {
  BatchNorm2d bn(2);
  bn.tensor("weight").mutable_grad() = ones({2});
  bn.to(kMeta);
  for (auto& p : bn.parameters()) {
    EXPECT_TRUE(p.is_meta());
    EXPECT_TRUE(p.requires_grad());
  }
  EXPECT_TRUE(bn.tensor("weight").grad().is_meta());
  EXPECT_TRUE(bn.tensor("running_mean").is_meta());
  EXPECT_TRUE(bn.tensor("num_batches_tracked").is_meta());
  EXPECT_EQ(bn.tensor("num_batches_tracked").scalar_type(), kLong);
}

TEST(NnModule, ToTheDeviceItIsOnKeepsItsTensors) {
  Linear lin(2, 2);
  const Tensor w = lin.weight();
  lin.to(kCPU);
  EXPECT_TRUE(lin.weight().is_same(w));
}

TEST(NnModule, RegisterRejectsDuplicateAndDottedNames) {
  Linear lin(2, 2);
  EXPECT_THROW(lin.register_buffer("weight", zeros({1})), Error);
  EXPECT_THROW(lin.register_parameter("a.b", zeros({1})), Error);
  EXPECT_THROW(lin.tensor("nope"), Error);
}

TEST(NnModule, LoadStateDictListsEveryProblemInPyTorchsOrder) {
  Linear lin(2, 4);
  // PyTorch 2's text (1.13 prints shapes as torch.Size([4, 3])).
  EXPECT_EQ(load_error(lin, {{"weight", zeros({4, 3})}, {"extra", zeros({1})}}),
            "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". \n\tUnexpected "
            "key(s) in state_dict: \"extra\". \n\tsize mismatch for weight: copying a param with shape [4, 3] from "
            "checkpoint, the shape in current model is [4, 2].");
}
