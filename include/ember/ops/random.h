// ember/ops/random.h — random numbers from a counter-based generator (Philox 4x32-10).
//
// The generator's state is (seed, offset). Each random op reads the counters
// [offset, offset + n) and advances offset, so a compiled kernel given the same seed and
// offset reproduces eager's numbers exactly. See Note [random] in docs/notes/random.md.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

/// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);
/// The default generator's (seed, offset).
std::pair<uint64_t, uint64_t> generator_state();
void set_generator_state(uint64_t seed, uint64_t offset);

Tensor rand(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor randn(IntArrayRef size, TensorOptions options = {}, Loc loc = Loc::current());
Tensor rand_like(const Tensor& self, Loc loc = Loc::current());
Tensor randn_like(const Tensor& self, Loc loc = Loc::current());
/// Each element is 1 with probability self[i] (or p).
Tensor bernoulli(const Tensor& self, Loc loc = Loc::current());
Tensor bernoulli(const Tensor& self, double p, Loc loc = Loc::current());
/// (output, mask): output = input * mask / (1 - p) in training, input otherwise.
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, std::optional<bool> train,
                                          Loc loc = Loc::current());
Tensor dropout(const Tensor& input, double p, bool train, Loc loc = Loc::current());
/// A random permutation of 0 … n-1 (int64 unless options say otherwise). The values differ
/// from PyTorch's for the same seed, as every random op's do (Note [random]).
Tensor randperm(int64_t n, TensorOptions options = {}, Loc loc = Loc::current());

}  // namespace ember
