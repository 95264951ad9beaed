// ember/nn/blocks.h — the model blocks of the benchmark workloads (docs/workloads.md
// W4–W6) as modules whose parameter names are PyTorch's, key for key, so checkpoints move
// between the two: an MLP block, a GPT-2 block (nanoGPT's names) and ResNet's BasicBlock
// (torchvision's names). bench/torch_blocks.py holds the same modules in PyTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ember/nn/modules.h"

namespace ember::nn {

/// W4: x + fc2(gelu(fc1(ln(x)))), exact (erf) GELU as nn.GELU(). Children ln, fc1, fc2.
class MLPBlock : public UnaryModule {
 public:
  explicit MLPBlock(int64_t d = 1024, int64_t hidden = 4096);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "MLPBlock"; }
  std::shared_ptr<LayerNorm> ln;
  std::shared_ptr<Linear> fc1, fc2;
};

/// nanoGPT's CausalSelfAttention without the fused kernel: c_attn (d -> 3d) splits into
/// q, k, v of n_head heads; softmax(q kᵀ / √head_dim, upper triangle masked to -inf) v;
/// c_proj (d -> d). Input [B, T, d]. The causal mask is rebuilt per sequence length and is
/// not a buffer, so it is not in the state dict.
class CausalSelfAttention : public UnaryModule {
 public:
  CausalSelfAttention(int64_t n_embd, int64_t n_head);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "CausalSelfAttention"; }
  std::shared_ptr<Linear> c_attn, c_proj;
  Attribute<int64_t> n_embd, n_head;

 private:
  Tensor causal_mask(const SymInt& T, Device device);
  Tensor mask_;  // [T, T] bool, true above the diagonal; cached for the last T seen
};

/// nanoGPT's MLP: c_proj(gelu(c_fc(x))) with GPT-2's tanh-approximated GELU.
class GPT2MLP : public UnaryModule {
 public:
  GPT2MLP(int64_t n_embd, int64_t hidden);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "MLP"; }
  std::shared_ptr<Linear> c_fc;
  std::shared_ptr<GELU> gelu;
  std::shared_ptr<Linear> c_proj;
};

/// W5: pre-LN GPT-2 block, x + attn(ln_1(x)), then + mlp(ln_2(x)); nanoGPT's Block with
/// dropout 0 (no dropout modules). Children ln_1, attn, ln_2, mlp.
class GPT2Block : public UnaryModule {
 public:
  explicit GPT2Block(int64_t n_embd = 768, int64_t n_head = 12, int64_t hidden = 3072);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Block"; }
  std::shared_ptr<LayerNorm> ln_1;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<LayerNorm> ln_2;
  std::shared_ptr<GPT2MLP> mlp;
};

/// W6: torchvision's BasicBlock with stride 1 and no downsample (so the shortcut is the
/// identity and channels in == out): relu(bn2(conv2(relu(bn1(conv1(x))))) + x), 3x3
/// convolutions with padding 1 and no bias. Children conv1, bn1, relu, conv2, bn2.
class BasicBlock : public UnaryModule {
 public:
  explicit BasicBlock(int64_t channels = 64);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "BasicBlock"; }
  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<ReLU> relu;
  std::shared_ptr<Conv2d> conv2;
  std::shared_ptr<BatchNorm2d> bn2;
};

}  // namespace ember::nn
