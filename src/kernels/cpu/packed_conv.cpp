// kernels/cpu/packed_conv.cpp — see packed_conv.h. The primitive is described with the
// weight's layout left to oneDNN (format_tag::any) and, over NCHW activations, the
// activations in its blocked layout where the channels fill whole blocks (conv.cpp's
// blocked_activations rule: W6's 3x3 64->64 runs jit:avx512_core over nChw16c, 9-22%
// faster than brgconv over NHWC there, Note [convolution layout autotuning]); the constant
// weight is reordered into its layout once, here. Bias, sum and ReLU run on the
// accumulators before they are stored, so the epilogue costs no pass of its own.
#include "kernels/cpu/packed_conv.h"

#include <omp.h>

#include <atomic>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "ember/error.h"
#include "kernels/cpu/dnnl_conv.h"
#include "kernels/cpu/onednn.h"

namespace ember::kernels::cpu {

namespace {

std::atomic<int64_t> g_packs{0};

using dnnl::memory;

}  // namespace

/// The primitive made for one thread count and the weight packed into its layout.
struct PackedConv::Entry {
  dnnl_conv::Geometry g;
  dnnl::convolution_forward prim;
  memory::desc src, dst, scratchpad;
  std::unique_ptr<dnnl::reorder> src_in, residual_in, dst_out;
  memory weights;  // owns its buffer, in the primitive's layout
};

PackedConv::PackedConv(const Conv2dParams& p, const Tensor& weight, const Tensor& bias, bool sum, bool relu)
    : p_(p), weight_(weight), sum_(sum), relu_(relu) {
  const std::vector<int64_t> want{p.out_channels, p.groups ? p.in_channels / p.groups : 0, p.kernel_h, p.kernel_w};
  EMBER_CHECK(weight.dtype() == kFloat && weight.sizes() == IntArrayRef(want) && weight.is_contiguous())
      << "packed convolution: expected a dense float32 weight " << IntArrayRef(want) << ", got "
      << dtype_name(weight.dtype()) << " " << weight.sizes() << (weight.is_contiguous() ? "" : " (not dense)");
  if (bias.defined()) {
    EMBER_CHECK(bias.dtype() == kFloat && bias.numel() == p.out_channels)
        << "packed convolution: expected a float32 bias of " << p.out_channels << " values, got "
        << dtype_name(bias.dtype()) << " " << bias.sizes();
    const Tensor b = bias.contiguous();
    const float* v = static_cast<const float*>(b.raw_data_ptr());
    bias_.assign(v, v + p.out_channels);
    has_bias_ = true;
  }
  (void)entry();  // packs now, at compile time, for the compiling thread count
}

PackedConv::~PackedConv() = default;

const PackedConv::Entry& PackedConv::entry() const {
  const int threads = omp_get_max_threads();
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(threads); it != entries_.end()) return *it->second;
  auto e = std::make_unique<Entry>();
  e->g = dnnl_conv::geometry(p_);
  const dnnl_conv::Geometry& g = e->g;
  dnnl::engine& eng = onednn::engine();
  const memory::format_tag activations =
      p_.channels_last ? memory::format_tag::nhwc : dnnl_conv::blocked_activations(p_);
  const memory::desc src(g.any_src.dims(), memory::data_type::f32, activations);
  const memory::desc dst(g.any_dst.dims(), memory::data_type::f32, activations);
  dnnl::post_ops ops;
  if (sum_) ops.append_sum(1.0f);
  if (relu_) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr = onednn::user_scratchpad();
  attr.set_post_ops(ops);
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_direct;
  const auto desc =
      has_bias_ ? dnnl::convolution_forward::desc(kind, alg, src, g.any_wei, g.user_bias, dst, g.strides, g.dilates,
                                                  g.pad, g.pad)
                : dnnl::convolution_forward::desc(kind, alg, src, g.any_wei, dst, g.strides, g.dilates, g.pad, g.pad);
  dnnl::convolution_forward::primitive_desc pd;
  try {
    pd = dnnl::convolution_forward::primitive_desc(desc, attr, eng);
  } catch (const dnnl::error& err) {
    EMBER_FAIL() << "packed convolution: oneDNN has no convolution primitive for " << describe() << ": " << err.what();
  }
  e->prim = dnnl::convolution_forward(pd);
  e->src = pd.src_desc();
  e->dst = pd.dst_desc();
  e->scratchpad = pd.scratchpad_desc();
  e->src_in = onednn::reorder(g.user_src, e->src);
  e->residual_in = onednn::reorder(g.user_dst, e->dst);
  e->dst_out = onednn::reorder(e->dst, g.user_dst);
  e->weights = memory(pd.weights_desc(), eng);
  // The constant weight, reordered once into the primitive's layout.
  memory user(g.user_wei, eng, const_cast<void*>(weight_.raw_data_ptr()));
  dnnl::stream s(eng);
  if (auto r = onednn::reorder(g.user_wei, e->weights.get_desc()))
    r->execute(s, user, e->weights);
  else
    std::memcpy(e->weights.get_data_handle(), weight_.raw_data_ptr(), g.user_wei.get_size());
  s.wait();
  g_packs.fetch_add(1, std::memory_order_relaxed);
  return *(entries_[threads] = std::move(e));
}

void PackedConv::run(const float* src, const float* residual, float* dst) const {
  EMBER_INTERNAL_ASSERT((residual != nullptr) == sum_)
      << "packed convolution: a residual is " << (sum_ ? "required" : "not taken");
  const Entry& e = entry();
  dnnl::engine& eng = onednn::engine();
  dnnl::stream s(eng);
  memory user_src(e.g.user_src, eng, const_cast<float*>(src)), user_dst(e.g.user_dst, eng, dst);
  onednn::CallMemory in = onednn::in_layout(s, user_src, e.src, e.src_in);
  onednn::CallMemory out = onednn::out_layout(user_dst, e.dst, e.dst_out);
  if (sum_) {
    // The sum post-op adds what the output holds: the residual, in the output's layout.
    memory user_residual(e.g.user_dst, eng, const_cast<float*>(residual));
    if (e.residual_in)
      e.residual_in->execute(s, user_residual, out.memory());
    else if (residual != dst)
      std::memcpy(dst, residual, e.g.user_dst.get_size());
  }
  onednn::CallMemory scratchpad(e.scratchpad);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, in.memory()},
                                       {DNNL_ARG_WEIGHTS, e.weights},
                                       {DNNL_ARG_DST, out.memory()},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad.memory()}};
  if (has_bias_) args.emplace(DNNL_ARG_BIAS, memory(e.g.user_bias, eng, const_cast<float*>(bias_.data())));
  e.prim.execute(s, args);
  if (e.dst_out) e.dst_out->execute(s, out.memory(), user_dst);
  s.wait();
}

bool PackedConv::feeds(const PackedConv& next) const {
  const Conv2dParams& q = next.p_;
  return q.batch == p_.batch && q.in_channels == p_.out_channels && q.in_h == p_.out_h && q.in_w == p_.out_w &&
         q.channels_last == p_.channels_last;
}

void PackedConv::run_then(const PackedConv& next, const float* src, const float* residual, float* dst) const {
  EMBER_INTERNAL_ASSERT(feeds(next)) << "packed convolution: " << next.describe() << " cannot read " << describe()
                                     << "'s output";
  EMBER_INTERNAL_ASSERT((residual != nullptr) == next.sum_)
      << "packed convolution: a residual is " << (next.sum_ ? "required" : "not taken");
  const Entry& a = entry();
  const Entry& b = next.entry();
  dnnl::engine& eng = onednn::engine();
  dnnl::stream s(eng);
  // The intermediate, in the layout `next` reads (this one's output layout when they agree).
  const bool direct = a.dst == b.src;
  memory user_src(a.g.user_src, eng, const_cast<float*>(src)), user_dst(b.g.user_dst, eng, dst);
  onednn::CallMemory in = onednn::in_layout(s, user_src, a.src, a.src_in);
  onednn::CallMemory mid(b.src);
  std::optional<onednn::CallMemory> staged;  // this one's output, when `next` reads another layout
  if (!direct) staged.emplace(a.dst);
  {
    onednn::CallMemory scratchpad(a.scratchpad);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, in.memory()},
                                         {DNNL_ARG_WEIGHTS, a.weights},
                                         {DNNL_ARG_DST, direct ? mid.memory() : staged->memory()},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad.memory()}};
    if (has_bias_) args.emplace(DNNL_ARG_BIAS, memory(a.g.user_bias, eng, const_cast<float*>(bias_.data())));
    a.prim.execute(s, args);
  }
  if (!direct) dnnl::reorder(staged->memory(), mid.memory()).execute(s, staged->memory(), mid.memory());
  // Where `next` writes: src's reordered copy when it is the residual in next's output
  // layout (the sum post-op adds what is there), else its own output as run() does.
  const bool into_input = next.sum_ && residual == src && a.src_in && a.src == b.dst;
  onednn::CallMemory out =
      into_input ? onednn::CallMemory(in.memory()) : onednn::out_layout(user_dst, b.dst, b.dst_out);
  if (next.sum_ && !into_input) {
    memory user_residual(b.g.user_dst, eng, const_cast<float*>(residual));
    if (b.residual_in)
      b.residual_in->execute(s, user_residual, out.memory());
    else if (residual != dst)
      std::memcpy(dst, residual, b.g.user_dst.get_size());
  }
  onednn::CallMemory scratchpad(b.scratchpad);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mid.memory()},
                                       {DNNL_ARG_WEIGHTS, b.weights},
                                       {DNNL_ARG_DST, out.memory()},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad.memory()}};
  if (next.has_bias_) args.emplace(DNNL_ARG_BIAS, memory(b.g.user_bias, eng, const_cast<float*>(next.bias_.data())));
  b.prim.execute(s, args);
  if (b.dst_out) b.dst_out->execute(s, out.memory(), user_dst);  // (always there when into_input)
  s.wait();
}

std::string PackedConv::weight_format() const { return onednn::format_name(entry().weights.get_desc()); }

std::string PackedConv::describe() const {
  std::ostringstream os;
  os << "conv " << p_.batch << "x" << p_.in_channels << "x" << p_.in_h << "x" << p_.in_w << " -> " << p_.out_channels
     << " " << p_.kernel_h << "x" << p_.kernel_w;
  if (p_.groups != 1) os << " groups " << p_.groups;
  if (p_.channels_last) os << " nhwc";
  os << (has_bias_ ? " +bias" : "") << (sum_ ? " +sum" : "") << (relu_ ? " +relu" : "");
  return os.str();
}

int64_t PackedConv::packs() { return g_packs.load(std::memory_order_relaxed); }

}  // namespace ember::kernels::cpu
