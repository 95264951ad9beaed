// ember/nn/modules.h — layers in the shape of torch.nn: the same parameter and buffer
// names, the same default initialization (drawn from Ember's default generator), and
// forwards that call the ATen ops of ember/ops. Configuration fields are nn::Attribute:
// a compiled function that reads one is guarded on its value (ember/nn/attribute.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

/// y = x @ weight.T + bias; weight [out_features, in_features].
class Linear : public UnaryModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "Linear"; }
  Tensor& weight() { return tensor("weight"); }
  /// Undefined when built without bias.
  Tensor bias() const;
  Attribute<int64_t> in_features, out_features;
};

class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "LayerNorm"; }
  Attribute<std::vector<int64_t>> normalized_shape;
  Attribute<double> eps;
  Attribute<bool> elementwise_affine;
};

/// Rows of weight [num_embeddings, embedding_dim] picked by integer indices.
class Embedding : public UnaryModule {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  std::string name() const override { return "Embedding"; }
  Tensor& weight() { return tensor("weight"); }
  Attribute<int64_t> num_embeddings, embedding_dim;
  /// Normalized to a non-negative row; -1 when none.
  Attribute<int64_t> padding_idx{this, "padding_idx", -1};
};

class ReLU : public UnaryModule {
 public:
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "ReLU"; }
};

class GELU : public UnaryModule {
 public:
  /// approximate: "none" or "tanh".
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "GELU"; }
  Attribute<std::string> approximate;
};

class SiLU : public UnaryModule {
 public:
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "SiLU"; }
};

/// Zeroes elements with probability p and scales the rest by 1/(1-p) in training;
/// the identity in eval.
class Dropout : public UnaryModule {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "Dropout"; }
  Attribute<double> p;
};

/// Children named "0", "1", … applied in order.
class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<UnaryModule>> modules);
  void push_back(std::shared_ptr<UnaryModule> module);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "Sequential"; }
  size_t size() const { return static_cast<size_t>(length_.get()); }
  std::shared_ptr<UnaryModule> operator[](size_t i) const;

 private:
  std::vector<std::shared_ptr<UnaryModule>> layers_;
  /// layers_.size(), read by forward: a layer added after a compiled call recompiles.
  Attribute<int64_t> length_{this, "len", 0};
};

/// Children named "0", "1", …; no forward of its own.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  std::string name() const override { return "ModuleList"; }
  size_t size() const { return static_cast<size_t>(length_.get()); }
  std::shared_ptr<Module> operator[](size_t i) const;
  auto begin() const {
    (void)length_.get();  // iterating reads the length
    return items_.begin();
  }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> items_;
  /// items_.size(), read by size(), begin() and [i]: an item added after a compiled call
  /// that iterated the list recompiles it.
  Attribute<int64_t> length_{this, "len", 0};
};

/// Square or rectangular 2-D convolution; weight [out, in/groups, kh, kw].
class Conv2d : public UnaryModule {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
         std::vector<int64_t> stride = {1, 1}, std::vector<int64_t> padding = {0, 0},
         std::vector<int64_t> dilation = {1, 1}, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "Conv2d"; }
  Tensor& weight() { return tensor("weight"); }
  Attribute<std::vector<int64_t>> stride, padding, dilation;
  Attribute<int64_t> groups;
};

/// Batch statistics in training (updating running_mean/var with `momentum`), running
/// statistics in eval.
class BatchNorm2d : public UnaryModule {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "BatchNorm2d"; }
  Attribute<int64_t> num_features;
  Attribute<double> eps, momentum;
  Attribute<bool> affine, track_running_stats;
};

}  // namespace ember::nn
