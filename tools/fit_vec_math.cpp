// tools/fit_vec_math.cpp — fits the polynomials of the float32 math in kernels/cpu/vec.h:
// near-minimax coefficients (Lawson's iteratively reweighted least squares on 4000
// Chebyshev nodes, in long double), printed as float literals with the largest weighted
// error. See Note [vectorized math] (docs/notes/vec_math.md) for which fit each function
// uses.
//
// usage: fit_vec_math exp|tanh|erf_small|erf_large|log [coefficients]
//   exp        P(r) = (e^r - 1 - r) / r^2 on |r| <= ln2/2, error relative to e^r
//   tanh       Q(u) = (tanh(x)/x - 1) / u, u = x^2, |x| < 0.5493, relative to tanh(x)
//   erf_small  P(u) = erf(x)/x, u = x^2, |x| < 1, relative
//   erf_large  G(t) = erfc(x) e^(x^2), t = 1/x, 1 <= x <= 3.92, relative
//   log        R(v) = (2 atanh(s) - 2s) / s^3, v = s^2, |s| <= 0.1716, relative to log
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using LD = long double;
using Fn = std::function<LD(LD)>;

/// Coefficients c[k] of sum c[k] t^k (k < n) minimizing max |w(t) (f(t) - sum)| on [a, b].
std::vector<LD> fit(const Fn& f, const Fn& w, LD a, LD b, int n, LD* max_err) {
  constexpr int kNodes = 4000;
  std::vector<LD> t(kNodes), y(kNodes), wt(kNodes), lawson(kNodes, 1.0L / kNodes), c(n);
  for (int i = 0; i < kNodes; ++i) {
    t[i] = (a + b) / 2 + (b - a) / 2 * cosl(M_PIl * (i + 0.5L) / kNodes);
    y[i] = f(t[i]);
    wt[i] = w(t[i]);
  }
  for (int iter = 0; iter < 400; ++iter) {
    // Weighted least squares through the normal equations, Gaussian elimination.
    std::vector<LD> m(n * n, 0), rhs(n, 0), phi(n);
    for (int i = 0; i < kNodes; ++i) {
      const LD s = lawson[i] * wt[i] * wt[i];
      for (int k = 0; k < n; ++k) phi[k] = powl(t[i], k);
      for (int k = 0; k < n; ++k) {
        rhs[k] += s * phi[k] * y[i];
        for (int j = 0; j < n; ++j) m[k * n + j] += s * phi[k] * phi[j];
      }
    }
    for (int k = 0; k < n; ++k) {
      int p = k;
      for (int i = k + 1; i < n; ++i)
        if (fabsl(m[i * n + k]) > fabsl(m[p * n + k])) p = i;
      for (int j = 0; j < n; ++j) std::swap(m[k * n + j], m[p * n + j]);
      std::swap(rhs[k], rhs[p]);
      for (int i = k + 1; i < n; ++i) {
        const LD q = m[i * n + k] / m[k * n + k];
        for (int j = k; j < n; ++j) m[i * n + j] -= q * m[k * n + j];
        rhs[i] -= q * rhs[k];
      }
    }
    for (int k = n - 1; k >= 0; --k) {
      LD s = rhs[k];
      for (int j = k + 1; j < n; ++j) s -= m[k * n + j] * c[j];
      c[k] = s / m[k * n + k];
    }
    // Lawson's step: weight each node by its error, so the largest errors even out.
    LD total = 0, worst = 0;
    for (int i = 0; i < kNodes; ++i) {
      LD v = 0;
      for (int k = n - 1; k >= 0; --k) v = v * t[i] + c[k];
      const LD e = fabsl(wt[i] * (y[i] - v));
      worst = std::max(worst, e);
      lawson[i] *= e;
      total += lawson[i];
    }
    for (LD& l : lawson) l /= total;
    *max_err = worst;
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s exp|tanh|erf_small|erf_large|log [coefficients]\n", argv[0]);
    return 2;
  }
  const std::string which = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 0;
  const LD root_pi = sqrtl(M_PIl);
  Fn f, w;
  LD a = 0, b = 0;
  int dflt = 0;
  if (which == "exp") {
    f = [](LD r) { return fabsl(r) < 1e-6L ? 0.5L + r / 6 : (expl(r) - 1 - r) / (r * r); };
    w = [](LD r) { return r * r / expl(r); };
    a = -logl(2) / 2, b = logl(2) / 2, dflt = 4;
  } else if (which == "tanh") {
    f = [](LD u) { const LD x = sqrtl(u); return u < 1e-12L ? -1.0L / 3 : (tanhl(x) / x - 1) / u; };
    w = [](LD u) { const LD x = sqrtl(u); return u < 1e-12L ? 0.0L : u * x / tanhl(x); };
    b = 0.5493L * 0.5493L, dflt = 4;
  } else if (which == "erf_small") {
    f = [root_pi](LD u) { const LD x = sqrtl(u); return u < 1e-14L ? 2 / root_pi : erfl(x) / x; };
    w = [f](LD u) { return 1 / f(u); };
    b = 1, dflt = 7;
  } else if (which == "erf_large") {
    f = [](LD t) { const LD x = 1 / t; return erfcl(x) * expl(x * x); };
    w = [f](LD t) { return 1 / f(t); };
    a = 1 / 3.92L, b = 1, dflt = 9;
  } else if (which == "log") {
    f = [](LD v) { const LD s = sqrtl(v); return v < 1e-14L ? 2.0L / 3 : (2 * atanhl(s) - 2 * s) / (s * s * s); };
    w = [](LD v) { return v; };
    b = 0.1716L * 0.1716L, dflt = 3;
  } else {
    std::fprintf(stderr, "unknown function '%s'\n", which.c_str());
    return 2;
  }
  LD err = 0;
  const std::vector<LD> c = fit(f, w, a, b, n > 0 ? n : dflt, &err);
  std::printf("%s: %zu coefficients, largest weighted error %.3Le\n", which.c_str(), c.size(), err);
  for (LD v : c) std::printf("  %.9ef\n", static_cast<double>(static_cast<float>(v)));
  return 0;
}
