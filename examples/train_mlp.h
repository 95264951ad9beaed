// examples/train_mlp.h — a short training run: a two-layer MLP learns y = sin(3x) + x²/2
// on generated data with AdamW. Used by the demo and by a test that checks the loss
// falls and that a fixed seed gives the same losses twice.
#pragma once

#include <memory>
#include <vector>

#include "ember/ember.h"

namespace ember::examples {

/// Trains for `steps` full-batch steps from `seed`; returns the loss after each step.
inline std::vector<double> train_mlp(uint64_t seed, int steps) {
  manual_seed(seed);
  Tensor x = rand({256, 1}) * 4 - 2;  // inputs in [-2, 2)
  Tensor y = sin(x * 3) + x * x * 0.5;
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(1, 64));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(64, 1));
  optim::AdamW opt(model->parameters(), {.lr = 1e-2, .weight_decay = 0.0});
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    Tensor diff = model->forward(x) - y;
    Tensor loss = mean(diff * diff);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace ember::examples
