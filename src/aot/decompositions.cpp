// aot/decompositions.cpp — the decomposition table: ops the code generator should see as
// simpler ops, one row each (op, when, into, how). A row's function builds the
// replacement with a GraphBuilder from the node's mapped arguments, or declines (nullopt)
// when its condition does not hold. Contract in aot/aot.h; see Note [aot] (docs/notes/aot.md).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "aot/aot.h"
#include "core/sym_geometry.h"
#include "graph/rewrite.h"
#include "ops/registry.h"

namespace ember::aot {
namespace {

using graph::GraphBuilder;
using Values = std::optional<std::vector<ValueRef>>;
using DecompFn = std::function<Values(const Node& n, const std::vector<Arg>& args, GraphBuilder& b)>;

struct Row {
  const char* op;
  const char* when;
  const char* into;
  DecompFn fn;
  /// Whether autograd through the replacement gives the op's own gradient; a row that does
  /// not is left out of graphs prepared for a joint trace.
  bool same_gradient = true;
};

bool is_float(ScalarType t) { return t == kFloat || t == kDouble; }

const TensorMeta& meta_of(const Arg& a) { return GraphBuilder::meta(a.value); }
bool is_value(const Arg& a) { return a.kind == Arg::Kind::Value; }

/// Whether a size, stride or the offset of `m` is still a symbol's expression (a backend
/// may have specialized them since the trace). A replacement's nodes get their geometry
/// from meta functions run at the example sizes, so a node over symbols keeps its op.
bool symbolic_geometry(const TensorMeta& m) {
  if (!m.sym) return false;
  auto symbolic = [](const core::SymInt& s) { return core::current(s).is_symbolic(); };
  return std::any_of(m.sym->sizes.begin(), m.sym->sizes.end(), symbolic) ||
         std::any_of(m.sym->strides.begin(), m.sym->strides.end(), symbolic) || symbolic(m.sym->storage_offset);
}

/// Whether each value standing for an output of `n` has that output's strides (on every
/// dim longer than 1) and offset.
bool same_layout(const Node& n, const std::vector<ValueRef>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].node || n.meta()[i].undefined) continue;
    const TensorMeta& want = n.meta()[i];
    const TensorMeta& got = GraphBuilder::meta(values[i]);
    if (got.storage_offset != want.storage_offset) return false;
    for (size_t d = 0; d < want.sizes.size(); ++d)
      if (want.sizes[d] > 1 && got.strides[d] != want.strides[d]) return false;
  }
  return true;
}

/// Whether only output 0 of `n` is read by `users`.
bool only_output0_used(const Node& n, const std::map<const Node*, std::vector<Node*>>& users) {
  auto it = users.find(&n);
  if (it == users.end()) return true;
  for (const Node* u : it->second)
    for (const Arg& a : u->args()) {
      if (a.kind == Arg::Kind::Value && a.value.node == &n && a.value.index != 0) return false;
      if (a.kind == Arg::Kind::ValueList)
        for (const auto& v : a.values)
          if (v && v->node == &n && v->index != 0) return false;
    }
  return true;
}

/// native_batch_norm in eval mode is an affine map per channel, as the eager kernel
/// computes it (kernels/cpu/norm.cpp): alpha = rsqrt(var + eps) * weight, beta = bias -
/// mean * alpha, out = x * alpha + beta, alpha and beta viewed as [C, 1, ...].
Values batch_norm_eval(const Node& n, const std::vector<Arg>& a, GraphBuilder& b,
                       const std::map<const Node*, std::vector<Node*>>& users) {
  if (a[5].literal.to_bool() || !is_value(a[0]) || !is_value(a[3]) || !is_value(a[4])) return std::nullopt;
  if (!only_output0_used(n, users)) return std::nullopt;
  const TensorMeta& x = meta_of(a[0]);
  if (!is_float(x.dtype) || x.sizes.size() < 2) return std::nullopt;
  for (size_t i : {1, 2, 3, 4})
    if (is_value(a[i]) && meta_of(a[i]).dtype != x.dtype) return std::nullopt;
  const double eps = a[7].literal.to_double();
  ValueRef invstd = b.call("aten::rsqrt", {b.call("aten::add.Scalar", {a[4].value, eps})});
  const ValueRef* weight = is_value(a[1]) ? &a[1].value : nullptr;
  const ValueRef* bias = is_value(a[2]) ? &a[2].value : nullptr;
  return std::vector<ValueRef>{batch_norm_affine(b, a[0].value, weight, bias, a[3].value, invstd), ValueRef{},
                               ValueRef{}};
}

/// masked_fill(self, mask, value) = where(mask, value, self) when the result keeps self's
/// floating dtype (where's type promotion would otherwise differ) and the mask is bool
/// (masked_fill rejects a uint8 mask, which where accepts: a graph not made by capture may
/// hold one).
Values masked_fill(const Node& n, const std::vector<Arg>& a, GraphBuilder& b) {
  if (!is_value(a[0]) || !is_value(a[1]) || !is_float(meta_of(a[0]).dtype) || meta_of(a[1]).dtype != kBool)
    return std::nullopt;
  if (n.target() == "aten::masked_fill.Scalar")
    return std::vector<ValueRef>{b.call("aten::where.ScalarSelf", {a[1].value, a[2].literal, a[0].value})};
  if (!is_value(a[2]) || meta_of(a[2]).dtype != meta_of(a[0]).dtype || !meta_of(a[2]).sizes.empty())
    return std::nullopt;
  return std::vector<ValueRef>{b.call("aten::where.self", {a[1].value, a[2].value, a[0].value})};
}

/// softmax / log_softmax over a dim other than the last (the last is one row kernel):
/// x - amax(x), exp, sum, divide (or subtract the log of the sum), as ATen's decomposition.
Values softmax_other_dim(const Node& n, const std::vector<Arg>& a, GraphBuilder& b) {
  if (!is_value(a[0]) || a[2].literal.to_bool()) return std::nullopt;
  const TensorMeta& x = meta_of(a[0]);
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  int64_t dim = a[1].literal.to_int();
  if (dim < 0) dim += rank;
  if (!is_float(x.dtype) || rank == 0 || dim == rank - 1) return std::nullopt;
  for (int64_t s : x.sizes)
    if (s == 0) return std::nullopt;
  ValueRef shifted = b.call("aten::sub.Tensor", {a[0].value, b.call("aten::amax", {a[0].value, std::vector<int64_t>{dim}, true})});
  ValueRef e = b.call("aten::exp", {shifted});
  ValueRef sum = b.call("aten::sum.dim_IntList", {e, std::vector<int64_t>{dim}, true});
  if (n.target() == "aten::_softmax") return std::vector<ValueRef>{b.call("aten::div.Tensor", {e, sum})};
  return std::vector<ValueRef>{b.call("aten::sub.Tensor", {shifted, b.call("aten::log", {sum})})};
}

/// linalg_vector_norm over float or double without a dtype argument, as its eager kernel
/// computes it (ops/reduction.cpp, Note [vector norm]): the op exists for its gradient,
/// the code generator fuses the formula.
Values vector_norm(const Node&, const std::vector<Arg>& a, GraphBuilder& b) {
  if (!is_value(a[0]) || !is_float(meta_of(a[0]).dtype) || !a[4].literal.is_none()) return std::nullopt;
  const double ord = a[1].literal.to_scalar().to_double();
  const IValue dims = a[2].literal.is_none() ? IValue(std::vector<int64_t>{}) : a[2].literal;
  const bool keepdim = a[3].literal.to_bool();
  const ValueRef abs = b.call("aten::abs", {a[0].value});
  const auto sum = [&](ValueRef v) { return b.call("aten::sum.dim_IntList", {v, dims, keepdim}); };
  ValueRef out;
  if (std::isinf(ord)) {
    out = b.call(ord > 0 ? "aten::amax" : "aten::amin", {abs, dims, keepdim});
  } else if (ord == 0) {
    return std::nullopt;  // a count of nonzeros: a cast the eager kernel does between ops
  } else if (ord == 1) {
    out = sum(abs);
  } else if (ord == 2) {
    out = b.call("aten::sqrt", {sum(b.call("aten::mul.Tensor", {abs, abs}))});
  } else {
    out = b.call("aten::pow.Tensor_Scalar", {sum(b.call("aten::pow.Tensor_Scalar", {abs, ord})), 1.0 / ord});
  }
  return std::vector<ValueRef>{out};
}

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      {"aten::native_batch_norm",
       "training=False, running stats given, only output 0 read, float input of rank >= 2",
       "rsqrt, mul, sub, view, mul, add (a per-channel affine map)", nullptr},
      {"aten::masked_fill.Scalar", "self is floating, mask is bool", "where.ScalarSelf", masked_fill},
      {"aten::masked_fill.Tensor", "self is floating, mask is bool, value a 0-dim tensor of self's dtype", "where.self",
       masked_fill},
      {"aten::_softmax", "over a dim other than the last, float, non-empty", "amax, sub, exp, sum, div",
       softmax_other_dim},
      {"aten::_log_softmax", "over a dim other than the last, float, non-empty", "amax, sub, exp, sum, log, sub",
       softmax_other_dim},
      {"aten::linalg_vector_norm", "float input, no dtype argument, ord other than 0",
       "abs, then amax/amin (ord ±inf), sum (1), mul, sum, sqrt (2), or pow, sum, pow (inference graphs only: "
       "the formula's gradient is NaN where the norm is 0)",
       vector_norm, false},
  };
  return table;
}

}  // namespace

ValueRef batch_norm_affine(GraphBuilder& b, ValueRef x, const ValueRef* weight, const ValueRef* bias, ValueRef mean,
                           ValueRef invstd) {
  ValueRef alpha = weight ? b.call("aten::mul.Tensor", {invstd, *weight}) : invstd;
  ValueRef shift = b.call("aten::mul.Tensor", {mean, alpha});
  ValueRef beta = bias ? b.call("aten::sub.Tensor", {*bias, shift}) : b.call("aten::neg", {shift});
  std::vector<int64_t> shape(GraphBuilder::meta(x).sizes.size() - 1, 1);
  shape[0] = GraphBuilder::meta(x).sizes[1];
  ValueRef scaled = b.call("aten::mul.Tensor", {x, b.call("aten::view", {alpha, shape})});
  return b.call("aten::add.Tensor", {scaled, b.call("aten::view", {beta, shape})});
}

std::vector<DecompositionInfo> decomposition_table() {
  std::vector<DecompositionInfo> out;
  for (const Row& r : rows()) out.push_back({r.op, r.when, r.into});
  return out;
}

std::unique_ptr<Graph> decompose(const Graph& g, size_t* decomposed, bool for_joint) {
  const auto users = g.users();
  std::map<std::string, const Row*> by_op;
  for (const Row& r : rows())
    if (ops::registry().find(r.op) && (r.same_gradient || !for_joint)) by_op[r.op] = &r;
  return graph::rewrite(
      g,
      [&](const Node& n, const std::vector<Arg>& args, GraphBuilder& b) -> Values {
        auto it = by_op.find(n.target());
        if (it == by_op.end()) return std::nullopt;
        if (std::any_of(n.meta().begin(), n.meta().end(), symbolic_geometry)) return std::nullopt;
        for (const Arg& a : args)
          if (is_value(a) && symbolic_geometry(meta_of(a))) return std::nullopt;
        Values values = n.target() == "aten::native_batch_norm" ? batch_norm_eval(n, args, b, users)
                                                                 : it->second->fn(n, args, b);
        // The node's layout is eager's: a replacement that lays a result out otherwise (where
        // follows its mask's strides, masked_fill its self's) is not taken.
        if (values && !same_layout(n, *values)) return std::nullopt;
        return values;
      },
      decomposed);
}

}  // namespace ember::aot
