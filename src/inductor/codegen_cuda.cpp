// inductor/codegen_cuda.cpp — the inductor's CUDA code generator: the same kernels the
// scheduler makes for the CPU, emitted as one CUDA C++ translation unit (kernels/cuda's
// device prelude, the scalar functions of ops/scalar_ops.def as device functions, one
// extern "C" __global__ function per kernel) with a launch per kernel. This file: the
// operands and bodies every kernel shares, pointwise kernels, the translation unit and
// the launch plan's text; codegen_cuda_rows.cpp writes row kernels. See Note [inductor]
// (docs/notes/inductor.md), "CUDA".
#include "inductor/codegen_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "ember/error.h"
#include "kernels/cuda/kernel_source.h"
#include "support/disk_cache.h"

namespace ember::inductor::cuda_codegen {

using kernels::cuda::cuda_type_name;
namespace sym = core::sym;

const char* math_type(ScalarType t) { return t == kDouble ? "double" : "float"; }

std::string double_text(double v) {
  if (!std::isfinite(v)) {
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    char buf[64];
    std::snprintf(buf, sizeof buf, "ember_dev::from_bits<double>(0x%llxull)", bits);
    return buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::vector<sym::Expr> constants(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

void collapse(std::vector<int64_t>& sizes, std::vector<sym::Expr>& sym_sizes, std::vector<Operand*> operands) {
  std::vector<int64_t> out_sizes;
  std::vector<sym::Expr> out_sym;
  std::vector<std::vector<int64_t>> out_st(operands.size());
  std::vector<std::vector<sym::Expr>> out_sx(operands.size());
  const sym::Expr one(1);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sym_sizes[d] == one) continue;
    bool merge = !out_sizes.empty();
    for (size_t j = 0; merge && j < operands.size(); ++j)
      merge = out_sx[j].back() == operands[j]->sym[d] * sym_sizes[d];
    if (merge) {
      out_sizes.back() *= sizes[d];
      out_sym.back() = out_sym.back() * sym_sizes[d];
      for (size_t j = 0; j < operands.size(); ++j) {
        out_st[j].back() = operands[j]->strides[d];
        out_sx[j].back() = operands[j]->sym[d];
      }
      continue;
    }
    out_sizes.push_back(sizes[d]);
    out_sym.push_back(sym_sizes[d]);
    for (size_t j = 0; j < operands.size(); ++j) {
      out_st[j].push_back(operands[j]->strides[d]);
      out_sx[j].push_back(operands[j]->sym[d]);
    }
  }
  sizes = std::move(out_sizes);
  sym_sizes = std::move(out_sym);
  for (size_t j = 0; j < operands.size(); ++j) {
    operands[j]->strides = std::move(out_st[j]);
    operands[j]->sym = std::move(out_sx[j]);
  }
}

const char* index_type(const std::vector<int64_t>& sizes, const std::vector<const Operand*>& operands) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  bool fits = numel < kLimit;
  for (const Operand* o : operands) {
    int64_t extent = 0;
    for (size_t d = 0; d < sizes.size(); ++d) extent += (sizes[d] - 1) * o->strides[d];
    fits = fits && extent < kLimit;
  }
  return fits ? "int" : "long long";
}

CudaKernelWriter::CudaKernelWriter(Kernel& k, std::set<std::string>& functions, TuningLevel level, size_t num_slots)
    : k_(k), functions_(functions), level_(level), num_slots_(num_slots), symbolic_(num_slots > 0 && k.symbolic()) {
  for (const PointwiseNode* p : k.nodes) members_.insert(p->node);
  if (k.row) members_.insert(k.row->node);
  for (const RowNode* r : k.more_rows) members_.insert(r->node);
  // Launch tuning times candidates at one size; a kernel serving every size keeps the
  // heuristic's configuration for each call's size.
  if (symbolic_) level_ = TuningLevel::Off;
}

std::vector<sym::Expr> CudaKernelWriter::load_strides(const PwOp& op) const {
  return symbolic_ && !op.sym_strides.empty() ? op.sym_strides : constants(op.strides);
}

std::vector<sym::Expr> CudaKernelWriter::output_strides(const TensorMeta& m) const {
  std::vector<sym::Expr> st;
  const std::vector<sym::Expr> sizes = sym_sizes_of(m), strides = sym_strides_of(m);
  for (size_t d = 0; d < sizes.size(); ++d) st.push_back(sizes[d] == sym::Expr(1) ? sym::Expr(0) : strides[d]);
  return st;
}

std::string CudaKernelWriter::sizes_parameter() const {
  return symbolic_ ? ", const ember_dev::Sizes<" + std::to_string(num_slots_) + "> ks" : std::string();
}

std::string CudaKernelWriter::write(CudaLaunch& launch) {
  launch.symbol = k_.name;
  launch.takes_sizes = symbolic_;
  std::string source = k_.row ? write_row(launch) : write_pointwise(launch);
  // Known once the writer has registered every buffer the kernel reads.
  launch.by_value.assign(k_.inputs.size(), false);
  for (size_t b = 0; b < k_.inputs.size(); ++b)
    launch.by_value[b] = is_host_scalar(k_.inputs[b].node->meta()[k_.inputs[b].index]);
  return source;
}

int CudaKernelWriter::slot_of(const PwOp& op, const std::vector<int64_t>& strides, const std::vector<sym::Expr>& sym) {
  for (size_t j = 0; j < slots_.size(); ++j) {
    const Operand& s = slots_[j];
    if (k_.inputs[s.buffer] == op.value && s.sym == sym && s.dtype == op.dtype) return static_cast<int>(j);
  }
  Operand s;
  s.buffer = k_.input_index(op.value);
  s.dtype = op.dtype;
  s.strides = strides;
  s.sym = sym;
  slots_.push_back(std::move(s));
  return static_cast<int>(slots_.size()) - 1;
}

std::string CudaKernelWriter::load_text(int j, ScalarType body, bool direct) {
  used_.insert(j);
  const Operand& s = slots_[j];
  const std::string raw = "in" + std::to_string(s.buffer) + "[o" + std::to_string(j) + "]";
  if (s.dtype == kBool) return raw;
  // As eager: the element converted to the body's dtype, then to its math type; `direct`
  // (layer norm's weight and bias) converts straight to the math type.
  if (direct || s.dtype == body) return std::string("ember_dev::cvt<") + math_type(body) + ">(" + raw + ")";
  return std::string("ember_dev::cvt<") + math_type(body) + ">(ember_dev::cvt<" + cuda_type_name(body) + ">(" + raw +
         "))";
}

std::string CudaKernelWriter::emit(const PointwiseNode& p, std::ostringstream& os,
                                   std::map<const Node*, std::string>& done, const std::string& indent) {
  if (auto it = done.find(p.node); it != done.end()) return it->second;
  const char* M = math_type(p.dtype);
  std::vector<std::string> vars(p.body.size());
  for (size_t i = 0; i < p.body.size(); ++i) {
    const PwOp& op = p.body[i];
    if (op.kind == PwOp::Kind::Load && members_.count(op.value.node)) {
      if (auto d = done.find(op.value.node); d != done.end()) vars[i] = d->second;  // a row's value
      for (const PointwiseNode* m : k_.nodes)
        if (m->node == op.value.node) vars[i] = emit(*m, os, done, indent);
      EMBER_INTERNAL_ASSERT(!vars[i].empty()) << "inductor CUDA codegen: kernel " << k_.name << " reads member %"
                                              << op.value.node->name() << " before computing it";
      continue;
    }
    vars[i] = "t" + std::to_string(counter_++);
    os << indent << "const auto " << vars[i] << " = ";
    switch (op.kind) {
      case PwOp::Kind::Load: os << load_text(slot_for_.at(&op), p.dtype); break;
      case PwOp::Kind::Constant:
        // As eager converts a Scalar: to the compute dtype, then to its math type.
        if (p.dtype == kFloat || p.dtype == kDouble)
          os << M << "(" << double_text(op.constant) << ")";
        else
          os << "ember_dev::cvt<" << M << ">(ember_dev::cvt<" << cuda_type_name(p.dtype) << ">("
             << double_text(op.constant) << "))";
        break;
      case PwOp::Kind::Call:
        functions_.insert(op.fn);
        os << call_text(op, vars, "ember_dev::");
        break;
    }
    os << ";\n";
  }
  done[p.node] = vars.back();
  return vars.back();
}

std::string CudaKernelWriter::parameters(const std::vector<Operand>& outs) const {
  const bool restrict = k_.may_alias_output.empty();
  std::string s;
  for (size_t b = 0; b < k_.inputs.size(); ++b) {
    const TensorMeta& m = k_.inputs[b].node->meta()[k_.inputs[b].index];
    if (is_host_scalar(m))
      s += std::string(b ? ", " : "") + "const ember_dev::HostScalar<" + cuda_type_name(m.dtype) + "> in" +
           std::to_string(b);
    else
      s += std::string(b ? ", " : "") + "const " + cuda_type_name(m.dtype) + "*" + (restrict ? " __restrict__" : "") +
           " in" + std::to_string(b);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    s += std::string(s.empty() ? "" : ", ") + cuda_type_name(outs[i].dtype) + "*" + (restrict ? " __restrict__" : "") +
         " out" + std::to_string(i);
  return s;
}

std::string CudaKernelWriter::offsets(const std::string& indent, const std::string& base,
                                      const std::vector<std::string>& idx, size_t first_dim) const {
  std::string s;
  for (int j : used_) {
    s += indent + "const IDX o" + std::to_string(j) + " = " + (base.empty() ? "0" : base + std::to_string(j));
    for (size_t d = 0; d < idx.size(); ++d)
      if (slots_[j].sym[first_dim + d] != sym::Expr(0)) s += " + " + idx[d] + " * " + ex(slots_[j].sym[first_dim + d]);
    s += ";\n";
  }
  return s;
}

std::string sizes_text(const std::vector<sym::Expr>& sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < sizes.size(); ++d) os << (d ? ", " : "") << sizes[d];
  os << "]";
  return os.str();
}

namespace {

/// Element strides of `m` over `sizes` (the same rank), 0 along size-1 dims.
std::vector<int64_t> strides_over(const TensorMeta& m) {
  std::vector<int64_t> st(m.sizes.size(), 0);
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d] != 1) st[d] = m.strides[d];
  return st;
}

}  // namespace

std::string decompose_text(const std::string& indent, const std::string& lin, const std::string& prefix,
                           const std::vector<sym::Expr>& sizes, std::vector<std::string>& names) {
  std::string s = indent + "IDX rem_" + prefix + " = " + lin + ";\n";
  names.assign(sizes.size(), "");
  for (size_t d = sizes.size(); d-- > 0;) {
    names[d] = prefix + std::to_string(d);
    if (d == 0) {
      s += indent + "const IDX " + names[d] + " = rem_" + prefix + ";\n";
    } else {
      s += indent + "const IDX " + names[d] + " = rem_" + prefix + " % " + ex(sizes[d]) + ";\n";
      s += indent + "rem_" + prefix + " /= " + ex(sizes[d]) + ";\n";
    }
  }
  return s;
}

std::string CudaKernelWriter::write_pointwise(CudaLaunch& launch) {
  const PointwiseNode& root = *k_.root;
  for (const PointwiseNode* p : k_.nodes)
    for (const PwOp& op : p->body)
      if (op.kind == PwOp::Kind::Load && !members_.count(op.value.node))
        slot_for_[&op] = slot_of(op, op.strides, load_strides(op));
  std::vector<const PointwiseNode*> stored = k_.outputs;
  if (stored.empty()) stored.push_back(&root);
  std::vector<Operand> outs;
  for (const PointwiseNode* p : stored) {
    Operand o;
    o.buffer = static_cast<int>(k_.inputs.size() + outs.size());
    o.dtype = p->mask ? kBool : p->node->meta()[0].dtype;
    o.strides = strides_over(p->node->meta()[0]);
    o.sym = output_strides(p->node->meta()[0]);
    outs.push_back(std::move(o));
  }
  // In place (Note [inductor]): one output, an input of its dtype read only at its index map.
  k_.may_alias_output.clear();
  for (size_t b = 0; outs.size() == 1 && b < k_.inputs.size(); ++b) {
    if (k_.inputs[b].node->meta()[k_.inputs[b].index].dtype != outs[0].dtype) continue;
    bool same = true;
    for (const Operand& sl : slots_)
      if (sl.buffer == static_cast<int>(b)) same = same && sl.sym == outs[0].sym && sl.dtype == outs[0].dtype;
    if (same) k_.may_alias_output.push_back(static_cast<int>(b));
  }
  std::vector<int64_t> sizes = root.sizes;
  std::vector<sym::Expr> sym_sizes = symbolic_ ? root.sym_sizes : constants(root.sizes);
  std::vector<Operand*> all;
  for (Operand& s : slots_) all.push_back(&s);
  for (Operand& o : outs) all.push_back(&o);
  collapse(sizes, sym_sizes, all);
  int64_t numel = 1;
  sym::Expr sym_numel(1);
  for (int64_t s : sizes) numel *= s;
  for (const sym::Expr& s : sym_sizes) sym_numel = sym_numel * s;
  const std::string NUMEL = ex(sym_numel);
  std::vector<const Operand*> call;
  for (const Operand* o : all) call.push_back(o);

  // Contiguous: one dim left (or none), every operand dense along it or one broadcast
  // element: V elements per 16-byte access when every dense pointer is aligned.
  bool contiguous = sizes.size() <= 1;
  size_t widest = 1;
  for (const Operand* o : all) {
    const sym::Expr st = o->sym.empty() ? sym::Expr(0) : o->sym[0];
    const bool unit = st == sym::Expr(1);
    contiguous = contiguous && (unit || (st == sym::Expr(0) && o->buffer < static_cast<int>(k_.inputs.size())));
    if (unit) widest = std::max(widest, element_size(o->dtype));
  }
  const int64_t V = contiguous ? static_cast<int64_t>(16 / widest) : 1;
  // Over size symbols the vector path serves every size (its tail loop takes the rest).
  const bool vector = contiguous && V >= 2 && (symbolic_ || numel >= V);

  std::ostringstream os;
  os << "// " << k_.name << ": " << scalar_type_name(root.dtype)
     << sizes_text(symbolic_ ? root.sym_sizes : constants(root.sizes)) << ", computes";
  for (const PointwiseNode* p : k_.nodes) os << " %" << p->node->name();
  if (stored.size() > 1) {
    os << ", stores";
    for (const PointwiseNode* p : stored) os << " %" << p->node->name();
  }
  os << (vector ? ", " + std::to_string(V) + " elements per access when aligned"
                : std::string(", an element per thread"))
     << "\nextern \"C\" __global__ void __launch_bounds__("
     << max_candidate_block(TuneKind::Pointwise, kPointwiseBlock, level_) << ") " << k_.name << "(" << parameters(outs)
     << (vector ? ", int aligned" : "") << sizes_parameter() << ") {\n";
  // Over size symbols no size is known to fit in 31 bits: 64-bit offsets.
  const char* idx_type = symbolic_ ? "long long" : index_type(sizes, call);
  os << "  typedef " << idx_type << " IDX;\n";
  // A grid-stride loop over the work items (V elements each, or one): the launch's block
  // and grid are free (launch tuning), a thread doing ⌈items / threads launched⌉ of them.
  const int64_t threads = vector ? (numel + V - 1) / V : numel;
  const sym::Expr sym_threads = vector ? sym::floordiv(sym_numel + (V - 1), V) : sym_numel;
  const bool narrow = std::string(idx_type) == "int" && 2 * threads + 4096 < (int64_t{1} << 31);
  const std::string T = narrow ? "IDX" : "long long";
  os << "  for (" << T << " t = static_cast<" << T << ">(blockIdx.x) * blockDim.x + threadIdx.x; t < "
     << ex(sym_threads) << "; t += static_cast<" << T << ">(gridDim.x) * blockDim.x) {\n";
  // The body at linear element `i`, every operand at o<j> (slots) and q<i> (outputs).
  auto body = [&](const std::string& indent, const std::function<std::string(int)>& load_override) {
    std::ostringstream b;
    std::map<const Node*, std::string> done;
    used_.clear();
    counter_ = 0;
    std::vector<std::string> results;
    for (const PointwiseNode* p : stored) results.push_back(emit(*p, b, done, indent));
    std::string pre;
    for (int j : used_) pre += load_override(j);
    std::string stores;
    for (size_t i = 0; i < outs.size(); ++i)
      stores += indent + "STORE" + std::to_string(i) + "(ember_dev::cvt<" + cuda_type_name(outs[i].dtype) + ">(" +
                results[i] + "));\n";
    return pre + b.str() + stores;
  };
  if (vector) {
    const std::string Vs = std::to_string(V);
    os << "  const IDX base = static_cast<IDX>(t) * " << Vs << ";\n";
    os << "  if (aligned && base + " << Vs << " <= " << NUMEL << ") {\n";
    for (size_t j = 0; j < slots_.size(); ++j) {
      const Operand& s = slots_[j];
      const std::string vt = std::string("ember_dev::Vec<") + cuda_type_name(s.dtype) + ", " + Vs + ">";
      if (!s.sym.empty() && s.sym[0] == sym::Expr(1))
        os << "    const " << vt << " v" << j << " = *reinterpret_cast<const " << vt << "*>(in" << s.buffer << " + base);\n";
    }
    for (size_t i = 0; i < outs.size(); ++i)
      os << "    ember_dev::Vec<" << cuda_type_name(outs[i].dtype) << ", " << Vs << "> r" << i << ";\n";
    os << "#pragma unroll\n    for (int e = 0; e < " << Vs << "; ++e) {\n";
    // Dense slots read their vector's lane e; broadcast ones the one element (o<j> = 0).
    std::string vec_body = body("      ", [&](int j) {
      const Operand& s = slots_[j];
      const std::string J = std::to_string(j);
      if (s.sym.empty() || s.sym[0] == sym::Expr(0)) return "      const IDX o" + J + " = 0;\n";
      return "      const " + std::string(cuda_type_name(s.dtype)) + "* vp" + J + " = v" + J + ".v;\n      const IDX o" + J +
             " = e;\n";
    });
    // Loads of dense slots read the vector registers: in<b>[o<j>] becomes vp<j>[o<j>].
    for (size_t j = 0; j < slots_.size(); ++j) {
      const Operand& s = slots_[j];
      if (s.sym.empty() || s.sym[0] != sym::Expr(1)) continue;
      const std::string from = "in" + std::to_string(s.buffer) + "[o" + std::to_string(j) + "]";
      const std::string to = "vp" + std::to_string(j) + "[o" + std::to_string(j) + "]";
      for (size_t at = vec_body.find(from); at != std::string::npos; at = vec_body.find(from, at + to.size()))
        vec_body.replace(at, from.size(), to);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string from = "STORE" + std::to_string(i) + "(";
      for (size_t at = vec_body.find(from); at != std::string::npos; at = vec_body.find(from))
        vec_body.replace(at, from.size(), "ember_dev::assign(r" + std::to_string(i) + ".v[e], ");
    }
    os << vec_body << "    }\n";
    for (size_t i = 0; i < outs.size(); ++i)
      os << "    *reinterpret_cast<ember_dev::Vec<" << cuda_type_name(outs[i].dtype) << ", " << Vs << ">*>(out" << i
         << " + base) = r" << i << ";\n";
    os << "    continue;\n  }\n";
    os << "  for (IDX i = base; i < base + " << Vs << " && i < " << NUMEL << "; ++i) {\n";
  } else {
    os << "  const IDX i = static_cast<IDX>(t);\n  {\n";
  }
  std::vector<std::string> idx;
  std::string scalar_pre = sizes.size() <= 1 ? "" : decompose_text("    ", "i", "i", sym_sizes, idx);
  if (sizes.size() == 1) idx = {"i"};
  std::string scalar_body = body("    ", [&](int j) {
    std::string s = "    const IDX o" + std::to_string(j) + " = 0";
    for (size_t d = 0; d < idx.size(); ++d)
      if (slots_[j].sym[d] != sym::Expr(0)) s += " + " + idx[d] + " * " + ex(slots_[j].sym[d]);
    return s + ";\n";
  });
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string q = "0";
    for (size_t d = 0; d < idx.size(); ++d)
      if (outs[i].sym[d] != sym::Expr(0)) q += " + " + idx[d] + " * " + ex(outs[i].sym[d]);
    const std::string from = "STORE" + std::to_string(i) + "(";
    for (size_t at = scalar_body.find(from); at != std::string::npos; at = scalar_body.find(from))
      scalar_body.replace(at, from.size(), "ember_dev::assign(out" + std::to_string(i) + "[" + q + "], ");
  }
  os << scalar_pre << scalar_body << "  }\n  }\n}\n";
  launch.tune = TuneKind::Pointwise;
  launch.work = sym_threads;
  launch.candidates = launch_candidates(TuneKind::Pointwise, threads, kPointwiseBlock, level_);
  launch.block = launch.candidates[0].block;
  launch.grid = launch.candidates[0].grid;
  launch.aligned_check = vector;
  launch.how = vector ? std::to_string(V) + " elements per thread (16-byte accesses when aligned)" : "an element per thread";
  return os.str();
}

}  // namespace ember::inductor::cuda_codegen

namespace ember::inductor {

namespace {

/// A scalar function's definition (lowering.cpp renders it for the CPU) as a device function.
std::string device_definition(const std::string& fn) {
  std::string def = scalar_function_definition(fn);
  const size_t at = def.find(" inline ");
  if (at != std::string::npos) def.replace(at, 8, " __device__ __forceinline__ ");
  return def;
}

}  // namespace

void name_cuda_kernels(std::vector<Kernel>& kernels) {
  for (Kernel& k : kernels)
    if (k.name.rfind("cpp_", 0) == 0) k.name = "cuda_" + k.name.substr(4);
}

CudaCode generate_cuda(const LoweredGraph& lowered, std::vector<Kernel>& kernels, size_t num_slots) {
  (void)lowered;
  name_cuda_kernels(kernels);
  const TuningLevel level = tuning_level();
  std::set<std::string> functions;
  std::string kernel_code;
  CudaCode code;
  for (Kernel& k : kernels) {
    k.inputs.clear();
    CudaLaunch launch;
    const std::string text = cuda_codegen::CudaKernelWriter(k, functions, level, num_slots).write(launch);
    launch.kernel_hash = support::hash_text(text);
    kernel_code += "\n" + text;
    code.launches.push_back(std::move(launch));
  }
  std::string out = "// Generated by Ember's inductor for CUDA (NVRTC, no headers).\n" + kernels::cuda::render_prelude();
  out += cuda_codegen::cuda_codegen_prelude();
  out += "\nnamespace ember_dev {\n// Scalar functions (ops/scalar_ops.def and inductor/lowering.cpp).\n";
  for (const std::string& fn : functions) {
    const std::string def = device_definition(fn);
    if (!def.empty()) out += def + "\n";
  }
  out += "}  // namespace ember_dev\n" + kernel_code;
  code.source = std::move(out);
  return code;
}

std::string launch_plan_text(const std::vector<Kernel>& kernels, const CudaCode& code) {
  std::ostringstream os;
  os << "launch plan (" << kernels.size() << " kernels, on the current stream, in the graph's order with its extern "
     << "calls):\n";
  for (size_t i = 0; i < kernels.size() && i < code.launches.size(); ++i) {
    const Kernel& k = kernels[i];
    const CudaLaunch& l = code.launches[i];
    if (!l.split_symbol.empty())
      os << "  " << l.split_symbol << "<<<" << l.split_grid << ", " << l.split_block << ">>>(…, workspace of "
         << l.workspace_bytes << " bytes)\n";
    // A kernel over size symbols: its grid is the heuristic's for its work items at each call.
    if (l.takes_sizes)
      os << "  " << l.symbol << "<<<grid(" << l.work << "), " << l.block << ">>>(";
    else
      os << "  " << l.symbol << "<<<" << l.grid << ", " << l.block << ">>>(";
    for (size_t b = 0; b < k.inputs.size(); ++b) {
      const ValueRef& v = k.inputs[b];
      os << (b ? ", %" : "%") << v.node->name() << (v.node->num_outputs() > 1 ? "." + std::to_string(v.index) : "");
    }
    os << (k.inputs.empty() ? "" : ", ") << "-> ";
    if (!k.outputs.empty()) {
      for (size_t o = 0; o < k.outputs.size(); ++o) os << (o ? ", %" : "%") << k.outputs[o]->node->name();
    } else {
      os << "%" << (k.root ? k.root->node->name() : k.row->node->name());
    }
    os << (l.aligned_check ? ", aligned" : "") << (l.takes_sizes ? ", ks" : "") << ")  // " << l.how;
    if (l.candidates.size() > 1) os << "; " << l.candidates.size() << " launch candidates (" << tune_kind_name(l.tune) << ")";
    os << "\n";
  }
  return os.str();
}

}  // namespace ember::inductor
