// kernels/cpu/philox.h — Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", the generator of cuRAND/JAX/PyTorch CUDA) and the maps from its words to
// uniform and normal numbers. Self-contained so that every device computes the same bits:
// the CPU kernels include it, and the CUDA kernels compile its very text (embedded in the
// library at build time, kernels/cuda/random_source.cpp) with NVRTC. See Note [random] in
// docs/notes/random.md, "One stream on every device".
//
// Bit-identical on every device: only IEEE operations that are correctly rounded everywhere
// (+ - * / sqrt, fma) are used; log and sin/cos are computed here rather than taken from a
// math library (glibc's and CUDA's differ in the last bits). Every product that feeds an
// addition is written as an explicit fma, so no compiler can contract it differently (GCC
// contracts a*b+c by default; NVRTC runs with --fmad=false).
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC compiles this text with no headers.
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

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

// --- portable double math (see the file's head) ------------------------------------

EMBER_PHILOX_HD inline double fma_(double a, double b, double c) {
#if defined(__CUDACC_RTC__)
  return ::fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
EMBER_PHILOX_HD inline double sqrt_(double x) {
#if defined(__CUDACC_RTC__)
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}
EMBER_PHILOX_HD inline uint64_t bits_of(double x) {
#if defined(__CUDACC_RTC__)
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
EMBER_PHILOX_HD inline double from_bits(uint64_t u) {
#if defined(__CUDACC_RTC__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// Natural log of a positive normal double (box_muller's 1 - u1 lies in [2^-53, 1]):
/// x = m 2^k with m in [sqrt(2)/2, sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1),
/// |s| < 0.172, by its series to s^23 (the next term is below 2^-58 of the sum).
EMBER_PHILOX_HD inline double log_(double x) {
  const uint64_t u = bits_of(x);
  int k = static_cast<int>((u >> 52) & 0x7ff) - 1023;
  double m = from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // [1, 2)
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++k;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double z = s * s;
  double p = 1.0 / 23;
  for (int j = 21; j >= 3; j -= 2) p = fma_(z, p, 1.0 / j);
  const double series = fma_(z, p, 1.0);  // atanh(s) / s
  const double log_m = (2.0 * s) * series;
  const double kd = static_cast<double>(k);
  // ln 2 split in two so that k * ln2_hi is exact.
  return fma_(kd, 6.93147180369123816490e-01, fma_(kd, 1.90821492927058770002e-10, log_m));
}

/// cos and sin of 2 pi t for t in [0, 1): the quadrant q and the remainder f in
/// [-1/2, 1/2) come exactly from 4t, then r = f pi/2 in [-pi/4, pi/4) goes through the
/// Taylor series of sin and cos to r^19 and r^20 (the next terms are below 2^-60).
EMBER_PHILOX_HD inline void cos_sin_turns(double t, double& c, double& s) {
  const double t4 = 4.0 * t;  // exact
  int q = static_cast<int>(t4);
  double f = t4 - q;  // exact
  if (f >= 0.5) {
    f -= 1.0;
    ++q;
  }
  const double r = f * 1.5707963267948966;
  const double z = r * r;
  // Horner in z = r^2 from the highest term: sin r = r + r z (-1/3! + z/5! - ... - z^8/19!),
  // cos r = 1 + z (-1/2! + z/4! - ... + z^9/20!).
  const double sin_den[8] = {355687428096000.0, 1307674368000.0, 6227020800.0, 39916800.0,
                             362880.0,          5040.0,          120.0,        6.0};  // 17!, 15!, ..., 3!
  const double cos_den[9] = {6402373705728000.0, 20922789888000.0, 87178291200.0, 479001600.0, 3628800.0,
                             40320.0,            720.0,            24.0,          2.0};  // 18!, 16!, ..., 2!
  double ps = -1.0 / 121645100408832000.0;  // -1/19!
  for (int j = 0; j < 8; ++j) ps = fma_(z, ps, (j % 2 == 0 ? 1.0 : -1.0) / sin_den[j]);
  double pc = 1.0 / 2432902008176640000.0;  // 1/20!
  for (int j = 0; j < 9; ++j) pc = fma_(z, pc, (j % 2 == 0 ? -1.0 : 1.0) / cos_den[j]);
  const double sin_r = fma_(r * z, ps, r);
  const double cos_r = fma_(z, pc, 1.0);
  switch (q & 3) {
    case 0: c = cos_r; s = sin_r; break;
    case 1: c = -sin_r; s = cos_r; break;
    case 2: c = -cos_r; s = -sin_r; break;
    default: c = sin_r; s = -cos_r; break;
  }
}

/// Box–Muller in double: two uniforms in [0, 1) to two independent standard normals,
/// r = sqrt(-2 log(1 - u1)), z0 = r cos(2 pi u2), z1 = r sin(2 pi u2).
EMBER_PHILOX_HD inline void box_muller(double u1, double u2, double& z0, double& z1) {
  const double r = sqrt_(-2.0 * log_(1.0 - u1));  // 1 - u1 is in (0, 1]
  double c, s;
  cos_sin_turns(u2, c, s);
  z0 = r * c;
  z1 = r * s;
}

}  // namespace ember::philox
