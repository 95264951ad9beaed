// kernels/cpu/norm.cpp — see norm.h. Row sums run in float vectors over chunks of 256
// elements whose partial sums are added in double, so long rows stay accurate without
// giving up SIMD width; the mean is subtracted before squaring (two passes over a
// cached row) rather than using E[x^2] - E[x]^2, which cancels badly. Batch norm's
// per-channel statistics are sums in double over independent lanes (wide_sum.h).
#include "kernels/cpu/norm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/loops.h"
#include "kernels/cpu/vec.h"
#include "kernels/cpu/wide_sum.h"

// The lambdas below pass and return wide_sum.h's 64-byte WideVec by value: see its note on
// GCC's -Wpsabi (one ABI within one build).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ember::kernels::cpu {
namespace {

using vec::lane_sum;
using vec::Vectorized;


/// Sum of f(x[i]) over a row, f applied to vectors and scalars alike.
template <typename T, typename F>
double row_sum(const T* x, int64_t n, F f) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  constexpr int64_t kChunk = 256;
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    V a0(T(0)), a1(T(0));
    int64_t i = c0;
    for (; i + 2 * W <= c1; i += 2 * W) {
      a0 = a0 + f(V::load(x + i));
      a1 = a1 + f(V::load(x + i + W));
    }
    for (; i + W <= c1; i += W) a0 = a0 + f(V::load(x + i));
    T s = lane_sum(a0 + a1);
    for (; i < c1; ++i) s += f(x[i]);
    total += static_cast<double>(s);
  }
  return total;
}

/// One row (float or double); gamma/beta may be null.
template <typename T>
void layer_norm_row(const T* x, T* y, int64_t n, const T* gamma, const T* beta, double eps, T& mean_out,
                    T& rstd_out) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  if (n == 0) {
    mean_out = 0;
    rstd_out = std::numeric_limits<T>::quiet_NaN();
    return;
  }
  const T mean = static_cast<T>(row_sum(x, n, [](auto v) { return v; }) / static_cast<double>(n));
  const V vmean(mean);
  const double var = row_sum(x, n, [&](auto v) {
                       auto d = v - decltype(v)(mean);
                       return d * d;
                     }) /
                     static_cast<double>(n);
  const T rstd = static_cast<T>(1.0 / std::sqrt(std::max(var, 0.0) + eps));
  mean_out = mean;
  rstd_out = rstd;
  // ATen's form: (x * rstd + (-rstd * mean)) * gamma + beta.
  const T scale = rstd, bias = -rstd * mean;
  const V vs(scale), vb(bias);
  int64_t i = 0;
  if (gamma && beta) {
    for (; i + W <= n; i += W) ((V::load(x + i) * vs + vb) * V::load(gamma + i) + V::load(beta + i)).store(y + i);
    for (; i < n; ++i) y[i] = (x[i] * scale + bias) * gamma[i] + beta[i];
  } else if (gamma) {
    for (; i + W <= n; i += W) ((V::load(x + i) * vs + vb) * V::load(gamma + i)).store(y + i);
    for (; i < n; ++i) y[i] = (x[i] * scale + bias) * gamma[i];
  } else if (beta) {
    for (; i + W <= n; i += W) ((V::load(x + i) * vs + vb) + V::load(beta + i)).store(y + i);
    for (; i < n; ++i) y[i] = (x[i] * scale + bias) + beta[i];
  } else {
    for (; i + W <= n; i += W) (V::load(x + i) * vs + vb).store(y + i);
    for (; i < n; ++i) y[i] = x[i] * scale + bias;
  }
}

template <typename T>
void layer_norm_native(const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t M, int64_t N, double eps,
                       Tensor& out, Tensor& mean, Tensor& rstd) {
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* g = gamma.defined() ? gamma.data_ptr<T>() : nullptr;
  const T* b = beta.defined() ? beta.data_ptr<T>() : nullptr;
  T* mp = mean.data_ptr<T>();
  T* rp = rstd.data_ptr<T>();
  const bool big = M * N > kGrainSize && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t r = 0; r < M; ++r) layer_norm_row(x + r * N, y + r * N, N, g, b, eps, mp[r], rp[r]);
}

/// Half / bfloat16: rows and parameters widened to float.
template <typename T>
void layer_norm_reduced(const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t M, int64_t N, double eps,
                        Tensor& out, Tensor& mean, Tensor& rstd) {
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  std::vector<float> g, b;
  if (gamma.defined()) {
    const T* p = gamma.data_ptr<T>();
    g.assign(p, p + N);
  }
  if (beta.defined()) {
    const T* p = beta.data_ptr<T>();
    b.assign(p, p + N);
  }
  T* mp = mean.data_ptr<T>();
  T* rp = rstd.data_ptr<T>();
  const bool big = M * N > kGrainSize && !omp_in_parallel();
#pragma omp parallel if (big)
  {
    std::vector<float> xi(static_cast<size_t>(N)), yi(static_cast<size_t>(N));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < M; ++r) {
      for (int64_t i = 0; i < N; ++i) xi[i] = static_cast<float>(x[r * N + i]);
      float m, s;
      layer_norm_row<float>(xi.data(), yi.data(), N, g.empty() ? nullptr : g.data(), b.empty() ? nullptr : b.data(),
                            eps, m, s);
      for (int64_t i = 0; i < N; ++i) y[r * N + i] = T(yi[i]);
      mp[r] = T(m);
      rp[r] = T(s);
    }
  }
}

// --- batch norm ------------------------------------------------------------------------

/// A 1-D parameter read and written as P with its own stride; absent reads as `fallback`.
template <typename P>
struct Param {
  P* data = nullptr;
  int64_t stride = 0;
  explicit Param(const Tensor& t) {
    if (t.defined()) {
      data = t.data_ptr<P>();
      stride = t.stride(0);
    }
  }
  opmath_t<P> get(int64_t c, double fallback) const {
    return data ? static_cast<opmath_t<P>>(data[c * stride]) : static_cast<opmath_t<P>>(fallback);
  }
  void set(int64_t c, double v) const { data[c * stride] = static_cast<P>(static_cast<opmath_t<P>>(v)); }
};

/// The running statistics' update of channel c from its batch mean and its sum of squared
/// deviations over `count` elements (the variance unbiased), in double as ATen's CPU kernel.
/// An empty batch carries no statistics: the running ones stay as they are.
template <typename P>
void update_running(const Param<P>& rm, const Param<P>& rv, int64_t c, double dmean, double var_sum, int64_t count,
                    double momentum) {
  if (count > 0 && rm.data) rm.set(c, momentum * dmean + (1 - momentum) * static_cast<double>(rm.get(c, 0)));
  if (count > 0 && rv.data) {
    const double unbiased = var_sum / static_cast<double>(count - 1);
    rv.set(c, momentum * unbiased + (1 - momentum) * static_cast<double>(rv.get(c, 0)));
  }
}

/// The parameters and statistics of one batch norm call, per channel.
template <typename P>
struct BatchNormChannels {
  Param<P> w, b, rm, rv, sm, si;
  bool training;
  double momentum, eps;
  BatchNormChannels(const Tensor& weight, const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                    bool train, double mom, double epsilon, const Tensor& save_mean, const Tensor& save_invstd)
      : w(weight), b(bias), rm(running_mean), rv(running_var), sm(train ? save_mean : Tensor()),
        si(train ? save_invstd : Tensor()), training(train), momentum(mom), eps(epsilon) {}

  /// Channel c's affine map, y = x * alpha + beta: in training from its batch statistics
  /// (the mean and the sum of squared deviations over `count` values), which it saves and
  /// folds into the running stats; in eval from the running stats.
  std::pair<opmath_t<P>, opmath_t<P>> affine(int64_t c, double dmean, double var_sum, int64_t count) const {
    opmath_t<P> mean, invstd;
    if (training) {
      const double dinvstd = count > 0 ? 1.0 / std::sqrt(var_sum / static_cast<double>(count) + eps) : 0.0;
      sm.set(c, dmean);
      si.set(c, dinvstd);
      mean = sm.get(c, 0);
      invstd = si.get(c, 0);
      update_running(rm, rv, c, dmean, var_sum, count, momentum);
    } else {
      mean = rm.get(c, 0);
      invstd = static_cast<opmath_t<P>>(1.0 / std::sqrt(static_cast<double>(rv.get(c, 0)) + eps));
    }
    const opmath_t<P> alpha = invstd * w.get(c, 1);
    return {alpha, b.get(c, 0) - mean * alpha};
  }
};

template <typename T, typename P>
void batch_norm_impl(const Tensor& in, int64_t N, int64_t C, int64_t S, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, bool training, double momentum,
                     double eps, Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const BatchNormChannels<P> bn(weight, bias, running_mean, running_var, training, momentum, eps, save_mean,
                                save_invstd);
  const int64_t count = N * S;
  const bool big = count * C > kGrainSize && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    double dmean = 0, var_sum = 0;
    if (training) {
      WideSums<1> sums, squares;
      for (int64_t n = 0; n < N; ++n) {
        const T* p = x + (n * C + c) * S;
        sums.add(S, [p](int64_t s, double(&t)[1]) { t[0] = static_cast<double>(p[s]); });
      }
      dmean = count > 0 ? sums.total(0) / static_cast<double>(count) : 0.0;
      for (int64_t n = 0; n < N; ++n) {
        const T* p = x + (n * C + c) * S;
        squares.add(S, [p, dmean](int64_t s, double(&t)[1]) {
          const double d = static_cast<double>(p[s]) - dmean;
          t[0] = d * d;
        });
      }
      var_sum = squares.total(0);
    }
    const auto [alpha, beta] = bn.affine(c, dmean, var_sum, count);
    using math_t = opmath_t<T>;
    const math_t ma = static_cast<math_t>(alpha), mb = static_cast<math_t>(beta);
    for (int64_t n = 0; n < N; ++n) {
      const T* p = x + (n * C + c) * S;
      T* q = y + (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s) q[s] = static_cast<T>(static_cast<math_t>(p[s]) * ma + mb);
    }
  }
}

/// batch_norm_impl over NHWC memory: M = N × H × W rows of C channels. The statistics
/// are channel_sums (wide_sum.h: rows of contiguous channels, no strided pass per
/// channel), two passes as batch_norm_impl's (the mean, then the squared deviations), and
/// the affine map one pass over the rows.
template <typename T, typename P>
void batch_norm_rows_impl(const Tensor& in, int64_t M, int64_t C, const Tensor& weight, const Tensor& bias,
                          const Tensor& running_mean, const Tensor& running_var, bool training, double momentum,
                          double eps, Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  using math_t = opmath_t<T>;
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const BatchNormChannels<P> bn(weight, bias, running_mean, running_var, training, momentum, eps, save_mean,
                                save_invstd);
  const bool big = M * C > kGrainSize && !omp_in_parallel();
  std::vector<double> dmean(static_cast<size_t>(C)), var_sum;
  if (training) {
    const std::vector<double> sums =
        channel_sums<1>(M, C, big, [x, C](int64_t m, int64_t c, double(&t)[1]) { t[0] = static_cast<double>(x[m * C + c]); });
    for (int64_t c = 0; c < C; ++c) dmean[c] = M > 0 ? sums[c] / static_cast<double>(M) : 0.0;
    var_sum = channel_sums<1>(M, C, big, [x, C, &dmean](int64_t m, int64_t c, double(&t)[1]) {
      const double d = static_cast<double>(x[m * C + c]) - dmean[c];
      t[0] = d * d;
    });
  }
  std::vector<math_t> ma(static_cast<size_t>(C)), mb(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const auto [alpha, beta] = bn.affine(c, dmean[c], training ? var_sum[c] : 0.0, M);
    ma[c] = static_cast<math_t>(alpha);
    mb[c] = static_cast<math_t>(beta);
  }
#pragma omp parallel for if (big) schedule(static)
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) y[m * C + c] = static_cast<T>(static_cast<math_t>(x[m * C + c]) * ma[c] + mb[c]);
}

/// One pass per channel: the sum of x (lane for lane the sum batch_norm_impl's mean comes
/// from, so the mean is the same bit for bit) and, shifted by the channel's first element
/// so that a mean far from 0 does not cancel, the sum and the sum of squares of x - shift;
/// the sum of squared deviations is then sum((x-K)^2) - sum(x-K)^2 / count, in double.
/// WideSums<3>::add over a run of batch_norm_update_stats's terms: v, v - shift,
/// (v - shift)^2 (float runs in explicit vectors).
template <typename T>
void add_stats_run(const T* p, int64_t n, double shift, WideSums<3>& sums) {
  auto term = [p, shift](int64_t i, double(&t)[3]) {
    const double v = static_cast<double>(p[i]), d = v - shift;
    t[0] = v;
    t[1] = d;
    t[2] = d * d;
  };
  if constexpr (std::is_same_v<T, float>) {
    const WideVec k = wide_splat(shift);
    sums.add_vectors(
        n,
        [p, k](int64_t i, WideVec(&t)[3]) {
          const WideVec v = wide_load(p + i), d = v - k;
          t[0] = v;
          t[1] = d;
          t[2] = d * d;
        },
        term);
  } else {
    sums.add(n, term);
  }
}

template <typename T, typename P>
void batch_norm_update_stats_impl(const Tensor& in, int64_t N, int64_t C, int64_t S, const Tensor& running_mean,
                                  const Tensor& running_var, double momentum, Tensor& save_mean, Tensor& save_var) {
  const T* x = in.data_ptr<T>();
  const Param<P> rm(running_mean), rv(running_var), sm(save_mean), sv(save_var);
  const int64_t count = N * S;
  const bool big = count * C > kGrainSize && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const double shift = count > 0 ? static_cast<double>(x[c * S]) : 0.0;
    WideSums<3> sums;
    for (int64_t n = 0; n < N; ++n) add_stats_run(x + (n * C + c) * S, S, shift, sums);
    const double n = static_cast<double>(count);
    const double dmean = count > 0 ? sums.total(0) / n : 0.0;
    const double shifted = sums.total(1);
    const double var_sum = count > 0 ? std::max(0.0, sums.total(2) - shifted * shifted / n) : 0.0;
    sm.set(c, dmean);
    sv.set(c, count > 0 ? var_sum / n : 0.0);
    update_running(rm, rv, c, dmean, var_sum, count, momentum);
  }
}

/// batch_norm_update_stats_impl over NHWC memory (M = N × H × W rows of C channels), one
/// pass: channel_sums of x (its sums are channel_sums<1>'s lane for lane, so the mean is
/// batch_norm_rows_impl's save_mean bit for bit) and, shifted by the channel's first
/// element, of x - shift and its square; the sum of squared deviations is then
/// sum((x-K)^2) - sum(x-K)^2 / M, in double, as batch_norm_update_stats_impl's.
template <typename T, typename P>
void batch_norm_update_stats_rows_impl(const Tensor& in, int64_t M, int64_t C, const Tensor& running_mean,
                                       const Tensor& running_var, double momentum, Tensor& save_mean,
                                       Tensor& save_var) {
  const T* x = in.data_ptr<T>();
  const Param<P> rm(running_mean), rv(running_var), sm(save_mean), sv(save_var);
  const bool big = M * C > kGrainSize && !omp_in_parallel();
  std::vector<double> shift(static_cast<size_t>(C), 0.0);
  if (M > 0)
    for (int64_t c = 0; c < C; ++c) shift[c] = static_cast<double>(x[c]);
  const std::vector<double> sums = channel_sums<3>(M, C, big, [x, C, &shift](int64_t m, int64_t c, double(&t)[3]) {
    const double v = static_cast<double>(x[m * C + c]), d = v - shift[c];
    t[0] = v;
    t[1] = d;
    t[2] = d * d;
  });
  const double n = static_cast<double>(M);
  for (int64_t c = 0; c < C; ++c) {
    const double dmean = M > 0 ? sums[c] / n : 0.0;
    const double shifted = sums[C + c];
    const double var_sum = M > 0 ? std::max(0.0, sums[2 * C + c] - shifted * shifted / n) : 0.0;
    sm.set(c, dmean);
    sv.set(c, M > 0 ? var_sum / n : 0.0);
    update_running(rm, rv, c, dmean, var_sum, M, momentum);
  }
}

/// Calls f.template operator()<T, P>() for batch norm's input dtype T and parameter dtype
/// P (the input's, or float beside a half/bfloat16 input).
template <typename F>
void dispatch_batch_norm(const Tensor& in, std::initializer_list<const Tensor*> params, F&& f) {
  ScalarType pt = in.dtype();
  for (const Tensor* t : params)
    if (t->defined()) pt = t->dtype();
  switch (in.dtype()) {
    case kFloat: return f.template operator()<float, float>();
    case kDouble: return f.template operator()<double, double>();
    case kHalf:
      if (pt == kFloat) return f.template operator()<Half, float>();
      return f.template operator()<Half, Half>();
    case kBFloat16:
      if (pt == kFloat) return f.template operator()<BFloat16, float>();
      return f.template operator()<BFloat16, BFloat16>();
    default: break;
  }
  EMBER_INTERNAL_ASSERT(false) << "batch_norm kernel for dtype " << in.dtype();
}

}  // namespace

void layer_norm(const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t M, int64_t N, double eps,
                Tensor& out, Tensor& mean, Tensor& rstd) {
  EMBER_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous());
  if (M == 0) return;
  switch (in.dtype()) {
    case kFloat: return layer_norm_native<float>(in, gamma, beta, M, N, eps, out, mean, rstd);
    case kDouble: return layer_norm_native<double>(in, gamma, beta, M, N, eps, out, mean, rstd);
    case kHalf: return layer_norm_reduced<Half>(in, gamma, beta, M, N, eps, out, mean, rstd);
    case kBFloat16: return layer_norm_reduced<BFloat16>(in, gamma, beta, M, N, eps, out, mean, rstd);
    default: break;
  }
  EMBER_INTERNAL_ASSERT(false) << "layer_norm kernel for dtype " << in.dtype();
}

void batch_norm(const Tensor& in, int64_t N, int64_t C, int64_t S, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps,
                Tensor& out, Tensor& save_mean, Tensor& save_invstd, bool channels_last) {
  dispatch_batch_norm(in, {&weight, &bias, &running_mean, &running_var}, [&]<typename T, typename P>() {
    if (channels_last)
      batch_norm_rows_impl<T, P>(in, N * S, C, weight, bias, running_mean, running_var, training, momentum, eps, out,
                                 save_mean, save_invstd);
    else
      batch_norm_impl<T, P>(in, N, C, S, weight, bias, running_mean, running_var, training, momentum, eps, out,
                            save_mean, save_invstd);
  });
}

void batch_norm_update_stats(const Tensor& in, int64_t N, int64_t C, int64_t S, const Tensor& running_mean,
                             const Tensor& running_var, double momentum, Tensor& save_mean, Tensor& save_var,
                             bool channels_last) {
  EMBER_INTERNAL_ASSERT(channels_last || in.is_contiguous());
  dispatch_batch_norm(in, {&running_mean, &running_var}, [&]<typename T, typename P>() {
    if (channels_last)
      batch_norm_update_stats_rows_impl<T, P>(in, N * S, C, running_mean, running_var, momentum, save_mean, save_var);
    else
      batch_norm_update_stats_impl<T, P>(in, N, C, S, running_mean, running_var, momentum, save_mean, save_var);
  });
}

}  // namespace ember::kernels::cpu
