// The workload blocks of ember/nn/blocks.h: children registered in the order PyTorch's
// __init__ assigns them (so named_parameters and state_dict keys match key for key), and
// forwards written with the same ops as bench/torch_blocks.py.
#include "ember/nn/blocks.h"

#include <cmath>
#include <limits>

#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/shape.h"
#include "ember/ops/view.h"

namespace ember::nn {

MLPBlock::MLPBlock(int64_t d, int64_t hidden) {
  ln = register_module("ln", std::make_shared<LayerNorm>(std::vector<int64_t>{d}));
  fc1 = register_module("fc1", std::make_shared<Linear>(d, hidden));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, d));
}

Tensor MLPBlock::forward(const Tensor& x) { return x + fc2->forward(gelu(fc1->forward(ln->forward(x)))); }

CausalSelfAttention::CausalSelfAttention(int64_t n_embd_, int64_t n_head_)
    : n_embd(this, "n_embd", n_embd_), n_head(this, "n_head", n_head_) {
  EMBER_CHECK_VALUE(n_head > 0 && n_embd % n_head == 0)
      << "n_embd (" << n_embd << ") must be a multiple of n_head (" << n_head << ")";
  c_attn = register_module("c_attn", std::make_shared<Linear>(n_embd, 3 * n_embd));
  c_proj = register_module("c_proj", std::make_shared<Linear>(n_embd, n_embd));
}

Tensor CausalSelfAttention::causal_mask(const SymInt& T, Device device) {
  // A symbolic length (a trace with dynamic shapes) builds the mask in the graph, over T, on
  // the attention's device as triu(ones, 1)'s comparison of positions (j > i): a compiled
  // graph for a GPU then holds no host value it would copy at every call (a host value of
  // a symbolic size cannot be folded into a constant), and the comparison fuses into its
  // reader.
  if (T.is_symbolic()) {
    const Tensor position = arange(T, TensorOptions(kInt64).device(device));
    return position.unsqueeze(0) > position.unsqueeze(1);
  }
  // Made on the host and copied: the mask is built once per length and device.
  const int64_t t = T.hint();
  if (!mask_.defined() || mask_.size(0) != t || mask_.device() != device) mask_ = triu(ones({t, t}, kBool), 1).to(device);
  return mask_;
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  EMBER_CHECK_VALUE(x.dim() == 3 && x.size(2) == n_embd)
      << "CausalSelfAttention: expected input [B, T, " << n_embd << "], got " << x.sizes();
  // B and T read without specializing them: a trace with dynamic shapes keeps them symbolic
  // in the views' size lists and the mask (Note [dynamic shapes]).
  const SymInt B = sym_size(x, 0), T = sym_size(x, 1);
  const int64_t d = n_embd, nh = n_head, hs = d / nh;
  auto qkv = split(c_attn->forward(x), d, 2);
  // [B, T, d] -> [B, n_head, T, hs]
  auto heads = [&](const Tensor& t) { return t.view({B, T, nh, hs}).transpose(1, 2); };
  Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hs)));
  att = softmax(masked_fill(att, causal_mask(T, x.device()), -std::numeric_limits<double>::infinity()), -1);
  Tensor y = matmul(att, v).transpose(1, 2).contiguous().view({B, T, d});
  return c_proj->forward(y);
}

GPT2MLP::GPT2MLP(int64_t n_embd, int64_t hidden) {
  c_fc = register_module("c_fc", std::make_shared<Linear>(n_embd, hidden));
  gelu = register_module("gelu", std::make_shared<GELU>("tanh"));
  c_proj = register_module("c_proj", std::make_shared<Linear>(hidden, n_embd));
}

Tensor GPT2MLP::forward(const Tensor& x) { return c_proj->forward(gelu->forward(c_fc->forward(x))); }

GPT2Block::GPT2Block(int64_t n_embd, int64_t n_head, int64_t hidden) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(std::vector<int64_t>{n_embd}));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(n_embd, n_head));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(std::vector<int64_t>{n_embd}));
  mlp = register_module("mlp", std::make_shared<GPT2MLP>(n_embd, hidden));
}

Tensor GPT2Block::forward(const Tensor& x) {
  Tensor h = x + attn->forward(ln_1->forward(x));
  return h + mlp->forward(ln_2->forward(h));
}

BasicBlock::BasicBlock(int64_t channels) {
  const std::vector<int64_t> k3 = {3, 3}, s1 = {1, 1}, p1 = {1, 1}, d1 = {1, 1};
  conv1 = register_module("conv1", std::make_shared<Conv2d>(channels, channels, k3, s1, p1, d1, 1, false));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(channels));
  relu = register_module("relu", std::make_shared<ReLU>());
  conv2 = register_module("conv2", std::make_shared<Conv2d>(channels, channels, k3, s1, p1, d1, 1, false));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(channels));
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = relu->forward(bn1->forward(conv1->forward(x)));
  out = bn2->forward(conv2->forward(out));
  return relu->forward(out + x);
}

}  // namespace ember::nn
