// kernels/cpu/norm_backward.cpp — see norm_backward.h. One channel per task: its sum of
// grad_out and of (x - mean) * grad_out, accumulated in double (ATen accumulates float in
// float; double agrees with it within float's tolerance and does not drift on long
// channels) over independent lanes (wide_sum.h), then the input gradient.
#include "kernels/cpu/norm_backward.h"

#include <omp.h>

#include <type_traits>

#include "kernels/cpu/loops.h"
#include "kernels/cpu/wide_sum.h"

// The lambdas below pass and return wide_sum.h's 64-byte WideVec by value: see its note on
// GCC's -Wpsabi (one ABI within one build).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ember::kernels::cpu {
namespace {

template <typename T>
void batch_norm_backward_impl(const T* dy, const T* x, int64_t N, int64_t C, int64_t S,
                              const BatchNormBackwardStats& st, bool train, T* dx, std::vector<double>& sum,
                              std::vector<double>& dotp) {
  const double count = static_cast<double>(N * S);
#pragma omp parallel for if (N * C * S > kGrainSize && C > 1 && !omp_in_parallel())
  for (int64_t c = 0; c < C; ++c) {
    const double mean = st.mean[c], invstd = st.invstd[c];
    const double w = st.weight.empty() ? 1.0 : st.weight[c];
    WideSums<2> sums;
    for (int64_t n = 0; n < N; ++n) {
      const T* gy = dy + (n * C + c) * S;
      const T* xx = x + (n * C + c) * S;
      auto term = [gy, xx, mean](int64_t i, double(&t)[2]) {
        const double g = static_cast<double>(gy[i]);
        t[0] = g;
        t[1] = (static_cast<double>(xx[i]) - mean) * g;
      };
      if constexpr (std::is_same_v<T, float>) {
        const WideVec m = wide_splat(mean);
        sums.add_vectors(
            S,
            [gy, xx, m](int64_t i, WideVec(&t)[2]) {
              const WideVec g = wide_load(gy + i);
              t[0] = g;
              t[1] = (wide_load(xx + i) - m) * g;
            },
            term);
      } else {
        sums.add(S, term);
      }
    }
    const double s = sums.total(0), d = sums.total(1);
    sum[c] = s;
    dotp[c] = d;
    if (!dx) continue;
    if (train) {
      const double k = d * invstd * invstd / count, grad_mean = s / count;
      for (int64_t n = 0; n < N; ++n) {
        const T* gy = dy + (n * C + c) * S;
        const T* xx = x + (n * C + c) * S;
        T* out = dx + (n * C + c) * S;
        for (int64_t i = 0; i < S; ++i) {
          const double centered = static_cast<double>(xx[i]) - mean;
          out[i] = static_cast<T>((static_cast<double>(gy[i]) - grad_mean - centered * k) * invstd * w);
        }
      }
    } else {
      const double scale = invstd * w;
      for (int64_t n = 0; n < N; ++n) {
        const T* gy = dy + (n * C + c) * S;
        T* out = dx + (n * C + c) * S;
        for (int64_t i = 0; i < S; ++i) out[i] = static_cast<T>(static_cast<double>(gy[i]) * scale);
      }
    }
  }
}

/// batch_norm_backward_impl over NHWC memory: M = N × H × W rows of C channels; the two
/// sums are channel_sums (wide_sum.h), the input gradient one pass over the rows.
template <typename T>
void batch_norm_backward_rows_impl(const T* dy, const T* x, int64_t M, int64_t C, const BatchNormBackwardStats& st,
                                   bool train, T* dx, std::vector<double>& sum, std::vector<double>& dotp) {
  const bool big = M * C > kGrainSize && !omp_in_parallel();
  const std::vector<double>& mean = st.mean;
  const std::vector<double> sums = channel_sums<2>(M, C, big, [dy, x, C, &mean](int64_t m, int64_t c, double(&t)[2]) {
    const double g = static_cast<double>(dy[m * C + c]);
    t[0] = g;
    t[1] = (static_cast<double>(x[m * C + c]) - mean[c]) * g;
  });
  std::vector<double> scale(static_cast<size_t>(C)), k(static_cast<size_t>(C)), grad_mean(static_cast<size_t>(C));
  const double count = static_cast<double>(M);
  for (int64_t c = 0; c < C; ++c) {
    sum[c] = sums[c];
    dotp[c] = sums[C + c];
    const double invstd = st.invstd[c];
    scale[c] = invstd * (st.weight.empty() ? 1.0 : st.weight[c]);
    k[c] = train ? dotp[c] * invstd * invstd / count : 0.0;
    grad_mean[c] = train ? sum[c] / count : 0.0;
  }
  if (!dx) return;
  // The channel loop over plain arrays, the mode decided outside it, so that it vectorizes.
  const double *mn = mean.data(), *gm = grad_mean.data(), *kc = k.data(), *sc = scale.data();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    const T* g = dy + m * C;
    T* out = dx + m * C;
    if (train) {
      const T* xr = x + m * C;
      for (int64_t c = 0; c < C; ++c)
        out[c] = static_cast<T>(
            (static_cast<double>(g[c]) - gm[c] - (static_cast<double>(xr[c]) - mn[c]) * kc[c]) * sc[c]);
    } else {
      for (int64_t c = 0; c < C; ++c) out[c] = static_cast<T>(static_cast<double>(g[c]) * sc[c]);
    }
  }
}

void store(const Tensor& out, const std::vector<double>& values, const std::vector<double>& scale) {
  if (!out.defined()) return;
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "native_batch_norm_backward", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    for (size_t c = 0; c < values.size(); ++c)
      o[c] = static_cast<scalar_t>(scale.empty() ? values[c] : values[c] * scale[c]);
  });
}

}  // namespace

void batch_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t N, int64_t C, int64_t S,
                         const BatchNormBackwardStats& stats, bool train, const Tensor& grad_input,
                         const Tensor& grad_weight, const Tensor& grad_bias, bool channels_last) {
  std::vector<double> sum(static_cast<size_t>(C)), dotp(static_cast<size_t>(C));
  EMBER_DISPATCH_FLOATING_TYPES(input.dtype(), "native_batch_norm_backward", [&] {
    scalar_t* dx = grad_input.defined() ? grad_input.data_ptr<scalar_t>() : nullptr;
    if (channels_last)
      batch_norm_backward_rows_impl<scalar_t>(grad_out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), N * S, C,
                                              stats, train, dx, sum, dotp);
    else
      batch_norm_backward_impl<scalar_t>(grad_out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), N, C, S, stats,
                                         train, dx, sum, dotp);
  });
  store(grad_weight, dotp, stats.invstd);
  store(grad_bias, sum, {});
}

}  // namespace ember::kernels::cpu
