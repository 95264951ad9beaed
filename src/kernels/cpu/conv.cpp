// kernels/cpu/conv.cpp — see conv.h. float32 convolution runs through oneDNN with its
// primitives cached by shape (creating one costs more than running it on small inputs);
// float16/bfloat16 compute through the same float32 path and round once, as ATen does;
// float64 and integers use im2col + GEMM.
#include "kernels/cpu/conv.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/autotune.h"
#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/dnnl_conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/loops.h"
#include "support/logging.h"

namespace ember::kernels::cpu {
namespace {

// --- float32 through oneDNN ---------------------------------------------------------

using dnnl::memory;

struct DnnlConv {
  dnnl_conv::Geometry g;
  memory::format_tag activations;  // what the primitive was asked to read and write
  dnnl::convolution_forward prim;
  memory::desc src, wei, dst, scratchpad;  // the primitive's layouts
  std::unique_ptr<dnnl::reorder> src_reorder, wei_reorder, dst_reorder;
};

/// A forward primitive whose input and output take layout `activations` (`any`: oneDNN's
/// choice), with reorders from and to the caller's NCHW (or NHWC)/OIHW.
std::shared_ptr<DnnlConv> make_dnnl_conv(const Conv2dParams& p, bool has_bias, memory::format_tag activations) {
  auto c = std::make_shared<DnnlConv>();
  c->g = dnnl_conv::geometry(p);
  c->activations = activations;
  const dnnl_conv::Geometry& g = c->g;
  const memory::desc src(g.any_src.dims(), memory::data_type::f32, activations);
  const memory::desc dst(g.any_dst.dims(), memory::data_type::f32, activations);
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_direct;
  auto desc = has_bias
                  ? dnnl::convolution_forward::desc(kind, alg, src, g.any_wei, g.user_bias, dst, g.strides, g.dilates,
                                                    g.pad, g.pad)
                  : dnnl::convolution_forward::desc(kind, alg, src, g.any_wei, dst, g.strides, g.dilates, g.pad, g.pad);
  dnnl::convolution_forward::primitive_desc pd(desc, onednn::user_scratchpad(), dnnl_conv::engine());
  c->prim = dnnl::convolution_forward(pd);
  c->src = pd.src_desc();
  c->wei = pd.weights_desc();
  c->dst = pd.dst_desc();
  c->scratchpad = pd.scratchpad_desc();
  c->src_reorder = dnnl_conv::reorder(g.user_src, c->src);
  c->wei_reorder = dnnl_conv::reorder(g.user_wei, c->wei);
  c->dst_reorder = dnnl_conv::reorder(c->dst, g.user_dst);
  return c;
}

// Note [kept convolution weights]
// oneDNN's convolution reads its weights in a blocked layout of its own (OIhw16i16o-like
// ABcd16b16a for the direct kernel, Acdb64a for brgconv), and a module's weight is a plain
// OIHW parameter, so every call reordered it into a temporary first: for W6's 3x3 64->64
// convolution a 147 KB reorder and a temporary per call, 0.015-0.04 ms at one thread on
// the 2-core development VM (ONEDNN_VERBOSE), two per block. PyTorch keeps such reorders
// only under freezing (its mkldnn weight prepacking). Here, as for the GEMM's right
// operands (Note [packed right operands], gemm.cpp), a weight seen a second time at the
// same storage version is reordered once into the primitive's layout and kept: the entry
// holds its storage weakly (a storage freed and another allocated at the same address is
// not taken for it) and the version it saw; every in-place op bumps the version (the
// dispatcher; a compiled graph's input writes and an optimizer's step too), so a weight
// that changes is reordered again on its second sight after the change, and a training
// step (the weight changes between two forwards) runs as before: the reorder per call.
// Writes that bypass ops (through a raw data pointer) are not seen, as they are not by
// autograd's version checks. A new version is reordered into new memory, never over a
// copy another thread may be reading. The copies are at most kMaxKeptWeightBytes in
// all (past it, weights reorder per call) and are dropped with their storage.

/// The most bytes of reordered convolution weights kept at once.
constexpr size_t kMaxKeptWeightBytes = size_t{256} << 20;

/// The kept reorders of convolution weights, by where the weight starts and its sizes.
using KeptWeights = onednn::KeptLayouts<std::pair<const void*, memory::dims>>;

/// The process's kept weights.
KeptWeights& kept_weights() {
  static KeptWeights* k = new KeptWeights(kMaxKeptWeightBytes);  // never destroyed: convolutions may run at exit
  return *k;
}

/// The weight `user` (whose buffer `storage` holds, at `data`) in layout `want`: a kept
/// copy when this storage at its current version was read here before (reordered by `r`
/// now if no copy in `want` is kept yet), nothing on a first sight or when the copies
/// would pass kMaxKeptWeightBytes.
std::optional<memory> kept_weight(const std::shared_ptr<Storage>& storage, const void* data, memory& user,
                                  const memory::desc& want, const dnnl::reorder& r) {
  const KeptWeights::key_type key{data, user.get_desc().dims()};
  if (!kept_weights().sighted(key, storage)) return std::nullopt;
  return kept_weights().get(key, want, [&] {
    memory kept(want, dnnl_conv::engine());
    dnnl::stream s(dnnl_conv::engine());
    r.execute(s, user, kept);
    s.wait();
    return kept;
  });
}

/// One forward call of `c`. `weight_storage`, when given, is the storage `w` lives in: the
/// weight's reorder may then be kept (Note [kept convolution weights]).
void run_dnnl_conv(const DnnlConv& c, const float* in, const float* w, const float* bias, float* out,
                   const std::shared_ptr<Storage>* weight_storage = nullptr) {
  auto& eng = dnnl_conv::engine();
  dnnl::stream stream(eng);
  memory user_src(c.g.user_src, eng, const_cast<float*>(in));
  memory user_wei(c.g.user_wei, eng, const_cast<float*>(w));
  memory user_dst(c.g.user_dst, eng, out);
  onednn::CallMemory src = onednn::in_layout(stream, user_src, c.src, c.src_reorder);
  std::optional<memory> kept;
  if (c.wei_reorder && weight_storage && *weight_storage)
    kept = kept_weight(*weight_storage, w, user_wei, c.wei, *c.wei_reorder);
  onednn::CallMemory wei = kept ? onednn::CallMemory(*kept) : onednn::in_layout(stream, user_wei, c.wei, c.wei_reorder);
  onednn::CallMemory dst = onednn::out_layout(user_dst, c.dst, c.dst_reorder);
  onednn::CallMemory scratchpad(c.scratchpad);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src.memory()},
                                       {DNNL_ARG_WEIGHTS, wei.memory()},
                                       {DNNL_ARG_DST, dst.memory()},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad.memory()}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(c.g.user_bias, eng, const_cast<float*>(bias)));
  c.prim.execute(stream, args);
  if (c.dst_reorder) c.dst_reorder->execute(stream, dst.memory(), user_dst);
  stream.wait();
}

/// EMBER_CONV_LAYOUT, read once: "any" or "blocked" to skip the timing, or nothing.
std::optional<std::string> forced_conv_layout() {
  static const std::optional<std::string> forced = []() -> std::optional<std::string> {
    const char* v = std::getenv("EMBER_CONV_LAYOUT");
    if (!v || !*v || std::string(v) == "auto") return std::nullopt;
    EMBER_CHECK_KIND(ErrorKind::ValueError, std::string(v) == "any" || std::string(v) == "blocked")
        << "EMBER_CONV_LAYOUT: expected auto, any or blocked, got '" << v << "'";
    return std::string(v);
  }();
  return forced;
}

// Note [convolution layout autotuning]
// For `any`, oneDNN 2.6 picks brgconv over NHWC on AVX-512; its direct convolution over
// nChw16c was 9% faster alone and 12-22% faster with the reorders on W6's 3x3 64->64
// convolutions (bench/results/README.md), but no rule says which wins for every shape. So
// the first convolution of a shape (and thread count) times both layouts into a scratch
// output (autotune.h's fastest(): candidates in turn over several rounds, each one's best
// round counting) and keeps the faster; the `autotuning` log artifact shows the times,
// and EMBER_CONV_LAYOUT=any|blocked skips the timing. The call's own output comes from
// the kept primitive, so every call of a shape rounds alike. At one thread the times are
// the thread's CPU time: timed by the wall clock on a loaded 2-core machine, W9's shape
// kept brgconv over NHWC in some processes (its NCHW <-> NHWC reorders cost 1.9 ms a call
// against the blocked layout's 0.4 ms, bench_conv_probe), 2 ms more per forward.
std::shared_ptr<DnnlConv> cached_dnnl_conv(const Conv2dParams& p, const float* in, const float* w, const float* bias) {
  using Key = std::array<int64_t, 19>;
  const Key key{p.batch,
                p.in_channels,
                p.in_h,
                p.in_w,
                p.out_channels,
                p.kernel_h,
                p.kernel_w,
                p.out_h,
                p.out_w,
                p.stride_h,
                p.stride_w,
                p.pad_h,
                p.pad_w,
                p.dilation_h,
                p.dilation_w,
                p.groups,
                bias != nullptr ? 1 : 0,
                p.channels_last ? 1 : 0,
                omp_get_max_threads()};
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<DnnlConv>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 512) cache.clear();  // bound memory when shapes keep changing
  if (p.channels_last) {
    // NHWC activations run as they are (Note [channels_last convolution]): no timing.
    auto nhwc = make_dnnl_conv(p, bias != nullptr, memory::format_tag::nhwc);
    cache.emplace(key, nhwc);
    return nhwc;
  }
  std::shared_ptr<DnnlConv> best = make_dnnl_conv(p, bias != nullptr, memory::format_tag::any);
  const memory::format_tag blocked = dnnl_conv::blocked_activations(p);
  const std::optional<std::string> forced = forced_conv_layout();
  if (blocked != memory::format_tag::any && forced == "blocked") {
    try {
      best = make_dnnl_conv(p, bias != nullptr, blocked);
    } catch (const dnnl::error&) {
      // No implementation for the blocked layout: `any` it is.
    }
  } else if (blocked != memory::format_tag::any && !forced && !omp_in_parallel()) {
    std::shared_ptr<DnnlConv> other;
    try {
      other = make_dnnl_conv(p, bias != nullptr, blocked);
    } catch (const dnnl::error&) {
      // No implementation for the blocked layout: `any` it is.
    }
    if (other) {
      std::vector<float> scratch(static_cast<size_t>(p.batch * p.out_channels * p.out_h * p.out_w));
      std::vector<double> ms;
      const size_t fast = fastest({[&] { run_dnnl_conv(*best, in, w, bias, scratch.data()); },
                                   [&] { run_dnnl_conv(*other, in, w, bias, scratch.data()); }},
                                  ms);
      EMBER_LOG_ARTIFACT(autotuning) << "conv2d " << p.batch << "x" << p.in_channels << "x" << p.in_h << "x" << p.in_w
                                     << " -> " << p.out_channels << " channels, kernel " << p.kernel_h << "x"
                                     << p.kernel_w << " (" << omp_get_max_threads() << " threads): any " << ms[0]
                                     << " ms, blocked " << ms[1] << " ms -> " << (fast == 1 ? "blocked" : "any");
      if (fast == 1) best = other;
    }
  }
  cache.emplace(key, best);
  return best;
}

/// The float32 convolution on oneDNN; `weight_storage` as run_dnnl_conv's.
void conv2d_dnnl(const float* in, const float* w, const float* bias, float* out, const Conv2dParams& p,
                 const std::shared_ptr<Storage>* weight_storage = nullptr) {
  run_dnnl_conv(*cached_dnnl_conv(p, in, w, bias), in, w, bias, out, weight_storage);
}

// --- other dtypes: im2col + GEMM -----------------------------------------------------

/// out[m][n] = sum_k a[m][k] * b[k][n] (+ bias[m]), row-major, for one group of one image.
template <typename T>
void gemm_bias(int64_t M, int64_t N, int64_t K, const T* a, const T* b, const T* bias, T* out) {
  if constexpr (std::is_same_v<T, double>) {
    gemm(false, false, M, N, K, 1.0, a, std::max<int64_t>(K, 1), b, std::max<int64_t>(N, 1), 0.0, out,
         std::max<int64_t>(N, 1));
    if (bias)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) out[m * N + n] += bias[m];
  } else {
    // Integers wrap on overflow as ATen's do; unsigned arithmetic makes that defined.
    std::vector<uint64_t> acc(static_cast<size_t>(N));
    for (int64_t m = 0; m < M; ++m) {
      std::fill(acc.begin(), acc.end(), bias ? static_cast<uint64_t>(static_cast<int64_t>(bias[m])) : 0);
      for (int64_t k = 0; k < K; ++k) {
        const uint64_t w = static_cast<uint64_t>(static_cast<int64_t>(a[m * K + k]));
        const T* brow = b + k * N;
        for (int64_t n = 0; n < N; ++n) acc[n] += w * static_cast<uint64_t>(static_cast<int64_t>(brow[n]));
      }
      for (int64_t n = 0; n < N; ++n) out[m * N + n] = static_cast<T>(acc[n]);
    }
  }
}

template <typename T>
void conv2d_im2col(const T* in, const T* w, const T* bias, T* out, const Conv2dParams& p) {
  const int64_t G = p.groups, Cg = p.in_channels / G, OCg = p.out_channels / G;
  const int64_t K = Cg * p.kernel_h * p.kernel_w, P = p.out_h * p.out_w;
  const bool parallel = p.batch > 1 && p.batch * OCg * G * K * P > kGrainSize && !omp_in_parallel();
#pragma omp parallel if (parallel)
  {
    std::vector<T> col(static_cast<size_t>(K * P));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < p.batch; ++n) {
      for (int64_t g = 0; g < G; ++g) {
        im2col(in + (n * p.in_channels + g * Cg) * p.in_h * p.in_w, Cg, p, col.data());
        gemm_bias<T>(OCg, P, K, w + g * OCg * K, col.data(), bias ? bias + g * OCg : nullptr,
                     out + (n * p.out_channels + g * OCg) * P);
      }
    }
  }
}

// --- transposed convolution: GEMM + col2im ---------------------------------------------

/// c[M][N] = sum_k a[k][m] * b[k][n] (a is K x M), row-major.
template <typename Acc>
void gemm_tn(int64_t M, int64_t N, int64_t K, const Acc* a, const Acc* b, Acc* c) {
  if constexpr (std::is_same_v<Acc, float> || std::is_same_v<Acc, double>) {
    gemm(true, false, M, N, K, Acc(1), a, std::max<int64_t>(M, 1), b, std::max<int64_t>(N, 1), Acc(0), c,
         std::max<int64_t>(N, 1));
  } else {
    std::fill(c, c + M * N, Acc(0));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t m = 0; m < M; ++m) {
        const Acc av = a[k * M + m];
        for (int64_t n = 0; n < N; ++n) c[m * N + n] += av * b[k * N + n];
      }
  }
}

template <typename Acc>
void conv_transpose_core(const Acc* in, const Acc* w, const Acc* bias, Acc* out, const Conv2dParams& p) {
  const int64_t G = p.groups, Cg = p.in_channels / G, OCg = p.out_channels / G;
  const int64_t K = OCg * p.kernel_h * p.kernel_w, P = p.in_h * p.in_w, OP = p.out_h * p.out_w;
  const bool parallel = p.batch > 1 && p.batch * G * K * P > kGrainSize && !omp_in_parallel();
#pragma omp parallel if (parallel)
  {
    std::vector<Acc> col(static_cast<size_t>(K * P));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < p.batch; ++n) {
      for (int64_t g = 0; g < G; ++g) {
        Acc* o = out + (n * p.out_channels + g * OCg) * OP;
        for (int64_t oc = 0; oc < OCg; ++oc) std::fill_n(o + oc * OP, OP, bias ? bias[g * OCg + oc] : Acc(0));
        if (K == 0 || P == 0) continue;
        if (Cg == 0) continue;
        gemm_tn<Acc>(K, P, Cg, w + g * Cg * K, in + (n * p.in_channels + g * Cg) * P, col.data());
        // col2im: scatter-add each kernel tap's contribution into the output plane.
        for (int64_t oc = 0; oc < OCg; ++oc)
          for (int64_t i = 0; i < p.kernel_h; ++i)
            for (int64_t j = 0; j < p.kernel_w; ++j) {
              const Acc* row = col.data() + ((oc * p.kernel_h + i) * p.kernel_w + j) * P;
              Acc* plane = o + oc * OP;
              for (int64_t ih = 0; ih < p.in_h; ++ih) {
                const int64_t oh = ih * p.stride_h - p.pad_h + i * p.dilation_h;
                if (oh < 0 || oh >= p.out_h) continue;
                for (int64_t iw = 0; iw < p.in_w; ++iw) {
                  const int64_t ow = iw * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (ow >= 0 && ow < p.out_w) plane[oh * p.out_w + ow] += row[ih * p.in_w + iw];
                }
              }
            }
      }
    }
  }
}

template <typename Acc, typename T>
std::vector<Acc> to_acc(const Tensor& t) {
  std::vector<Acc> v(static_cast<size_t>(t.numel()));
  const T* src = t.data_ptr<T>();
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_integral_v<T>)
      v[i] = static_cast<Acc>(static_cast<int64_t>(src[i]));
    else
      v[i] = static_cast<Acc>(static_cast<float>(src[i]));
  }
  return v;
}

// --- pooling -------------------------------------------------------------------------

bool pool_parallel(const Pool2dParams& p, int64_t window) {
  return p.planes > 1 && p.planes * p.out_h * p.out_w * std::max<int64_t>(window, 1) > kGrainSize && !omp_in_parallel();
}

// Note [max pooling loop]: ATen's CPU max_pool2d (and this kernel before) branches on
// every compare, `if (v > max || isnan(v))`, which on unordered data mispredicts about half
// the time: 7.4 ms for the exported CNN's 2x2 pooling of x[16,32,64,64] at one
// thread on the 2-core development VM, 72% of its compiled forward (PyTorch 2.11 eager: 8.1
// ms). So each output row keeps its running maximum and index in two row buffers and walks
// the window tap by tap, (kernel row, kernel column) in ascending order, over the output
// columns whose input column lies inside the image (no padding test inside the loop), with
// a select instead of a branch. Per output the elements are visited in the same order with
// the same rule (a strictly greater value or a NaN replaces the maximum), so values and
// indices are ATen's, ties and NaNs included; an output whose window held only -inf (or
// nothing) keeps the window's first in-image position, as ATen's. 1.0 ms after, same shape
// (0.49 ms over NHWC, max_pool_nhwc_impl).
template <typename T>
void max_pool_impl(const T* in, T* out, int64_t* ind, const Pool2dParams& p) {
  using acc_t = opmath_t<T>;
#pragma omp parallel if (pool_parallel(p, p.kernel_h * p.kernel_w))
  {
    std::vector<acc_t> best_value(static_cast<size_t>(p.out_w));
    std::vector<int64_t> best_index(static_cast<size_t>(p.out_w));
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < p.planes; ++plane) {
      const T* src = in + plane * p.in_h * p.in_w;
      T* dst = out + plane * p.out_h * p.out_w;
      int64_t* idx = ind + plane * p.out_h * p.out_w;
      for (int64_t oh = 0; oh < p.out_h; ++oh) {
        acc_t* mx = best_value.data();
        int64_t* ix = best_index.data();
        std::fill_n(mx, p.out_w, -std::numeric_limits<acc_t>::infinity());
        std::fill_n(ix, p.out_w, int64_t{-1});
        for (int64_t i = 0; i < p.kernel_h; ++i) {
          const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
          if (ih < 0 || ih >= p.in_h) continue;
          const T* row = src + ih * p.in_w;
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            // Output columns ow with 0 <= ow * stride_w + off < in_w.
            const int64_t off = j * p.dilation_w - p.pad_w;
            const int64_t lo = off >= 0 ? 0 : (-off + p.stride_w - 1) / p.stride_w;
            const int64_t hi = p.in_w - 1 - off < 0 ? 0 : std::min(p.out_w, (p.in_w - 1 - off) / p.stride_w + 1);
            for (int64_t ow = lo; ow < hi; ++ow) {
              const int64_t iw = ow * p.stride_w + off;
              const acc_t v = static_cast<acc_t>(row[iw]);
              const bool take = (v > mx[ow]) | (v != v);
              mx[ow] = take ? v : mx[ow];
              ix[ow] = take ? ih * p.in_w + iw : ix[ow];
            }
          }
        }
        int64_t ih0 = oh * p.stride_h - p.pad_h;
        while (ih0 < 0) ih0 += p.dilation_h;
        for (int64_t ow = 0; ow < p.out_w; ++ow) {
          if (ix[ow] < 0) {  // nothing above -inf: the window's first in-image position
            int64_t iw0 = ow * p.stride_w - p.pad_w;
            while (iw0 < 0) iw0 += p.dilation_w;
            ix[ow] = ih0 * p.in_w + iw0;
          }
          dst[oh * p.out_w + ow] = static_cast<T>(mx[ow]);
          idx[oh * p.out_w + ow] = ix[ow];
        }
      }
    }
  }
}

/// max_pool_impl over NHWC: per output position, the running maxima and indices of all
/// channels in two buffers, the window walked tap by tap as there (so the same rule and
/// order per output), each tap one contiguous run of channels.
template <typename T>
void max_pool_nhwc_impl(const T* in, T* out, int64_t* ind, int64_t C, const Pool2dParams& p) {
  using acc_t = opmath_t<T>;
  const int64_t batch = C > 0 ? p.planes / C : 0;
#pragma omp parallel if (pool_parallel(p, p.kernel_h * p.kernel_w))
  {
    std::vector<acc_t> best_value(static_cast<size_t>(C));
    std::vector<int64_t> best_index(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t row = 0; row < batch * p.out_h; ++row) {
      const int64_t n = row / p.out_h, oh = row % p.out_h;
      const T* src = in + n * p.in_h * p.in_w * C;
      int64_t ih0 = oh * p.stride_h - p.pad_h;
      while (ih0 < 0) ih0 += p.dilation_h;
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        acc_t* __restrict mx = best_value.data();
        int64_t* __restrict ix = best_index.data();
        std::fill_n(mx, C, -std::numeric_limits<acc_t>::infinity());
        std::fill_n(ix, C, int64_t{-1});
        for (int64_t i = 0; i < p.kernel_h; ++i) {
          const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
          if (ih < 0 || ih >= p.in_h) continue;
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
            if (iw < 0 || iw >= p.in_w) continue;
            const T* __restrict px = src + (ih * p.in_w + iw) * C;
            const int64_t at = ih * p.in_w + iw;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) {
              const acc_t v = static_cast<acc_t>(px[c]);
              const bool take = (v > mx[c]) | (v != v);
              mx[c] = take ? v : mx[c];
              ix[c] = take ? at : ix[c];
            }
          }
        }
        int64_t iw0 = ow * p.stride_w - p.pad_w;
        while (iw0 < 0) iw0 += p.dilation_w;
        T* __restrict dst = out + (row * p.out_w + ow) * C;
        int64_t* __restrict idx = ind + (row * p.out_w + ow) * C;
        const int64_t first = ih0 * p.in_w + iw0;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) {
          dst[c] = static_cast<T>(mx[c]);
          idx[c] = ix[c] < 0 ? first : ix[c];
        }
      }
    }
  }
}

template <typename T>
void avg_pool_impl(const T* in, T* out, const Pool2dParams& p, bool count_include_pad, std::optional<int64_t> divisor) {
  using acc_t = opmath_t<T>;
#pragma omp parallel for if (pool_parallel(p, p.kernel_h * p.kernel_w))
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const T* src = in + plane * p.in_h * p.in_w;
    T* dst = out + plane * p.out_h * p.out_w;
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        const AvgPoolWindow win = avg_pool_window(p, oh, ow);
        const int64_t ih0 = win.h0, ih1 = win.h1, iw0 = win.w0, iw1 = win.w1;
        if (win.empty()) {
          dst[oh * p.out_w + ow] = T(0);
          continue;
        }
        const int64_t factor = win.divisor(count_include_pad, divisor);
        acc_t sum = 0;
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw) sum += static_cast<acc_t>(src[ih * p.in_w + iw]);
        dst[oh * p.out_w + ow] = static_cast<T>(sum / static_cast<acc_t>(factor));
      }
    }
  }
}

template <typename T>
void adaptive_avg_pool_impl(const T* in, T* out, const Pool2dParams& p) {
  using acc_t = opmath_t<T>;
  const int64_t window = (p.in_h / std::max<int64_t>(p.out_h, 1) + 1) * (p.in_w / std::max<int64_t>(p.out_w, 1) + 1);
#pragma omp parallel for if (pool_parallel(p, window))
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const T* src = in + plane * p.in_h * p.in_w;
    T* dst = out + plane * p.out_h * p.out_w;
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      const int64_t ih0 = adaptive_start(oh, p.out_h, p.in_h), ih1 = adaptive_end(oh, p.out_h, p.in_h);
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        const int64_t iw0 = adaptive_start(ow, p.out_w, p.in_w), iw1 = adaptive_end(ow, p.out_w, p.in_w);
        acc_t sum = 0;
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw) sum += static_cast<acc_t>(src[ih * p.in_w + iw]);
        dst[oh * p.out_w + ow] = static_cast<T>(sum / static_cast<acc_t>(ih1 - ih0) / static_cast<acc_t>(iw1 - iw0));
      }
    }
  }
}

}  // namespace

namespace {
template <typename scalar_t>
void conv2d_typed(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Conv2dParams& p) {
  // oneDNN rejects convolutions that sum over nothing; their output is just the bias.
  const bool empty_reduction = p.in_channels == 0 || p.kernel_h == 0 || p.kernel_w == 0;
  EMBER_INTERNAL_ASSERT(!p.channels_last || (std::is_same_v<scalar_t, float> && !empty_reduction))
      << "conv2d: NHWC activations reach only the float32 oneDNN kernel";
  if constexpr (std::is_same_v<scalar_t, float>) {
    if (!empty_reduction) {
      conv2d_dnnl(input.data_ptr<float>(), weight.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr,
                  out.data_ptr<float>(), p, &weight.storage());
      return;
    }
  }
  if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, Half> ||
                std::is_same_v<scalar_t, BFloat16>) {
    const std::vector<float> in_f = to_float<scalar_t>(input), w_f = to_float<scalar_t>(weight);
    const std::vector<float> b_f = bias.defined() ? to_float<scalar_t>(bias) : std::vector<float>{};
    std::vector<float> out_f(static_cast<size_t>(out.numel()));
    if (empty_reduction) {
      const int64_t plane = p.out_h * p.out_w;
      for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t c = 0; c < p.out_channels; ++c)
          std::fill_n(out_f.data() + (n * p.out_channels + c) * plane, plane,
                      bias.defined() ? b_f[static_cast<size_t>(c)] : 0.0f);
    } else {
      conv2d_dnnl(in_f.data(), w_f.data(), bias.defined() ? b_f.data() : nullptr, out_f.data(), p);
    }
    scalar_t* dst = out.data_ptr<scalar_t>();
    for (size_t i = 0; i < out_f.size(); ++i) dst[i] = static_cast<scalar_t>(out_f[i]);
  } else if constexpr (std::is_same_v<scalar_t, bool>) {
    EMBER_INTERNAL_ASSERT(false) << "conv2d: bool reached the kernel";
  } else {
    conv2d_im2col<scalar_t>(input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                            bias.defined() ? bias.data_ptr<scalar_t>() : nullptr, out.data_ptr<scalar_t>(), p);
  }
}
}  // namespace

int64_t conv2d_weight_reorders_kept() { return kept_weights().made(); }

int64_t conv2d_kept_weight_bytes() { return kept_weights().bytes(); }

void conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                    const Conv2dParams& p) {
  if (out.numel() == 0) return;
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "conv2d", [&] { conv2d_typed<scalar_t>(input, weight, bias, out, p); });
}

namespace {
template <typename scalar_t>
void conv_transpose_typed(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                          const Conv2dParams& p) {
  if constexpr (std::is_same_v<scalar_t, bool>) {
    EMBER_INTERNAL_ASSERT(false) << "conv_transpose2d: bool reached the kernel";
  } else {
    // Integers wrap on overflow as ATen's do; unsigned arithmetic makes that defined.
    using Acc = std::conditional_t<std::is_integral_v<scalar_t>, uint64_t, opmath_t<scalar_t>>;
    if constexpr (std::is_same_v<Acc, scalar_t>) {
      conv_transpose_core<Acc>(input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                               bias.defined() ? bias.data_ptr<scalar_t>() : nullptr, out.data_ptr<scalar_t>(), p);
    } else {
      const std::vector<Acc> in = to_acc<Acc, scalar_t>(input), w = to_acc<Acc, scalar_t>(weight);
      const std::vector<Acc> b = bias.defined() ? to_acc<Acc, scalar_t>(bias) : std::vector<Acc>{};
      std::vector<Acc> o(static_cast<size_t>(out.numel()));
      conv_transpose_core<Acc>(in.data(), w.data(), bias.defined() ? b.data() : nullptr, o.data(), p);
      scalar_t* dst = out.data_ptr<scalar_t>();
      for (size_t i = 0; i < o.size(); ++i) dst[i] = static_cast<scalar_t>(o[i]);
    }
  }
}
}  // namespace

void conv_transpose2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                              const Conv2dParams& p) {
  if (out.numel() == 0) return;
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "conv_transpose2d",
                           [&] { conv_transpose_typed<scalar_t>(input, weight, bias, out, p); });
}

void max_pool2d_forward(const Tensor& input, const Tensor& out, const Tensor& indices, const Pool2dParams& p) {
  if (out.numel() == 0) return;
  EMBER_DISPATCH_FLOATING_TYPES(input.dtype(), "max_pool2d", [&] {
    max_pool_impl<scalar_t>(input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), indices.data_ptr<int64_t>(), p);
  });
}

void max_pool2d_forward_nhwc(const Tensor& input, const Tensor& out, const Tensor& indices, int64_t channels,
                             const Pool2dParams& p) {
  if (out.numel() == 0) return;
  EMBER_DISPATCH_FLOATING_TYPES(input.dtype(), "max_pool2d", [&] {
    max_pool_nhwc_impl<scalar_t>(input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), indices.data_ptr<int64_t>(),
                                 channels, p);
  });
}

void avg_pool2d_forward(const Tensor& input, const Tensor& out, const Pool2dParams& p, bool count_include_pad,
                        std::optional<int64_t> divisor_override) {
  if (out.numel() == 0) return;
  if (input.dtype() == kLong) {
    avg_pool_impl<int64_t>(input.data_ptr<int64_t>(), out.data_ptr<int64_t>(), p, count_include_pad, divisor_override);
    return;
  }
  EMBER_DISPATCH_FLOATING_TYPES(input.dtype(), "avg_pool2d", [&] {
    avg_pool_impl<scalar_t>(input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), p, count_include_pad,
                            divisor_override);
  });
}

void adaptive_avg_pool2d_forward(const Tensor& input, const Tensor& out, const Pool2dParams& p) {
  if (out.numel() == 0) return;
  EMBER_DISPATCH_FLOATING_TYPES(input.dtype(), "adaptive_avg_pool2d", [&] {
    adaptive_avg_pool_impl<scalar_t>(input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), p);
  });
}

}  // namespace ember::kernels::cpu
