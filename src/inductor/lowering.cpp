// inductor/lowering.cpp — lowering a captured graph to loop IR: each elementwise call on
// f32/f64 becomes a pointwise body (loads through index maps, the scalar expression of
// its row in ops/scalar_ops.def, or of the lowering table below); views stay views (run
// as eager views, read through their strides); every other call becomes an extern call
// of its eager kernel. See Note [inductor] (docs/notes/inductor.md).
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "inductor/pipeline.h"
#include "inductor/trace.h"
#include "ops/registry.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

/// A row of scalar_ops.def, kept as text for the code generator.
struct ScalarRow {
  const char* kind;
  const char* expr;
  int arity;
};

const std::map<std::string, ScalarRow>& scalar_rows() {
  static const std::map<std::string, ScalarRow> rows = {
#define EMBER_UNARY(name, kind, expr) {#name, {#kind, #expr, 1}},
#define EMBER_BINARY(name, kind, expr) {#name, {#kind, #expr, 2}},
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
  };
  return rows;
}

/// Rows whose result has the input's floating type and whose expression also compiles
/// for Vectorized<T> (div_trunc/div_floor helpers are scalar-only).
bool lowerable_row(const std::string& name, int arity) {
  auto it = scalar_rows().find(name);
  if (it == scalar_rows().end() || it->second.arity != arity) return false;
  const std::string kind = it->second.kind;
  if (name == "div_trunc" || name == "div_floor") return false;
  return kind == "FloatPromote" || kind == "FloatOnly" || kind == "Same" || kind == "SameNoBool" ||
         kind == "Arith" || kind == "ArithNoBool";
}

/// Functions of the lowering table that are not rows of scalar_ops.def; the same
/// formulas as the eager kernels in ops/pointwise.cpp (ClampOp, GeluErf, GeluTanh).
const std::map<std::string, std::string>& extra_functions() {
  static const std::map<std::string, std::string> fns = {
      {"op_clamp_min", "template <typename T> inline T op_clamp_min(T x, T lo) { return where(x != x, x, where(x > lo, x, lo)); }"},
      {"op_clamp_max", "template <typename T> inline T op_clamp_max(T x, T hi) { return where(x != x, x, where(x < hi, x, hi)); }"},
      {"op_gelu_erf",
       "template <typename T> inline T op_gelu_erf(T x) { return T(0.5) * x * (T(1) + erf(x * T(M_SQRT1_2))); }"},
      {"op_gelu_tanh",
       "template <typename T> inline T op_gelu_tanh(T x) {\n"
       "  const T k = T(M_SQRT2 * M_2_SQRTPI * 0.5);\n"
       "  return T(0.5) * x * (T(1) + tanh(k * (x + T(0.044715) * x * x * x)));\n}"},
  };
  return fns;
}

bool is_float(ScalarType t) { return t == kFloat || t == kDouble; }

std::string literal_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// Builds one node's body; a check that fails makes the node an extern call.
class BodyBuilder {
 public:
  BodyBuilder(const Node& n, PointwiseNode& p) : n_(n), p_(p) {}

  /// Reads tensor argument `i`; `mask` for where's condition (bool storage).
  int load(size_t i, bool mask = false) {
    const Arg& a = n_.args().at(i);
    if (a.kind != Arg::Kind::Value) return fail("argument " + std::to_string(i) + " is not a tensor");
    const TensorMeta& m = a.value.node->meta().at(a.value.index);
    if (m.undefined || m.device.type != DeviceType::CPU) return fail("an input is not a CPU tensor");
    if (mask ? m.dtype != kBool : !is_float(m.dtype)) {
      return fail(std::string("an input has dtype ") + std::string(scalar_type_name(m.dtype)));
    }
    const size_t n = p_.sizes.size(), r = m.sizes.size();
    if (r > n) return fail("an input has more dims than the result");
    PwOp op;
    op.kind = PwOp::Kind::Load;
    op.value = a.value;
    op.dtype = m.dtype;
    op.strides.assign(n, 0);
    for (size_t d = n - r; d < n; ++d) {
      const int64_t s = m.sizes[d - (n - r)];
      if (s != 1 && s != p_.sizes[d]) return fail("an input does not broadcast to the result");
      if (s != 1) op.strides[d] = m.strides[d - (n - r)];
    }
    return push(std::move(op));
  }
  /// A Scalar argument, or a tensor argument.
  int operand(size_t i) {
    const Arg& a = n_.args().at(i);
    if (a.kind == Arg::Kind::Value) return load(i);
    if (a.kind == Arg::Kind::Literal && a.literal.is_scalar()) return constant(a.literal.to_scalar().to_double());
    return fail("argument " + std::to_string(i) + " is neither a tensor nor a number");
  }
  int constant(double v) {
    PwOp op;
    op.kind = PwOp::Kind::Constant;
    op.constant = v;
    return push(std::move(op));
  }
  int call(std::string fn, std::vector<int> args, std::string literal = {}) {
    for (int a : args)
      if (a < 0) return -1;
    PwOp op;
    op.kind = PwOp::Kind::Call;
    op.fn = std::move(fn);
    op.args = std::move(args);
    op.literal = std::move(literal);
    return push(std::move(op));
  }
  int fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return -1;
  }
  const std::string& why() const { return why_; }

 private:
  int push(PwOp op) {
    p_.body.push_back(std::move(op));
    return static_cast<int>(p_.body.size()) - 1;
  }
  const Node& n_;
  PointwiseNode& p_;
  std::string why_;
};

/// The lowering table: how each op's body is built, by the op's base name (before the
/// overload). Returns the result's index, or -1 (the reason is in the builder).
using Rule = std::function<int(const Node&, BodyBuilder&)>;

int lower_with_rows(const Node& n, BodyBuilder& b, const std::string& base) {
  const ops::OpDef& op = *n.op();
  if (base == "relu")
    if (const std::string bug = injected_relu_function(); !bug.empty()) return b.call(bug, {b.load(0)});
  if (lowerable_row(base, 1) && op.schema.arguments.size() == 1) return b.call("op_" + base, {b.load(0)});
  if (lowerable_row(base, 2) && op.schema.arguments.size() >= 2) {
    const bool alpha = op.schema.index_of("alpha") >= 0;
    std::string p0;
    if (std::string(scalar_rows().at(base).expr).find("p0") != std::string::npos) {
      p0 = alpha ? literal_text(n.args().at(2).literal.to_scalar().to_double()) : "1";
    }
    return b.call("op_" + base, {b.load(0), b.operand(1)}, p0);
  }
  return b.fail("no lowering");
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = {
      {"where", [](const Node&, BodyBuilder& b) { return b.call("where", {b.load(0, true), b.operand(1), b.operand(2)}); }},
      {"clamp",
       [](const Node& n, BodyBuilder& b) {
         if (n.target() != "aten::clamp") return b.fail("tensor bounds are not lowered");
         int t = b.load(0);
         if (!n.args()[1].literal.is_none()) t = b.call("op_clamp_min", {t, b.operand(1)});
         if (!n.args()[2].literal.is_none()) t = b.call("op_clamp_max", {t, b.operand(2)});
         return t;
       }},
      {"gelu",
       [](const Node& n, BodyBuilder& b) {
         const bool tanh = n.args()[1].literal.to_string_ref() == "tanh";
         return b.call(tanh ? "op_gelu_tanh" : "op_gelu_erf", {b.load(0)});
       }},
      // Type conversions and copies: the load converts to the result's dtype; the store
      // writes the result's layout.
      {"_to_copy", [](const Node&, BodyBuilder& b) { return b.load(0); }},
      {"clone", [](const Node&, BodyBuilder& b) { return b.load(0); }},
  };
  return table;
}

std::string base_name(const std::string& target) {
  std::string s = target.rfind("aten::", 0) == 0 ? target.substr(6) : target;
  return s.substr(0, s.find('.'));
}

/// The reduced dims of a rank-`rank` input: `dims` an int list ([] or None: every dim),
/// or why it is not lowered.
std::string reduced_dims(const IValue& dims, int64_t rank, std::vector<bool>& mask) {
  std::vector<int64_t> d;
  if (!dims.is_none()) d = dims.is_int() ? std::vector<int64_t>{dims.to_int()} : dims.to_int_list();
  mask.assign(static_cast<size_t>(rank), d.empty());
  for (int64_t x : d) {
    const int64_t w = x < 0 ? x + rank : x;
    if (w < 0 || w >= rank || mask[w]) return "its dims are out of range or repeated";
    mask[w] = true;
  }
  return "";
}

/// The row lowering of a reduction (over any dims), softmax or layer norm over the last
/// dim; "" and `r` filled, or why it is not lowered.
std::string lower_row(const Node& n, RowNode& r) {
  const std::string& t = n.target();
  static const std::map<std::string, RowKind> kinds = {
      {"aten::sum", RowKind::Sum},           {"aten::sum.dim_IntList", RowKind::Sum},
      {"aten::mean", RowKind::Mean},         {"aten::mean.dim", RowKind::Mean},
      {"aten::amax", RowKind::Max},          {"aten::amin", RowKind::Min},
      {"aten::var.correction", RowKind::Var}, {"aten::prod", RowKind::Prod},
      {"aten::prod.dim_int", RowKind::Prod}, {"aten::_softmax", RowKind::Softmax},
      {"aten::_log_softmax", RowKind::LogSoftmax}, {"aten::native_layer_norm", RowKind::LayerNorm}};
  auto kind = kinds.find(t);
  if (kind == kinds.end()) return "no lowering";
  r.node = &n;
  r.kind = kind->second;
  const Arg& a0 = n.args().at(0);
  if (a0.kind != Arg::Kind::Value) return "argument 0 is not a tensor";
  const TensorMeta& in = a0.value.node->meta().at(a0.value.index);
  const TensorMeta& out = n.meta().at(0);
  if (in.undefined || out.undefined || in.device.type != DeviceType::CPU) return "the input is not a CPU tensor";
  if (!is_float(in.dtype) || out.dtype != in.dtype) return "the input and result are not both f32 or both f64";
  const int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (rank == 0) return "the input is 0-dim";
  int64_t numel = 1;
  for (int64_t s : in.sizes) numel *= s;
  if (numel == 0) return "the input is empty";
  for (const TensorMeta& m : n.meta())
    if (m.storage_offset != 0) return "a result has a storage offset";
  // Arguments: (self, dims, keepdim, dtype) for sum/mean.dim, (self, dtype) for the full
  // sum/mean/prod, (self, dim, keepdim, dtype) for prod.dim_int, (self, dims, keepdim)
  // for amax/amin, (self, dims, correction, keepdim) for var.
  const bool full = t == "aten::sum" || t == "aten::mean" || t == "aten::prod";
  std::string why;
  switch (r.kind) {
    case RowKind::Sum:
    case RowKind::Mean:
    case RowKind::Prod:
      if (!n.args().at(full ? 1 : 3).literal.is_none()) return "an explicit dtype is not lowered";
      why = reduced_dims(full ? IValue() : n.args().at(1).literal, rank, r.reduced);
      break;
    case RowKind::Max:
    case RowKind::Min:
      why = reduced_dims(n.args().at(1).literal, rank, r.reduced);
      break;
    case RowKind::Var:
      if (!n.args().at(2).literal.is_none()) r.correction = n.args().at(2).literal.to_scalar().to_double();
      why = reduced_dims(n.args().at(1).literal, rank, r.reduced);
      break;
    case RowKind::Softmax:
    case RowKind::LogSoftmax: {
      const int64_t d = n.args().at(1).literal.to_int();
      if (d != rank - 1 && d != -1) return "it runs over a dim other than the last (only the last is lowered)";
      break;
    }
    case RowKind::LayerNorm:
      if (n.args().at(1).literal.to_int_list().size() != 1) return "it normalizes more than the last dim";
      r.eps = n.args().at(4).literal.to_double();
      break;
  }
  if (!why.empty()) return why;
  if (!r.is_reduction()) {
    r.reduced.assign(static_cast<size_t>(rank), false);
    r.reduced.back() = true;
  }
  r.in_sizes = in.sizes;
  r.out_sizes = out.sizes;
  r.dtype = in.dtype;
  PointwiseNode loads;
  loads.node = &n;
  loads.sizes = in.sizes;
  loads.dtype = in.dtype;
  BodyBuilder b(n, loads);
  if (b.load(0) < 0) return b.why();
  r.input = loads.body.back();
  if (r.kind == RowKind::LayerNorm) {
    for (size_t i : {size_t{2}, size_t{3}}) {
      PwOp& dst = i == 2 ? r.weight : r.bias;
      dst.kind = PwOp::Kind::Constant;
      dst.constant = i == 2 ? 1 : 0;
      if (n.args().at(i).kind == Arg::Kind::Literal && n.args().at(i).literal.is_none()) continue;
      if (b.load(i) < 0) return b.why();
      dst = loads.body.back();
    }
  }
  return "";
}

/// The pointwise lowering of a node: "" and `p` filled, or why it is not lowered.
std::string lower_pointwise(const Node& n, PointwiseNode& p) {
  p.node = &n;
  if (n.meta().size() != 1 || n.meta()[0].undefined) return "not one output";
  if (!is_float(n.meta()[0].dtype) || n.meta()[0].device.type != DeviceType::CPU)
    return "result is not f32/f64 on the CPU";
  if (n.meta()[0].storage_offset != 0 || n.is_impure()) return "writes an argument or draws random numbers";
  p.sizes = n.meta()[0].sizes;
  p.dtype = n.meta()[0].dtype;
  BodyBuilder b(n, p);
  const std::string base = base_name(n.target());
  auto rule = rules().find(base);
  const int result = rule != rules().end() ? rule->second(n, b) : lower_with_rows(n, b, base);
  if (result >= 0 && result == static_cast<int>(p.body.size()) - 1) return "";
  return b.why().empty() ? "no lowering" : b.why();
}

}  // namespace

bool lowers_as_pointwise(const Node& n) {
  if (n.kind() != NodeKind::Call || n.op()->kind == ops::OpKind::View) return false;
  PointwiseNode p;
  return lower_pointwise(n, p).empty();
}

const char* row_kind_name(RowKind k) {
  switch (k) {
    case RowKind::Sum: return "sum";
    case RowKind::Mean: return "mean";
    case RowKind::Max: return "max";
    case RowKind::Min: return "min";
    case RowKind::Var: return "var";
    case RowKind::Prod: return "prod";
    case RowKind::Softmax: return "softmax";
    case RowKind::LogSoftmax: return "log_softmax";
    case RowKind::LayerNorm: return "layer_norm";
  }
  return "";
}

std::string scalar_function_definition(const std::string& fn) {
  if (auto it = extra_functions().find(fn); it != extra_functions().end()) return it->second;
  if (std::string injected = injected_function_definition(fn); !injected.empty()) return injected;
  if (fn.rfind("op_", 0) != 0) return "";
  const std::string name = fn.substr(3);
  const ScalarRow& row = scalar_rows().at(name);
  const std::string expr = row.expr;
  std::string params = row.arity == 1 ? "T x" : "T a, T b";
  if (expr.find("p0") != std::string::npos) params += ", double p0";
  return "template <typename T> inline T " + fn + "(" + params + ") { return " + expr + "; }  // scalar_ops.def: " +
         name;
}

namespace {

/// Says that `n` runs its eager kernel inside the compiled code, and why. Except for the
/// library calls that are extern by design (PyTorch's extern_kernels: GEMMs,
/// convolutions), that is also a perf hint, as PyTorch's "Using FallbackKernel": the op
/// is not fused with its neighbours.
void log_extern_fallback(const Node& n, const std::string& why) {
  EMBER_LOG(inductor, INFO) << "extern fallback: " << n.target() << " (%" << n.name() << "): " << why
                            << "; it runs its eager kernel";
  static const std::set<std::string> by_design = {
      "aten::mm",     "aten::addmm",       "aten::bmm",          "aten::baddbmm",
      "aten::matmul", "aten::convolution", "aten::_convolution", "aten::convolution_backward"};
  if (!by_design.contains(n.target())) {
    EMBER_LOG_ARTIFACT(perf_hints) << "Using FallbackKernel: " << n.target() << " (%" << n.name() << "): " << why
                                   << "; it runs its eager kernel, unfused with its neighbours";
  }
}

}  // namespace

LoweredGraph lower(const Graph& g) {
  bisect_begin(BisectSubsystem::Lowerings);
  LoweredGraph out;
  // A call that would lower is one decision of the compiler bisector (Note [minifier]);
  // past its limit the call is an extern call of its eager kernel, as an op without a
  // lowering is.
  auto allowed = [&](const Node& n) {
    if (bisect_allows(BisectSubsystem::Lowerings, n.target() + " (%" + n.name() + ")")) return true;
    out.roles[&n] = NodeRole::Extern;
    log_extern_fallback(n, bisect_disabled_reason(BisectSubsystem::Lowerings));
    return false;
  };
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (n.kind() != NodeKind::Call) continue;
    if (n.op()->kind == ops::OpKind::View) {
      out.roles[&n] = NodeRole::View;
      continue;
    }
    {
      RowNode r;
      const std::string why_row = lower_row(n, r);
      if (why_row.empty()) {
        if (!allowed(n)) continue;
        out.roles[&n] = NodeRole::Row;
        out.rows.emplace(&n, std::move(r));
        continue;
      }
      if (why_row != "no lowering") {
        out.roles[&n] = NodeRole::Extern;
        log_extern_fallback(n, why_row);
        continue;
      }
    }
    PointwiseNode p;
    const std::string why = lower_pointwise(n, p);
    if (why.empty()) {
      if (!allowed(n)) continue;
      out.roles[&n] = NodeRole::Pointwise;
      out.pointwise.emplace(&n, std::move(p));
      continue;
    }
    out.roles[&n] = NodeRole::Extern;
    log_extern_fallback(n, why);
  }
  return out;
}

std::string to_string(const PointwiseNode& p) {
  std::ostringstream os;
  os << "pointwise %" << p.node->name() << " " << scalar_type_name(p.dtype) << IntArrayRef(p.sizes) << "\n";
  for (size_t i = 0; i < p.body.size(); ++i) {
    const PwOp& op = p.body[i];
    os << "  v" << i << " = ";
    switch (op.kind) {
      case PwOp::Kind::Load:
        os << "load %" << op.value.node->name() << (op.value.node->num_outputs() > 1 ? "." + std::to_string(op.value.index) : "")
           << " strides=" << IntArrayRef(op.strides);
        break;
      case PwOp::Kind::Constant: os << "constant " << literal_text(op.constant); break;
      case PwOp::Kind::Call:
        os << op.fn << "(";
        for (size_t k = 0; k < op.args.size(); ++k) os << (k ? ", v" : "v") << op.args[k];
        if (!op.literal.empty()) os << ", " << op.literal;
        os << ")";
        break;
    }
    os << "\n";
  }
  return os.str();
}

bool RowNode::reduces_last_dim_only() const {
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d] != (d + 1 == reduced.size())) return false;
  return !reduced.empty();
}

std::string row_dims_text(const RowNode& r) {
  if (r.reduces_last_dim_only()) return "over the last dim";
  std::string s = "over dims [";
  bool first = true;
  for (size_t d = 0; d < r.reduced.size(); ++d)
    if (r.reduced[d]) {
      s += (first ? "" : ", ") + std::to_string(d);
      first = false;
    }
  return s + "]";
}

std::string to_string(const RowNode& r) {
  std::ostringstream os;
  auto load = [&](const PwOp& op) {
    if (op.kind != PwOp::Kind::Load) return "constant " + literal_text(op.constant);
    std::ostringstream l;
    l << "load %" << op.value.node->name() << " strides=" << IntArrayRef(op.strides);
    return l.str();
  };
  os << "row %" << r.node->name() << " " << row_kind_name(r.kind) << " " << scalar_type_name(r.dtype)
     << IntArrayRef(r.in_sizes) << " -> " << IntArrayRef(r.out_sizes) << " " << row_dims_text(r) << "\n  input = "
     << load(r.input) << "\n";
  if (r.kind == RowKind::LayerNorm)
    os << "  weight = " << load(r.weight) << "\n  bias = " << load(r.bias) << "\n  eps = " << literal_text(r.eps) << "\n";
  if (r.kind == RowKind::Var) os << "  correction = " << literal_text(r.correction) << "\n";
  return os.str();
}

}  // namespace ember::inductor
