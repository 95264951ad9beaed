// inductor/lowering.cpp — lowering a captured graph to loop IR: each elementwise call on
// f32/f64 becomes a pointwise body (loads through index maps, the scalar expression of
// its row in ops/scalar_ops.def, or of the lowering table below); views stay views (run
// as eager views, read through their strides); every other call becomes an extern call
// of its eager kernel. See Note [inductor] (docs/notes/inductor.md).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/cuda.h"
#include "inductor/pipeline.h"
#include "inductor/symbolic.h"
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

/// The floating dtypes bodies compute in on `d`: f32/f64 on the CPU; on a CUDA device also
/// f16/bf16 (computed in float, as the eager CUDA kernels do).
bool lowered_dtype(ScalarType t, const Device& d) {
  if (d.type == DeviceType::CUDA) return is_float(t) || t == kHalf || t == kBFloat16;
  return d.type == DeviceType::CPU && is_float(t);
}
/// "f32/f64" on the CPU, "f32/f64/f16/bf16" on CUDA: the dtypes lowered_dtype admits.
std::string lowered_dtypes_text(const Device& d) {
  return d.type == DeviceType::CUDA ? "f32/f64/f16/bf16 on " + d.str() : std::string("f32/f64 on the CPU");
}

std::string literal_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// Builds one node's body; a check that fails makes the node an extern call.
class BodyBuilder {
 public:
  BodyBuilder(const Node& n, PointwiseNode& p)
      : n_(n), p_(p), device_(core::cuda::normalize_device(n.meta().at(0).device)) {}

  /// Reads tensor argument `i`; `mask` for where's condition (bool storage).
  int load(size_t i, bool mask = false) {
    const Arg& a = n_.args().at(i);
    if (a.kind != Arg::Kind::Value) return fail("argument " + std::to_string(i) + " is not a tensor");
    const TensorMeta& m = a.value.node->meta().at(a.value.index);
    // A CPU scalar beside CUDA tensors is read by value (is_host_scalar).
    const bool host_scalar = device_.type == DeviceType::CUDA && is_host_scalar(m);
    if (m.undefined || !(core::cuda::normalize_device(m.device) == device_ || host_scalar))
      return fail(device_.type == DeviceType::CPU ? "an input is not a CPU tensor" : "an input is not on " + device_.str());
    if (mask ? m.dtype != kBool : !lowered_dtype(m.dtype, device_)) {
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
    if (!p_.sym_sizes.empty()) {
      const std::vector<core::sym::Expr> strides = sym_strides_of(m);
      op.sym_strides.assign(n, core::sym::Expr(0));
      for (size_t d = n - r; d < n; ++d)
        if (op.strides[d] != 0 || m.sizes[d - (n - r)] != 1) op.sym_strides[d] = strides[d - (n - r)];
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
  Device device_;  // the result's: every load reads a tensor on it
  std::string why_;
};

// --- the lowering table ----------------------------------------------------------------
//
// Lowerings are keyed by the op's full overload name ("aten::div.Tensor_mode"), never by
// its base name: overloads of one base name differ in meaning (`div.Tensor_mode` rounds,
// `add.Scalar` reads a number), so an op absent from the table is an extern call. Each
// entry names the schema arguments its rule reads; every other argument must hold its
// schema default (checked per node), so an argument a rule does not honour (a `dtype=`,
// `half_to_float`, an argument a later schema adds) sends the call to its eager kernel
// instead of being dropped. See Note [inductor] ("Lowering by overload").

using Rule = std::function<int(const Node&, BodyBuilder&)>;

/// A pointwise lowering: the arguments its rule reads, and the rule (the result's index in
/// the body, or -1 with the reason in the builder).
struct PointwiseLowering {
  std::vector<std::string> reads;
  Rule rule;
  /// A comparison: the result is bool (a mask), computed in its inputs' floating type.
  bool mask = false;
};

/// The literal text of an argument, for messages.
std::string arg_text(const Arg& a) {
  if (a.kind != Arg::Kind::Literal) return "a tensor";
  std::ostringstream os;
  os << a.literal;
  return os.str();
}

/// Whether `a` holds the schema default `d` (numbers compare by value: alpha=1.0 is 1).
bool holds_default(const Arg& a, const ops::Argument& d) {
  if (!d.default_value || a.kind != Arg::Kind::Literal) return false;
  const IValue& v = a.literal;
  const IValue& w = *d.default_value;
  auto number = [](const IValue& x) { return x.is_int() || x.is_double() || x.is_scalar(); };
  if (number(v) && number(w)) return v.to_double() == w.to_double();
  std::ostringstream x, y;
  x << v;
  y << w;
  return x.str() == y.str();
}

/// "" when every argument of `n` outside `reads` holds its schema default; otherwise why not.
std::string unread_argument(const Node& n, const std::vector<std::string>& reads) {
  const auto& schema = n.op()->schema.arguments;
  for (size_t i = 0; i < schema.size() && i < n.args().size(); ++i) {
    if (std::find(reads.begin(), reads.end(), schema[i].name) != reads.end()) continue;
    if (!holds_default(n.args()[i], schema[i]))
      return "its argument " + schema[i].name + "=" + arg_text(n.args()[i]) + " is not lowered";
  }
  return "";
}

/// A unary row of scalar_ops.def: `op_<row>(self)`.
PointwiseLowering unary_row(const std::string& row) {
  return {{"self"}, [row](const Node&, BodyBuilder& b) {
            if (row == "relu")
              if (const std::string bug = injected_relu_function(); !bug.empty()) return b.call(bug, {b.load(0)});
            return b.call("op_" + row, {b.load(0)});
          }};
}

/// A binary row: `op_<row>(self, other)`, with alpha as the row's p0 when the schema has one.
PointwiseLowering binary_row(const std::string& row, std::vector<std::string> reads) {
  return {std::move(reads), [row](const Node& n, BodyBuilder& b) {
            std::string p0;
            if (std::string(scalar_rows().at(row).expr).find("p0") != std::string::npos) {
              const int alpha = n.op()->schema.index_of("alpha");
              p0 = alpha >= 0 ? literal_text(n.args().at(alpha).literal.to_scalar().to_double()) : "1";
            }
            return b.call("op_" + row, {b.load(0), b.operand(1)}, p0);
          }};
}

/// A comparison row (`eq`, `lt`, …): `op_<row>(self, other)`, a mask. The rows' kind is
/// Compare: eager compares in the promoted type, which lower_pointwise requires to be the
/// inputs' own (one floating dtype), so the body compares exactly what eager compares.
PointwiseLowering compare_row(const std::string& row) {
  return {{"self", "other"},
          [row](const Node&, BodyBuilder& b) { return b.call("op_" + row, {b.load(0), b.operand(1)}); },
          /*mask=*/true};
}

/// Division with a rounding mode: None is true division, "trunc" truncates the quotient
/// (as eager's truncdiv_ on floats: trunc(a / b)); "floor" (floordiv_'s fmod-based
/// correction) is not lowered.
int div_rounding(BodyBuilder& b, const std::optional<std::string>& mode) {
  if (!mode) return b.call("op_div", {b.load(0), b.operand(1)});
  if (*mode == "trunc") return b.call("op_trunc", {b.call("op_div", {b.load(0), b.operand(1)})});
  return b.fail("rounding_mode=\"" + *mode + "\" is not lowered");
}

const std::map<std::string, PointwiseLowering>& pointwise_lowerings() {
  static const std::map<std::string, PointwiseLowering> table = [] {
    std::map<std::string, PointwiseLowering> t;
    for (const auto& [name, row] : scalar_rows())
      if (row.arity == 1 && lowerable_row(name, 1)) t.emplace("aten::" + name, unary_row(name));
    const std::vector<std::string> self_other = {"self", "other"}, with_alpha = {"self", "other", "alpha"};
    for (const char* ov : {".Tensor", ".Scalar"}) {
      t.emplace(std::string("aten::add") + ov, binary_row("add", with_alpha));
      t.emplace(std::string("aten::sub") + ov, binary_row("sub", with_alpha));
      for (const char* row : {"mul", "div", "remainder", "fmod"})
        t.emplace(std::string("aten::") + row + ov, binary_row(row, self_other));
    }
    // Comparisons (relu's backward masks its gradient with `result <= 0`): the mask
    // fuses into the where() that reads it.
    for (const char* row : {"eq", "ne", "lt", "le", "gt", "ge"})
      for (const char* ov : {".Tensor", ".Scalar"}) t.emplace(std::string("aten::") + row + ov, compare_row(row));
    t.emplace("aten::pow.Tensor_Tensor", binary_row("pow", {"self", "exponent"}));
    t.emplace("aten::pow.Tensor_Scalar", binary_row("pow", {"self", "exponent"}));
    // A number raised to a tensor (AdamW's capturable bias corrections, beta ** step).
    t.emplace("aten::pow.Scalar", PointwiseLowering{{"self", "exponent"}, [](const Node&, BodyBuilder& b) {
                                                      return b.call("op_pow", {b.operand(0), b.load(1)});
                                                    }});
    for (const char* row : {"maximum", "minimum", "atan2"})
      t.emplace(std::string("aten::") + row, binary_row(row, self_other));
    auto rounding = [](const Node& n, BodyBuilder& b) {
      return div_rounding(b, n.args().at(2).literal.to_optional_string());
    };
    t.emplace("aten::div.Tensor_mode", PointwiseLowering{{"self", "other", "rounding_mode"}, rounding});
    t.emplace("aten::div.Scalar_mode", PointwiseLowering{{"self", "other", "rounding_mode"}, rounding});
    t.emplace("aten::_div_trunc", PointwiseLowering{self_other, [](const Node&, BodyBuilder& b) {
                                                      return div_rounding(b, std::string("trunc"));
                                                    }});
    for (const char* ov : {"self", "ScalarSelf", "ScalarOther", "Scalar"}) {
      t.emplace(std::string("aten::where.") + ov,
                PointwiseLowering{{"condition", "self", "other"}, [](const Node&, BodyBuilder& b) {
                                    return b.call("where", {b.load(0, true), b.operand(1), b.operand(2)});
                                  }});
    }
    // masked_fill as eager computes it (ops/pointwise.cpp): where(mask, value cast to
    // self's dtype, self). Backward graphs hold it (relu's derivative); the AOT stage
    // decomposes only the forward graph's.
    for (const char* ov : {"Scalar", "Tensor"}) {
      t.emplace(std::string("aten::masked_fill.") + ov,
                PointwiseLowering{{"self", "mask", "value"}, [](const Node&, BodyBuilder& b) {
                                    return b.call("where", {b.load(1, true), b.operand(2), b.load(0)});
                                  }});
    }
    t.emplace("aten::clamp", PointwiseLowering{{"self", "min", "max"}, [](const Node& n, BodyBuilder& b) {
                                                 int r = b.load(0);
                                                 if (!n.args()[1].literal.is_none())
                                                   r = b.call("op_clamp_min", {r, b.operand(1)});
                                                 if (!n.args()[2].literal.is_none())
                                                   r = b.call("op_clamp_max", {r, b.operand(2)});
                                                 return r;
                                               }});
    t.emplace("aten::gelu", PointwiseLowering{{"self", "approximate"}, [](const Node& n, BodyBuilder& b) {
                                                const std::string& a = n.args()[1].literal.to_string_ref();
                                                if (a != "none" && a != "tanh")
                                                  return b.fail("approximate=\"" + a + "\" is not lowered");
                                                return b.call(a == "tanh" ? "op_gelu_tanh" : "op_gelu_erf",
                                                              {b.load(0)});
                                              }});
    // Type conversions and copies: the load converts to the result's dtype and the store
    // writes the result's layout, so dtype, device (the result must be a CPU tensor) and
    // memory_format are honoured through the result's geometry; layout, pin_memory and
    // non_blocking change no value on the CPU.
    auto copy = [](const Node&, BodyBuilder& b) { return b.load(0); };
    t.emplace(
        "aten::_to_copy",
        PointwiseLowering{{"self", "dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format"}, copy});
    t.emplace("aten::clone", PointwiseLowering{{"self", "memory_format"}, copy});
    return t;
  }();
  return table;
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

/// A row lowering: its kind and the arguments it reads (as PointwiseLowering's). The
/// dtype= of sum/mean/prod is not read, so a call giving one runs its eager kernel;
/// softmax's half_to_float (no default) is read and must be false.
struct RowLowering {
  RowKind kind;
  std::vector<std::string> reads;
};

const std::map<std::string, RowLowering>& row_lowerings() {
  static const std::map<std::string, RowLowering> table = {
      {"aten::sum", {RowKind::Sum, {"self"}}},
      {"aten::sum.dim_IntList", {RowKind::Sum, {"self", "dim", "keepdim"}}},
      {"aten::mean", {RowKind::Mean, {"self"}}},
      {"aten::mean.dim", {RowKind::Mean, {"self", "dim", "keepdim"}}},
      {"aten::amax", {RowKind::Max, {"self", "dim", "keepdim"}}},
      {"aten::amin", {RowKind::Min, {"self", "dim", "keepdim"}}},
      {"aten::var.correction", {RowKind::Var, {"self", "dim", "correction", "keepdim"}}},
      {"aten::prod", {RowKind::Prod, {"self"}}},
      {"aten::prod.dim_int", {RowKind::Prod, {"self", "dim", "keepdim"}}},
      {"aten::_softmax", {RowKind::Softmax, {"self", "dim", "half_to_float"}}},
      {"aten::_log_softmax", {RowKind::LogSoftmax, {"self", "dim", "half_to_float"}}},
      {"aten::native_layer_norm", {RowKind::LayerNorm, {"input", "normalized_shape", "weight", "bias", "eps"}}},
  };
  return table;
}

/// The row lowering of a reduction (over any dims), softmax or layer norm over the last
/// dim; "" and `r` filled, or why it is not lowered.
/// Why a node that reads or makes a complex tensor cannot lower ("" if it does not): the
/// code generators have no complex types, so it stays an extern call (Note [complex dtypes]).
std::string complex_reason(const Node& n) {
  for (const TensorMeta& m : n.meta())
    if (is_complex(m.dtype)) return "its result is complex (no complex kernels are generated)";
  for (const Arg& a : n.args())
    if (a.kind == Arg::Kind::Value && is_complex(a.value.node->meta().at(a.value.index).dtype))
      return "it reads a complex tensor (no complex kernels are generated)";
  return "";
}

std::string lower_row(const Node& n, RowNode& r) {
  const std::string& t = n.target();
  if (std::string why = complex_reason(n); !why.empty()) return why;
  auto kind = row_lowerings().find(t);
  if (kind == row_lowerings().end()) return "no lowering";
  if (std::string why = unread_argument(n, kind->second.reads); !why.empty()) return why;
  r.node = &n;
  r.kind = kind->second.kind;
  const Arg& a0 = n.args().at(0);
  if (a0.kind != Arg::Kind::Value) return "argument 0 is not a tensor";
  const TensorMeta& in = a0.value.node->meta().at(a0.value.index);
  const TensorMeta& out = n.meta().at(0);
  if (in.undefined || out.undefined || !(in.device == out.device) ||
      (in.device.type != DeviceType::CPU && in.device.type != DeviceType::CUDA))
    return "the input is not a CPU or CUDA tensor beside its result";
  if (!lowered_dtype(in.dtype, in.device) || out.dtype != in.dtype)
    return "the input and result are not of one dtype of " + lowered_dtypes_text(in.device);
  const int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (rank == 0) return "the input is 0-dim";
  int64_t numel = 1;
  for (int64_t s : in.sizes) numel *= s;
  if (numel == 0) return "the input is empty";
  for (const TensorMeta& m : n.meta())
    if (m.storage_offset != 0) return "a result has a storage offset";
  // Arguments (a dtype= is unread, so None here): (self, dims, keepdim, dtype) for
  // sum/mean.dim, (self, dtype) for the full sum/mean/prod, (self, dim, keepdim, dtype) for
  // prod.dim_int, (self, dims, keepdim) for amax/amin, (self, dims, correction, keepdim) for var.
  const bool full = t == "aten::sum" || t == "aten::mean" || t == "aten::prod";
  std::string why;
  switch (r.kind) {
    case RowKind::Sum:
    case RowKind::Mean:
    case RowKind::Prod:
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
      if (n.args().at(2).literal.to_bool()) return "half_to_float=True is not lowered";
      const int64_t d = n.args().at(1).literal.to_int();
      if (d != rank - 1 && d != -1) return "it runs over a dim other than the last (only the last is lowered)";
      break;
    }
    case RowKind::LayerNorm:
      if (n.args().at(1).literal.to_sym_int_list().size() != 1) return "it normalizes more than the last dim";
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
  // Over size symbols when the input or a result has them (Note [dynamic shapes]).
  bool symbolic = has_symbols(in);
  for (const TensorMeta& m : n.meta()) symbolic = symbolic || has_symbols(m);
  if (symbolic) {
    r.sym_in_sizes = sym_sizes_of(in);
    r.sym_out_sizes = sym_sizes_of(out);
  }
  r.dtype = in.dtype;
  PointwiseNode loads;
  loads.node = &n;
  loads.sizes = in.sizes;
  loads.sym_sizes = r.sym_in_sizes;
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
/// The type a comparison compares in: its tensor inputs' one floating dtype (eager's
/// promoted type then), or why it is not lowered.
std::string compare_dtype(const Node& n, ScalarType& dtype) {
  std::optional<ScalarType> t;
  for (size_t i = 0; i < 2 && i < n.args().size(); ++i) {
    const Arg& a = n.args()[i];
    if (a.kind != Arg::Kind::Value) continue;
    const TensorMeta& m = a.value.node->meta().at(a.value.index);
    if (!lowered_dtype(m.dtype, n.meta().at(0).device))
      return std::string("an input has dtype ") + std::string(scalar_type_name(m.dtype));
    if (t && *t != m.dtype) return "its inputs' dtypes differ (the promotion is not lowered)";
    t = m.dtype;
  }
  if (!t) return "no tensor input";
  dtype = *t;
  return "";
}

std::string lower_pointwise(const Node& n, PointwiseNode& p) {
  p.node = &n;
  if (n.meta().size() != 1 || n.meta()[0].undefined) return "not one output";
  if (std::string why = complex_reason(n); !why.empty()) return why;
  auto lowering = pointwise_lowerings().find(n.target());
  const bool mask = lowering != pointwise_lowerings().end() && lowering->second.mask;
  const Device& device = n.meta()[0].device;
  if (device.type != DeviceType::CPU && device.type != DeviceType::CUDA) return "result is not on the CPU or CUDA";
  if (!(mask ? n.meta()[0].dtype == kBool : lowered_dtype(n.meta()[0].dtype, device)))
    return mask ? "result is not bool" : "result is not " + lowered_dtypes_text(device);
  if (n.meta()[0].storage_offset != 0 || n.is_impure()) return "writes an argument or draws random numbers";
  p.sizes = n.meta()[0].sizes;
  // Over size symbols when the result or an argument has them (Note [dynamic shapes]).
  bool symbolic = has_symbols(n.meta()[0]);
  for (const Arg& a : n.args())
    symbolic = symbolic || (a.kind == Arg::Kind::Value && has_symbols(a.value.node->meta().at(a.value.index)));
  if (symbolic) p.sym_sizes = sym_sizes_of(n.meta()[0]);
  p.dtype = n.meta()[0].dtype;
  p.mask = mask;
  if (mask)
    if (std::string why = compare_dtype(n, p.dtype); !why.empty()) return why;
  BodyBuilder b(n, p);
  if (lowering == pointwise_lowerings().end()) return "no lowering";
  if (std::string why = unread_argument(n, lowering->second.reads); !why.empty()) return why;
  const int result = lowering->second.rule(n, b);
  if (result >= 0 && result == static_cast<int>(p.body.size()) - 1) return "";
  return b.why().empty() ? "no lowering" : b.why();
}

}  // namespace

bool lowers_as_pointwise(const Node& n) {
  if (n.kind() != NodeKind::Call || n.op()->kind == ops::OpKind::View) return false;
  PointwiseNode p;
  return lower_pointwise(n, p).empty();
}

std::vector<std::pair<std::string, std::vector<std::string>>> lowering_table() {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& [name, l] : pointwise_lowerings()) out.emplace_back(name, l.reads);
  for (const auto& [name, l] : row_lowerings()) out.emplace_back(name, l.reads);
  return out;
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
  // A comparison gives a mask (Vectorized<T>::Mask, or bool), not a T.
  const char* result = std::string(row.kind) == "Compare" ? "auto" : "T";
  return std::string("template <typename T> inline ") + result + " " + fn + "(" + params + ") { return " + expr +
         "; }  // scalar_ops.def: " + name;
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

/// Whether every read of `v` is computed again by its readers: it is read by pointwise
/// nodes only, and none of their bodies loads it.
bool recomputed_by_every_reader(const Node& v, const std::vector<Node*>& readers, const LoweredGraph& out) {
  for (const Node* r : readers) {
    auto p = out.pointwise.find(r);
    if (p == out.pointwise.end()) return false;
    for (const PwOp& op : p->second.body)
      if (op.kind == PwOp::Kind::Load && op.value.node == &v) return false;
  }
  return !readers.empty();
}

/// Note [recomputed scalars]. On CUDA a kernel launch costs more than computing a 0-dim
/// value again in every thread, so a pointwise node reading a 0-dim pointwise node of its
/// own dtype takes that node's body into its own (the loads broadcast to its index space),
/// as PyTorch's inductor inlines pointwise bodies into their readers: an optimizer step's
/// bias corrections (1 - beta^step, the step size, the denominator's factors) are computed
/// by the update's kernel instead of a kernel each. The 0-dim body must read only graph
/// inputs, constants and extern results (live until their last reader, kernels included,
/// and never computed by a kernel the scheduler moves), with no impure call between it and
/// the reader. A node every reader recomputes is computed by no kernel (`recomputed`); one
/// also read otherwise (a graph output, an extern's argument) keeps its own kernel.
void recompute_scalars(const Graph& g, LoweredGraph& out) {
  std::map<const Node*, size_t> impure_before;
  size_t impure = 0;
  for (const auto& n : g.nodes()) {
    impure_before[n.get()] = impure;
    if (n->kind() == NodeKind::Call && n->is_impure()) ++impure;
  }
  // 0-dim pointwise nodes whose bodies may be taken into a reader's.
  auto movable = [&](const PointwiseNode& p) {
    if (!p.sizes.empty() || p.mask || p.dtype != p.node->meta()[0].dtype || p.body.size() > 32) return false;
    for (const PwOp& op : p.body) {
      if (op.kind != PwOp::Kind::Load) continue;
      const Node& src = *op.value.node;
      auto role = out.roles.find(&src);
      if (src.kind() == NodeKind::Call && (role == out.roles.end() || role->second != NodeRole::Extern)) return false;
    }
    return true;
  };
  std::set<const Node*> taken;
  for (const auto& np : g.nodes()) {
    auto c = out.pointwise.find(np.get());
    if (c == out.pointwise.end()) continue;
    PointwiseNode& reader = c->second;
    std::vector<PwOp> body;
    std::vector<int> at(reader.body.size());
    for (size_t i = 0; i < reader.body.size(); ++i) {
      PwOp op = reader.body[i];
      auto p = op.kind == PwOp::Kind::Load ? out.pointwise.find(op.value.node) : out.pointwise.end();
      if (p != out.pointwise.end() && op.value.index == 0 && p->second.dtype == reader.dtype && movable(p->second) &&
          impure_before[p->first] == impure_before[np.get()] &&
          bisect_allows(BisectSubsystem::Lowerings, "recompute 0-dim %" + p->first->name() + " in %" + np->name())) {
        const int base = static_cast<int>(body.size());
        for (PwOp q : p->second.body) {
          if (q.kind == PwOp::Kind::Load) {
            q.strides.assign(reader.sizes.size(), 0);
            q.sym_strides.assign(reader.sym_sizes.empty() ? 0 : reader.sizes.size(), core::sym::Expr(0));
          }
          for (int& a : q.args) a += base;
          body.push_back(std::move(q));
        }
        at[i] = static_cast<int>(body.size()) - 1;
        taken.insert(p->first);
        continue;
      }
      for (int& a : op.args) a = at[static_cast<size_t>(a)];
      body.push_back(std::move(op));
      at[i] = static_cast<int>(body.size()) - 1;
    }
    reader.body = std::move(body);
  }
  if (taken.empty()) return;
  const auto users = g.users();
  for (const Node* n : taken) {
    auto u = users.find(n);
    if (u != users.end() && recomputed_by_every_reader(*n, u->second, out)) {
      out.recomputed.insert(n);
      EMBER_LOG(inductor, DEBUG) << "0-dim %" << n->name()
                                 << " is computed again by every reader; no kernel computes it";
    }
  }
}

}  // namespace

LoweredGraph lower(const Graph& g) {
  bisect_begin(BisectSubsystem::Lowerings, g.name());
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
  // A graph for a CUDA device may compute CPU scalars (0-dim CPU tensors, as PyTorch allows
  // beside CUDA ones: an optimizer's step count and the bias corrections made from it). The
  // generated kernels run on the device and cannot write host memory, so those calls run
  // their eager CPU kernels; the device kernels and extern calls that read them take them
  // as they take any CPU scalar.
  bool cuda_graph = false;
  for (const auto& np : g.nodes())
    for (const TensorMeta& m : np->meta()) cuda_graph = cuda_graph || (!m.undefined && m.device.is_cuda());
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (n.kind() != NodeKind::Call) continue;
    if (n.op()->kind == ops::OpKind::View) {
      out.roles[&n] = NodeRole::View;
      continue;
    }
    if (cuda_graph && !n.meta().empty() && !n.meta()[0].undefined && n.meta()[0].device.is_cpu()) {
      out.roles[&n] = NodeRole::Extern;
      log_extern_fallback(n, "a CPU scalar in a graph for a CUDA device is computed on the host");
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
  if (cuda_graph) recompute_scalars(g, out);
  return out;
}

namespace {
/// " device=cuda:0" for a node off the CPU; "" on the CPU (its text predates devices).
std::string device_text(const Device& d) { return d.type == DeviceType::CPU ? "" : " device=" + d.str(); }
}  // namespace

std::string to_string(const PointwiseNode& p) {
  std::ostringstream os;
  os << "pointwise %" << p.node->name() << " " << scalar_type_name(p.dtype) << IntArrayRef(p.sizes)
     << (p.mask ? " -> bool mask" : "") << device_text(p.node->meta()[0].device) << "\n";
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

std::string call_text(const PwOp& op, const std::vector<std::string>& vars, const std::string& prefix) {
  std::string s = prefix + op.fn + "(";
  for (size_t a = 0; a < op.args.size(); ++a) s += (a ? ", " : "") + vars[op.args[a]];
  if (!op.literal.empty()) s += ", " + op.literal;
  return s + ")";
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
     << IntArrayRef(r.in_sizes) << " -> " << IntArrayRef(r.out_sizes) << " " << row_dims_text(r)
     << device_text(r.node->meta()[0].device) << "\n  input = "
     << load(r.input) << "\n";
  if (r.kind == RowKind::LayerNorm)
    os << "  weight = " << load(r.weight) << "\n  bias = " << load(r.bias) << "\n  eps = " << literal_text(r.eps) << "\n";
  if (r.kind == RowKind::Var) os << "  correction = " << literal_text(r.correction) << "\n";
  return os.str();
}

}  // namespace ember::inductor
