// ops/spatial_meta.cpp — convolution, 2-D pooling and batch norm (and their backward ops)
// over SymInt in every dim, so a CNN traced with a dynamic image size keeps it symbolic.
//
// Their meta functions (conv.cpp, nn_backward.cpp) check their arguments over int64 sizes.
// The wrapper here runs those checks on stand-ins holding the example sizes (no size read
// through the symbolic-read hook, so nothing is specialized), repeats over SymInt the checks
// whose answer depends on a symbolic size (the input's channels against the weight's, the
// kernel inside the padded input, an output size of at least 1: guards where the ranges do
// not decide), and builds each output's geometry over the symbols with the formulas
// ATen's shape functions use (a convolution's `(in + 2p - d(k - 1) - 1)//s + 1`, pooling's
// pooling_output_shape with ceil_mode, a transposed convolution's
// `(in - 1)s - 2p + d(k - 1) + output_padding + 1`), in the layout the op's meta chose at
// the example sizes: a 3-D convolution's channels_last_3d rule (Note [3-D convolution])
// is evaluated over SymInt, batch norm's symbolic channels meet its per-channel tensors'
// (a guard); a symbolic weight (every input size symbolic under dynamic=true) enters the
// same formulas. What the rules do not cover (a symbolic size list, a
// layout the op's meta did not choose) runs the wrapped meta, which keeps a symbolic
// batch (batch_meta.cpp) and specializes the rest. See Note [dynamic shapes],
// "Convolution and pooling over SymInt".
#include <optional>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ops/conv_geometry.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace ember::ops {
namespace {

using core::SymInt;
using core::SymInts;

/// The rule of one op: its outputs over SymInt given the arguments and the outputs the op's
/// own meta gave for stand-ins at the example sizes; nullopt when the rule does not apply.
using GeometryRule =
    std::function<std::optional<std::vector<TensorMeta>>(const Stack& a, std::vector<TensorMeta> at_hints)>;

/// The pair an int[2] (or int[1], or, for a stride, empty) argument of a pooling op stands
/// for; `fallback` when empty.
std::pair<int64_t, int64_t> pair_of(const std::vector<int64_t>& v, std::pair<int64_t, int64_t> fallback) {
  if (v.empty()) return fallback;
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

/// `[a, b, ...]` of sizes over the symbols, for messages.
std::string sizes_text(const SymInts& sizes) {
  std::string t = "[";
  for (size_t i = 0; i < sizes.size(); ++i) t += (i ? ", " : "") + sizes[i].str();
  return t + "]";
}

/// One value per spatial dim (ATen's expand_param_if_needed).
int64_t param(const std::vector<int64_t>& v, size_t i) { return v.size() == 1 ? v[0] : v.at(i); }

/// `sizes` as a contiguous meta, or channels_last (4-D) or channels_last_3d (5-D), over the symbols.
TensorMeta sym_layout_meta(const SymInts& sizes, ScalarType dtype, Device device, bool channels_last) {
  if (!channels_last) return core::contiguous_sym_meta(sizes, dtype, device);
  return core::make_meta(sizes, core::sym_channels_last_strides(sizes), SymInt(0), dtype, device);
}

/// ATen's pooling_output_shape over SymInt (the argument checks ran at the example sizes).
SymInt sym_pooling_output_shape(const SymInt& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                                bool ceil_mode) {
  SymInt out = core::floordiv(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  // The last window must start inside the input (or its left padding).
  if (ceil_mode && (out - 1) * stride >= in + pad) out = out - 1;
  return out;
}

/// Whether every size of `m` has the example value of the same SymInt (a rule that
/// disagrees with the op's own meta at the example sizes is not used).
bool agrees(const SymInts& sizes, const TensorMeta& m) { return core::hints(sizes) == m.sizes; }

/// An output of the input's sizes over the symbols, laid out as the op's own meta laid it
/// out at the example sizes (contiguous or channels_last, as the input suggests); nullopt
/// when that layout is neither.
std::optional<TensorMeta> like_input(const Tensor& input, const TensorMeta& at_hints) {
  const SymInts sizes = core::sym_sizes(input);
  for (bool channels_last : {false, true}) {
    if (channels_last && sizes.size() != 4 && sizes.size() != 5) continue;
    TensorMeta m = sym_layout_meta(sizes, at_hints.dtype, at_hints.device, channels_last);
    if (m.sizes == at_hints.sizes && m.strides == at_hints.strides) return m;
  }
  return std::nullopt;
}

/// Note [3-D convolution]'s layout rule over SymInt: a 3-D convolution's result and its
/// gradients are channels_last_3d when the input or the weight suggests it and oneDNN
/// would run it: bfloat16, or float32 with groups > 1, the kernel's last two dims both
/// above 3, a batch above 1 (a size symbol always is: its range starts at 2) or N·C·D·H
/// above 20480 (a guard where the ranges do not decide); transposed, no output_padding of
/// at least its stride. On CUDA cuDNN's rule: no size enters. Other ranks: conv_channels_last,
/// but on CUDA not for a transposed convolution with an output_padding of at least its stride.
bool sym_conv_channels_last(const Tensor& input, const Tensor& weight, const IValue& stride, bool transposed,
                            const IValue& output_padding, int64_t groups) {
  if (!conv_channels_last(input, weight)) return false;
  const bool three_d = input.dim() == 5;
  if (transposed && (three_d || input.is_cuda())) {  // and Note [channels_last transposed convolution on CUDA]
    const auto &s = stride.to_int_list(), &op = output_padding.to_int_list();
    for (size_t i = 0; i + 2 < static_cast<size_t>(input.dim()); ++i)
      if (param(op, i) >= param(s, i)) return false;
  }
  if (!three_d || input.is_cuda() || input.dtype() == kBFloat16) return true;
  if (input.dtype() != kFloat) return false;
  const SymInts in = core::sym_sizes(input), w = core::sym_sizes(weight);
  return groups > 1 || (w[3] > 3 && w[4] > 3) || in[0] > 1 || in[0] * in[1] * in[2] * in[3] > 20480;
}

/// `m` over the symbols when its example strides are those the op's own meta gave
/// (`at_hints`); nullopt when a rule and the op's meta disagree on the layout.
std::optional<TensorMeta> if_same_layout(TensorMeta m, const TensorMeta& at_hints) {
  if (m.sizes != at_hints.sizes || m.strides != at_hints.strides) return std::nullopt;
  return m;
}

/// A transposed convolution: weight [C_in, C_out / groups, k...], each spatial size
/// ATen's `(in - 1)s - 2p + d(k - 1) + output_padding + 1`, in the layout `channels_last`.
std::optional<std::vector<TensorMeta>> transposed_convolution_rule(const Stack& a, std::vector<TensorMeta> out,
                                                                   bool channels_last) {
  const Tensor& input = a[0].to_tensor();
  const SymInts in = core::sym_sizes(input), w = core::sym_sizes(a[1].to_tensor());
  const int64_t groups = a[8].to_int();
  const auto &stride = a[3].to_int_list(), &padding = a[4].to_int_list(), &dilation = a[5].to_int_list();
  const auto& output_padding = a[7].to_int_list();
  // What conv_transpose_setup checked at the example sizes and depends on a symbolic size.
  EMBER_CHECK(in[1] == w[0]) << "Given transposed=1, weight of size " << sizes_text(w) << ", expected input to have "
                             << w[0].str() << " channels, but got " << in[1].str() << " channels instead";
  SymInts sizes{in[0], w[1] * groups};
  for (size_t i = 0; i + 2 < w.size(); ++i) {
    const int64_t s = param(stride, i), p = param(padding, i), d = param(dilation, i);
    const SymInt size = (in[i + 2] - 1) * s - 2 * p + d * (w[i + 2] - 1) + param(output_padding, i) + 1;
    EMBER_CHECK(size >= 1) << "Given input size per channel: (" << in[i + 2].str()
                           << "). Calculated output size per channel: (" << size.str() << "). Output size is too small";
    sizes.push_back(size);
  }
  std::optional<TensorMeta> m =
      if_same_layout(sym_layout_meta(sizes, out[0].dtype, out[0].device, channels_last), out[0]);
  if (!m) return std::nullopt;
  out[0] = *m;
  return out;
}

std::optional<std::vector<TensorMeta>> convolution_rule(const Stack& a, std::vector<TensorMeta> out) {
  const Tensor& input = a[0].to_tensor();
  const Tensor& weight = a[1].to_tensor();
  const int64_t groups = a[8].to_int();
  const bool channels_last = sym_conv_channels_last(input, weight, a[3], a[6].to_bool(), a[7], groups);
  if (a[6].to_bool()) return transposed_convolution_rule(a, std::move(out), channels_last);
  const SymInts in = core::sym_sizes(input), w = core::sym_sizes(weight);
  const auto &stride = a[3].to_int_list(), &padding = a[4].to_int_list(), &dilation = a[5].to_int_list();
  // What conv_setup checked at the example sizes and depends on a symbolic size.
  EMBER_CHECK(in[1] == w[1] * groups) << "Given groups=" << groups << ", weight of size " << sizes_text(w)
                                      << ", expected input to have " << (w[1] * groups).str()
                                      << " channels, but got " << in[1].str() << " channels instead";
  SymInts sizes{in[0], w[0]};
  for (size_t i = 0; i + 2 < w.size(); ++i) {
    const int64_t s = param(stride, i), p = param(padding, i), d = param(dilation, i);
    const SymInt extent = (w[i + 2] - 1) * d + 1;
    EMBER_CHECK(in[i + 2] + 2 * p >= extent) << "Calculated padded input size per channel: ("
                                             << (in[i + 2] + 2 * p).str() << "). Kernel size: (" << extent.str()
                                             << "). Kernel size can't be greater than actual input size";
    sizes.push_back(core::floordiv(in[i + 2] + 2 * p - extent, s) + 1);
  }
  std::optional<TensorMeta> m =
      if_same_layout(sym_layout_meta(sizes, out[0].dtype, out[0].device, channels_last), out[0]);
  if (!m) return std::nullopt;
  out[0] = *m;
  return out;
}

std::optional<std::vector<TensorMeta>> convolution_backward_rule(const Stack& a, std::vector<TensorMeta> out) {
  const Tensor& input = a[1].to_tensor();
  const Tensor& weight = a[2].to_tensor();
  // grad_input has the input's sizes in the forward's layout, grad_weight the weight's
  // geometry (its own layout, as the op's meta chose it), grad_bias [C_out].
  const bool channels_last = sym_conv_channels_last(input, weight, a[4], a[7].to_bool(), a[8], a[9].to_int());
  if (!out[0].undefined) {
    std::optional<TensorMeta> m =
        if_same_layout(sym_layout_meta(core::sym_sizes(input), out[0].dtype, out[0].device, channels_last), out[0]);
    if (!m) return std::nullopt;
    out[0] = *m;
  }
  if (!core::is_symbolic(weight)) return out;
  if (out.size() > 1 && !out[1].undefined) {
    std::optional<TensorMeta> m = like_input(weight, out[1]);
    if (!m) return std::nullopt;
    out[1] = *m;
  }
  if (out.size() > 2 && !out[2].undefined) {
    const SymInt out_channels = core::sym_size(weight, a[7].to_bool() ? 1 : 0) * (a[7].to_bool() ? a[9].to_int() : 1);
    if (out[2].sizes.size() != 1 || out[2].sizes[0] != out_channels.hint()) return std::nullopt;
    out[2] = core::contiguous_sym_meta({out_channels}, out[2].dtype, out[2].device);
  }
  return out;
}

/// max_pool2d_with_indices (dilation given) and avg_pool2d (dilation 1): both outputs'
/// sizes, the leading dims of self then the pooled ones.
std::optional<std::vector<TensorMeta>> pool_rule(const Stack& a, std::vector<TensorMeta> out, bool max) {
  const Tensor& self = a[0].to_tensor();
  const auto kernel = pair_of(a[1].to_int_list(), {0, 0});
  const auto stride = pair_of(a[2].to_int_list(), kernel);
  const auto pad = pair_of(a[3].to_int_list(), {0, 0});
  const auto dilation = max ? pair_of(a[4].to_int_list(), {1, 1}) : std::pair<int64_t, int64_t>{1, 1};
  const bool ceil_mode = a[max ? 5 : 4].to_bool();
  SymInts sizes = core::sym_sizes(self);
  const SymInt in_h = sizes[sizes.size() - 2], in_w = sizes[sizes.size() - 1];
  const SymInt out_h = sym_pooling_output_shape(in_h, kernel.first, pad.first, stride.first, dilation.first, ceil_mode);
  const SymInt out_w =
      sym_pooling_output_shape(in_w, kernel.second, pad.second, stride.second, dilation.second, ceil_mode);
  EMBER_CHECK(out_h >= 1 && out_w >= 1) << "Given input size: (" << in_h.str() << "x" << in_w.str()
                                        << "). Calculated output size: (" << out_h.str() << "x"
                                        << out_w.str() << "). Output size is too small";
  sizes[sizes.size() - 2] = out_h;
  sizes[sizes.size() - 1] = out_w;
  for (const TensorMeta& m : out)
    if (!agrees(sizes, m)) return std::nullopt;
  // Note [channels_last max pooling] (ops/conv.cpp): max pooling follows its input's memory format.
  const bool nhwc = max && sizes.size() == 4 && suggests_channels_last(self);
  for (TensorMeta& m : out) m = nhwc ? sym_layout_meta(sizes, m.dtype, m.device, true)
                                     : core::contiguous_sym_meta(sizes, m.dtype, m.device);
  return out;
}

std::optional<std::vector<TensorMeta>> adaptive_pool_rule(const Stack& a, std::vector<TensorMeta> out) {
  if (a[1].is_sym_int_list()) return std::nullopt;
  SymInts sizes = core::sym_sizes(a[0].to_tensor());
  const std::vector<int64_t>& size = a[1].to_int_list();
  sizes[sizes.size() - 2] = size[0];
  sizes[sizes.size() - 1] = size[1];
  if (!agrees(sizes, out[0])) return std::nullopt;
  out[0] = core::contiguous_sym_meta(sizes, out[0].dtype, out[0].device);
  return out;
}

/// A pooling backward op: the gradient has self's sizes (argument 1), contiguous.
std::optional<std::vector<TensorMeta>> like_self_rule(const Stack& a, std::vector<TensorMeta> out) {
  out[0] = core::contiguous_sym_meta(core::sym_sizes(a[1].to_tensor()), out[0].dtype, out[0].device);
  return out;
}

/// native_batch_norm (input at 0) and native_batch_norm_backward (input at 1): the
/// normalized output or grad_input has the input's geometry; the per-channel outputs are
/// [C] over the input's channels (symbolic or not).
std::optional<std::vector<TensorMeta>> batch_norm_rule(const Stack& a, std::vector<TensorMeta> out, size_t input_at) {
  const Tensor& input = a[input_at].to_tensor();
  const SymInts sizes = core::sym_sizes(input);
  if (sizes.size() < 2) return std::nullopt;
  if (sizes[1].is_symbolic()) {
    // Symbolic channels meet every per-channel tensor's (weight, bias, running or saved
    // stats after the input), as the op's meta checked at the example sizes: the same
    // symbol (dynamic=true gives equal sizes one), or a guard. Without any (no affine
    // parameters, no running stats: _native_batch_norm_legit.no_stats) there is nothing to meet.
    for (size_t i = input_at + 1; i < a.size(); ++i) {
      if (!a[i].is_tensor() || a[i].to_tensor().dim() != 1) continue;
      const SymInt channels = core::sym_size(a[i].to_tensor(), 0);
      EMBER_CHECK(sizes[1] == channels) << "expected input with " << channels.str() << " channels, got "
                                        << sizes[1].str();
    }
    // The per-channel outputs ([C] at the example sizes; [0] where evaluation saves none)
    // over the channels' symbol.
    for (size_t o = 1; o < out.size(); ++o) {
      if (out[o].undefined || out[o].sizes.size() != 1 || out[o].sizes[0] == 0 || out[o].sizes[0] != sizes[1].hint())
        continue;
      out[o] = core::contiguous_sym_meta({sizes[1]}, out[o].dtype, out[o].device);
    }
  }
  if (out[0].undefined) return out;
  std::optional<TensorMeta> m = like_input(input, out[0]);
  if (!m) return std::nullopt;
  out[0] = *m;
  return out;
}

struct GeometryRow {
  const char* op;
  GeometryRule rule;
};

const std::vector<GeometryRow>& geometry_rows() {
  static const std::vector<GeometryRow> rows = {
      {"aten::convolution", convolution_rule},
      {"aten::convolution_backward", convolution_backward_rule},
      {"aten::max_pool2d_with_indices", [](const Stack& a, auto out) { return pool_rule(a, std::move(out), true); }},
      {"aten::avg_pool2d", [](const Stack& a, auto out) { return pool_rule(a, std::move(out), false); }},
      {"aten::_adaptive_avg_pool2d", adaptive_pool_rule},
      {"aten::max_pool2d_with_indices_backward", like_self_rule},
      {"aten::avg_pool2d_backward", like_self_rule},
      {"aten::_adaptive_avg_pool2d_backward", like_self_rule},
      {"aten::native_batch_norm", [](const Stack& a, auto out) { return batch_norm_rule(a, std::move(out), 0); }},
      {"aten::native_batch_norm_backward",
       [](const Stack& a, auto out) { return batch_norm_rule(a, std::move(out), 1); }},
  };
  return rows;
}

MetaFn with_symbolic_geometry(MetaFn meta, GeometryRule rule) {
  return [meta = std::move(meta), rule = std::move(rule)](const Stack& a) -> std::vector<TensorMeta> {
    bool symbolic = false;
    for (const IValue& v : a) {
      if (v.is_sym_int() || v.is_sym_int_list()) return meta(a);  // a symbolic size list: the op's own meta
      symbolic = symbolic || (v.is_tensor() && core::is_symbolic(v.to_tensor()));
    }
    if (!symbolic) return meta(a);
    for (const IValue& v : a)
      if (v.is_tensor() && core::is_symbolic(v.to_tensor()) &&
          core::ShapeEnv::has_unbacked(core::sym_numel(v.to_tensor()).expr())) {
        return meta(a);  // a data-dependent size has no example value to check at
      }
    Stack at_hints = a;
    for (IValue& v : at_hints)
      if (v.is_tensor() && core::is_symbolic(v.to_tensor())) v = IValue(without_symbols(v.to_tensor()));
    std::vector<TensorMeta> out = meta(at_hints);  // the op's checks, dtypes and layout at the example sizes
    if (std::optional<std::vector<TensorMeta>> symbolic_out = rule(a, std::move(out))) return *symbolic_out;
    return meta(a);
  };
}

}  // namespace

void register_symbolic_geometry(Registry& r) {
  for (const GeometryRow& row : geometry_rows()) {
    OpDef& op = r.edit(row.op);
    EMBER_INTERNAL_ASSERT(op.meta) << row.op << ": a symbolic geometry row for an op without a meta function";
    op.meta = with_symbolic_geometry(op.meta, row.rule);
  }
}

}  // namespace ember::ops
