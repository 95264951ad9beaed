// inductor/graph_passes.cpp — inductor's passes over the graph it receives from the AOT
// stage, before lowering (PyTorch's post-grad passes), in order. Each pass is one function
// with its contract above it; run_graph_passes lists them. The result is what
// fx_graph_transformed.txt shows. See Note [inductor] (docs/notes/inductor.md).
#include <map>
#include <set>

#include "aot/aot.h"
#include "core/shape.h"
#include "graph/rewrite.h"
#include "inductor/pipeline.h"
#include "inductor/symbolic.h"
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

}  // namespace

std::unique_ptr<Graph> run_graph_passes(const Graph& g) {
  bisect_begin(BisectSubsystem::GraphPasses, g.name());
  size_t unfused = 0, split = 0;
  std::unique_ptr<Graph> unfused_graph = unfuse_bias_add_to_pointwise(g, &unfused);
  std::unique_ptr<Graph> out = split_batch_norm_training(*unfused_graph, &split);
  EMBER_LOG(inductor, DEBUG) << "graph passes of " << g.name() << ": unfuse_bias_add_to_pointwise rewrote " << unfused
                             << " nodes, split_batch_norm_training " << split;
  EMBER_LOG_ARTIFACT(post_grad_graphs) << "graph " << g.name() << " after inductor's graph passes:\n" << *out;
  return out;
}

}  // namespace ember::inductor
