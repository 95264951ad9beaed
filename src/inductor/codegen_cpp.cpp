// inductor/codegen_cpp.cpp — one C++ translation unit for a graph's kernels: each kernel
// is an extern "C" function whose rows are split across OpenMP threads (when the kernel
// is large) and whose inner loop runs Vectorized<T> (kernels/cpu/vec.h, Sleef math) with
// a scalar tail. Scalar functions come from scalar_ops.def, so compiled and eager results
// agree. See Note [inductor] (docs/notes/inductor.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "inductor/pipeline.h"
#include "inductor/symbolic.h"

namespace ember::inductor {
namespace {

/// Elements below which a kernel runs on one thread (kernels/cpu/loops.h's grain).
constexpr int64_t kParallelNumel = 32768;
/// Row length when the whole index space collapses to one dim.
constexpr int64_t kBlock = 4096;

const char* c_type(ScalarType t) {
  switch (t) {
    case kFloat: return "float";
    case kDouble: return "double";
    case kBool: return "bool";
    default: EMBER_INTERNAL_ASSERT(false) << "inductor codegen: unexpected dtype " << t;
  }
  return "";
}

std::string constant_text(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// A kernel comment's sizes: the expressions of a kernel over size symbols, else the numbers.
std::string sizes_comment(const std::vector<int64_t>& sizes, const std::vector<core::sym::Expr>& sym) {
  std::ostringstream os;
  if (sym.empty()) {
    os << IntArrayRef(sizes);
    return os.str();
  }
  os << "[";
  for (size_t d = 0; d < sym.size(); ++d) os << (d ? ", " : "") << sym[d];
  os << "]";
  return os.str();
}

/// One strided operand of a kernel's loop nest: a load slot or the output.
struct Operand {
  int buffer = 0;  // index into the kernel's arguments
  ScalarType dtype = kFloat;
  std::vector<int64_t> strides;
  /// In a kernel over size symbols: the strides as expressions (empty in a static kernel).
  std::vector<core::sym::Expr> sym;
};

/// How collapse treats each dim of an index space: dropped (size 1), merged into the
/// dim kept before it (contiguous for every operand), or kept.
enum class DimStep : uint8_t { Drop, Merge, Keep };

/// The collapse of `sizes` over the operands' `strides`, over int64 or size expressions
/// (where a merge must be proved by the expressions, for every size).
template <typename I>
std::vector<DimStep> plan_collapse(const std::vector<I>& sizes, const std::vector<const std::vector<I>*>& strides) {
  std::vector<DimStep> plan;
  std::optional<size_t> last;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == I(1)) {
      plan.push_back(DimStep::Drop);
      continue;
    }
    bool merge = last.has_value();
    for (const std::vector<I>* st : strides) merge = merge && (*st)[*last] == (*st)[d] * sizes[d];
    plan.push_back(merge ? DimStep::Merge : DimStep::Keep);
    last = d;
  }
  return plan;
}

/// Applies `plan` to `sizes` and each operand's `strides` (one dim of size 1 when all drop).
template <typename I>
void apply_collapse(const std::vector<DimStep>& plan, std::vector<I>& sizes, const std::vector<std::vector<I>*>& strides) {
  std::vector<I> new_sizes;
  std::vector<std::vector<I>> new_strides(strides.size());
  for (size_t d = 0; d < plan.size(); ++d) {
    if (plan[d] == DimStep::Drop) continue;
    if (plan[d] == DimStep::Merge) {
      new_sizes.back() = new_sizes.back() * sizes[d];
      for (size_t j = 0; j < strides.size(); ++j) new_strides[j].back() = (*strides[j])[d];
    } else {
      new_sizes.push_back(sizes[d]);
      for (size_t j = 0; j < strides.size(); ++j) new_strides[j].push_back((*strides[j])[d]);
    }
  }
  if (new_sizes.empty()) {
    new_sizes.push_back(I(1));
    for (auto& st : new_strides) st.push_back(I(0));
  }
  sizes = std::move(new_sizes);
  for (size_t j = 0; j < strides.size(); ++j) *strides[j] = std::move(new_strides[j]);
}

class KernelWriter {
 public:
  KernelWriter(Kernel& k, std::set<std::string>& functions) : k_(k), functions_(functions) {
    for (const PointwiseNode* p : k.nodes) members_.insert(p->node);
    if (k.row) members_.insert(k.row->node);
    for (const RowNode* r : k.more_rows) members_.insert(r->node);
    dtype_ = k.root ? k.root->dtype : k.row->dtype;
  }

  std::string write() {
    if (k_.row) return write_row();
    const PointwiseNode& root = *k_.root;
    symbolic_ = !root.sym_sizes.empty();
    sym_sizes_ = root.sym_sizes;
    // Collect loads (slots) and buffers in the order the bodies read them.
    for (const PointwiseNode* p : k_.nodes)
      for (const PwOp& op : p->body)
        if (op.kind == PwOp::Kind::Load && !members_.count(op.value.node)) slot_for_[&op] = slot_of(op, op.strides, false, op.sym_strides);
    // Outputs: every node it stores (all over the root's sizes and dtype).
    std::vector<const PointwiseNode*> stored = k_.outputs;
    if (stored.empty()) stored.push_back(&root);
    for (const PointwiseNode* p : stored) {
      Operand o;
      o.buffer = static_cast<int>(k_.inputs.size() + outs_.size());
      o.dtype = p->mask ? kBool : p->dtype;
      const TensorMeta& m = p->node->meta()[0];
      o.strides.assign(root.sizes.size(), 0);
      for (size_t d = 0; d < root.sizes.size(); ++d)
        if (root.sizes[d] != 1) o.strides[d] = m.strides[d];
      if (symbolic_) {
        const std::vector<core::sym::Expr> strides = sym_strides_of(m);
        for (size_t d = 0; d < root.sizes.size(); ++d) o.sym.push_back(root.sizes[d] != 1 ? strides[d] : 0);
      }
      outs_.push_back(std::move(o));
      stored_.push_back(p);
    }
    collapse(symbolic_ ? root.sizes : order_by_output(root.sizes));
    x_dim_ = sizes_.size() - 1;
    if (outs_.size() == 1) {
      find_aliasable(outs_[0]);
    } else {
      k_.may_alias_output.clear();
      k_.may_alias_stored.clear();
      for (const Operand& out : outs_) {
        std::vector<int> found;  // only graph inputs the graph writes: other inputs keep __restrict
        for (int b : aliasable(out))
          if (std::any_of(k_.written_inputs.begin(), k_.written_inputs.end(),
                          [&](const Kernel::WrittenInput& w) { return w.input == k_.inputs[b].node; }))
            found.push_back(b);
        k_.may_alias_stored.push_back(std::move(found));
      }
    }

    const char* T = c_type(root.dtype);
    std::ostringstream os;
    os << "// " << k_.name << ": " << scalar_type_name(root.dtype) << sizes_comment(root.sizes, root.sym_sizes)
       << ", computes";
    for (const PointwiseNode* p : k_.nodes) os << " %" << p->node->name();
    if (stored_.size() > 1) {
      os << ", stores";
      for (const PointwiseNode* p : stored_) os << " %" << p->node->name();
    }
    // A kernel over size symbols reads their values from `ks` (Note [dynamic shapes]).
    os << "\nextern \"C\" void " << k_.name << "(void* const* bufs" << (symbolic_ ? ", const int64_t* ks" : "")
       << ") {\n";
    os << "  using T = " << T << ";\n  using V = Vectorized<T>;\n";
    declare_inputs(os);
    for (size_t i = 0; i < outs_.size(); ++i) {
      const char* O = outs_[i].dtype == kBool ? "bool" : "T";
      os << "  " << O << "*" << restrict_out() << " " << out_name(i) << " = static_cast<" << O << "*>(bufs["
         << outs_[i].buffer << "]);\n";
    }
    int64_t numel = 1;
    for (int64_t s : sizes_) numel *= s;
    core::sym::Expr sym_numel(1);
    for (const core::sym::Expr& e : sym_sizes_) sym_numel = sym_numel * e;
    if (symbolic_ ? sym_numel == core::sym::Expr(0) : numel == 0) {
      for (size_t i = 0; i < outs_.size(); ++i) os << "  (void)" << out_name(i) << ";\n";
      os << "}\n";
      return os.str();
    }
    const size_t nd = sizes_.size();
    // The loop bounds: numbers in a static kernel, values computed from `ks` once per call
    // in a kernel over size symbols (the prelude's for_rows decides at run time).
    std::string inner_text, rows_text;
    if (!symbolic_) {
      const int64_t inner = sizes_.back();
      const int64_t rows = nd == 1 ? (inner + kBlock - 1) / kBlock : numel / inner;
      inner_text = std::to_string(inner);
      rows_text = std::to_string(rows);
      if (numel >= kParallelNumel && rows > 1) os << "#pragma omp parallel for schedule(static)\n";
    } else {
      os << "  const int64_t numel = " << c_expr(sym_numel) << ";\n";
      os << "  const int64_t inner = " << size_text(nd - 1) << ";\n";
      os << "  const int64_t rows = " << (nd == 1 ? "(inner + " + std::to_string(kBlock - 1) + ") / " + std::to_string(kBlock)
                                                   : std::string("numel / inner"))
         << ";\n";
      inner_text = "inner";
      rows_text = "rows";
    }
    if (symbolic_)
      os << "  for_rows(numel >= " << kParallelNumel << " && rows > 1, rows, [&](int64_t r) {\n";
    else
      os << "  for (int64_t r = 0; r < " << rows_text << "; ++r) {\n";
    std::vector<const Operand*> all;
    for (const Operand& s : slots_) all.push_back(&s);
    for (const Operand& o : outs_) all.push_back(&o);
    if (nd == 1) {
      os << "    const int64_t begin = r * " << kBlock << ", end = std::min<int64_t>(" << inner_text << ", begin + "
         << kBlock << ");\n";
      for (size_t j = 0; j < all.size(); ++j) os << "    const int64_t o" << j << " = 0;\n";
    } else {
      os << "    const int64_t begin = 0, end = " << inner_text << ";\n    int64_t rem = r;\n";
      for (size_t d = nd - 1; d-- > 0;) {
        os << "    const int64_t i" << d << " = rem % " << size_text(d) << ";\n    rem /= " << size_text(d) << ";\n";
      }
      for (size_t j = 0; j < all.size(); ++j) {
        os << "    const int64_t o" << j << " = 0";
        for (size_t d = 0; d + 1 < nd; ++d)
          if (st_value(*all[j], d) != 0) os << " + i" << d << " * " << st_text(*all[j], d);
        os << ";\n";
      }
    }
    os << "    int64_t x = begin;\n";
    os << "    for (; x + V::size() <= end; x += V::size()) {\n" << body(true) << "    }\n";
    os << "    for (; x < end; ++x) {\n" << body(false) << "    }\n";
    os << (symbolic_ ? "  });\n}\n" : "  }\n}\n");
    return os.str();
  }

 private:
  /// The name of output i's pointer ("out" when it is the only one).
  std::string out_name(size_t i) const { return outs_.size() == 1 ? "out" : "out" + std::to_string(i); }

  /// The slot of a load with `strides` (over the kernel's index space); `primary`: a
  /// row kernel's input-side load (the first one orders the reduction's loops).
  int slot_of(const PwOp& op, const std::vector<int64_t>& strides, bool primary,
              const std::vector<core::sym::Expr>& sym = {}) {
    for (size_t j = 0; j < slots_.size(); ++j) {
      const Operand& s = slots_[j];
      if (k_.inputs[s.buffer] == op.value && s.strides == strides && s.sym == sym && s.dtype == op.dtype)
        return static_cast<int>(j);
    }
    if (primary && primary_ < 0) primary_ = static_cast<int>(slots_.size());
    Operand s;
    s.buffer = k_.input_index(op.value);
    s.dtype = op.dtype;
    s.strides = strides;
    s.sym = sym;
    slots_.push_back(std::move(s));
    return static_cast<int>(slots_.size()) - 1;
  }

  /// The loop order of a static pointwise kernel: the dims of its index space sorted by
  /// the first output's strides, largest first (stable, so a contiguous output keeps the
  /// logical order), with every operand's strides permuted alike. The innermost loop, the
  /// vectorized one, then runs along the output's memory: an NHWC output (channels_last
  /// activations, Note [aot] "Layout optimization") loops over channels innermost instead
  /// of storing every element 64 floats apart. Returns the permuted sizes.
  std::vector<int64_t> order_by_output(const std::vector<int64_t>& sizes) {
    std::vector<size_t> order(sizes.size());
    for (size_t d = 0; d < order.size(); ++d) order[d] = d;
    const std::vector<int64_t> out = outs_.at(0).strides;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out[a] > out[b]; });
    std::vector<int64_t> permuted;
    for (size_t d : order) permuted.push_back(sizes[d]);
    auto permute = [&](Operand& o) {
      std::vector<int64_t> st;
      for (size_t d : order) st.push_back(o.strides[d]);
      o.strides = std::move(st);
    };
    for (Operand& o : slots_) permute(o);
    for (Operand& o : outs_) permute(o);
    return permuted;
  }

  /// Drops size-1 dims and merges dims that are contiguous for every operand; in a kernel
  /// over size symbols, as the expressions prove it (the example values follow the plan).
  void collapse(const std::vector<int64_t>& sizes) {
    std::vector<Operand*> all;
    for (Operand& s : slots_) all.push_back(&s);
    for (Operand& o : outs_) all.push_back(&o);
    std::vector<const std::vector<int64_t>*> ints;
    std::vector<std::vector<int64_t>*> ints_out;
    std::vector<const std::vector<core::sym::Expr>*> exprs;
    std::vector<std::vector<core::sym::Expr>*> exprs_out;
    for (Operand* o : all) {
      ints.push_back(&o->strides);
      ints_out.push_back(&o->strides);
      exprs.push_back(&o->sym);
      exprs_out.push_back(&o->sym);
    }
    const std::vector<DimStep> plan = symbolic_ ? plan_collapse(sym_sizes_, exprs) : plan_collapse(sizes, ints);
    sizes_ = sizes;
    apply_collapse(plan, sizes_, ints_out);
    if (symbolic_) apply_collapse(plan, sym_sizes_, exprs_out);
  }

  /// Operand o's stride along dim d as C text: its digits, or over `ks` in a symbolic kernel.
  static std::string st_text(const Operand& o, size_t d) {
    return o.sym.empty() ? std::to_string(o.strides[d]) : c_expr(o.sym[d]);
  }
  /// Its value when the kernel's text may rely on it (not when read at run time).
  static std::optional<int64_t> st_value(const Operand& o, size_t d) {
    if (o.sym.empty()) return o.strides[d];
    return o.sym[d].is_const() ? std::optional<int64_t>(o.sym[d].value()) : std::nullopt;
  }
  /// Size d of the collapsed index space as C text.
  std::string size_text(size_t d) const { return symbolic_ ? c_expr(sym_sizes_[d]) : std::to_string(sizes_[d]); }
  /// Whether operand o moves along dim d (its stride is not the constant 0).
  static bool st_nonzero(const Operand& o, size_t d) {
    return o.sym.empty() ? o.strides[d] != 0 : !(o.sym[d] == core::sym::Expr(0));
  }
  /// An integer's C text as a double: `64.0`, or `static_cast<double>(red)` at run time.
  std::string as_double(const std::string& t) const { return symbolic_ ? "static_cast<double>(" + t + ")" : t + ".0"; }
  /// Var's divisor max(0, N - correction), N the reduced elements (C text `red` at run time).
  std::string var_divisor(int64_t K, const std::string& red) const {
    const RowNode& R = *k_.row;
    if (!symbolic_) return constant_text(std::max(0.0, static_cast<double>(K) - R.correction));
    return "std::max(0.0, static_cast<double>(" + red + ") - " + constant_text(R.correction) + ")";
  }
  /// The product of sizes [b, e) of the collapsed index space as C text.
  std::string product_text(size_t b, size_t e) const {
    if (!symbolic_) {
      int64_t p = 1;
      for (size_t d = b; d < e; ++d) p *= sizes_[d];
      return std::to_string(p);
    }
    core::sym::Expr p(1);
    for (size_t d = b; d < e; ++d) p = p * sym_sizes_[d];
    return c_expr(p);
  }

  std::string load(int j, bool vec) {
    const Operand& s = slots_[j];
    const std::optional<int64_t> stv = st_value(s, x_dim_);
    const std::string st = st_text(s, x_dim_);
    // Inside a lambda over reduced elements, p<j> is o<j> plus the reduced offset.
    const std::string off = in_reduced_lambda_ && reduced_offset(s) ? " + p" : " + o";
    const std::string p = "in" + std::to_string(s.buffer) + off + std::to_string(j);
    if (s.dtype == kBool) {
      return vec ? "ld_mask<V>(" + p + " + x * " + st + ", " + st + ")" : "(" + p + ")[x * " + st + "]";
    }
    if (!vec) return "static_cast<T>((" + p + ")[x * " + st + "])";
    if (stv == 0) return "V(static_cast<T>(*(" + p + ")))";
    if (stv == 1 && s.dtype == dtype_) return "V::load(" + p + " + x)";
    return "ld<V>(" + p + " + x * " + st + ", " + st + ")";
  }

  /// Emits node `p`'s operations (and, first, those of the members it reads); returns
  /// the variable holding its value.
  std::string emit(const PointwiseNode& p, bool vec, std::ostringstream& os, std::map<const Node*, std::string>& done) {
    if (auto it = done.find(p.node); it != done.end()) return it->second;
    std::vector<std::string> vars(p.body.size());
    for (size_t i = 0; i < p.body.size(); ++i) {
      const PwOp& op = p.body[i];
      if (op.kind == PwOp::Kind::Load && members_.count(op.value.node)) {
        if (auto d = done.find(op.value.node); d != done.end()) vars[i] = d->second;  // the row's value
        for (const PointwiseNode* m : k_.nodes)
          if (m->node == op.value.node) vars[i] = emit(*m, vec, os, done);
        continue;
      }
      vars[i] = "t" + std::to_string(counter_++);
      os << "      const auto " << vars[i] << " = ";
      switch (op.kind) {
        case PwOp::Kind::Load: os << load(slot_for_.at(&op), vec); break;
        case PwOp::Kind::Constant:
          os << (vec ? "V(T(" : "T(") << constant_text(op.constant) << (vec ? "))" : ")");
          break;
        case PwOp::Kind::Call:
          functions_.insert(op.fn);
          os << call_text(op, vars);
          break;
      }
      os << ";\n";
    }
    done[p.node] = vars.back();
    return vars.back();
  }

  std::string body(bool vec) {
    std::ostringstream os;
    std::map<const Node*, std::string> done;
    counter_ = 0;
    // Every value first, then the stores: an output may be written over an input (in
    // place), which every load of the element must read before (Kernel::may_alias_stored).
    std::vector<std::string> results;
    for (size_t i = 0; i < outs_.size(); ++i) results.push_back(emit(*stored_[i], vec, os, done));
    for (size_t i = 0; i < outs_.size(); ++i) {
      const std::string& result = results[i];
      const std::string st = st_text(outs_[i], x_dim_);
      const std::string p = out_name(i) + " + o" + std::to_string(slots_.size() + i);
      if (vec && outs_[i].dtype == kBool) {
        os << "      st_mask(" << p << " + x * " << st << ", " << st << ", " << result << ");\n";
      } else if (vec) {
        os << "      "
           << (st_value(outs_[i], x_dim_) == 1 ? result + ".store(" + p + " + x)"
                                               : "st(" + p + " + x * " + st + ", " + st + ", " + result + ")")
           << ";\n";
      } else {
        os << "      (" << p << ")[x * " << st << "] = " << result << ";\n";
      }
    }
    return os.str();
  }


  /// `strides` of a load over the output's index space (an epilogue's), over the input's:
  /// kept dims take the output's strides in order, reduced dims 0 (keepdim or not).
  template <typename I>
  std::vector<I> to_input_space(const std::vector<I>& strides, bool over_input) const {
    return inductor::to_input_space(*k_.row, strides, over_input);
  }

  /// The reduction's loop geometry over the input's index space: size-1 dims dropped,
  /// kept dims first, then reduced dims (at least one, maybe a dummy of size 1), each group
  /// ordered (reductions only) by the primary operand's stride, largest first, as eager's
  /// reduction plan does, then merged where contiguous for every operand. Sets sizes_,
  /// nk_ (kept dims), every operand's strides in that layout, column_ and x_dim_.
  /// Fills Kernel::may_alias_output: inputs of the output's dtype whose every slot reads
  /// them at the output's index map.
  void find_aliasable(const Operand& out) { k_.may_alias_output = aliasable(out); }
  /// The inputs of `out`'s dtype whose every slot reads them at `out`'s index map.
  std::vector<int> aliasable(const Operand& out) const {
    std::vector<int> found;
    for (size_t b = 0; b < k_.inputs.size(); ++b) {
      if (k_.inputs[b].node->meta()[k_.inputs[b].index].dtype != out.dtype) continue;
      bool same = true;
      for (const Operand& sl : slots_)
        if (sl.buffer == static_cast<int>(b)) same = same && sl.strides == out.strides && sl.sym == out.sym && sl.dtype == out.dtype;
      if (same) found.push_back(static_cast<int>(b));
    }
    return found;
  }
  bool may_alias(size_t b) const {
    auto in = [b](const std::vector<int>& l) { return std::find(l.begin(), l.end(), static_cast<int>(b)) != l.end(); };
    return in(k_.may_alias_output) || std::any_of(k_.may_alias_stored.begin(), k_.may_alias_stored.end(), in);
  }
  bool any_alias() const {
    return !k_.may_alias_output.empty() ||
           std::any_of(k_.may_alias_stored.begin(), k_.may_alias_stored.end(), [](const auto& l) { return !l.empty(); });
  }
  std::string restrict_out() const { return any_alias() ? "" : " __restrict"; }
  void declare_inputs(std::ostringstream& os) const {
    for (size_t b = 0; b < k_.inputs.size(); ++b) {
      const TensorMeta& bm = k_.inputs[b].node->meta()[k_.inputs[b].index];
      os << "  const " << c_type(bm.dtype) << "*" << (may_alias(b) ? "" : " __restrict") << " in" << b
         << " = static_cast<const " << c_type(bm.dtype) << "*>(bufs[" << b << "]);\n";
    }
  }

  void reduction_geometry(std::vector<Operand>& outs) {
    const RowNode& R = *k_.row;
    std::vector<Operand*> all;
    for (Operand& s : slots_) all.push_back(&s);
    for (Operand& o : outs) all.push_back(&o);
    // Over size symbols, each dim also carries its size and strides as expressions: a
    // dim drops when its size is the constant 1 and merges when the expressions prove it;
    // the example values (st) only order the dims.
    struct Dim {
      int64_t size;
      std::vector<int64_t> st;
      core::sym::Expr ssize = core::sym::Expr(1);
      std::vector<core::sym::Expr> sst;
    };
    std::vector<Dim> kept, red;
    for (size_t d = 0; d < R.in_sizes.size(); ++d) {
      if (symbolic_ ? R.sym_in_sizes[d] == core::sym::Expr(1) : R.in_sizes[d] == 1) continue;
      Dim dim{R.in_sizes[d], {}};
      for (Operand* o : all) dim.st.push_back(o->strides[d]);
      if (symbolic_) {
        dim.ssize = R.sym_in_sizes[d];
        for (Operand* o : all) dim.sst.push_back(o->sym[d]);
      }
      (R.reduced[d] ? red : kept).push_back(std::move(dim));
    }
    // Stride 0 (broadcast) sorts outermost: it is no reason to vectorize along a dim.
    auto key = [&](const Dim& d) {
      const int64_t s = primary_ >= 0 ? d.st[primary_] : 1;
      return s == 0 ? std::numeric_limits<int64_t>::max() : std::abs(s);
    };
    for (std::vector<Dim>* group : {&kept, &red}) {
      if (R.is_reduction())
        std::stable_sort(group->begin(), group->end(), [&](const Dim& a, const Dim& b) { return key(a) > key(b); });
      std::vector<Dim> merged;
      for (Dim& d : *group) {
        bool merge = !merged.empty();
        for (size_t j = 0; merge && j < all.size(); ++j)
          merge = symbolic_ ? merged.back().sst[j] == d.sst[j] * d.ssize : merged.back().st[j] == d.st[j] * d.size;
        if (merge) {
          merged.back().size *= d.size;
          merged.back().st = d.st;
          merged.back().ssize = merged.back().ssize * d.ssize;
          merged.back().sst = d.sst;
        } else {
          merged.push_back(std::move(d));
        }
      }
      *group = std::move(merged);
    }
    if (red.empty())
      red.push_back(Dim{1, std::vector<int64_t>(all.size(), 0), core::sym::Expr(1),
                        std::vector<core::sym::Expr>(symbolic_ ? all.size() : 0, core::sym::Expr(0))});
    column_ = R.is_reduction() && !row_shaped_ && !kept.empty() && key(kept.back()) < key(red.back());
    nk_ = kept.size();
    sizes_.clear();
    sym_sizes_.clear();
    for (Operand* o : all) {
      o->strides.clear();
      o->sym.clear();
    }
    for (const std::vector<Dim>* group : {&kept, &red})
      for (const Dim& d : *group) {
        sizes_.push_back(d.size);
        for (size_t j = 0; j < all.size(); ++j) all[j]->strides.push_back(d.st[j]);
        if (!symbolic_) continue;
        sym_sizes_.push_back(d.ssize);
        for (size_t j = 0; j < all.size(); ++j) all[j]->sym.push_back(d.sst[j]);
      }
    x_dim_ = column_ ? nk_ - 1 : sizes_.size() - 1;
  }

  /// A row kernel: for each index of the kept dims, the row's passes (prelude helpers
  /// with eager's arithmetic) over the prologue's value, then the last pass with the
  /// epilogue, storing the root. A reduction whose innermost dim (in the input's memory
  /// order) is kept becomes a column kernel instead (write_columns).
  /// Emits, inside a loop whose `rem` holds a linear index over the outer kept dims
  /// [0, nk_) (a column kernel's innermost kept dim excluded), their indices i<d>, then
  /// each load slot's offset o<j> and each output's q<i> at that index.
  void write_kept_offsets(std::ostringstream& os, const std::vector<Operand>& outs) const {
    const size_t no = column_ ? nk_ - 1 : nk_;
    for (size_t d = no; d-- > 0;)
      os << "    const int64_t i" << d << " = rem % " << size_text(d) << ";\n    rem /= " << size_text(d) << ";\n";
    auto offset = [&](const Operand& o) {
      std::string e = "0";
      for (size_t d = 0; d < no; ++d)
        if (st_nonzero(o, d)) e += " + i" + std::to_string(d) + " * " + st_text(o, d);
      return e;
    };
    for (size_t j = 0; j < slots_.size(); ++j) os << "    const int64_t o" << j << " = " << offset(slots_[j]) << ";\n";
    for (size_t i = 0; i < outs.size(); ++i) os << "    const int64_t q" << i << " = " << offset(outs[i]) << ";\n";
  }

  std::string write_row() {
    const RowNode& R = *k_.row;
    // Over size symbols (Note [dynamic shapes]): every operand also carries its strides as
    // expressions, and sizes, row counts and strides print as C expressions over `ks`.
    symbolic_ = !R.sym_in_sizes.empty();
    auto exprs = [&](const std::vector<core::sym::Expr>& sym, const std::vector<int64_t>& ints) {
      if (!symbolic_ || !sym.empty()) return sym;
      return std::vector<core::sym::Expr>(ints.begin(), ints.end());
    };
    // A row-shaped epilogue (scheduler's row_shaped_epilogue): the last pass runs over the
    // row, the reductions' values broadcast.
    row_shaped_ = R.is_reduction() && k_.root && k_.root->sizes == R.in_sizes && R.in_sizes != R.out_sizes;
    EMBER_INTERNAL_ASSERT(k_.more_rows.empty() || row_shaped_)
        << "inductor codegen: kernel " << k_.name << " has several reductions but no row-shaped epilogue";
    // Loads of members over the input's sizes (the prologue, the row's own) and over the
    // output's (the epilogue), all as strides over the input's index space.
    for (const PointwiseNode* p : k_.nodes)
      for (const PwOp& op : p->body)
        if (op.kind == PwOp::Kind::Load && !members_.count(op.value.node))
          slot_for_[&op] = slot_of(op, to_input_space(op.strides, p->sizes == R.in_sizes), p->sizes == R.in_sizes,
                                   to_input_space(exprs(op.sym_strides, op.strides), p->sizes == R.in_sizes));
    std::vector<const PwOp*> row_loads = {&R.input, &R.weight, &R.bias};
    for (const RowNode* m : k_.more_rows) row_loads.push_back(&m->input);
    for (const PwOp* op : row_loads)
      if (op->kind == PwOp::Kind::Load && !members_.count(op->value.node))
        slot_for_[op] = slot_of(*op, op->strides, true, exprs(op->sym_strides, op->strides));
    // Outputs: the root's, or every output of the row node.
    std::vector<Operand> outs;
    const Node* root = k_.root ? k_.root->node : k_.row->node;
    for (size_t i = 0; i < (k_.root ? 1 : root->meta().size()); ++i) {
      const TensorMeta& m = root->meta()[i];
      Operand o;
      o.buffer = static_cast<int>(k_.inputs.size() + i);
      o.dtype = m.dtype;
      o.strides = row_output_strides(R, m);
      if (symbolic_) {
        const std::vector<core::sym::Expr> sizes = sym_sizes_of(m), strides = sym_strides_of(m);
        for (size_t d = 0; d < m.sizes.size(); ++d) o.sym.push_back(sizes[d] == core::sym::Expr(1) ? 0 : strides[d]);
        o.sym = to_input_space(o.sym, m.sizes.size() == R.in_sizes.size());
      }
      outs.push_back(std::move(o));
    }
    reduction_geometry(outs);
    // Log-softmax and layer norm read a row before their last pass writes it, element by
    // element; a reduction writes one value per row, possibly over another row's input.
    // Softmax stores exp(x - max) over its output row before the last pass, so an
    // epilogue reading the input at x would find it overwritten: never in place.
    if (!column_ && (R.kind == RowKind::LogSoftmax || R.kind == RowKind::LayerNorm)) find_aliasable(outs[0]);
    const size_t no = nk_;
    int64_t rows = 1, K = 1;
    for (size_t d = 0; d < sizes_.size(); ++d) (d < no ? rows : K) *= sizes_[d];
    const int64_t n = sizes_.back();

    std::ostringstream os;
    os << "// " << k_.name << ": " << row_kind_name(R.kind) << (column_ ? " columns of " : " rows of ")
       << scalar_type_name(R.dtype) << sizes_comment(R.in_sizes, R.sym_in_sizes);
    os << (R.reduces_last_dim_only() ? "" : " " + row_dims_text(R)) << " (row %" << R.node->name() << "), computes";
    for (const PointwiseNode* p : k_.nodes) os << " %" << p->node->name();
    os << "\nextern \"C\" void " << k_.name << "(void* const* bufs" << (symbolic_ ? ", const int64_t* ks" : "") << ") {\n";
    os << "  using T = " << c_type(dtype_) << ";\n  using V = Vectorized<T>;\n";
    declare_inputs(os);
    for (size_t i = 0; i < outs.size(); ++i)
      os << "  T*" << (i == 0 ? restrict_out() : " __restrict") << " out" << i << " = static_cast<T*>(bufs["
         << outs[i].buffer << "]);\n";
    // The row count, the reduced elements per row and the innermost reduced length: numbers
    // in a static kernel, values computed from `ks` once per call over size symbols.
    std::string rows_t = std::to_string(rows), K_t = std::to_string(K), n_t = std::to_string(n);
    if (symbolic_) {
      os << "  const int64_t rows = " << product_text(0, no) << ", red = " << product_text(no, sizes_.size())
         << ", len = " << size_text(sizes_.size() - 1) << ";\n  (void)rows;\n  (void)red;\n  (void)len;\n";
      rows_t = "rows";
      K_t = "red";
      n_t = "len";
    }
    if (column_) {
      write_columns(os, outs, rows, K, rows_t, K_t);
      return os.str();
    }
    if (!symbolic_ && rows > 1 && rows * K >= kParallelNumel) os << "#pragma omp parallel for schedule(static)\n";
    const bool row_lambda = symbolic_ && no > 0;  // rows split across threads at run time
    if (row_lambda)
      os << "  for_rows(rows > 1 && rows * red >= " << kParallelNumel << ", rows, [&](int64_t r) {\n";
    else
      os << "  for (int64_t r = 0; r < " << rows_t << "; ++r) {\n";
    os << "    int64_t rem = r;\n    (void)rem;\n";
    write_kept_offsets(os, outs);
    // The reduced dims but the innermost are segments: each pass runs over every segment
    // (the row's input at column x of segment s), its per-segment results combined. A
    // reduction to one value (nothing kept) over at least kParallelNumel elements splits
    // its range across threads: contiguous pieces of the row, or ranges of segments, each
    // thread's partial combined in thread order.
    // Over size symbols the split is decided at run time (`red >= kParallelNumel`; on
    // one thread it computes what the unsplit pass does).
    const bool one_segment = sizes_.size() - no == 1;
    const std::string segments = product_text(no, sizes_.size() - 1);
    bool reduced_static = true;
    for (size_t d = no; symbolic_ && d < sizes_.size(); ++d) reduced_static = reduced_static && sym_sizes_[d].is_const();
    const bool split = R.is_reduction() && (symbolic_ ? no == 0 : rows == 1) && (!reduced_static || K >= kParallelNumel);
    const bool runtime_split = split && !reduced_static;
    // in_v/in_s read the row's input at x; in_v<i>/in_s<i> further row i's (more_rows).
    auto define_lambdas = [&](const std::string& indent) {
      for (size_t i = 0; i <= k_.more_rows.size(); ++i)
        for (const bool vec : {true, false}) {
          os << indent << "auto " << lambda_name(vec, i) << " = [&](int64_t x) {\n";
          const std::string v = prologue(i == 0 ? *k_.row : *k_.more_rows[i - 1], vec, os);
          os << "      return " << v << ";\n" << indent << "};\n";
        }
    };
    if (one_segment && !split) define_lambdas("    ");
    // Opens `for (s = begin; s < end; ++s)` with segment s's offsets p<j> and lambdas.
    auto open_segment = [&](const std::string& begin, const std::string& end, const std::string& indent) {
      os << indent << "for (int64_t s = " << begin << "; s < " << end << "; ++s) {\n" << indent << "  int64_t srem = s;\n";
      const size_t last = sizes_.size() - 1;
      for (size_t d = last; d-- > no;)
        os << indent << "  const int64_t k" << d << " = srem % " << size_text(d) << ";\n" << indent << "  srem /= "
           << size_text(d) << ";\n";
      in_reduced_lambda_ = true;
      for (size_t j = 0; j < slots_.size(); ++j) {
        if (!reduced_offset(slots_[j])) continue;
        os << indent << "  const int64_t p" << j << " = o" << j;
        for (size_t d = no; d < last; ++d)
          if (st_nonzero(slots_[j], d)) os << " + k" << d << " * " << st_text(slots_[j], d);
        os << ";\n";
      }
      define_lambdas(indent + "  ");
      in_reduced_lambda_ = false;
    };
    // Declares `type var`: the combination (`combine(a, b)`) of piece(len, fv, fs) — a
    // pass over `len` values of the row read through fv/fs — over the whole range.
    using Piece = std::function<std::string(const std::string&, const std::string&, const std::string&)>;
    using Combine = std::function<std::string(const std::string&, const std::string&)>;
    auto reduce_pass = [&](const std::string& var, const std::string& type, const std::string& identity,
                           const Combine& combine, const Piece& piece, size_t which = 0) {
      const std::string N = n_t, lv = lambda_name(true, which), ls = lambda_name(false, which);
      if (!split) {
        if (one_segment) {
          os << "    " << type << " " << var << " = " << piece(N, lv, ls) << ";\n";
          return;
        }
        os << "    " << type << " " << var << " = " << identity << ";\n";
        open_segment("0", segments, "    ");
        os << "      " << var << " = " << combine(var, piece(N, lv, ls)) << ";\n    }\n";
        return;
      }
      // Thread t of nth computes part t; over size symbols a lambda, run on this thread
      // alone (t = 0 of 1) when the row is short, without entering an OpenMP region.
      os << "    std::vector<" << type << "> part_" << var << "(omp_get_max_threads(), " << identity << ");\n";
      if (runtime_split)
        os << "    auto split_" << var << " = [&](const int64_t t, const int64_t nth) {\n";
      else
        os << "#pragma omp parallel num_threads(static_cast<int>(part_" << var << ".size()))\n    {\n"
           << "      const int64_t t = omp_get_thread_num(), nth = omp_get_num_threads();\n";
      if (one_segment) {
        os << "      const int64_t x0 = " << N << " * t / nth, x1 = " << N << " * (t + 1) / nth;\n";
        define_lambdas("      ");
        os << "      auto pv = [&](int64_t i) { return " << lv << "(x0 + i); };\n"
           << "      auto ps = [&](int64_t i) { return " << ls << "(x0 + i); };\n"
           << "      if (x1 > x0) part_" << var << "[t] = " << piece("x1 - x0", "pv", "ps") << ";\n";
      } else {
        const std::string& S = segments;
        os << "      " << type << " a = " << identity << ";\n";
        open_segment(S + " * t / nth", S + " * (t + 1) / nth", "      ");
        os << "        a = " << combine("a", piece(N, lv, ls)) << ";\n      }\n"
           << "      part_" << var << "[t] = a;\n";
      }
      if (runtime_split)
        os << "    };\n    if (red >= " << kParallelNumel << ") {\n"
           << "#pragma omp parallel num_threads(static_cast<int>(part_" << var << ".size()))\n"
           << "      split_" << var << "(omp_get_thread_num(), omp_get_num_threads());\n"
           << "    } else {\n      split_" << var << "(0, 1);\n    }\n";
      else
        os << "    }\n";
      os << "    " << type << " " << var << " = " << identity << ";\n"
         << "    for (const " << type << " p : part_" << var << ") " << var << " = " << combine(var, "p") << ";\n";
    };
    const Combine add = [](const std::string& a, const std::string& b) { return a + " + " + b; };
    const Piece sum_piece = [](const std::string& len, const std::string& fv, const std::string& fs) {
      return "row_sum<V>(" + len + ", " + fv + ", " + fs + ")";
    };
    const std::string N = n_t, KS = K_t;
    std::string value_v, value_s;  // the row node's output 0 at x, for the last pass
    switch (R.kind) {
      case RowKind::Sum:
      case RowKind::Mean:
        reduce_pass("total", "double", "0.0", add, sum_piece);
        os << "    const T acc = static_cast<T>(total" << (R.kind == RowKind::Mean ? " / " + as_double(KS) : "") << ");\n";
        value_s = "acc";
        break;
      case RowKind::Max:
      case RowKind::Min: {
        const std::string mx = std::to_string(R.kind == RowKind::Max);
        reduce_pass("acc", "T", (R.kind == RowKind::Max ? "-" : "") + std::string("std::numeric_limits<T>::infinity()"),
                    [mx](const std::string& a, const std::string& b) { return "pick_minmax<" + mx + ">(" + a + ", " + b + ")"; },
                    [mx](const std::string& len, const std::string& fv, const std::string& fs) {
                      return "row_minmax<V, " + mx + ">(" + len + ", " + fv + ", " + fs + ")";
                    });
        value_s = "acc";
        break;
      }
      case RowKind::Var: {
        // Two passes as eager: the mean, then the squared deviations from it.
        reduce_pass("total", "double", "0.0", add, sum_piece);
        os << "    const T mean = static_cast<T>(total / " << as_double(KS) << ");\n";
        reduce_pass("sq", "double", "0.0", add, [](const std::string& len, const std::string& fv, const std::string& fs) {
          return "row_sum<V>(" + len + ", [&](int64_t x) { const V d = " + fv + "(x) - V(mean); return d * d; }, " +
                 "[&](int64_t x) { const T d = " + fs + "(x) - mean; return d * d; })";
        });
        os << "    const T acc = static_cast<T>(sq / " << var_divisor(K, KS) << ");\n";
        value_s = "acc";
        break;
      }
      case RowKind::Prod:
        reduce_pass("acc", "T", "T(1)", [](const std::string& a, const std::string& b) { return a + " * " + b; },
                    [](const std::string& len, const std::string& fv, const std::string& fs) {
                      return "row_prod<V>(" + len + ", " + fv + ", " + fs + ")";
                    });
        value_s = "acc";
        break;
      case RowKind::Softmax: {
        // exp(x - max) is stored into the output row by the sum pass and scaled by the
        // last pass (the epilogue then reads the scaled value), as the eager kernel does.
        const std::optional<int64_t> st = st_value(outs[0], x_dim_);
        const std::string S = st_text(outs[0], x_dim_);
        os << "    const T mx = softmax_max<V>(" << N << ", in_v, in_s);\n"
           << "    const T rs = T(1) / softmax_sum<V>(" << N << ", mx, in_v, in_s, out0 + q0, " << S << ");\n";
        value_v = (st == 1 ? "V::load(out0 + q0 + x)" : "ld<V>(out0 + q0 + x * " + S + ", " + S + ")") + " * V(rs)";
        value_s = "(out0 + q0)[x * " + S + "] * rs";
        break;
      }
      case RowKind::LogSoftmax:
        os << "    const T mx = softmax_max<V>(" << N << ", in_v, in_s);\n"
           << "    const T lse = log(softmax_sum<V>(" << N << ", mx, in_v, in_s));\n";
        value_v = "(in_v(x) - V(mx)) - V(lse)";
        value_s = "(in_s(x) - mx) - lse";
        break;
      case RowKind::LayerNorm: {
        os << "    const T mean = static_cast<T>(row_sum<V>(" << N << ", in_v, in_s) / " << as_double(N) << ");\n"
           << "    const double var = row_sum<V>(" << N << ", [&](int64_t x) { const V d = in_v(x) - V(mean); return d * d; },"
           << " [&](int64_t x) { const T d = in_s(x) - mean; return d * d; }) / " << as_double(N) << ";\n"
           << "    const T rstd = static_cast<T>(1.0 / std::sqrt(std::max(var, 0.0) + " << constant_text(R.eps) << "));\n"
           << "    const T shift = -rstd * mean;\n";
        // ATen's form: (x * rstd + (-rstd * mean)) * gamma + beta.
        for (const bool vec : {true, false}) {
          std::string e = vec ? "(in_v(x) * V(rstd) + V(shift))" : "(in_s(x) * rstd + shift)";
          if (R.weight.kind == PwOp::Kind::Load) e = "(" + e + " * " + load(slot_for_.at(&R.weight), vec) + ")";
          if (R.bias.kind == PwOp::Kind::Load) e = "(" + e + " + " + load(slot_for_.at(&R.bias), vec) + ")";
          (vec ? value_v : value_s) = e;
        }
        if (!k_.root) {
          os << "    out1[q1] = mean;\n    out2[q2] = rstd;\n";
        }
        break;
      }
    }
    // Further sums/means over the same rows, each its own pass: acc<i>.
    for (size_t i = 1; i <= k_.more_rows.size(); ++i) {
      const RowNode& M = *k_.more_rows[i - 1];
      const std::string I = std::to_string(i);
      reduce_pass("total" + I, "double", "0.0", add, sum_piece, i);
      os << "    const T acc" << I << " = static_cast<T>(total" << I << (M.kind == RowKind::Mean ? " / " + as_double(KS) : "")
         << ");\n";
    }
    if (row_shaped_) value_v = "V(" + value_s + ")";
    if (value_v.empty()) {
      os << "    {\n      const int64_t x = 0;\n      (void)x;\n" << last(false, value_s, outs) << "    }\n";
    } else {
      os << "    int64_t x = 0;\n";
      os << "    for (; x + V::size() <= " << N << "; x += V::size()) {\n" << last(true, value_v, outs) << "    }\n";
      os << "    for (; x < " << N << "; ++x) {\n" << last(false, value_s, outs) << "    }\n";
    }
    os << (row_lambda ? "  });\n}\n" : "  }\n}\n");
    return os.str();
  }

  /// The last pass at x: the row's value, the epilogue over it, the store of output 0.
  std::string last(bool vec, const std::string& value, const std::vector<Operand>& outs) {
    std::ostringstream b;
    std::map<const Node*, std::string> done;
    b << "      const " << (vec ? "V" : "T") << " rv = " << value << ";\n";
    std::string result = "rv";
    if (k_.root) {
      done[k_.row->node] = "rv";
      for (size_t i = 1; i <= k_.more_rows.size(); ++i)
        done[k_.more_rows[i - 1]->node] = vec ? "V(acc" + std::to_string(i) + ")" : "acc" + std::to_string(i);
      result = emit(*k_.root, vec, b, done);
    }
    const std::string st = st_text(outs[0], x_dim_);
    if (vec) {
      b << "      " << (st_value(outs[0], x_dim_) == 1 ? result + ".store(out0 + q0 + x)"
                                                      : "st(out0 + q0 + x * " + st + ", " + st + ", " + result + ")")
        << ";\n";
    } else {
      b << "      (out0 + q0)[x * " << st << "] = " << result << ";\n";
    }
    return b.str();
  }

  /// Whether operand `o` moves along any reduced dim (then a lambda over the reduced
  /// index offsets it).
  bool reduced_offset(const Operand& o) const {
    for (size_t d = nk_; d < o.strides.size(); ++d)
      if (st_nonzero(o, d) && d != x_dim_) return true;
    return false;
  }

  /// A column kernel (a reduction whose innermost dim in memory is kept, e.g. sum over
  /// dim 0 of [N, C]): each unit of work is a block of CB columns of the innermost kept
  /// dim at one index of the outer kept dims; it reads every reduced element k of those
  /// columns as Vectorized lanes (col_* helpers), then evaluates the epilogue and stores
  /// column by column.
  /// Over size symbols, `rows_t` and `K_t` name the row count and the reduced elements
  /// computed at entry, the column block width and the split are decided at run time
  /// (the same formulas), and CB, the blocks' array bound, is its largest value.
  void write_columns(std::ostringstream& os, const std::vector<Operand>& outs, int64_t rows, int64_t K,
                     const std::string& rows_t, const std::string& K_t) {
    const RowNode& R = *k_.row;
    const size_t no = nk_ - 1;  // outer kept dims; dim nk_ - 1 is the columns
    const int64_t C = sizes_[no];
    const int64_t outer = rows / C;
    // Blocks of columns as wide as possible (up to 1024: whole rows stream from memory)
    // while every thread still gets a block: per = the blocks each outer index needs.
    const bool parallel = symbolic_ || rows * K >= kParallelNumel;
    // When the blocks are still fewer than the threads (few, narrow columns), each block's
    // reduced range splits in KS parts (at least 1024 elements each), accumulated into
    // per-part results and combined in order afterwards. var (two passes) does not split.
    const bool can_split = parallel && R.kind != RowKind::Var && (symbolic_ || K >= 2048);
    std::string C_t = std::to_string(C), units = std::to_string(outer) + " * NB";
    if (!symbolic_) {
      os << "  constexpr int64_t CB = std::min<int64_t>(1024, (" << C << " + V::size() - 1) / V::size() * V::size());\n"
         << "  const int64_t per = (" << (parallel ? "omp_get_max_threads()" : "1") << " + " << outer - 1 << ") / "
         << outer << ";\n"
         << "  const int64_t cbw = std::min<int64_t>(CB, std::max<int64_t>(2 * V::size(), ((" << C
         << " + per - 1) / per + V::size() - 1) / V::size() * V::size()));\n";
    } else {
      C_t = "C";
      units = "outer * NB";
      os << "  constexpr int64_t CB = 1024;\n"
         << "  const int64_t C = " << size_text(no) << ", outer = " << product_text(0, no) << ";\n"
         << "  const bool par = " << rows_t << " * " << K_t << " >= " << kParallelNumel << ";\n"
         << "  const int64_t per = ((par ? omp_get_max_threads() : 1) + outer - 1) / outer;\n"
         << "  const int64_t cbw = std::min<int64_t>(std::min<int64_t>(CB, (C + V::size() - 1) / V::size() * V::size()), "
         << "std::max<int64_t>(2 * V::size(), ((C + per - 1) / per + V::size() - 1) / V::size() * V::size()));\n";
    }
    os << "  const int64_t NB = (" << C_t << " + cbw - 1) / cbw;\n";
    const char* acc_type = R.kind == RowKind::Sum || R.kind == RowKind::Mean || R.kind == RowKind::Var ? "double" : "T";
    if (can_split) {
      const std::string ks = symbolic_ ? K_t + " / 1024" : std::to_string(K / 1024);
      os << "  const int64_t KS = " << (symbolic_ ? "par && " + K_t + " >= 2048 ? " : "")
         << "std::max<int64_t>(1, std::min<int64_t>(" << ks << ", (omp_get_max_threads() + " << units << " - 1) / ("
         << units << ")))" << (symbolic_ ? " : 1" : "") << ";\n"
         << "  std::vector<" << acc_type << "> part(KS > 1 ? " << units << " * KS * cbw : 0);\n";
    }
    // Block u's columns [c0, c0 + cn) and its offsets: i<d> (outer kept), o<j>, q<i>.
    auto unit_offsets = [&](const std::string& u) {
      os << "    const int64_t c0 = " << u << " % NB * cbw, cn = std::min<int64_t>(cbw, " << C_t << " - c0);\n"
         << "    int64_t rem = " << u << " / NB;\n    (void)rem;\n";
      write_kept_offsets(os, outs);
    };
    // Over size symbols the blocks split across threads at run time (for_rows); the loop
    // body is then a lambda, which leaves a block with `return`.
    if (parallel && !symbolic_) os << "#pragma omp parallel for schedule(static)\n";
    const std::string unit_var = can_split ? "w" : "u", unit_count = can_split ? units + " * KS" : units;
    if (symbolic_)
      os << "  for_rows(par, " << unit_count << ", [&](int64_t " << unit_var << ") {\n";
    else
      os << "  for (int64_t " << unit_var << " = 0; " << unit_var << " < " << unit_count << "; ++" << unit_var << ") {\n";
    if (can_split) {
      os << "    const int64_t u = w / KS, kp = w % KS, kb = " << K_t << " * kp / KS, ke = " << K_t << " * (kp + 1) / KS;\n";
    } else {
      os << "    const int64_t kb = 0, ke = " << K_t << ";\n";
    }
    unit_offsets("u");
    // in_v(k, x) / in_s(k, x): the input at reduced element k, column x.
    in_reduced_lambda_ = true;
    for (const bool vec : {true, false}) {
      os << "    auto in_" << (vec ? "v" : "s") << " = [&](int64_t k, int64_t x) {\n      int64_t krem = k;\n"
         << "      (void)krem;\n";
      for (size_t d = sizes_.size(); d-- > nk_;)
        os << "      const int64_t k" << d << " = krem % " << size_text(d) << ";\n      krem /= " << size_text(d) << ";\n";
      for (size_t j = 0; j < slots_.size(); ++j) {
        if (!reduced_offset(slots_[j])) continue;
        os << "      const int64_t p" << j << " = o" << j;
        for (size_t d = nk_; d < sizes_.size(); ++d)
          if (st_nonzero(slots_[j], d)) os << " + k" << d << " * " << st_text(slots_[j], d);
        os << ";\n";
      }
      const std::string v = prologue(R, vec, os);
      os << "      return " << v << ";\n    };\n";
    }
    in_reduced_lambda_ = false;
    const std::string KS = K_t, args = "(kb, ke, c0, cn, in_v, in_s, res)";
    std::string value, combine;  // output 0 at column x; res[j] combined with a part p[j]
    os << "    " << acc_type << " res[CB];\n";
    switch (R.kind) {
      case RowKind::Sum:
      case RowKind::Mean:
        os << "    col_sum<V, CB>" << args << ";\n";
        value = "static_cast<T>(res[x - c0]" + std::string(R.kind == RowKind::Mean ? " / " + as_double(KS) : "") + ")";
        combine = "res[j] += p[j]";
        break;
      case RowKind::Max:
      case RowKind::Min:
        os << "    col_minmax<V, CB, " << (R.kind == RowKind::Max) << ">" << args << ";\n";
        value = "res[x - c0]";
        combine = "res[j] = pick_minmax<" + std::to_string(R.kind == RowKind::Max) + ">(res[j], p[j])";
        break;
      case RowKind::Prod:
        os << "    col_prod<V, CB>" << args << ";\n";
        value = "res[x - c0]";
        combine = "res[j] *= p[j]";
        break;
      case RowKind::Var:
        os << "    col_sum<V, CB>" << args << ";\n"
           << "    T mt[CB];\n    for (int64_t j = 0; j < cn; ++j) mt[j] = static_cast<T>(res[j] / " << as_double(KS) << ");\n"
           << "    col_sum<V, CB>(kb, ke, c0, cn, [&](int64_t k, int64_t x) { const V d = in_v(k, x) - "
           << "V::load(mt + (x - c0)); return d * d; }, [&](int64_t k, int64_t x) { const T d = in_s(k, x) - mt[x - c0]; "
           << "return d * d; }, res);\n";
        value = "static_cast<T>(res[x - c0] / " + var_divisor(K, KS) + ")";
        break;
      default: EMBER_INTERNAL_ASSERT(false) << "inductor codegen: " << row_kind_name(R.kind) << " has no column kernel";
    }
    if (can_split) {
      os << "    if (KS > 1) {\n      std::copy(res, res + cn, part.data() + w * cbw);\n      "
         << (symbolic_ ? "return" : "continue") << ";\n    }\n";
    }
    os << "    for (int64_t x = c0; x < c0 + cn; ++x) {\n" << last(false, value, outs) << "    }\n"
       << (symbolic_ ? "  });\n" : "  }\n");
    if (can_split) {
      // The parts of each block, combined in order, then its epilogue.
      os << "  if (KS > 1) {\n  for (int64_t u = 0; u < " << units << "; ++u) {\n";
      unit_offsets("u");
      os << "    " << acc_type << " res[CB];\n    std::copy(part.data() + u * KS * cbw, part.data() + u * KS * cbw + cn, res);\n"
         << "    for (int64_t kp = 1; kp < KS; ++kp) {\n      const " << acc_type
         << "* p = part.data() + (u * KS + kp) * cbw;\n      for (int64_t j = 0; j < cn; ++j) " << combine << ";\n    }\n"
         << "    for (int64_t x = c0; x < c0 + cn; ++x) {\n" << last(false, value, outs) << "    }\n  }\n  }\n";
    }
    os << "}\n";
  }

  /// The lambda reading row `which`'s input (0: the row, i: more_rows[i - 1]).
  static std::string lambda_name(bool vec, size_t which) {
    return std::string(vec ? "in_v" : "in_s") + (which ? std::to_string(which) : "");
  }

  /// Row `r`'s input at column x: its inlined producer, or a load.
  std::string prologue(const RowNode& r, bool vec, std::ostringstream& os) {
    const PwOp& in = r.input;
    std::map<const Node*, std::string> done;
    for (const PointwiseNode* m : k_.nodes)
      if (m->node == in.value.node) return emit(*m, vec, os, done);
    const std::string v = "t" + std::to_string(counter_++);
    os << "      const auto " << v << " = " << load(slot_for_.at(&in), vec) << ";\n";
    return v;
  }

  Kernel& k_;
  std::set<std::string>& functions_;
  ScalarType dtype_ = kFloat;
  std::set<const Node*> members_;
  std::vector<Operand> slots_;
  std::map<const PwOp*, int> slot_for_;
  std::vector<Operand> outs_;                 // pointwise kernels: one per stored node
  std::vector<const PointwiseNode*> stored_;  // the nodes stored, in outs_'s order
  std::vector<int64_t> sizes_;
  /// A pointwise kernel over size symbols: its (collapsed) sizes as expressions.
  bool symbolic_ = false;
  std::vector<core::sym::Expr> sym_sizes_;
  size_t x_dim_ = 0;  // the dim the inner loop's x runs along
  // Row kernels: kept dims (the first nk_ of sizes_), column kernel or row kernel, whether
  // loads are being emitted inside a lambda over reduced elements, the primary slot.
  size_t nk_ = 0;
  bool column_ = false;
  bool in_reduced_lambda_ = false;
  bool row_shaped_ = false;  // a row-shaped epilogue: the last pass over the row
  int primary_ = -1;
  int counter_ = 0;
};


}  // namespace

CppParts generate_cpp_parts(const LoweredGraph& lowered, std::vector<Kernel>& kernels) {
  (void)lowered;
  std::set<std::string> functions;
  CppParts parts;
  for (Kernel& k : kernels) {
    k.inputs.clear();
    parts.kernels.push_back("\n" + KernelWriter(k, functions).write());
  }
  parts.head = cpp_prelude();
  parts.head += "\n// Scalar functions (ops/scalar_ops.def and inductor/lowering.cpp).\n";
  for (const std::string& fn : functions) {
    const std::string def = scalar_function_definition(fn);
    if (!def.empty()) parts.head += def + "\n";
  }
  parts.tail = "\n}  // namespace ember::vec\n";
  return parts;
}

std::string generate_cpp(const LoweredGraph& lowered, std::vector<Kernel>& kernels) {
  return generate_cpp_parts(lowered, kernels).text();
}

std::string CppParts::text() const {
  std::string out = head;
  for (const std::string& k : kernels) out += k;
  return out + tail;
}

}  // namespace ember::inductor
