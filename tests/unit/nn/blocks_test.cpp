// The workload blocks (ember/nn/blocks.h) against PyTorch: state dicts written by PyTorch
// (tests/data/gen_blocks.py, bench/torch_blocks.py) load key for key, forwards and
// training-mode gradients match PyTorch's, and Ember's checkpoints read back as PyTorch's.
#include "ember/nn/blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/random.h"
#include "ember/serialize.h"
#include "support/error_of.h"

using namespace ember;
using namespace ember::nn;
using ember::testing::error_of;

namespace {

using Named = std::vector<std::pair<std::string, std::vector<int64_t>>>;
using TensorMap = std::map<std::string, Tensor>;

std::string data(const std::string& file) { return std::string(EMBER_TEST_DATA_DIR) + "/" + file; }

Named names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  Named out;
  for (auto& [n, t] : named) out.emplace_back(n, t.sizes().vec());
  return out;
}

std::set<std::string> keys_of(const TensorMap& m) {
  std::set<std::string> out;
  for (auto& kv : m) out.insert(kv.first);
  return out;
}

// PyTorch's assert_close for float32 (rtol 1.3e-6, atol 1e-5), element by element.
void expect_close(const Tensor& got, const Tensor& expected, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes().vec(), expected.sizes().vec()) << what;
  ASSERT_EQ(got.dtype(), expected.dtype()) << what;
  auto g = got.contiguous().to_vector<float>();
  auto e = expected.contiguous().to_vector<float>();
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - e[i]) <= 1e-5 + 1.3e-6 * std::abs(e[i])) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: " << g[i] << " vs PyTorch " << e[i];
}

void expect_equal_tensors(const TensorMap& got, const TensorMap& expected) {
  ASSERT_EQ(keys_of(got), keys_of(expected));
  for (auto& [k, e] : expected) {
    const Tensor& g = got.at(k);
    EXPECT_EQ(g.dtype(), e.dtype()) << k;
    EXPECT_EQ(g.sizes().vec(), e.sizes().vec()) << k;
    if (e.dtype() == kLong)
      EXPECT_EQ(g.to_vector<int64_t>(), e.to_vector<int64_t>()) << k;
    else
      EXPECT_EQ(g.contiguous().to_vector<float>(), e.contiguous().to_vector<float>()) << k;
  }
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_blocks_" + name + ".safetensors")).string();
}

// Loads PyTorch's checkpoint of block `name` and checks the eval-mode forward.
void check_forward(UnaryModule& block, const std::string& name) {
  const TensorMap state = load_safetensors(data("blocks_" + name + "_state.safetensors"));
  EXPECT_EQ(keys_of(block.state_dict()), keys_of(state));
  block.load(data("blocks_" + name + "_state.safetensors"));
  expect_equal_tensors(block.state_dict(), state);
  const TensorMap io = load_safetensors(data("blocks_" + name + "_io.safetensors"));
  block.eval();
  NoGradGuard no_grad;
  expect_close(block.forward(io.at("input")), io.at("output"), name + " output");
}

// Training-mode forward, backward of PyTorch's grad_output; every parameter's grad and the
// input's against PyTorch's.
void check_gradients(UnaryModule& block, const std::string& name) {
  block.load(data("blocks_" + name + "_state.safetensors"));
  const TensorMap io = load_safetensors(data("blocks_" + name + "_io.safetensors"));
  block.train();
  Tensor x = io.at("input").clone().requires_grad_();
  block.forward(x).backward(io.at("grad_output"));
  std::set<std::string> expected_keys = {"input"};
  for (auto& [n, p] : block.named_parameters()) {
    expected_keys.insert(n);
    expect_close(p.grad(), io.at("grad." + n), name + " grad of " + n);
  }
  expect_close(x.grad(), io.at("grad.input"), name + " grad of input");
  std::set<std::string> stored;
  for (auto& [k, t] : io)
    if (k.rfind("grad.", 0) == 0) stored.insert(k.substr(5));
  EXPECT_EQ(stored, expected_keys);
}

// Module::save writes what load_safetensors reads back as PyTorch's file: the same names,
// dtypes, shapes and values.
void check_save_reads_back_as_pytorch(Module& block, const std::string& name) {
  block.load(data("blocks_" + name + "_state.safetensors"));
  const std::string path = temp_path(name);
  block.save(path);
  expect_equal_tensors(load_safetensors(path), load_safetensors(data("blocks_" + name + "_state.safetensors")));
  std::filesystem::remove(path);
}

}  // namespace

TEST(NnBlocks, MLPBlockNamesMatchPyTorch) {
  MLPBlock block(16, 48);
  Named expected = {{"ln.weight", {16}}, {"ln.bias", {16}},        {"fc1.weight", {48, 16}},
                    {"fc1.bias", {48}},  {"fc2.weight", {16, 48}}, {"fc2.bias", {16}}};
  EXPECT_EQ(names_of(block.named_parameters()), expected);
  EXPECT_TRUE(block.named_buffers().empty());
}

TEST(NnBlocks, GPT2BlockNamesMatchNanoGPT) {
  GPT2Block block(32, 4, 128);
  Named expected = {{"ln_1.weight", {32}},
                    {"ln_1.bias", {32}},
                    {"attn.c_attn.weight", {96, 32}},
                    {"attn.c_attn.bias", {96}},
                    {"attn.c_proj.weight", {32, 32}},
                    {"attn.c_proj.bias", {32}},
                    {"ln_2.weight", {32}},
                    {"ln_2.bias", {32}},
                    {"mlp.c_fc.weight", {128, 32}},
                    {"mlp.c_fc.bias", {128}},
                    {"mlp.c_proj.weight", {32, 128}},
                    {"mlp.c_proj.bias", {32}}};
  EXPECT_EQ(names_of(block.named_parameters()), expected);
  EXPECT_TRUE(block.named_buffers().empty());
  std::vector<std::string> modules;
  for (auto& [n, m] : block.named_modules()) modules.push_back(n);
  EXPECT_EQ(modules, (std::vector<std::string>{"", "ln_1", "attn", "attn.c_attn", "attn.c_proj", "ln_2", "mlp",
                                               "mlp.c_fc", "mlp.gelu", "mlp.c_proj"}));
}

TEST(NnBlocks, BasicBlockNamesMatchTorchvision) {
  BasicBlock block(4);
  Named params = {{"conv1.weight", {4, 4, 3, 3}}, {"bn1.weight", {4}}, {"bn1.bias", {4}},
                  {"conv2.weight", {4, 4, 3, 3}}, {"bn2.weight", {4}}, {"bn2.bias", {4}}};
  Named buffers = {{"bn1.running_mean", {4}}, {"bn1.running_var", {4}}, {"bn1.num_batches_tracked", {}},
                   {"bn2.running_mean", {4}}, {"bn2.running_var", {4}}, {"bn2.num_batches_tracked", {}}};
  EXPECT_EQ(names_of(block.named_parameters()), params);
  EXPECT_EQ(names_of(block.named_buffers()), buffers);
}

TEST(NnBlocks, DefaultSizesAreTheWorkloads) {
  MLPBlock mlp;
  EXPECT_EQ(mlp.fc1->weight().sizes().vec(), (std::vector<int64_t>{4096, 1024}));
  GPT2Block gpt;
  EXPECT_EQ(gpt.attn->c_attn->weight().sizes().vec(), (std::vector<int64_t>{2304, 768}));
  EXPECT_EQ(gpt.attn->n_head, 12);
  EXPECT_EQ(gpt.mlp->c_fc->weight().sizes().vec(), (std::vector<int64_t>{3072, 768}));
  EXPECT_EQ(gpt.mlp->gelu->approximate, "tanh");
  BasicBlock basic;
  EXPECT_EQ(basic.conv1->weight().sizes().vec(), (std::vector<int64_t>{64, 64, 3, 3}));
}

TEST(NnBlocks, MLPBlockLoadsPyTorchStateDictAndMatchesForward) {
  MLPBlock block(16, 48);
  check_forward(block, "mlp");
}

TEST(NnBlocks, GPT2BlockLoadsPyTorchStateDictAndMatchesForward) {
  GPT2Block block(32, 4, 128);
  check_forward(block, "gpt2");
}

TEST(NnBlocks, BasicBlockLoadsPyTorchStateDictAndMatchesEvalForward) {
  BasicBlock block(4);
  check_forward(block, "basic");
}

TEST(NnBlocks, MLPBlockTrainingGradientsMatchPyTorch) {
  MLPBlock block(16, 48);
  check_gradients(block, "mlp");
}

TEST(NnBlocks, GPT2BlockTrainingGradientsMatchPyTorch) {
  GPT2Block block(32, 4, 128);
  check_gradients(block, "gpt2");
}

TEST(NnBlocks, SavedCheckpointsReadBackAsPyTorchs) {
  MLPBlock mlp(16, 48);
  check_save_reads_back_as_pytorch(mlp, "mlp");
  GPT2Block gpt(32, 4, 128);
  check_save_reads_back_as_pytorch(gpt, "gpt2");
  BasicBlock basic(4);
  check_save_reads_back_as_pytorch(basic, "basic");
}

TEST(NnBlocks, EmberCheckpointLoadsIntoAFreshBlock) {
  manual_seed(3);
  GPT2Block a(32, 4, 128), b(32, 4, 128);
  const std::string path = temp_path("fresh");
  a.save(path);
  b.load(path);
  std::filesystem::remove(path);
  Tensor x = randn({1, 5, 32});
  NoGradGuard no_grad;
  EXPECT_EQ(a.forward(x).to_vector<float>(), b.forward(x).to_vector<float>());
}

TEST(NnBlocks, AttentionIsCausal) {
  // Changing a later position leaves the earlier outputs unchanged.
  manual_seed(4);
  GPT2Block block(16, 2, 32);
  NoGradGuard no_grad;
  Tensor x = randn({1, 4, 16});
  Tensor x2 = x.clone();
  x2.select(1, 3).fill_(5.0);
  Tensor y = block.forward(x), y2 = block.forward(x2);
  EXPECT_EQ(y.narrow(1, 0, 3).contiguous().to_vector<float>(), y2.narrow(1, 0, 3).contiguous().to_vector<float>());
  EXPECT_NE(y.select(1, 3).contiguous().to_vector<float>(), y2.select(1, 3).contiguous().to_vector<float>());
}

TEST(NnBlocks, GPT2BlockRejectsHeadsThatDoNotDivideWidth) {
  EXPECT_EQ(error_of([] { GPT2Block(30, 4, 64); }, ErrorKind::ValueError),
            "n_embd (30) must be a multiple of n_head (4)");
}

TEST(NnBlocks, AttentionRejectsInputOfWrongShape) {
  CausalSelfAttention attn(8, 2);
  auto flat_input = [&] { attn.forward(zeros({2, 8})); };
  EXPECT_EQ(error_of(flat_input, ErrorKind::ValueError), "CausalSelfAttention: expected input [B, T, 8], got [2, 8]");
}
