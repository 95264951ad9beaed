// kernels/cpu/philox.h — Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", the generator of cuRAND/JAX/PyTorch CUDA) and the maps from its words to
// uniform and normal numbers. Self-contained so generated C++/CUDA code can include it and
// reproduce eager's random numbers bit for bit; see Note [random] in docs/notes/random.md.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define EMBER_PHILOX_HD __host__ __device__
#else
#define EMBER_PHILOX_HD
#endif

namespace ember::philox {

struct Words {
  uint32_t w[4];
};

EMBER_PHILOX_HD inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

/// The raw bijection: 10 rounds over a 128-bit counter with a 64-bit key.
EMBER_PHILOX_HD inline Words philox4x32_10(Words c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c.w[0], hi0, lo0);
    mulhilo(0xCD9E8D57u, c.w[2], hi1, lo1);
    c = Words{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
  }
  return c;
}

/// The four words of counter number `counter` under `seed`: counter = (counter, 0) as
/// 128 bits (low word first), key = seed (low word first).
EMBER_PHILOX_HD inline Words block(uint64_t seed, uint64_t counter) {
  return philox4x32_10(Words{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// A uniform in [0, 1) from the top `Digits` bits of one word (Digits <= 24: exact in float).
template <int Digits>
EMBER_PHILOX_HD inline float uniform_bits(uint32_t x) {
  return static_cast<float>(x >> (32 - Digits)) * (1.0f / static_cast<float>(1u << Digits));
}
/// A uniform float in [0, 1) with 24 random bits.
EMBER_PHILOX_HD inline float uniform_float(uint32_t x) { return uniform_bits<24>(x); }
/// A uniform double in [0, 1) with 53 random bits from two words (`hi` supplies the top 32).
EMBER_PHILOX_HD inline double uniform_double(uint32_t lo, uint32_t hi) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}
/// A uniform double in [0, 1) with 32 random bits (bernoulli and dropout draws).
EMBER_PHILOX_HD inline double uniform32(uint32_t x) { return static_cast<double>(x) * (1.0 / 4294967296.0); }

/// Box–Muller in double: two uniforms in [0, 1) to two independent standard normals.
EMBER_PHILOX_HD inline void box_muller(double u1, double u2, double& z0, double& z1) {
  const double r = std::sqrt(-2.0 * std::log(1.0 - u1));  // 1 - u1 is in (0, 1]
  const double theta = 6.283185307179586 * u2;
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}

}  // namespace ember::philox
