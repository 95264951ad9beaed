// kernels/cpu/conv_backward_dnnl.cpp — float32 convolution gradients through oneDNN's
// backward-data and backward-weights primitives (as ATen's mkldnn path), cached by
// geometry like the forward ones: creating a primitive costs more than running it on
// small inputs. Activations are NCHW, or NHWC (Conv2dParams::channels_last: the primitives
// then read and write them as they are), weights OIHW; oneDNN's preferred layouts are
// reached by reorders, themselves cached, into temporaries of Ember's allocator (onednn.h). When both
// gradients are wanted and both primitives read grad_output in the same layout, it is
// reordered once.
#include <omp.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "kernels/cpu/conv_backward.h"
#include "kernels/cpu/dnnl_conv.h"

namespace ember::kernels::cpu {
namespace {

using dnnl::memory;

using dnnl_conv::engine;
using dnnl_conv::reorder;

struct DnnlConvBackward {
  dnnl_conv::Geometry g;
  // backward data: diff_dst, weights -> diff_src
  dnnl::convolution_backward_data data;
  memory::desc data_diff_dst, data_wei, data_diff_src, data_scratchpad;
  std::unique_ptr<dnnl::reorder> data_dst_in, data_wei_in, data_src_out;
  // backward weights: src, diff_dst -> diff_weights (, diff_bias)
  dnnl::convolution_backward_weights weights;
  memory::desc w_src, w_diff_dst, w_diff_wei, w_scratchpad;
  std::unique_ptr<dnnl::reorder> w_src_in, w_dst_in, w_wei_out;
};

std::shared_ptr<DnnlConvBackward> make(const Conv2dParams& p, bool want_data, bool want_weights, bool with_bias) {
  auto c = std::make_shared<DnnlConvBackward>();
  c->g = dnnl_conv::geometry(p);
  const dnnl_conv::Geometry& g = c->g;
  const auto alg = dnnl::algorithm::convolution_direct;
  // The backward primitives take a forward training primitive as a hint.
  const dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, alg, g.any_src, g.any_wei, g.any_dst,
                                            g.strides, g.dilates, g.pad, g.pad);
  const dnnl::convolution_forward::primitive_desc fwd_pd(fwd, engine());
  if (want_data) {
    const dnnl::convolution_backward_data::desc d(alg, g.any_src, g.any_wei, g.any_dst, g.strides, g.dilates, g.pad,
                                                  g.pad);
    const dnnl::convolution_backward_data::primitive_desc pd(d, onednn::user_scratchpad(), engine(), fwd_pd);
    c->data = dnnl::convolution_backward_data(pd);
    c->data_scratchpad = pd.scratchpad_desc();
    c->data_diff_dst = pd.diff_dst_desc();
    c->data_wei = pd.weights_desc();
    c->data_diff_src = pd.diff_src_desc();
    c->data_dst_in = reorder(g.user_dst, c->data_diff_dst);
    c->data_wei_in = reorder(g.user_wei, c->data_wei);
    c->data_src_out = reorder(c->data_diff_src, g.user_src);
  }
  if (want_weights) {
    const auto d = with_bias ? dnnl::convolution_backward_weights::desc(alg, g.any_src, g.any_wei, g.user_bias,
                                                                        g.any_dst, g.strides, g.dilates, g.pad, g.pad)
                             : dnnl::convolution_backward_weights::desc(alg, g.any_src, g.any_wei, g.any_dst, g.strides,
                                                                        g.dilates, g.pad, g.pad);
    const dnnl::convolution_backward_weights::primitive_desc pd(d, onednn::user_scratchpad(), engine(), fwd_pd);
    c->weights = dnnl::convolution_backward_weights(pd);
    c->w_scratchpad = pd.scratchpad_desc();
    c->w_src = pd.src_desc();
    c->w_diff_dst = pd.diff_dst_desc();
    c->w_diff_wei = pd.diff_weights_desc();
    c->w_src_in = reorder(g.user_src, c->w_src);
    c->w_dst_in = reorder(g.user_dst, c->w_diff_dst);
    c->w_wei_out = reorder(c->w_diff_wei, g.user_wei);
  }
  return c;
}

// A primitive splits its work for the thread count it was created under (oneDNN reads
// omp_get_max_threads() when it is made), so the thread count is part of the key, as in the
// forward's cache (conv.cpp): a program that changes OMP's thread count between steps gets
// primitives made for the new count instead of the old split run on the new team.
std::shared_ptr<DnnlConvBackward> cached(const Conv2dParams& p, bool want_data, bool want_weights, bool with_bias) {
  using Key = std::array<int64_t, 21>;
  const Key key{p.batch,      p.in_channels, p.in_h,     p.in_w,       p.out_channels, p.kernel_h,
                p.kernel_w,   p.out_h,       p.out_w,    p.stride_h,   p.stride_w,     p.pad_h,
                p.pad_w,      p.dilation_h,  p.dilation_w, p.groups,   want_data,      want_weights,
                with_bias,    p.channels_last, omp_get_max_threads()};
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<DnnlConvBackward>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();  // bound memory when shapes keep changing
  auto c = make(p, want_data, want_weights, with_bias);
  cache.emplace(key, c);
  return c;
}

}  // namespace

bool conv2d_backward_dnnl(const float* grad_out, const float* input, const float* weight, float* grad_input,
                          float* grad_weight, float* grad_bias, const Conv2dParams& p) {
  const bool want_data = grad_input != nullptr, want_weights = grad_weight != nullptr;
  if (!want_data && !want_weights) return true;
  std::shared_ptr<DnnlConvBackward> c;
  try {
    c = cached(p, want_data, want_weights, want_weights && grad_bias != nullptr);
  } catch (const dnnl::error&) {
    return false;  // a geometry oneDNN does not implement
  }
  dnnl::stream s(engine());
  memory user_dst(c->g.user_dst, engine(), const_cast<float*>(grad_out));
  using onednn::CallMemory;
  // grad_output in the layout of the data gradient's primitive, kept for the weight
  // gradient's when that reads the same layout.
  std::optional<CallMemory> data_diff_dst;
  if (want_data) {
    memory user_wei(c->g.user_wei, engine(), const_cast<float*>(weight));
    memory user_src(c->g.user_src, engine(), grad_input);
    data_diff_dst.emplace(onednn::in_layout(s, user_dst, c->data_diff_dst, c->data_dst_in));
    CallMemory wei = onednn::in_layout(s, user_wei, c->data_wei, c->data_wei_in);
    CallMemory diff_src = onednn::out_layout(user_src, c->data_diff_src, c->data_src_out);
    CallMemory scratchpad(c->data_scratchpad);
    c->data.execute(s, {{DNNL_ARG_DIFF_DST, data_diff_dst->memory()},
                        {DNNL_ARG_WEIGHTS, wei.memory()},
                        {DNNL_ARG_DIFF_SRC, diff_src.memory()},
                        {DNNL_ARG_SCRATCHPAD, scratchpad.memory()}});
    if (c->data_src_out) c->data_src_out->execute(s, diff_src.memory(), user_src);
  }
  if (want_weights) {
    memory user_src(c->g.user_src, engine(), const_cast<float*>(input));
    memory user_wei(c->g.user_wei, engine(), grad_weight);
    CallMemory src = onednn::in_layout(s, user_src, c->w_src, c->w_src_in);
    const bool shared_dst = data_diff_dst && c->w_diff_dst == c->data_diff_dst;
    std::optional<CallMemory> own_dst;
    if (!shared_dst) own_dst.emplace(onednn::in_layout(s, user_dst, c->w_diff_dst, c->w_dst_in));
    CallMemory& diff_dst = shared_dst ? *data_diff_dst : *own_dst;
    CallMemory diff_wei = onednn::out_layout(user_wei, c->w_diff_wei, c->w_wei_out);
    CallMemory scratchpad(c->w_scratchpad);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src.memory()},
                                         {DNNL_ARG_DIFF_DST, diff_dst.memory()},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_wei.memory()},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad.memory()}};
    if (grad_bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(c->g.user_bias, engine(), grad_bias));
    c->weights.execute(s, args);
    if (c->w_wei_out) c->w_wei_out->execute(s, diff_wei.memory(), user_wei);
  }
  s.wait();
  return true;
}

}  // namespace ember::kernels::cpu
