// The torch.nn layers of ember/nn/modules.h: parameters registered under PyTorch's names,
// PyTorch's default initialization, forwards over the ATen ops.
#include "ember/nn/modules.h"

#include <cmath>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/random.h"

namespace ember::nn {

namespace {

// uniform(-bound, bound) from the default generator.
Tensor uniform(IntArrayRef sizes, double bound) { return rand(sizes) * (2 * bound) - bound; }

// kaiming_uniform_(a=sqrt(5)) reduces to uniform(±1/sqrt(fan_in)), as does the bias init.
double fan_in_bound(int64_t fan_in) { return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0; }

}  // namespace

Linear::Linear(int64_t in_features_, int64_t out_features_, bool bias)
    : in_features(this, "in_features", in_features_), out_features(this, "out_features", out_features_) {
  double bound = fan_in_bound(in_features);
  register_parameter("weight", uniform({out_features, in_features}, bound));
  if (bias) register_parameter("bias", uniform({out_features}, bound));
}

Tensor Linear::bias() const {
  for (auto& [n, t] : named_parameters(false))
    if (n == "bias") return t;
  return Tensor();
}

Tensor Linear::forward(const Tensor& input) {
  Tensor b = bias();
  return linear(input, weight(), b.defined() ? std::optional<Tensor>(b) : std::nullopt);
}

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape_, double eps_, bool elementwise_affine_)
    : normalized_shape(this, "normalized_shape", std::move(normalized_shape_)),
      eps(this, "eps", eps_),
      elementwise_affine(this, "elementwise_affine", elementwise_affine_) {
  if (elementwise_affine) {
    register_parameter("weight", ones(normalized_shape.get()));
    register_parameter("bias", zeros(normalized_shape.get()));
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  if (!elementwise_affine) return layer_norm(input, normalized_shape.get(), std::nullopt, std::nullopt, eps);
  return layer_norm(input, normalized_shape.get(), tensor("weight"), tensor("bias"), eps);
}

Embedding::Embedding(int64_t num_embeddings_, int64_t embedding_dim_, std::optional<int64_t> padding_idx_)
    : num_embeddings(this, "num_embeddings", num_embeddings_), embedding_dim(this, "embedding_dim", embedding_dim_) {
  if (padding_idx_) {
    int64_t p = *padding_idx_;
    EMBER_CHECK(p < num_embeddings && p >= -num_embeddings) << "Padding_idx must be within num_embeddings";
    padding_idx = p < 0 ? p + num_embeddings : p;
  }
  Tensor w = randn({num_embeddings, embedding_dim});
  if (padding_idx >= 0) w.select(0, static_cast<int64_t>(padding_idx)).fill_(0);
  register_parameter("weight", w);
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight(), indices, padding_idx); }

Tensor ReLU::forward(const Tensor& input) { return relu(input); }

GELU::GELU(std::string approximate_) : approximate(this, "approximate", std::move(approximate_)) {
  EMBER_CHECK_VALUE(approximate.get() == "none" || approximate.get() == "tanh")
      << "approximate argument must be either none or tanh.";
}

Tensor GELU::forward(const Tensor& input) { return gelu(input, approximate); }

Tensor SiLU::forward(const Tensor& input) { return silu(input); }

Dropout::Dropout(double p_) : p(this, "p", p_) {
  EMBER_CHECK_VALUE(p >= 0 && p <= 1) << "dropout probability has to be between 0 and 1, but got " << p;
}

Tensor Dropout::forward(const Tensor& input) {
  if (!is_training() || p == 0) return input;
  return std::get<0>(native_dropout(input, p, true));
}

Sequential::Sequential(std::vector<std::shared_ptr<UnaryModule>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<UnaryModule> module) {
  register_module(std::to_string(layers_.size()), module);
  layers_.push_back(std::move(module));
  length_ = static_cast<int64_t>(layers_.size());
}

std::shared_ptr<UnaryModule> Sequential::operator[](size_t i) const {
  EMBER_CHECK_INDEX(i < size()) << "index " << i << " is out of range";
  return layers_[i];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  (void)length_.get();  // the structure this forward ran through is part of a trace's guards
  for (auto& m : layers_) x = m->forward(x);
  return x;
}

ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
  length_ = static_cast<int64_t>(items_.size());
}

std::shared_ptr<Module> ModuleList::operator[](size_t i) const {
  EMBER_CHECK_INDEX(i < size()) << "index " << i << " is out of range";
  return items_[i];
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
               std::vector<int64_t> stride_, std::vector<int64_t> padding_, std::vector<int64_t> dilation_,
               int64_t groups_, bool bias)
    : stride(this, "stride", std::move(stride_)),
      padding(this, "padding", std::move(padding_)),
      dilation(this, "dilation", std::move(dilation_)),
      groups(this, "groups", groups_) {
  EMBER_CHECK_VALUE(groups > 0) << "groups must be a positive integer";
  EMBER_CHECK_VALUE(in_channels % groups == 0) << "in_channels must be divisible by groups";
  EMBER_CHECK_VALUE(out_channels % groups == 0) << "out_channels must be divisible by groups";
  if (kernel_size.size() == 1) kernel_size.push_back(kernel_size[0]);
  EMBER_CHECK_VALUE(kernel_size.size() == 2) << "Conv2d: kernel_size must have 1 or 2 values";
  int64_t fan_in = in_channels / groups * kernel_size[0] * kernel_size[1];
  double bound = fan_in_bound(fan_in);
  register_parameter("weight", uniform({out_channels, in_channels / groups, kernel_size[0], kernel_size[1]}, bound));
  if (bias) register_parameter("bias", uniform({out_channels}, bound));
}

Tensor Conv2d::forward(const Tensor& input) {
  std::optional<Tensor> b;
  for (auto& [n, t] : named_parameters(false))
    if (n == "bias") b = t;
  return conv2d(input, weight(), b, stride.get(), padding.get(), dilation.get(), groups);
}

BatchNorm2d::BatchNorm2d(int64_t num_features_, double eps_, double momentum_, bool affine_, bool track_running_stats_)
    : num_features(this, "num_features", num_features_),
      eps(this, "eps", eps_),
      momentum(this, "momentum", momentum_),
      affine(this, "affine", affine_),
      track_running_stats(this, "track_running_stats", track_running_stats_) {
  if (affine) {
    register_parameter("weight", ones({num_features}));
    register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    register_buffer("running_mean", zeros({num_features}));
    register_buffer("running_var", ones({num_features}));
    register_buffer("num_batches_tracked", zeros({}, TensorOptions().dtype(kLong)));
  }
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  EMBER_CHECK_VALUE(input.dim() == 4) << "expected 4D input (got " << input.dim() << "D input)";
  std::optional<Tensor> w, b, rm, rv;
  if (affine) {
    w = tensor("weight");
    b = tensor("bias");
  }
  if (track_running_stats) {
    rm = tensor("running_mean");
    rv = tensor("running_var");
  }
  if (is_training() && track_running_stats) {
    NoGradGuard no_grad;
    Tensor& n = tensor("num_batches_tracked");
    n.copy_(n + 1);
  }
  // Eval without running statistics normalizes by the batch's own, as PyTorch does.
  bool use_batch_stats = is_training() || !track_running_stats;
  return batch_norm(input, w, b, rm, rv, use_batch_stats, momentum, eps);
}

}  // namespace ember::nn
