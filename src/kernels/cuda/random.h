// kernels/cuda/random.h — the CUDA kernels of the random ops (rand, randn, bernoulli,
// native_dropout): the same Philox 4x32-10 counters and the same maps from words to
// numbers as the CPU kernels, because the kernel text includes kernels/cpu/philox.h itself
// (embedded in the library at build time). The ops reserve their counters from the default
// generator exactly as on the CPU and pass (seed, offset) here, so a seed gives the same
// bits on every device. See Note [random] (docs/notes/random.md).
#pragma once

#include <cstdint>
#include <string>

#include "ember/tensor.h"

namespace ember::kernels::cuda {

enum class RandomKind { Uniform, Normal, Bernoulli, Dropout };

/// One random kernel: `out` is the output dtype; `in` is the probabilities' dtype
/// (Bernoulli with a tensor p) or the input's (Dropout), absent otherwise.
struct RandomKernel {
  RandomKind kind = RandomKind::Uniform;
  ScalarType out = kFloat;
  bool has_in = false;
  ScalarType in = kFloat;
};

/// The text of kernels/cpu/philox.h, embedded at build time.
extern const char* const kEmbeddedPhiloxHeader;

/// "ember_rand_f32", "ember_bernoulli_f16_to_f16", "ember_dropout_bf16".
std::string kernel_symbol(const RandomKernel& k);
/// The whole translation unit: the pointwise prelude, philox.h and one extern "C" kernel
/// `(Out* out, bool* mask, const In* in, long long n, unsigned long long seed,
/// unsigned long long offset, double p0, double p1)` in which each thread takes counters.
std::string render_random(const RandomKernel& k);

/// Elements drawn from one counter: 2 for float64 uniforms and normals, else 4.
int64_t elements_per_counter(RandomKind kind, ScalarType out);

/// out (contiguous) filled with uniforms in [0, 1) or standard normals from counters
/// offset, offset + 1, … under seed.
void random_fill(RandomKind kind, const Tensor& out, uint64_t seed, uint64_t offset);
/// out[i] = (u_i < p_i) with p_i = p[i] (contiguous, out's sizes) or, when `p` is
/// undefined, `p_scalar`.
void bernoulli(const Tensor& out, const Tensor& p, double p_scalar, uint64_t seed, uint64_t offset);
/// mask[i] = (u_i < 1 - p); out[i] = (x[i] * mask[i]) * scale, each product rounded to x's
/// dtype. x, out and mask contiguous.
void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double keep, double scale, uint64_t seed,
             uint64_t offset);

}  // namespace ember::kernels::cuda
