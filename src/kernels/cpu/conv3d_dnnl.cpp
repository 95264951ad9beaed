// kernels/cpu/conv3d_dnnl.cpp — float32 3-D convolution through oneDNN's convolution
// primitives (forward, backward data, backward weights), as ATen's mkldnn path runs it:
// NCDHW activations and OIDHW (GOIDHW) weights as the caller holds them, oneDNN's
// preferred layouts (nCdhw16c with AVX-512) reached by cached reorders; NDHWC activations
// (Conv3dParams::channels_last) handed over as they are, only the weights reordered.
// Primitives are cached by geometry and thread count as the 2-D ones (conv.cpp,
// conv_backward_dnnl.cpp). Note [3-D convolution] in docs/notes/nn.md says what runs here.
#include <omp.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kernels/cpu/conv3d.h"
#include "kernels/cpu/onednn.h"

namespace ember::kernels::cpu {
namespace {

using dnnl::memory;
using onednn::CallMemory;
using onednn::engine;

/// The tensors of one 3-D convolution as the caller holds them (`user_*`), as the
/// primitives are asked for them (`any_*`), and the window in oneDNN's terms: dilation
/// counted from 0, right padding exact for p.out (it may be negative, down to 1 - stride:
/// the input's last positions that no output reads, or p.out shorter than the full output).
struct Geometry3d {
  memory::desc user_src, user_wei, user_bias, user_dst;
  memory::desc any_src, any_wei, any_dst;
  memory::dims strides, dilates, pad_l, pad_r;
  bool channels_last = false;  // the user's activations are NDHWC
};

Geometry3d geometry3d(const Conv3dParams& p) {
  const auto f32 = memory::data_type::f32;
  const memory::dims src{p.batch, p.in_channels, p.in[0], p.in[1], p.in[2]};
  const memory::dims dst{p.batch, p.out_channels, p.out[0], p.out[1], p.out[2]};
  const memory::dims wei =
      p.groups > 1
          ? memory::dims{p.groups,   p.out_channels / p.groups, p.in_channels / p.groups, p.kernel[0], p.kernel[1],
                         p.kernel[2]}
          : memory::dims{p.out_channels, p.in_channels, p.kernel[0], p.kernel[1], p.kernel[2]};
  Geometry3d g;
  g.channels_last = p.channels_last;
  const memory::format_tag activations = p.channels_last ? memory::format_tag::ndhwc : memory::format_tag::ncdhw;
  g.user_src = memory::desc(src, f32, activations);
  g.user_dst = memory::desc(dst, f32, activations);
  g.user_wei = memory::desc(wei, f32, p.groups > 1 ? memory::format_tag::goidhw : memory::format_tag::oidhw);
  g.user_bias = memory::desc({p.out_channels}, f32, memory::format_tag::a);
  // NDHWC activations run as they are (oneDNN runs NDHWC natively), as in 2-D.
  const memory::format_tag chosen = p.channels_last ? memory::format_tag::ndhwc : memory::format_tag::any;
  g.any_src = memory::desc(src, f32, chosen);
  g.any_dst = memory::desc(dst, f32, chosen);
  g.any_wei = memory::desc(wei, f32, memory::format_tag::any);
  for (int d = 0; d < 3; ++d) {
    const int64_t range = (p.kernel[d] - 1) * p.dilation[d] + 1;
    g.strides.push_back(p.stride[d]);
    g.dilates.push_back(p.dilation[d] - 1);
    g.pad_l.push_back(p.pad[d]);
    g.pad_r.push_back((p.out[d] - 1) * p.stride[d] + range - p.in[d] - p.pad[d]);
  }
  return g;
}

/// Whether oneDNN's descriptors accept geometry p: every size positive, and each spatial
/// dim's exact right padding above -stride (oneDNN's consistency rule; past that, p.out
/// leaves whole strides of the input unread, which the loops handle).
bool dnnl_accepts(const Conv3dParams& p) {
  if (p.batch <= 0 || p.in_channels <= 0 || p.out_channels <= 0 || p.groups <= 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (p.in[d] <= 0 || p.out[d] <= 0 || p.kernel[d] <= 0 || p.stride[d] <= 0 || p.dilation[d] <= 0) return false;
    const int64_t range = (p.kernel[d] - 1) * p.dilation[d] + 1;
    const int64_t pad_r = (p.out[d] - 1) * p.stride[d] + range - p.in[d] - p.pad[d];
    if (pad_r + p.stride[d] <= 0) return false;
  }
  return true;
}

std::atomic<int64_t> g_calls{0}, g_ndhwc_calls{0};  // conv3d_dnnl_calls(), conv3d_dnnl_ndhwc_calls()

/// What a cached primitive computes.
enum class Kind : int64_t { Forward, BackwardData, BackwardWeights };

/// One primitive of Kind with its layouts and the reorders from and to the caller's:
/// `a`, `b` its two inputs (forward: src, weights; data: diff_dst, weights; weights: src,
/// diff_dst) and `out` its result (dst, diff_src, diff_weights).
struct Conv3dPrimitive {
  Geometry3d g;
  dnnl::primitive prim;
  memory::desc a, b, out, scratchpad;
  std::unique_ptr<dnnl::reorder> a_in, b_in, out_back;

  /// Takes the primitive's layouts (`a`, `b`, `out`, scratchpad) and makes the reorders
  /// from the caller's layouts of its inputs and to the caller's layout of its result.
  void set_layouts(memory::desc a_, memory::desc b_, memory::desc out_, memory::desc scratch,
                   const memory::desc& user_a, const memory::desc& user_b, const memory::desc& user_out) {
    a = std::move(a_);
    b = std::move(b_);
    out = std::move(out_);
    scratchpad = std::move(scratch);
    a_in = onednn::reorder(user_a, a);
    b_in = onednn::reorder(user_b, b);
    out_back = onednn::reorder(out, user_out);
  }
};

std::shared_ptr<Conv3dPrimitive> make_primitive(const Conv3dParams& p, Kind kind, bool with_bias) {
  auto c = std::make_shared<Conv3dPrimitive>();
  c->g = geometry3d(p);
  const Geometry3d& g = c->g;
  const auto alg = dnnl::algorithm::convolution_direct;
  const dnnl::primitive_attr attr = onednn::user_scratchpad();
  if (kind == Kind::Forward) {
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto d = with_bias ? dnnl::convolution_forward::desc(prop, alg, g.any_src, g.any_wei, g.user_bias, g.any_dst,
                                                               g.strides, g.dilates, g.pad_l, g.pad_r)
                             : dnnl::convolution_forward::desc(prop, alg, g.any_src, g.any_wei, g.any_dst, g.strides,
                                                               g.dilates, g.pad_l, g.pad_r);
    const dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
    c->prim = dnnl::convolution_forward(pd);
    c->set_layouts(pd.src_desc(), pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc(), g.user_src, g.user_wei,
                   g.user_dst);
    return c;
  }
  // The backward primitives take a forward training primitive as a hint.
  const dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, alg, g.any_src, g.any_wei, g.any_dst,
                                            g.strides, g.dilates, g.pad_l, g.pad_r);
  const dnnl::convolution_forward::primitive_desc hint(fwd, engine());
  if (kind == Kind::BackwardData) {
    const dnnl::convolution_backward_data::desc d(alg, g.any_src, g.any_wei, g.any_dst, g.strides, g.dilates, g.pad_l,
                                                  g.pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(d, attr, engine(), hint);
    c->prim = dnnl::convolution_backward_data(pd);
    c->set_layouts(pd.diff_dst_desc(), pd.weights_desc(), pd.diff_src_desc(), pd.scratchpad_desc(), g.user_dst,
                   g.user_wei, g.user_src);
    return c;
  }
  const dnnl::convolution_backward_weights::desc d(alg, g.any_src, g.any_wei, g.any_dst, g.strides, g.dilates, g.pad_l,
                                                   g.pad_r);
  const dnnl::convolution_backward_weights::primitive_desc pd(d, attr, engine(), hint);
  c->prim = dnnl::convolution_backward_weights(pd);
  c->set_layouts(pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc(), pd.scratchpad_desc(), g.user_src,
                 g.user_dst, g.user_wei);
  return c;
}

/// The primitive of `kind` for geometry p, made on first use (null when oneDNN has no
/// implementation for it). The thread count is part of the key: a primitive splits its
/// work for the count it was made under.
std::shared_ptr<Conv3dPrimitive> cached_primitive(const Conv3dParams& p, Kind kind, bool with_bias) {
  using Key = std::array<int64_t, 26>;
  const Key key{p.batch,
                p.in_channels,
                p.out_channels,
                p.groups,
                p.in[0],
                p.in[1],
                p.in[2],
                p.out[0],
                p.out[1],
                p.out[2],
                p.kernel[0],
                p.kernel[1],
                p.kernel[2],
                p.stride[0],
                p.stride[1],
                p.stride[2],
                p.pad[0],
                p.pad[1],
                p.pad[2],
                p.dilation[0],
                p.dilation[1],
                p.dilation[2],
                static_cast<int64_t>(kind),
                with_bias ? 1 : 0,
                p.channels_last ? 1 : 0,
                omp_get_max_threads()};
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<Conv3dPrimitive>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();  // bound memory when shapes keep changing
  std::shared_ptr<Conv3dPrimitive> c;
  try {
    c = make_primitive(p, kind, with_bias);
  } catch (const dnnl::error&) {
    // No implementation for this geometry: the caller runs the loops (cached as null).
  }
  cache.emplace(key, c);
  return c;
}

/// Runs `c` on the caller's buffers: `a` and `b` in the user layouts of its inputs, `out`
/// in the user layout of its result, `bias` (forward only) or null.
void run(const Conv3dPrimitive& c, Kind kind, const float* a, const float* b, const float* bias, float* out) {
  const Geometry3d& g = c.g;
  const memory::desc& a_user = kind == Kind::BackwardData ? g.user_dst : g.user_src;
  const memory::desc& b_user = kind == Kind::Forward        ? g.user_wei
                               : kind == Kind::BackwardData ? g.user_wei
                                                            : g.user_dst;
  const memory::desc& out_user = kind == Kind::Forward        ? g.user_dst
                                 : kind == Kind::BackwardData ? g.user_src
                                                              : g.user_wei;
  dnnl::stream s(engine());
  memory ua(a_user, engine(), const_cast<float*>(a)), ub(b_user, engine(), const_cast<float*>(b));
  memory uo(out_user, engine(), out);
  CallMemory ma = onednn::in_layout(s, ua, c.a, c.a_in);
  CallMemory mb = onednn::in_layout(s, ub, c.b, c.b_in);
  CallMemory mo = onednn::out_layout(uo, c.out, c.out_back);
  CallMemory scratchpad(c.scratchpad);
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, scratchpad.memory()}};
  if (kind == Kind::Forward) {
    args.emplace(DNNL_ARG_SRC, ma.memory());
    args.emplace(DNNL_ARG_WEIGHTS, mb.memory());
    args.emplace(DNNL_ARG_DST, mo.memory());
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(g.user_bias, engine(), const_cast<float*>(bias)));
  } else if (kind == Kind::BackwardData) {
    args.emplace(DNNL_ARG_DIFF_DST, ma.memory());
    args.emplace(DNNL_ARG_WEIGHTS, mb.memory());
    args.emplace(DNNL_ARG_DIFF_SRC, mo.memory());
  } else {
    args.emplace(DNNL_ARG_SRC, ma.memory());
    args.emplace(DNNL_ARG_DIFF_DST, mb.memory());
    args.emplace(DNNL_ARG_DIFF_WEIGHTS, mo.memory());
  }
  c.prim.execute(s, args);
  if (c.out_back) c.out_back->execute(s, mo.memory(), uo);
  s.wait();
  ++g_calls;
  if (g.channels_last) ++g_ndhwc_calls;
}

}  // namespace

int64_t conv3d_dnnl_calls() { return g_calls.load(); }
int64_t conv3d_dnnl_ndhwc_calls() { return g_ndhwc_calls.load(); }

bool conv3d_forward_dnnl(const float* input, const float* weight, const float* bias, float* out,
                         const Conv3dParams& p) {
  if (!dnnl_accepts(p)) return false;
  std::shared_ptr<Conv3dPrimitive> c = cached_primitive(p, Kind::Forward, bias != nullptr);
  if (!c) return false;
  run(*c, Kind::Forward, input, weight, bias, out);
  return true;
}

bool conv3d_backward_data_dnnl(const float* grad, const float* weight, float* out, const Conv3dParams& p) {
  if (!dnnl_accepts(p)) return false;
  std::shared_ptr<Conv3dPrimitive> c = cached_primitive(p, Kind::BackwardData, false);
  if (!c) return false;
  run(*c, Kind::BackwardData, grad, weight, nullptr, out);
  return true;
}

bool conv3d_backward_weights_dnnl(const float* grad, const float* input, float* out, const Conv3dParams& p) {
  if (!dnnl_accepts(p)) return false;
  std::shared_ptr<Conv3dPrimitive> c = cached_primitive(p, Kind::BackwardWeights, false);
  if (!c) return false;
  run(*c, Kind::BackwardWeights, input, grad, nullptr, out);
  return true;
}

}  // namespace ember::kernels::cpu
