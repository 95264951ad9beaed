// inductor/freezing.cpp — see freezing.h and Note [freezing] (docs/notes/inductor.md).
#include "inductor/freezing.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "aot/aot.h"
#include "core/shape.h"
#include "ember/config.h"
#include "ember/ops/creation.h"
#include "graph/interpreter.h"
#include "graph/rewrite.h"
#include "inductor/symbolic.h"
#include "kernels/cpu/autotune.h"
#include "ops/dispatch.h"
#include "support/logging.h"

namespace ember::inductor {

namespace {

std::atomic<int64_t> g_runs_packed{0}, g_runs_unpacked{0};

/// Whether every output of `n` is a defined tensor of static sizes on the CPU.
bool static_cpu_outputs(const Node& n) {
  if (n.meta().empty()) return false;
  for (const TensorMeta& m : n.meta())
    if (m.undefined || m.sym || m.device.type != DeviceType::CPU) return false;
  return true;
}

/// Every value `n` reads, in argument order.
std::vector<ValueRef> values_read(const Node& n) {
  std::vector<ValueRef> out;
  for (const Arg& a : n.args()) {
    if (a.kind == Arg::Kind::Value) out.push_back(a.value);
    if (a.kind == Arg::Kind::ValueList)
      for (const auto& v : a.values)
        if (v) out.push_back(*v);
  }
  return out;
}

/// The number of elements of `m`.
int64_t numel_of(const TensorMeta& m) { return core::numel_of(m.sizes); }

}  // namespace

std::string why_not_freezing(const Graph& g, const std::vector<Tensor>& examples, bool on_cuda) {
  if (!config().inductor.freezing) return "the knob inductor.freezing is off";
  const aot::GraphRole::Kind role = aot::current_graph_role().kind;
  if (role != aot::GraphRole::Kind::Inference)
    return std::string("it is a training graph's ") + (role == aot::GraphRole::Kind::Forward ? "forward" : "backward") +
           " (freezing applies to inference graphs: parameters that train are not constants)";
  if (on_cuda) return "it runs on a CUDA device (freezing packs weights for the CPU's oneDNN)";
  if (has_symbols(g)) return "it has size symbols (packed weights are made for fixed sizes)";
  const std::vector<Node*> inputs = g.inputs();
  if (examples.size() != inputs.size()) return "its example inputs do not match its inputs";
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->kind() != NodeKind::Attribute) continue;
    if (!examples[i].defined() || examples[i].is_fake())
      return "the value of parameter " + inputs[i]->target() + " is not known at compile time";
    any = true;
  }
  if (!any) return "it reads no module parameter";
  return "";
}

std::unique_ptr<Graph> freeze_parameters(const Graph& g, const std::vector<Tensor>& examples) {
  const std::vector<Node*> inputs = g.inputs();
  std::set<size_t> written;
  for (const aot::InputWrite& w : aot::current_graph_role().input_writes) written.insert(w.input);
  // Old graph's constant values: frozen parameters, the graph's constants, folded calls.
  std::map<const Node*, std::vector<Tensor>> values;
  std::map<std::string, const Node*> frozen_by_name;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->kind() == NodeKind::Attribute && !written.count(i)) {
      values[inputs[i]] = {examples[i].detach()};
      frozen_by_name[inputs[i]->name()] = inputs[i];
    }
  for (const auto& n : g.nodes())
    if (n->kind() == NodeKind::Constant) values[n.get()] = {g.constants().at(n->target())};
  std::function<const Tensor&(const ValueRef&)> value_of = [&](const ValueRef& v) -> const Tensor& {
    return values.at(v.node).at(v.index);
  };

  size_t folded = 0;
  std::map<const Node*, ValueRef> constant_of;  // frozen parameter -> its Constant node in the new graph
  auto rewritten = graph::rewrite(g, [&](const Node& n, const std::vector<Arg>& args, graph::GraphBuilder& b)
                                         -> std::optional<std::vector<ValueRef>> {
    const std::vector<ValueRef> reads = values_read(n);
    const bool all_constant = !reads.empty() && std::all_of(reads.begin(), reads.end(), [&](const ValueRef& v) {
      return values.count(v.node) > 0;
    });
    if (all_constant && !n.is_impure() && static_cpu_outputs(n)) {
      int64_t largest = 0;
      for (const ValueRef& v : reads) largest = std::max(largest, numel_of(v.node->meta().at(v.index)));
      bool small = true;
      for (const TensorMeta& m : n.meta()) small = small && numel_of(m) <= largest;
      if (small) {
        std::vector<Tensor> outs = graph::run_call_node(n, value_of);
        std::vector<ValueRef> refs;
        for (size_t o = 0; o < outs.size(); ++o)
          refs.push_back(b.constant(n.name() + (outs.size() > 1 ? "_" + std::to_string(o) : ""), outs[o].detach()));
        EMBER_LOG(inductor, DEBUG) << "freezing graph " << g.name() << ": %" << n.name() << " (" << n.target()
                                   << ") reads only constants; computed once and kept as a constant";
        values[&n] = std::move(outs);
        ++folded;
        return refs;
      }
    }
    // A call reading a parameter directly reads its Constant node instead (made at the
    // first such reader; later readers are redirected to it).
    bool reads_parameter = false;
    std::vector<graph::BuildArg> built;
    for (size_t i = 0; i < args.size(); ++i) {
      Arg a = args[i];
      auto swap = [&](ValueRef& v, const ValueRef& old) {
        auto f = frozen_by_name.find(v.node->name());
        if (v.node->kind() != NodeKind::Attribute || f == frozen_by_name.end()) return;
        auto c = constant_of.find(f->second);
        if (c == constant_of.end()) {
          c = constant_of.emplace(f->second, b.constant(f->second->target(), values.at(f->second)[0])).first;
          b.redirect(old, c->second);
        }
        v = c->second;
        reads_parameter = true;
      };
      if (a.kind == Arg::Kind::Value) swap(a.value, n.args()[i].value);
      if (a.kind == Arg::Kind::ValueList)
        for (size_t j = 0; j < a.values.size(); ++j)
          if (a.values[j]) swap(*a.values[j], *n.args()[i].values[j]);
      built.emplace_back(std::move(a));
    }
    if (!reads_parameter) return std::nullopt;
    Node* call = b.call_node(n.target(), std::move(built));
    std::vector<ValueRef> refs;
    for (uint32_t o = 0; o < call->num_outputs(); ++o) refs.push_back(call->out(o));
    return refs;
  });
  EMBER_LOG(inductor, INFO) << "freezing graph " << g.name() << ": " << frozen_by_name.size()
                            << " parameters taken as constants, " << folded << " calls folded into constants";
  return rewritten;
}

namespace {

/// The constant value `v` holds in `g`, or undefined.
Tensor constant_value(const Graph& g, const ValueRef& v) {
  if (v.node->kind() != NodeKind::Constant) return Tensor();
  auto it = g.constants().find(v.node->target());
  return it == g.constants().end() ? Tensor() : it->second;
}

/// Whether `m` is a defined float32 CPU tensor of static sizes.
bool is_float_cpu(const TensorMeta& m) {
  return !m.undefined && !m.sym && m.dtype == kFloat && m.device.type == DeviceType::CPU;
}

/// Whether `m` is row-major and dense.
bool contiguous(const TensorMeta& m) { return core::is_contiguous(m.sizes, m.strides); }

/// Whether `m` holds n values along its last dim, every other size 1 (a bias row).
bool is_row(const TensorMeta& m, int64_t n) {
  if (m.sizes.empty() || m.sizes.back() != n) return false;
  for (size_t d = 0; d + 1 < m.sizes.size(); ++d)
    if (m.sizes[d] != 1) return false;
  return true;
}

/// Whether argument `a` is a literal number equal to `v` (alpha, beta).
bool literal_is(const Arg& a, double v) {
  return a.kind == Arg::Kind::Literal && (a.literal.is_scalar() ? a.literal.to_scalar().to_double() == v
                                          : a.literal.is_double() || a.literal.is_int() ? a.literal.to_double() == v
                                                                                         : false);
}

/// The linear starting at GEMM `gemm` (mm or addmm with a constant weight), or nullopt.
std::optional<FrozenLinear> match_linear(const Graph& g, const Node& gemm,
                                         const std::map<const Node*, std::vector<Node*>>& users,
                                         const std::map<const Node*, size_t>& position, const Tensor*& weight,
                                         Tensor& bias, std::vector<kernels::cpu::LinearPostOp>& post_ops) {
  const bool addmm = gemm.target() == "aten::addmm";
  if (!addmm && gemm.target() != "aten::mm") return std::nullopt;
  const std::vector<Arg>& args = gemm.args();
  const size_t a_at = addmm ? 1 : 0;
  if (args[a_at].kind != Arg::Kind::Value || args[a_at + 1].kind != Arg::Kind::Value) return std::nullopt;
  const TensorMeta& out = gemm.meta()[0];
  const TensorMeta& am = args[a_at].value.node->meta()[args[a_at].value.index];
  if (!is_float_cpu(out) || !is_float_cpu(am) || out.sizes.size() != 2 || am.sizes.size() != 2) return std::nullopt;
  const int64_t m = out.sizes[0], n = out.sizes[1], k = am.sizes[1];
  if (m == 0 || n == 0 || k == 0) return std::nullopt;
  const Tensor w = constant_value(g, args[a_at + 1].value);
  if (!w.defined() || w.dtype() != kFloat || w.dim() != 2) return std::nullopt;
  weight = &g.constants().at(args[a_at + 1].value.node->target());
  // The left operand: rows or columns of unit stride (oneDNN's plain layouts).
  if (!(am.strides[1] == 1 || k == 1 || am.strides[0] == 1 || m == 1)) return std::nullopt;
  FrozenLinear l;
  l.chain.push_back(&gemm);
  l.input = args[a_at].value;
  bias = Tensor();
  post_ops.clear();
  if (addmm) {
    const Tensor b = constant_value(g, args[0].value);
    if (args[0].kind != Arg::Kind::Value || !b.defined() || b.dtype() != kFloat || b.dim() == 0 ||
        !is_row(args[0].value.node->meta()[0], n) || !literal_is(args[3], 1) || !literal_is(args[4], 1))
      return std::nullopt;
    bias = b;
  }
  // The epilogue: each step the single reader of the value before it.
  const size_t gemm_at = position.at(&gemm);
  const Node* cur = &gemm;
  size_t last_op = 0;  // chain length up to the last call that is not a view
  for (;;) {
    auto u = users.find(cur);
    if (u == users.end() || u->second.size() != 1) break;
    const Node& next = *u->second[0];
    if (next.kind() != NodeKind::Call || next.num_outputs() != 1) break;
    const TensorMeta& nm = next.meta()[0];
    if (!is_float_cpu(nm) || !contiguous(nm) || numel_of(nm) != m * n || nm.sizes.back() != n) break;
    const std::string& t = next.target();
    const ValueRef self = next.args()[0].kind == Arg::Kind::Value ? next.args()[0].value : ValueRef{};
    if (t == "aten::view" || t == "aten::_unsafe_view" || t == "aten::reshape") {
      if (self.node != cur) break;
      l.chain.push_back(&next);
      cur = &next;
      continue;
    }
    if (t == "aten::relu" || t == "aten::gelu") {
      if (self.node != cur) break;
      using Kind = kernels::cpu::LinearPostOp::Kind;
      Kind kind = Kind::Relu;
      if (t == "aten::gelu") {
        const std::string& approx = next.args()[1].literal.to_string_ref();
        if (approx != "none" && approx != "tanh") break;
        kind = approx == "tanh" ? Kind::GeluTanh : Kind::GeluErf;
      }
      post_ops.push_back({kind, false});
      l.chain.push_back(&next);
      cur = &next;
      last_op = l.chain.size();
      continue;
    }
    if (t == "aten::add.Tensor") {
      if (next.args()[1].kind != Arg::Kind::Value || !literal_is(next.args()[2], 1)) break;
      const ValueRef x = next.args()[0].value, y = next.args()[1].value;
      if ((x.node == cur) == (y.node == cur)) break;  // reads the chain once
      const ValueRef other = x.node == cur ? y : x;
      const TensorMeta& om = other.node->meta()[other.index];
      if (!is_float_cpu(om)) break;
      const Tensor c = constant_value(g, other);
      if (c.defined() && c.dim() > 0 && is_row(om, n)) {
        if (!bias.defined() && post_ops.empty()) {
          bias = c;  // the matmul's own bias
        } else {
          post_ops.push_back({kernels::cpu::LinearPostOp::Kind::Add, true});
          l.add_operands.push_back(other);
        }
      } else if (om.sizes == nm.sizes && contiguous(om) && om.storage_offset == 0 &&
                 position.at(other.node) < gemm_at) {
        // A full operand (a residual), computed before the GEMM, which runs at its position.
        post_ops.push_back({kernels::cpu::LinearPostOp::Kind::Add, false});
        l.add_operands.push_back(other);
      } else {
        break;
      }
      l.chain.push_back(&next);
      cur = &next;
      last_op = l.chain.size();
      continue;
    }
    break;
  }
  // Trailing views stay views of the result (they may feed readers outside).
  l.chain.resize(std::max<size_t>(last_op, 1));
  // The last value is the result; it has the GEMM's m x n values densely, row-major.
  const TensorMeta& rm = l.chain.back()->meta()[0];
  if (!contiguous(rm) || rm.storage_offset != 0) return std::nullopt;
  return l;
}

/// The values of constant `c` when it broadcasts one value per channel over an NCHW
/// output of `channels` channels (sizes [C, 1, 1] or [1, C, 1, 1]), else empty.
std::vector<float> per_channel(const Tensor& c, const TensorMeta& m, int64_t channels) {
  if (!c.defined() || c.dtype() != kFloat || c.numel() != channels || m.sizes.size() < 3 || m.sizes.size() > 4)
    return {};
  const size_t at = m.sizes.size() - 3;  // the channel dim, right-aligned with [N, C, H, W]
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d] != (d == at ? channels : 1)) return {};
  return c.contiguous().reshape({channels}).to_vector<float>();
}

/// The convolution starting at `conv` (aten::convolution, 2-D, not transposed, a constant
/// float32 weight) with its epilogue, or nullopt. The epilogue: per-channel multiplies and
/// adds of constants (batch norm in eval mode, as AOT decomposes it), folded into `weight`
/// and `bias`; then an add of a full value computed before the convolution, of the
/// output's sizes and strides (a residual: `sum`); then relu. Each step the single reader
/// of the value before it.
std::optional<FrozenLinear> match_conv(const Graph& g, const Node& conv,
                                       const std::map<const Node*, std::vector<Node*>>& users,
                                       const std::map<const Node*, size_t>& position, kernels::cpu::Conv2dParams& p,
                                       Tensor& weight, Tensor& bias, bool& sum, bool& relu) {
  if (conv.target() != "aten::convolution") return std::nullopt;
  const std::vector<Arg>& args = conv.args();
  if (args.size() != 9 || args[0].kind != Arg::Kind::Value || args[1].kind != Arg::Kind::Value) return std::nullopt;
  if (args[6].kind != Arg::Kind::Literal || args[6].literal.to_bool()) return std::nullopt;  // transposed
  const TensorMeta& out = conv.meta()[0];
  const TensorMeta& xm = args[0].value.node->meta()[args[0].value.index];
  if (!is_float_cpu(out) || !is_float_cpu(xm) || out.sizes.size() != 4 || xm.sizes.size() != 4) return std::nullopt;
  const Tensor w = constant_value(g, args[1].value);
  if (!w.defined() || w.dtype() != kFloat || w.dim() != 4) return std::nullopt;
  const bool nchw = contiguous(xm) && contiguous(out);
  const bool nhwc = core::is_channels_last_strides_2d(xm.sizes, xm.strides) &&
                    core::is_channels_last_strides_2d(out.sizes, out.strides) &&
                    core::strides_equivalent(xm.sizes, xm.strides, core::channels_last_strides(xm.sizes)) &&
                    core::strides_equivalent(out.sizes, out.strides, core::channels_last_strides(out.sizes));
  if ((!nchw && !nhwc) || xm.storage_offset != 0) return std::nullopt;
  const std::vector<int64_t>&stride = args[3].literal.to_int_list(), &pad = args[4].literal.to_int_list(),
                                &dil = args[5].literal.to_int_list();
  if (stride.size() != 2 || pad.size() != 2 || dil.size() != 2) return std::nullopt;
  p = kernels::cpu::Conv2dParams{};
  p.batch = xm.sizes[0];
  p.in_channels = xm.sizes[1];
  p.in_h = xm.sizes[2];
  p.in_w = xm.sizes[3];
  p.out_channels = out.sizes[1];
  p.kernel_h = w.size(2);
  p.kernel_w = w.size(3);
  p.out_h = out.sizes[2];
  p.out_w = out.sizes[3];
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.pad_h = pad[0];
  p.pad_w = pad[1];
  p.dilation_h = dil[0];
  p.dilation_w = dil[1];
  p.groups = args[8].literal.to_int();
  p.channels_last = !nchw;
  const int64_t oc = p.out_channels;
  if (p.batch == 0 || p.in_channels == 0 || oc == 0 || p.out_h == 0 || p.out_w == 0 || p.kernel_h == 0 ||
      p.kernel_w == 0 || p.groups < 1 || w.size(0) != oc || w.size(1) * p.groups != p.in_channels)
    return std::nullopt;
  std::vector<float> scale(static_cast<size_t>(oc), 1.0f), shift(static_cast<size_t>(oc), 0.0f);
  bool has_bias = false;
  if (args[2].kind == Arg::Kind::Value) {
    const Tensor b = constant_value(g, args[2].value);
    if (!b.defined() || b.dtype() != kFloat || b.numel() != oc) return std::nullopt;
    shift = b.contiguous().reshape({oc}).to_vector<float>();
    has_bias = true;
  } else if (!(args[2].kind == Arg::Kind::Literal && args[2].literal.is_none())) {
    return std::nullopt;
  }
  FrozenLinear l;
  l.chain.push_back(&conv);
  l.input = args[0].value;
  sum = relu = false;
  const size_t conv_at = position.at(&conv);
  const Node* cur = &conv;
  for (;;) {
    auto u = users.find(cur);
    if (u == users.end() || u->second.size() != 1 || relu) break;
    const Node& next = *u->second[0];
    if (next.kind() != NodeKind::Call || next.num_outputs() != 1) break;
    const TensorMeta& nm = next.meta()[0];
    if (!is_float_cpu(nm) || nm.sizes != out.sizes || !core::strides_equivalent(nm.sizes, nm.strides, out.strides))
      break;
    const std::string& t = next.target();
    const bool reads_cur = next.args()[0].kind == Arg::Kind::Value && next.args()[0].value.node == cur;
    if (t == "aten::relu") {
      if (!reads_cur) break;
      relu = true;
    } else if (t == "aten::mul.Tensor" || t == "aten::add.Tensor") {
      const bool add = t == "aten::add.Tensor";
      if (next.args()[1].kind != Arg::Kind::Value || (add && !literal_is(next.args()[2], 1))) break;
      const ValueRef x = next.args()[0].value, y = next.args()[1].value;
      if ((x.node == cur) == (y.node == cur)) break;  // reads the chain once
      const ValueRef other = x.node == cur ? y : x;
      const TensorMeta& om = other.node->meta()[other.index];
      if (!is_float_cpu(om)) break;
      const std::vector<float> c = per_channel(constant_value(g, other), om, oc);
      if (!c.empty() && !sum) {
        // Batch norm's affine map: folded into the weight (scale) and the bias (shift).
        for (size_t o = 0; o < c.size(); ++o) {
          if (add) {
            shift[o] += c[o];
          } else {
            scale[o] *= c[o];
            shift[o] *= c[o];
          }
        }
        has_bias = has_bias || add;
      } else if (add && !sum && om.sizes == out.sizes && core::strides_equivalent(om.sizes, om.strides, out.strides) &&
                 om.storage_offset == 0 && position.at(other.node) < conv_at) {
        // A residual computed before the convolution, which runs at its position.
        sum = true;
        l.add_operands.push_back(other);
      } else {
        break;
      }
    } else {
      break;
    }
    l.chain.push_back(&next);
    cur = &next;
  }
  const TensorMeta& rm = l.chain.back()->meta()[0];
  if (rm.storage_offset != 0) return std::nullopt;
  // The folded weight: each output channel's filter times its scale.
  std::vector<float> wv = w.contiguous().to_vector<float>();
  const size_t per_filter = wv.size() / static_cast<size_t>(oc);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] *= scale[i / per_filter];
  weight = tensor(wv, w.sizes());
  bias = has_bias ? tensor(shift, {oc}) : Tensor();
  return l;
}

}  // namespace

std::vector<FrozenLinear> plan_frozen_linears(const Graph& g, LoweredGraph& lowered) {
  const std::map<const Node*, std::vector<Node*>> users = g.users();
  std::map<const Node*, size_t> position;
  for (size_t i = 0; i < g.nodes().size(); ++i) position[g.nodes()[i].get()] = i;
  std::vector<FrozenLinear> out;
  std::set<const Node*> taken;
  for (const auto& node : g.nodes()) {
    if (node->kind() != NodeKind::Call || taken.count(node.get())) continue;
    const Tensor* weight = nullptr;
    Tensor bias;
    std::vector<kernels::cpu::LinearPostOp> post_ops;
    std::optional<FrozenLinear> l = match_linear(g, *node, users, position, weight, bias, post_ops);
    kernels::cpu::Conv2dParams cp;
    Tensor conv_weight;
    bool sum = false, relu = false;
    if (!l) l = match_conv(g, *node, users, position, cp, conv_weight, bias, sum, relu);
    if (!l) continue;
    try {
      if (node->target() == "aten::convolution") {
        l->conv = std::make_shared<kernels::cpu::PackedConv>(cp, conv_weight, bias, sum, relu);
      } else {
        const TensorMeta& am = l->input.node->meta()[l->input.index];
        const int64_t m = node->meta()[0].sizes[0], n = node->meta()[0].sizes[1], k = am.sizes[1];
        l->packed = std::make_shared<kernels::cpu::PackedLinear>(m, k, n, am.strides[0], am.strides[1], *weight, bias,
                                                                 post_ops);
      }
    } catch (const Error& e) {
      EMBER_LOG(inductor, INFO) << "freezing graph " << g.name() << ": %" << node->name() << " stays unpacked: "
                                << e.what();
      continue;
    }
    l->text = "%" + node->name() + ": " + (l->conv ? l->conv->describe() : l->packed->describe()) + ", weight " +
              (l->conv ? l->conv->weight_format() : l->packed->weight_format());
    std::string absorbed;
    for (size_t i = 1; i < l->chain.size(); ++i) {
      const Node* c = l->chain[i];
      taken.insert(c);
      lowered.roles[c] = NodeRole::Extern;
      lowered.pointwise.erase(c);
      absorbed += (i > 1 ? ", %" : "%") + c->name();
    }
    EMBER_LOG(inductor, INFO) << "freezing graph " << g.name() << ": " << node->target() << " " << l->text
                              << " packed once"
                              << (absorbed.empty() ? "" : "; its epilogue " + absorbed + " runs inside it")
                              << (l->conv && l->chain.size() > 1 ? " (per-channel scales and shifts folded into the "
                                                                   "weight and bias)"
                                                                 : "");
    out.push_back(std::move(*l));
  }
  // A frozen convolution whose result only a second frozen convolution reads (after its own
  // epilogue) runs with it as one step, the intermediate in oneDNN's layout (a ResNet
  // block's two convolutions); the second one's residual must be computed before the first.
  for (size_t i = 0; i < out.size(); ++i) {
    FrozenLinear& a = out[i];
    if (!a.conv || a.conv_next) continue;
    const Node* result = a.chain.back();
    auto u = users.find(result);
    if (u == users.end() || u->second.size() != 1) continue;
    for (size_t j = i + 1; j < out.size(); ++j) {
      FrozenLinear& b = out[j];
      if (!b.conv || b.conv_next || b.chain[0] != u->second[0] || b.input.node != result || b.input.index != 0 ||
          !a.conv->feeds(*b.conv))
        continue;
      bool before = true;
      for (const ValueRef& v : b.add_operands) before = before && position.at(v.node) < position.at(a.chain[0]);
      if (!before) continue;
      a.chain.insert(a.chain.end(), b.chain.begin(), b.chain.end());
      a.add_operands = b.add_operands;
      a.conv_next = b.conv;
      a.text += "; then " + b.text;
      EMBER_LOG(inductor, INFO) << "freezing graph " << g.name() << ": %" << a.chain[0]->name() << " and %"
                                << b.chain[0]->name() << " run as one step, the intermediate in oneDNN's layout";
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(j));
      break;
    }
  }
  return out;
}

namespace {

/// The chain's calls with their eager kernels, reading values outside it through `value_of`.
std::vector<std::vector<Tensor>> run_unpacked(const FrozenLinear& l,
                                              const std::function<const Tensor&(const ValueRef&)>& value_of) {
  std::vector<std::vector<Tensor>> outs;
  std::function<const Tensor&(const ValueRef&)> read = [&](const ValueRef& v) -> const Tensor& {
    for (size_t i = 0; i < outs.size(); ++i)
      if (l.chain[i] == v.node) return outs[i].at(v.index);
    return value_of(v);
  };
  for (const Node* n : l.chain) outs.push_back(graph::run_call_node(*n, read));
  return outs;
}

/// Whether tensor `t` has the layout recorded for value `v` (the primitive was made for it).
bool as_recorded(const Tensor& t, const ValueRef& v) {
  const TensorMeta& m = v.node->meta()[v.index];
  return t.defined() && t.dtype() == m.dtype && t.sizes() == IntArrayRef(m.sizes) &&
         core::strides_equivalent(m.sizes, t.strides(), m.strides);
}

/// Runs `l`'s packed primitive (a product's or a convolution's) from input `x` and the add
/// operands into `dst`.
void run_packed(const FrozenLinear& l, const Tensor& x, const std::vector<const float*>& operands, float* dst) {
  const float* src = static_cast<const float*>(x.raw_data_ptr());
  if (l.conv_next)
    l.conv->run_then(*l.conv_next, src, operands.empty() ? nullptr : operands[0], dst);
  else if (l.conv)
    l.conv->run(src, operands.empty() ? nullptr : operands[0], dst);
  else
    l.packed->run(src, operands, dst);
}

/// Per product, epilogue, operand layout and thread count: whether the packed primitive was
/// the faster. Timed once per process.
std::mutex g_choice_mu;
std::map<std::string, bool> g_choice;
std::optional<bool> g_forced;  // force_frozen_linear_choice, under g_choice_mu

}  // namespace

void run_frozen_linear(const FrozenLinear& l, const std::function<const Tensor&(const ValueRef&)>& value_of,
                       const std::function<void(const Node*, std::vector<Tensor>)>& bind) {
  const Tensor& x = value_of(l.input);
  bool packable = as_recorded(x, l.input);
  std::vector<const float*> operands;
  for (const ValueRef& v : l.add_operands) {
    const Tensor& t = value_of(v);
    packable = packable && as_recorded(t, v);
    if (packable) operands.push_back(static_cast<const float*>(t.raw_data_ptr()));
  }
  const TensorMeta& result = l.chain.back()->meta()[0];
  bool packed = packable;
  if (packable) {
    const TensorMeta& am = l.input.node->meta()[l.input.index];
    const std::string key = l.conv ? l.text + " threads " + std::to_string(omp_get_max_threads())
                                   : l.packed->describe() + " lda " + std::to_string(am.strides[0]) + "," +
                                         std::to_string(am.strides[1]) + " threads " +
                                         std::to_string(omp_get_max_threads());
    std::lock_guard lock(g_choice_mu);
    auto it = g_choice.find(key);
    if (g_forced) {
      packed = *g_forced;
    } else if (it == g_choice.end()) {
      // Both ways on this call's operands: the packed primitive into a scratch result, the
      // calls one by one (the GEMM on its own autotuned choice, gemm.cpp).
      Tensor scratch = ops::empty_from_meta(result);
      std::vector<std::function<void()>> runs = {
          [&] { run_packed(l, x, operands, static_cast<float*>(scratch.raw_data_ptr())); },
          [&] { (void)run_unpacked(l, value_of); }};
      std::vector<double> ms;
      const size_t best = kernels::cpu::fastest(runs, ms, 4, 100);
      it = g_choice.emplace(key, best == 0).first;
      EMBER_LOG_ARTIFACT(autotuning) << (l.conv ? "frozen convolution " : "frozen linear ")
                                     << (l.conv_next ? l.conv->describe() + "; then " + l.conv_next->describe()
                                         : l.conv    ? l.conv->describe()
                                                     : l.packed->describe())
                                     << " ("
                                     << omp_get_max_threads()
                                     << " threads): packed " << ms[0] << " ms, unpacked " << ms[1] << " ms -> "
                                     << (best == 0 ? "packed" : "unpacked");
    }
    if (!g_forced) packed = it->second;
  }
  if (packed) {
    Tensor out = ops::empty_from_meta(result);
    run_packed(l, x, operands, static_cast<float*>(out.raw_data_ptr()));
    g_runs_packed.fetch_add(1, std::memory_order_relaxed);
    bind(l.chain.back(), {std::move(out)});
    return;
  }
  std::vector<std::vector<Tensor>> outs = run_unpacked(l, value_of);
  g_runs_unpacked.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < outs.size(); ++i) bind(l.chain[i], std::move(outs[i]));
}

int64_t frozen_linear_runs(bool packed) { return (packed ? g_runs_packed : g_runs_unpacked).load(); }

void force_frozen_linear_choice(std::optional<bool> packed) {
  std::lock_guard lock(g_choice_mu);
  g_forced = packed;
}

}  // namespace ember::inductor
