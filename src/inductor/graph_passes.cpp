// inductor/graph_passes.cpp — inductor's passes over the graph it receives from the AOT
// stage, before lowering (PyTorch's post-grad passes), in order, and over a training
// graph's forward before the AOT stage traces its joint graph (run_training_graph_passes).
// Each pass is one function with its contract above it; run_graph_passes lists them. The result is what
// fx_graph_transformed.txt shows. See Note [inductor] (docs/notes/inductor.md).
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "aot/aot.h"
#include "aot/joint.h"
#include "core/shape.h"
#include "graph/rewrite.h"
#include "inductor/pipeline.h"
#include "inductor/symbolic.h"
#include "ops/registry.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

using graph::GraphBuilder;

/// Whether every user of `v`'s node is a node lowered as pointwise. `via_view` allows
/// reshapes in between that keep the last dim (`view`), whose users must then all be
/// pointwise too.
bool read_only_by_pointwise(const Node* n, const std::map<const Node*, std::vector<Node*>>& users, int64_t last,
                            bool via_view) {
  auto it = users.find(n);
  if (it == users.end() || it->second.empty()) return false;
  for (const Node* u : it->second) {
    if (u->kind() != NodeKind::Call) return false;
    // A view keeping the last dim: the bias's length, for every size.
    if (via_view && u->target() == "aten::view" && !u->meta().empty() && !u->meta()[0].sizes.empty() &&
        u->meta()[0].sizes.back() == last && sym_sizes_of(u->meta()[0]).back() == core::sym::Expr(last)) {
      if (!read_only_by_pointwise(u, users, last, false)) return false;
      continue;
    }
    if (!lowers_as_pointwise(*u)) return false;
  }
  return true;
}

/// Whether the compiler bisector lets `pass` rewrite `n`: each rewrite is one of its
/// decisions (Note [minifier]); a disabled one is logged.
bool pass_allows(const char* pass, const Node& n) {
  const std::string what = std::string(pass) + " on " + n.target() + " (%" + n.name() + ")";
  if (bisect_allows(BisectSubsystem::GraphPasses, what)) return true;
  EMBER_LOG(inductor, INFO) << "graph pass skipped: " << what << ": "
                            << bisect_disabled_reason(BisectSubsystem::GraphPasses);
  return false;
}

/// unfuse_bias_add_to_pointwise. Requires: a functional graph. Guarantees: an
/// `addmm(bias, a, b)` with beta = alpha = 1, a 1-d float bias over the result's last dim,
/// and only pointwise readers (directly, or through views keeping the last dim) becomes
/// `mm(a, b)` with `add(·, bias)` where it is read — after the view, in the reader's index
/// space — so the bias add fuses into the readers' kernel instead of being copied into the
/// GEMM's output first. Other nodes are unchanged. In a graph over size symbols, only an
/// addmm whose weight and bias are static: the new `mm`, `view` (its size list, over the
/// symbols, taken from the old view) and `add` get their geometry over the symbols from
/// their meta functions (the rows of `a` the only symbol).
std::unique_ptr<Graph> unfuse_bias_add_to_pointwise(const Graph& g, size_t* changed) {
  const auto users = g.users();
  std::set<const Node*> unfuse;
  const bool symbolic = has_symbols(g);
  auto static_value = [](const Arg& a) { return a.kind == Arg::Kind::Value && !has_symbols(a.value.node->meta()[a.value.index]); };
  for (const auto& n : g.nodes()) {
    if (n->target() != "aten::addmm") continue;
    if (symbolic && (!static_value(n->args()[0]) || !static_value(n->args()[2]))) continue;
    const auto& a = n->args();
    if (a[0].kind != Arg::Kind::Value || a[3].literal.to_scalar().to_double() != 1 ||
        a[4].literal.to_scalar().to_double() != 1)
      continue;
    const TensorMeta& bias = a[0].value.node->meta()[a[0].value.index];
    const TensorMeta& out = n->meta()[0];
    if (bias.sizes.size() != 1 || bias.sizes[0] != out.sizes.back() || bias.dtype != out.dtype) continue;
    if (out.dtype != kFloat && out.dtype != kDouble) continue;
    if (!read_only_by_pointwise(n.get(), users, out.sizes.back(), true)) continue;
    if (pass_allows("unfuse_bias_add_to_pointwise", *n)) unfuse.insert(n.get());
  }
  std::map<const Node*, ValueRef> mm_of;  // old addmm -> new mm
  std::map<const Node*, ValueRef> bias_of;
  return graph::rewrite(
      g,
      [&](const Node& n, const std::vector<Arg>& args, GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
        if (unfuse.count(&n)) {
          mm_of[&n] = b.call("aten::mm", {args[1].value, args[2].value});
          bias_of[&n] = args[0].value;
          // The add for direct readers; dead-code elimination drops it when only views read.
          return std::vector<ValueRef>{b.call("aten::add.Tensor", {mm_of[&n], bias_of[&n]})};
        }
        if (n.target() == "aten::view" && n.args()[0].kind == Arg::Kind::Value &&
            unfuse.count(n.args()[0].value.node)) {
          const Node* addmm = n.args()[0].value.node;
          ValueRef view = b.call("aten::view", {mm_of.at(addmm), args[1]});
          return std::vector<ValueRef>{b.call("aten::add.Tensor", {view, bias_of.at(addmm)})};
        }
        return std::nullopt;
      },
      changed);
}

/// Whether `n` is a training native_batch_norm that split_batch_norm_training rewrites: a
/// float input (f32/f64) on the CPU of rank >= 2 with static sizes, none of them 0, either
/// contiguous or a dense channels_last 4-D tensor, and parameters and running stats (each
/// optional) of its dtype. (The eager kernel's output has its input's memory format, and so
/// does the affine map's, which follows its input's strides; batch_norm_update_stats reads
/// either layout in place. Other strides would not give eager's layout.)
bool splittable_batch_norm(const Node& n) {
  if (n.target() != "aten::native_batch_norm" || has_symbols(n.meta()[0])) return false;
  const auto& a = n.args();
  if (a[0].kind != Arg::Kind::Value || a[5].kind != Arg::Kind::Literal || !a[5].literal.to_bool()) return false;
  const TensorMeta& x = a[0].value.node->meta()[a[0].value.index];
  if ((x.dtype != kFloat && x.dtype != kDouble) || x.sizes.size() < 2) return false;
  if (x.device.type != DeviceType::CPU) return false;  // batch_norm_update_stats is the CPU's
  const bool nhwc = x.sizes.size() == 4 && x.strides == core::channels_last_strides(x.sizes) &&
                    core::is_channels_last_strides_2d(x.sizes, x.strides);
  if (x.storage_offset != 0 || !(core::is_contiguous(x.sizes, x.strides) || nhwc)) return false;
  for (int64_t s : x.sizes)
    if (s == 0) return false;
  for (size_t i : {1, 2, 3, 4})
    if (a[i].kind == Arg::Kind::Value && a[i].value.node->meta()[a[i].value.index].dtype != x.dtype) return false;
  return true;
}

/// split_batch_norm_training. Requires: a functional graph. Guarantees: each training
/// `native_batch_norm(x, w, b, rm, rv, True, momentum, eps)` that splittable_batch_norm
/// accepts becomes `(mean, var) = batch_norm_update_stats(x, rm, rv, momentum)` — an
/// extern call, one pass over x that also updates the running stats as the eager kernel
/// does — then `invstd = rsqrt(var + eps)` (in double, as the eager kernel computes it) and
/// the eager kernel's affine map (aot::batch_norm_affine) as pointwise ops. The outputs
/// (normalized x, mean, invstd) are eager's: the mean bit for bit, invstd to a rounding.
/// The affine map then fuses into x's pointwise readers (relu, a residual add) instead of
/// the eager kernel writing the normalized tensor for them to read back: one pass over x
/// for the statistics and one for the normalized result. Other nodes are unchanged.
std::unique_ptr<Graph> split_batch_norm_training(const Graph& g, size_t* changed) {
  std::set<const Node*> split;
  for (const auto& n : g.nodes())
    if (splittable_batch_norm(*n) && pass_allows("split_batch_norm_training", *n)) split.insert(n.get());
  return graph::rewrite(
      g,
      [&](const Node& n, const std::vector<Arg>& a, GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
        if (!split.count(&n)) return std::nullopt;
        const ScalarType dtype = GraphBuilder::meta(a[0].value).dtype;
        Node* stats = b.call_node("aten::batch_norm_update_stats", {a[0].value, a[3], a[4], a[6]});
        ValueRef var{stats, 1};
        if (dtype != kDouble) var = b.call("aten::_to_copy", {var, IValue(kDouble)});
        ValueRef invstd = b.call("aten::rsqrt", {b.call("aten::add.Scalar", {var, a[7].literal.to_double()})});
        if (dtype != kDouble) invstd = b.call("aten::_to_copy", {invstd, IValue(dtype)});
        const ValueRef* weight = a[1].kind == Arg::Kind::Value ? &a[1].value : nullptr;
        const ValueRef* bias = a[2].kind == Arg::Kind::Value ? &a[2].value : nullptr;
        ValueRef mean{stats, 0};
        return std::vector<ValueRef>{aot::batch_norm_affine(b, a[0].value, weight, bias, mean, invstd), mean, invstd};
      },
      changed);
}


// --- fuse_attention -----------------------------------------------------------------------

/// The Call node producing argument `a`, or nullptr (a literal, an input, a constant).
const Node* producer(const Arg& a) {
  return a.kind == Arg::Kind::Value && a.value.node->kind() == NodeKind::Call ? a.value.node : nullptr;
}

/// Whether `n` has exactly one reader.
bool single_user(const Node* n, const std::map<const Node*, std::vector<Node*>>& users) {
  auto it = users.find(n);
  return it != users.end() && it->second.size() == 1;
}

/// One attention found by match_attention: the old graph's nodes that read q, k, v and the
/// mask (whose mapped arguments give the new graph's values), and what the flash op needs.
struct AttentionMatch {
  const Node* q_reader = nullptr;     // expand(q) or the reshape reading q
  const Node* k_reader = nullptr;     // transpose(k) / permute(k)
  const Node* v_reader = nullptr;     // expand(v) or the reshape reading v
  const Node* mask_reader = nullptr;  // where / masked_fill / add reading the mask (argument mask_arg)
  size_t mask_arg = 0;
  bool bool_mask = false;  // a mask that fills -inf where true (masked_fill / where.ScalarSelf)
  double scale = 1.0;
  std::string pattern;     // the pattern's name, for the log
};

/// Sizes as expressions over the graph's size symbols (constants in a static graph): the
/// matcher compares these, so one match serves every size of a symbolic graph.
using Sizes = std::vector<core::sym::Expr>;

/// The sizes of argument `a`'s value.
Sizes sizes_of(const Arg& a) { return sym_sizes_of(a.value.node->meta()[a.value.index]); }

/// Peels the reshapes a batched matmul puts around an operand: from the bmm's operand, a
/// view / _unsafe_view / reshape of a 4-D value [B, H, rows, cols], then any clones and
/// expands keeping those sizes, back to the value they read. Returns the outermost peeled
/// node (the one reading that value) and sets `sizes4`, or nullptr when the chain is
/// anything else. Every peeled node must have one reader.
const Node* peel_batch_reshape(const Arg& operand, const std::map<const Node*, std::vector<Node*>>& users,
                               Sizes* sizes4) {
  const Node* n = producer(operand);
  if (!n || !single_user(n, users)) return nullptr;
  const std::string& t = n->target();
  if (t != "aten::view" && t != "aten::_unsafe_view" && t != "aten::reshape") return nullptr;
  const Node* reader = n;
  const Arg* in = &n->args()[0];
  if (in->kind != Arg::Kind::Value) return nullptr;
  const Sizes sizes = sizes_of(*in);
  if (sizes.size() != 4) return nullptr;
  for (const Node* p = producer(*in); p && (p->target() == "aten::clone" || p->target() == "aten::expand");
       p = producer(*in)) {
    const Arg& pin = p->args()[0];
    if (!single_user(p, users) || pin.kind != Arg::Kind::Value || sizes_of(pin) != sizes) break;
    reader = p;
    in = &pin;
  }
  *sizes4 = sizes;
  return reader;
}

/// Whether a bmm's operand `operand`, [B*H, rows, cols], reshapes a 4-D [B, H, rows, cols]
/// value; sets `reader` (see peel_batch_reshape) and `sizes4`.
bool batch_operand(const Arg& operand, const std::map<const Node*, std::vector<Node*>>& users, const Node** reader,
                   Sizes* sizes4) {
  *reader = peel_batch_reshape(operand, users, sizes4);
  if (!*reader || operand.kind != Arg::Kind::Value) return false;
  const Sizes b3 = sizes_of(operand);
  return b3.size() == 3 && b3[0] == (*sizes4)[0] * (*sizes4)[1] && b3[1] == (*sizes4)[2] && b3[2] == (*sizes4)[3];
}

/// The literal double of argument `a`, if it is one.
std::optional<double> literal_number(const Arg& a) {
  if (a.kind != Arg::Kind::Literal) return std::nullopt;
  if (a.literal.is_double() || (a.literal.is_int() && !a.literal.is_sym_int())) return a.literal.to_double();
  if (a.literal.is_scalar()) {
    const Scalar sc = a.literal.to_scalar();
    if (sc.is_floating_point() || sc.is_integral()) return sc.to_double();
  }
  return std::nullopt;
}

/// Whether `m` (a mask's geometry) fits scores [B, H, L, S] as the flash op takes it:
/// rank 2 to 4, its last two sizes exactly L and S, every leading size 1 or the scores'.
bool mask_fits(const TensorMeta& m, const Sizes& scores) {
  const Sizes ms = sym_sizes_of(m);
  const size_t r = ms.size();
  if (r < 2 || r > 4 || ms[r - 2] != scores[2] || ms[r - 1] != scores[3]) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (ms[i] != core::sym::Expr(1) && ms[i] != scores[4 - r + i]) return false;
  return true;
}

/// Matches attention ending at `out`: out = view(bmm(P', V'), [B, H, L, Ev]) with
/// P' = reshape(softmax(X, -1)) and V' a reshape of v [B, H, S, Ev];
/// X = Y, where.ScalarSelf(mask, -inf, Y), masked_fill.Scalar(Y, mask, -inf) or
/// add.Tensor(Y, mask) (alpha 1); Y = Z, mul.Scalar(Z, s), mul.Tensor(Z, literal s),
/// div.Scalar(Z, d) or div.Tensor(Z, literal d); Z = view(bmm(Q', K'), [B, H, L, S]) with
/// Q' a reshape of q [B, H, L, E] and K' of transpose(k, -2, -1) (or permute [0, 1, 3, 2])
/// of k [B, H, S, E]. Every intermediate has one reader; float or double. Sizes are
/// compared as expressions over the size symbols, so a graph over them matches too.
std::optional<AttentionMatch> match_attention(const Node& out, const std::map<const Node*, std::vector<Node*>>& users) {
  if (out.target() != "aten::view" && out.target() != "aten::_unsafe_view") return std::nullopt;
  const TensorMeta& om = out.meta()[0];
  if (om.sizes.size() != 4 || (om.dtype != kFloat && om.dtype != kDouble)) return std::nullopt;
  if (om.device.type != DeviceType::CPU) return std::nullopt;
  const Node* bmm2 = producer(out.args()[0]);
  if (!bmm2 || bmm2->target() != "aten::bmm" || !single_user(bmm2, users)) return std::nullopt;
  AttentionMatch m;
  Sizes p4, v4, q4, kt4;
  const Node* p_reader = nullptr;
  if (!batch_operand(bmm2->args()[0], users, &p_reader, &p4) || !batch_operand(bmm2->args()[1], users, &m.v_reader, &v4))
    return std::nullopt;
  const Node* softmax = producer(p_reader->args()[0]);
  if (!softmax || softmax->target() != "aten::_softmax" || !single_user(softmax, users)) return std::nullopt;
  const int64_t dim = softmax->args()[1].literal.to_int();
  if ((dim != -1 && dim != 3) || softmax->args()[2].literal.to_bool()) return std::nullopt;
  const Sizes scores = sym_sizes_of(softmax->meta()[0]);
  if (scores.size() != 4 || scores != p4 || v4[0] != scores[0] || v4[1] != scores[1] || v4[2] != scores[3])
    return std::nullopt;
  // The mask.
  const Node* x = producer(softmax->args()[0]);
  if (!x || !single_user(x, users)) return std::nullopt;
  std::string mask_name = "no mask";
  const Node* y = x;
  auto mask_geometry = [&](const Arg& a) -> const TensorMeta* {
    return a.kind == Arg::Kind::Value ? &a.value.node->meta()[a.value.index] : nullptr;
  };
  const double ninf = -std::numeric_limits<double>::infinity();
  if (x->target() == "aten::where.ScalarSelf" && literal_number(x->args()[1]) == ninf) {
    const TensorMeta* mm = mask_geometry(x->args()[0]);
    if (!mm || mm->dtype != kBool || !mask_fits(*mm, scores)) return std::nullopt;
    m.mask_reader = x, m.mask_arg = 0, m.bool_mask = true, mask_name = "bool mask (masked_fill)";
    y = producer(x->args()[2]);
  } else if (x->target() == "aten::masked_fill.Scalar" && literal_number(x->args()[2]) == ninf) {
    const TensorMeta* mm = mask_geometry(x->args()[1]);
    if (!mm || mm->dtype != kBool || !mask_fits(*mm, scores)) return std::nullopt;
    m.mask_reader = x, m.mask_arg = 1, m.bool_mask = true, mask_name = "bool mask (masked_fill)";
    y = producer(x->args()[0]);
  } else if (x->target() == "aten::add.Tensor" && literal_number(x->args()[2]) == 1.0) {
    const TensorMeta* mm = mask_geometry(x->args()[1]);
    if (!mm || mm->dtype != om.dtype || !mask_fits(*mm, scores)) return std::nullopt;
    m.mask_reader = x, m.mask_arg = 1, mask_name = "additive mask";
    y = producer(x->args()[0]);
  }
  if (!y || (y != x && !single_user(y, users))) return std::nullopt;
  // The scale.
  std::string scale_name = "no scale";
  const Node* z = y;
  const std::string& yt = y->target();
  if (yt == "aten::mul.Scalar" || yt == "aten::mul.Tensor" || yt == "aten::div.Scalar" || yt == "aten::div.Tensor") {
    const std::optional<double> c = literal_number(y->args()[1]);
    if (!c || *c == 0) return std::nullopt;
    const bool div = yt.starts_with("aten::div");
    m.scale = div ? 1.0 / *c : *c;
    scale_name = div ? "scale (div)" : "scale (mul)";
    z = producer(y->args()[0]);
  }
  if (!z || (z != y && !single_user(z, users))) return std::nullopt;
  if (z->target() != "aten::view" && z->target() != "aten::_unsafe_view") return std::nullopt;
  if (sym_sizes_of(z->meta()[0]) != scores) return std::nullopt;
  const Node* bmm1 = producer(z->args()[0]);
  if (!bmm1 || bmm1->target() != "aten::bmm" || !single_user(bmm1, users)) return std::nullopt;
  const Node* kt_reader = nullptr;
  if (!batch_operand(bmm1->args()[0], users, &m.q_reader, &q4) || !batch_operand(bmm1->args()[1], users, &kt_reader, &kt4))
    return std::nullopt;
  // K' reads transpose(k, -2, -1): the node read by kt_reader.
  const Node* kt = producer(kt_reader->args()[0]);
  if (!kt || !single_user(kt, users)) return std::nullopt;
  bool transposed = false;
  if (kt->target() == "aten::transpose.int") {
    int64_t d0 = kt->args()[1].literal.to_int(), d1 = kt->args()[2].literal.to_int();
    d0 = d0 < 0 ? d0 + 4 : d0, d1 = d1 < 0 ? d1 + 4 : d1;
    transposed = std::min(d0, d1) == 2 && std::max(d0, d1) == 3;
  } else if (kt->target() == "aten::permute") {
    transposed = kt->args()[1].literal.to_int_list() == std::vector<int64_t>{0, 1, 3, 2};
  }
  if (!transposed) return std::nullopt;
  m.k_reader = kt;
  if (q4[0] != scores[0] || q4[1] != scores[1] || q4[2] != scores[2] || kt4[2] != q4[3] || kt4[3] != scores[3] ||
      v4[3] != sym_sizes_of(om)[3])
    return std::nullopt;
  for (const Node* n : {m.q_reader, m.k_reader, m.v_reader})
    if (n->args()[0].kind != Arg::Kind::Value) return std::nullopt;
  m.pattern = "matmul -> " + scale_name + " -> " + mask_name + " -> softmax -> matmul";
  return m;
}

/// fuse_attention. Requires: a functional graph. Guarantees: each attention that
/// match_attention finds — softmax(q @ k^T * scale (+ mask)) @ v written as the batched
/// matmuls, scale, mask and softmax of the AOT graph, in the forms PyTorch's inductor
/// matches with its _sfdp patterns — becomes one call of
/// `_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0, False, attn_mask, scale)`
/// (Note [flash attention]): an extern call of the fused kernel, no [L, S] scores in
/// memory. A bool mask filling -inf where true becomes the additive mask
/// `where(mask, -inf, 0)` of the scores' dtype; the kernel skips blocks whose mask is all
/// -inf (a causal mask). The fused op's output is laid out like q (Note [flash attention
/// layout]) where the view it replaces was contiguous: every node reading a value whose
/// strides so change has its output geometry from its meta function again (a transpose
/// back to [B, L, H, Ev] is then contiguous, and its .contiguous() no copy), and each graph
/// output whose strides changed gets the old ones back by a clone in their memory format.
/// Where that cannot be done (a node without a meta function reads a moved value, or an
/// old output's strides are neither contiguous nor channels_last), the fused op's output
/// is cloned contiguous instead and nothing after it moves (`keep_layout`). Other nodes are
/// unchanged (dead code elimination drops the replaced ones). Each match is logged on
/// `inductor` with its pattern and node. With `grad_values` (the nodes whose value may
/// require grad: a training graph's forward), a match whose mask is one of them is left
/// unfused.
std::unique_ptr<Graph> fuse_attention(const Graph& g, size_t* changed, const std::set<const Node*>* grad_values = nullptr,
                                      bool keep_layout = false) {
  const auto users = g.users();
  std::map<const Node*, AttentionMatch> matches;  // the final view -> its match
  std::map<const Node*, Arg> q_of, k_of, v_of, mask_of;  // readers -> the value they read (new graph)
  std::set<const Node*> readers;
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    std::optional<AttentionMatch> m = match_attention(*n, users);
    if (!m) continue;
    if (grad_values && m->mask_reader && grad_values->count(m->mask_reader->args()[m->mask_arg].value.node)) {
      EMBER_LOG(inductor, INFO) << "fuse_attention: pattern " << m->pattern << " at %" << n->name() << " (graph "
                                << g.name() << ") not fused: its mask may require grad, and the fused op has no "
                                << "gradient for it";
      continue;
    }
    if (!pass_allows("fuse_attention", *n)) continue;
    EMBER_LOG(inductor, INFO) << "fuse_attention: pattern " << m->pattern << " matched at %" << n->name()
                              << " (graph " << g.name() << "): replaced by _scaled_dot_product_flash_attention_for_cpu";
    for (const Node* r : {m->q_reader, m->k_reader, m->v_reader, m->mask_reader})
      if (r) readers.insert(r);
    matches.emplace(n.get(), std::move(*m));
  }
  std::map<const Node*, std::vector<Arg>> mapped;  // a reader's arguments in the new graph
  bool stuck = false;  // a node whose input strides moved but whose meta cannot be recomputed
  std::unique_ptr<Graph> out = graph::rewrite(
      g,
      [&](const Node& n, const std::vector<Arg>& args, GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
        if (readers.count(&n)) mapped[&n] = args;  // kept; dead code once the match is replaced
        auto it = matches.find(&n);
        if (it == matches.end()) {
          // A node reading a value whose strides the fused op changed: its geometry again
          // from its meta function (a view or a pointwise op follows its input's layout).
          if (!aot::arguments_moved(n, args)) return std::nullopt;
          if (!aot::geometry_recomputable(n)) {
            stuck = true;
            return std::nullopt;
          }
          Node* call = b.call_node(n.target(), std::vector<graph::BuildArg>(args.begin(), args.end()));
          // The .contiguous() after merging the heads back (a clone of the fused output or a
          // view of it, each its reader's only input) now copies a value already in its
          // layout: it reads that value instead, as PyTorch's remove_noop_ops drops a clone
          // whose input has its output's geometry.
          if (n.target() == "aten::clone" && args[0].kind == Arg::Kind::Value &&
              aot::same_layout(GraphBuilder::meta(args[0].value), call->meta()[0])) {
            const Node* in = n.args()[0].value.node;
            if (in->kind() == NodeKind::Call && single_user(in, users) && in->num_outputs() == 1 &&
                !matches.count(in) && !in->args().empty() && in->args()[0].kind == Arg::Kind::Value)
              in = in->args()[0].value.node;  // one view between the fused op and the clone
            if (matches.count(in) && single_user(in, users)) return std::vector<ValueRef>{args[0].value};
          }
          std::vector<ValueRef> values;
          for (uint32_t i = 0; i < n.num_outputs(); ++i) values.push_back(call->out(i));
          return values;
        }
        const AttentionMatch& m = it->second;
        const ValueRef q = mapped.at(m.q_reader)[0].value, k = mapped.at(m.k_reader)[0].value,
                       v = mapped.at(m.v_reader)[0].value;
        IValue none;
        graph::BuildArg mask(none);
        if (m.mask_reader) {
          ValueRef mv = mapped.at(m.mask_reader)[m.mask_arg].value;
          const ScalarType dtype = n.meta()[0].dtype;
          if (m.bool_mask) {
            mv = b.call("aten::where.Scalar", {mv, -std::numeric_limits<double>::infinity(), 0.0});
            if (dtype != GraphBuilder::meta(mv).dtype) mv = b.call("aten::_to_copy", {mv, IValue(dtype)});
          }
          mask = graph::BuildArg(mv);
        }
        Node* flash = b.call_node("aten::_scaled_dot_product_flash_attention_for_cpu",
                                  {q, k, v, 0.0, false, mask, m.scale});
        ValueRef y{flash, 0};
        if (keep_layout && !aot::same_layout(n.meta()[0], GraphBuilder::meta(y)))
          y = b.call("aten::clone", {y, IValue(std::string("contiguous_format"))});
        return std::vector<ValueRef>{y};
      },
      changed);
  if (keep_layout || (changed && *changed == 0)) return out;
  // The outputs get eager's strides back; where a clone cannot give them, nothing moves.
  if (stuck || !aot::restore_output_strides(*out, g)) {
    EMBER_LOG(inductor, INFO) << "fuse_attention (graph " << g.name() << "): the fused output keeps the contiguous "
                              << "layout (a node after it has no meta function, or an output's eager strides are "
                              << "neither contiguous nor channels_last)";
    return fuse_attention(g, changed, grad_values, true);
  }
  graph::verify(*out);
  return out;
}

/// The nodes of `g` whose value may require grad: the inputs `requires_grad` marks and
/// every call reading one of them (a superset: integral results are included).
std::set<const Node*> may_require_grad(const Graph& g, const std::vector<bool>& requires_grad) {
  std::set<const Node*> out;
  const std::vector<Node*> inputs = g.inputs();
  for (size_t i = 0; i < inputs.size() && i < requires_grad.size(); ++i)
    if (requires_grad[i]) out.insert(inputs[i]);
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    for (const Arg& a : n->args()) {
      bool reads = a.kind == Arg::Kind::Value && out.count(a.value.node);
      for (const auto& v : a.values) reads = reads || (v && out.count(v->node));
      if (reads) {
        out.insert(n.get());
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<Graph> run_training_graph_passes(const Graph& forward, const std::vector<bool>& requires_grad) {
  bisect_begin(BisectSubsystem::GraphPasses, forward.name());
  size_t attention = 0;
  const std::set<const Node*> grad_values = may_require_grad(forward, requires_grad);
  std::unique_ptr<Graph> fused = fuse_attention(forward, &attention, &grad_values);
  EMBER_LOG(inductor, DEBUG) << "training graph passes of " << forward.name() << ": fuse_attention rewrote "
                             << attention << " nodes";
  if (attention == 0) return nullptr;
  EMBER_LOG_ARTIFACT(post_grad_graphs) << "forward graph " << forward.name()
                                       << " after inductor's training graph passes (before its joint graph):\n"
                                       << *fused;
  return fused;
}

std::unique_ptr<Graph> run_graph_passes(const Graph& g) {
  bisect_begin(BisectSubsystem::GraphPasses, g.name());
  size_t attention = 0, unfused = 0, split = 0;
  std::unique_ptr<Graph> fused = fuse_attention(g, &attention);
  std::unique_ptr<Graph> unfused_graph = unfuse_bias_add_to_pointwise(*fused, &unfused);
  std::unique_ptr<Graph> out = split_batch_norm_training(*unfused_graph, &split);
  EMBER_LOG(inductor, DEBUG) << "graph passes of " << g.name() << ": fuse_attention rewrote " << attention
                             << " nodes, unfuse_bias_add_to_pointwise " << unfused << ", split_batch_norm_training "
                             << split;
  EMBER_LOG_ARTIFACT(post_grad_graphs) << "graph " << g.name() << " after inductor's graph passes:\n" << *out;
  return out;
}

}  // namespace ember::inductor
