// inductor/codegen_cuda_rows.cpp — the CUDA code generator's row kernels: reductions
// (sum, mean, amax, amin, var, prod over any dims), softmax, log_softmax and layer norm,
// each with its prologue (pointwise producers recomputed at each read of the row) and
// epilogue (pointwise users evaluated on the row's value), a row-shaped epilogue and
// further sums over the same rows. Rows of at most kWarpRowMax elements go a warp per row
// (4 rows per block, combined with warp shuffles); longer rows a block per row (warp
// shuffles, then the warps' results through shared memory). Every row is one persistent
// unit: all its passes run in the same warp or block, so softmax and layer norm are one
// kernel. See Note [inductor] (docs/notes/inductor.md), "CUDA".
#include <algorithm>
#include <cstdlib>

#include "ember/error.h"
#include "inductor/codegen_cuda.h"
#include "kernels/cuda/kernel_source.h"

namespace ember::inductor::cuda_codegen {

using kernels::cuda::cuda_type_name;
namespace sym = core::sym;

namespace {

/// A reduction splits its rows (split reduction) when it has fewer rows than this, each of
/// at least kSplitMinElements, into parts so that about kSplitBlocks blocks run.
constexpr int64_t kSplitRowsBelow = 64;
constexpr int64_t kSplitMinElements = 32768;
constexpr int64_t kSplitBlocks = 528;  // 4 blocks per SM of an H100
/// Column reductions go 32 rows (columns) a block from this many rows (fewer: a warp per row).
constexpr int64_t kColumnRowsMin = 1024;
/// The columns of a column kernel's block: a warp's neighbouring threads read neighbouring
/// elements; the block's warps split the reduced elements between them.
constexpr int64_t kColumnsPerBlock = 32;

/// The combining functor of a reduction kind (the prelude's).
const char* op_of(RowKind k) {
  switch (k) {
    case RowKind::Max: return "ember_dev::MaxOp()";
    case RowKind::Min: return "ember_dev::MinOp()";
    case RowKind::Prod: return "ember_dev::ProdOp()";
    default: return "ember_dev::SumOp()";
  }
}

std::string identity_of(RowKind k, const std::string& A) {
  switch (k) {
    case RowKind::Max: return "-ember_dev::inf<" + A + ">()";
    case RowKind::Min: return "ember_dev::inf<" + A + ">()";
    case RowKind::Prod: return A + "(1)";
    default: return A + "(0)";
  }
}

}  // namespace

RowForm row_form(RowKind kind, int64_t row_elements) {
  const bool normalizes = kind == RowKind::Softmax || kind == RowKind::LogSoftmax || kind == RowKind::LayerNorm;
  if (!normalizes || row_elements > kRegisterRowMax) return RowForm::Passes;
  return row_elements <= kWarpRowMax ? RowForm::WarpRegisters : RowForm::BlockRegisters;
}

int register_row_block(int64_t row_elements) { return row_elements <= 4096 ? 256 : 512; }

std::string CudaKernelWriter::write_row(CudaLaunch& launch) {
  const RowNode& R = *k_.row;
  const bool row_shaped = R.is_reduction() && k_.root && k_.root->sizes == R.in_sizes && R.in_sizes != R.out_sizes;
  EMBER_INTERNAL_ASSERT(k_.more_rows.empty() || row_shaped)
      << "inductor CUDA codegen: kernel " << k_.name << " has several reductions but no row-shaped epilogue";
  for (const PointwiseNode* p : k_.nodes)
    for (const PwOp& op : p->body)
      if (op.kind == PwOp::Kind::Load && !members_.count(op.value.node)) {
        const bool over_input = p->sizes == R.in_sizes;
        slot_for_[&op] = slot_of(op, inductor::to_input_space(R, op.strides, over_input),
                                 inductor::to_input_space(R, load_strides(op), over_input));
      }
  std::vector<const PwOp*> row_loads = {&R.input, &R.weight, &R.bias};
  for (const RowNode* m : k_.more_rows) row_loads.push_back(&m->input);
  for (const PwOp* op : row_loads)
    if (op->kind == PwOp::Kind::Load && !members_.count(op->value.node))
      slot_for_[op] = slot_of(*op, op->strides, load_strides(*op));
  std::vector<Operand> outs;
  const Node* root = k_.root ? k_.root->node : R.node;
  for (size_t i = 0; i < (k_.root ? 1 : root->meta().size()); ++i) {
    const TensorMeta& m = root->meta()[i];
    Operand o;
    o.buffer = static_cast<int>(k_.inputs.size() + i);
    o.dtype = m.dtype;
    o.strides = inductor::row_output_strides(R, m);
    o.sym = inductor::to_input_space(R, output_strides(m), m.sizes.size() == R.in_sizes.size());
    outs.push_back(std::move(o));
  }
  k_.may_alias_output.clear();  // a row kernel reads its input in several passes: never in place

  // Geometry: the kept dims (one row per index), then the reduced dims, each group with
  // size-1 dims dropped and neighbours merged where every operand allows.
  std::vector<int64_t> kept_sizes, red_sizes;
  std::vector<sym::Expr> kept_sym, red_sym;
  std::vector<Operand> kept_ops, red_ops;
  std::vector<Operand*> all;
  for (Operand& s : slots_) all.push_back(&s);
  for (Operand& o : outs) all.push_back(&o);
  for (const Operand* o : all) {
    Operand kk{o->buffer, o->dtype, {}, {}}, rr{o->buffer, o->dtype, {}, {}};
    for (size_t d = 0; d < R.in_sizes.size(); ++d) {
      (R.reduced[d] ? rr : kk).strides.push_back(o->strides[d]);
      (R.reduced[d] ? rr : kk).sym.push_back(o->sym[d]);
    }
    kept_ops.push_back(std::move(kk));
    red_ops.push_back(std::move(rr));
  }
  const std::vector<sym::Expr> in_sym = symbolic_ ? R.sym_in_sizes : constants(R.in_sizes);
  for (size_t d = 0; d < R.in_sizes.size(); ++d) {
    (R.reduced[d] ? red_sizes : kept_sizes).push_back(R.in_sizes[d]);
    (R.reduced[d] ? red_sym : kept_sym).push_back(in_sym[d]);
  }
  {
    std::vector<Operand*> kp, rp;
    for (Operand& o : kept_ops) kp.push_back(&o);
    for (Operand& o : red_ops) rp.push_back(&o);
    collapse(kept_sizes, kept_sym, kp);
    collapse(red_sizes, red_sym, rp);
  }
  // Each operand's strides: kept dims, then reduced dims (offsets() indexes them so).
  const size_t nk = kept_sizes.size();
  for (size_t j = 0; j < all.size(); ++j) {
    all[j]->strides = kept_ops[j].strides;
    all[j]->strides.insert(all[j]->strides.end(), red_ops[j].strides.begin(), red_ops[j].strides.end());
    all[j]->sym = kept_ops[j].sym;
    all[j]->sym.insert(all[j]->sym.end(), red_ops[j].sym.begin(), red_ops[j].sym.end());
  }
  // The numbers of rows and of elements a row: their values at the example sizes decide
  // the heuristics' choices; the expressions are the kernel's bounds.
  int64_t rows = 1, red = 1;
  sym::Expr sym_rows(1), sym_red(1);
  for (int64_t s : kept_sizes) rows *= s;
  for (int64_t s : red_sizes) red *= s;
  for (const sym::Expr& s : kept_sym) sym_rows = sym_rows * s;
  for (const sym::Expr& s : red_sym) sym_red = sym_red * s;
  const std::string ROWS = ex(sym_rows);
  std::vector<int64_t> sizes = kept_sizes;
  sizes.insert(sizes.end(), red_sizes.begin(), red_sizes.end());
  std::vector<const Operand*> call(all.begin(), all.end());

  // A reduction of few long rows splits each row in `parts` chunks, a block each, whose
  // partial results go to a workspace; a second kernel combines each row's parts in order
  // (a warp per row) and runs the epilogue (kind Var, two passes, does not split).
  // (Over size symbols: only rows whose numbers are constants split, the parts being sized
  // for them.)
  const bool split = R.is_reduction() && !row_shaped && k_.more_rows.empty() && R.kind != RowKind::Var &&
                     rows < kSplitRowsBelow && red >= kSplitMinElements && sym_rows.is_const() && sym_red.is_const();
  const int64_t parts = split ? std::clamp<int64_t>((kSplitBlocks + rows - 1) / rows, 2, red / 4096) : 1;
  const int64_t chunk = (red + parts - 1) / parts;
  // A column reduction (the innermost kept dim is the input's contiguous one, as in a bias
  // gradient's sum over dim 0) with many rows goes 32 rows a block: lane c of each warp
  // reads row c, so a warp's loads are neighbouring elements, and warp w of the block walks
  // the reduced elements w, w + warps, …; the warps' partial results are combined through
  // shared memory (column_reduce). A thread per row left most SMs idle and each thread's
  // loads in one dependent chain: 8 rows of 3072 took 25 us on an H200 (W8's bias gradient).
  bool column = !split && R.is_reduction() && !row_shaped && k_.more_rows.empty() && nk > 0 && red_sizes.size() > 0 &&
                rows >= kColumnRowsMin;
  if (column) {
    const Operand* primary = nullptr;
    for (const Operand& sl : slots_)
      if (!primary && sl.sym.back() != sym::Expr(0)) primary = &sl;  // the first slot reading along the row
    column = primary && (primary->sym[nk - 1] == sym::Expr(1) || primary->sym[nk - 1] == sym::Expr(-1)) &&
             std::llabs(primary->strides.back()) > 1;
  }
  const bool warp = !split && !column && red <= kWarpRowMax;
  // Softmax, log_softmax and layer norm rows that fit hold the row in registers (rows of a
  // constant length: the slots are sized for it).
  const RowForm form = row_form(R.kind, red);
  const bool registers = form != RowForm::Passes && red_sizes.size() <= 1 && sym_red.is_const();
  const int block = split || column ? 256 : warp ? 128 : registers ? register_row_block(red) : (red >= 16384 ? 512 : 256);
  const int lanes = column ? block / kColumnsPerBlock : warp ? 32 : block;
  // Launch tuning: what the main kernel's block and grid may be (it reads them at run time).
  const TuneKind tune = split ? TuneKind::Fixed
                        : column ? TuneKind::Columns
                        : warp   ? (registers ? TuneKind::WarpRegs : TuneKind::WarpRows)
                        : registers ? TuneKind::Fixed
                                    : TuneKind::BlockRows;
  const std::string A = math_type(R.dtype);  // accumulation: float for f16/bf16/f32, double for f64
  const std::string M = A;
  // A block per row re-reading the row strides over it by the launch's block.
  // A column kernel's warps split the reduced elements, as many as its launch has.
  const std::string RED = ex(sym_red), LANES = tune == TuneKind::BlockRows ? "static_cast<IDX>(blockDim.x)"
                                               : column                    ? "static_cast<IDX>(blockDim.x >> 5)"
                                                                           : std::to_string(lanes);
  // The register form: slot g * V + e of a lane (thread) holds element g * lanes * V +
  // lane * V + e of its row. An operand read along the row with unit stride, whose rows all
  // start 16-byte aligned (kept strides), is read V elements per access when the call's
  // buffers are aligned (the `aligned` argument): V = 16 / the widest such element.
  auto vector_operand = [&](const Operand& o) {
    if (red_sizes.size() != 1 || o.sym[nk] != sym::Expr(1)) return false;
    for (size_t d = 0; d < nk; ++d)
      if (!o.sym[d].is_const() || o.sym[d].value() * static_cast<int64_t>(element_size(o.dtype)) % 16 != 0)
        return false;
    return true;
  };
  std::set<int> vector_slots;
  size_t widest = 0;
  for (size_t j = 0; registers && j < all.size(); ++j)
    if (vector_operand(*all[j])) {
      widest = std::max(widest, element_size(all[j]->dtype));
      if (j < slots_.size()) vector_slots.insert(static_cast<int>(j));
    }
  const int64_t V = widest ? static_cast<int64_t>(16 / widest) : 1;
  const bool vector = registers && V > 1 && red % V == 0;
  const bool vector_out = vector && vector_operand(outs[0]);
  if (!vector) vector_slots.clear();
  const int64_t slot_groups = (red + lanes * (vector ? V : 1) - 1) / (lanes * (vector ? V : 1));
  const std::string Vs = std::to_string(vector ? V : 1), LV = std::to_string(lanes * (vector ? V : 1));
  const bool full_groups = red % (lanes * (vector ? V : 1)) == 0;
  // Whether slot (g, e) holds an element of the row (always, when the row fills the groups).
  const std::string in_row = full_groups ? "true" : "g * " + LV + " + lane * " + Vs + " + e < " + RED;
  auto group = [&](const std::string& v, const std::string& op) {
    return warp ? "ember_dev::warp_reduce(" + v + ", " + op + ")" : "ember_dev::block_reduce(" + v + ", " + op + ", smem)";
  };

  std::ostringstream os;
  os << "// " << k_.name << ": " << row_kind_name(R.kind) << " rows of " << scalar_type_name(R.dtype)
     << sizes_text(in_sym) << (R.reduces_last_dim_only() ? "" : " " + row_dims_text(R)) << " (row %" << R.node->name()
     << "), " << sym_rows << " rows of " << sym_red << ", "
     << (split    ? std::to_string(parts) + " blocks per row, then a warp per row"
         : column ? "32 rows a block, its warps splitting each row (columns)"
         : warp   ? "a warp per row"
                  : "a block per row")
     << (registers ? ", the row in registers" : "") << (k_.nodes.empty() ? "" : ", computes");
  for (const PointwiseNode* p : k_.nodes) os << " %" << p->node->name();
  os << "\n";
  // Over size symbols no size is known to fit in 31 bits: 64-bit offsets.
  const std::string idx_type = symbolic_ ? "long long" : index_type(sizes, call);
  // Opens kernel `name` (a warp per row, or a block per row or per part of a row) and
  // declares each operand's offset at the row: b<j> (slots), c<i> (outputs).
  std::vector<std::string> kidx;
  // `tuned`: the kernel's launch is tuned; its block is read from blockDim (launch bounds: the largest candidate's).
  auto open_kernel = [&](const std::string& name, int threads, bool warp_rows, const std::string& row_expr, bool tuned) {
    const int bound = tuned ? max_candidate_block(tune, threads, level_) : threads;
    const std::string per_block = tuned ? "blockDim.x" : std::to_string(threads);
    os << "extern \"C\" __global__ void __launch_bounds__(" << bound << ") " << name << "(" << parameters(outs)
       << (split ? ", " + A + "* __restrict__ ws" : std::string()) << (vector ? ", int aligned" : "")
       << sizes_parameter() << ") {\n";
    os << "  typedef " << idx_type << " IDX;\n";
    if (column) {
      // `lane`: the thread's warp, where its walk over the row starts; a thread past the
      // last row walks nothing but joins every combination (its block synchronizes).
      os << "  __shared__ " << A << " smem[" << bound << "];\n"
         << "  const IDX row = static_cast<IDX>(blockIdx.x) * " << kColumnsPerBlock << " + (threadIdx.x & 31);\n"
         << "  const int lane = threadIdx.x >> 5;\n  const IDX rstop = row < " << ROWS << " ? " << RED << " : 0;\n";
    } else if (warp_rows) {
      os << "  const IDX row = static_cast<IDX>(blockIdx.x) * "
         << (tuned ? "(blockDim.x >> 5)" : std::to_string(threads / 32)) << " + (threadIdx.x >> 5);\n"
         << "  const int lane = threadIdx.x & 31;\n  if (row >= " << ROWS << ") return;\n";
    } else {
      os << "  __shared__ " << A << " smem[32];\n  const IDX row = " << row_expr << ";\n  const int lane = threadIdx.x;\n";
    }
    if (nk > 0) os << decompose_text("  ", "row", "k", kept_sym, kidx);
    auto base = [&](const Operand& o) {
      std::string b = "0";
      for (size_t d = 0; d < nk; ++d)
        if (o.sym[d] != sym::Expr(0)) b += " + " + kidx[d] + " * " + ex(o.sym[d]);
      return b;
    };
    for (size_t j = 0; j < slots_.size(); ++j) os << "  const IDX b" << j << " = " << base(slots_[j]) << ";\n";
    for (size_t i = 0; i < outs.size(); ++i) os << "  const IDX c" << i << " = " << base(outs[i]) << ";\n";
  };
  if (split) {
    os << "// " << k_.name << "_split: part blockIdx.x % " << parts << " (" << chunk << " elements) of row blockIdx.x / "
       << parts << "\n";
    open_kernel(k_.name + "_split", block, false, "static_cast<IDX>(blockIdx.x) / " + std::to_string(parts), false);
  } else {
    open_kernel(k_.name, block, warp, "blockIdx.x", tune != TuneKind::Fixed);
  }
  // Reduced element r's multi-index and the offsets of the slots the code after it reads.
  auto at_element = [&](const std::string& indent, std::string code) {
    std::vector<std::string> ridx;
    std::string pre = red_sizes.size() == 1 ? "" : decompose_text(indent, "r", "r", red_sym, ridx);
    if (red_sizes.size() == 1) ridx = {"r"};
    return pre + offsets(indent, "b", ridx, nk) + code;
  };
  auto out_offset = [&](size_t i, bool at_r) {
    std::string s = "c" + std::to_string(i);
    if (!at_r) return s;
    std::vector<std::string> ridx;
    if (red_sizes.size() == 1) ridx = {"r"};
    else
      for (size_t d = 0; d < red_sizes.size(); ++d) ridx.push_back("r" + std::to_string(d));
    for (size_t d = 0; d < ridx.size(); ++d)
      if (outs[i].sym[nk + d] != sym::Expr(0)) s += " + " + ridx[d] + " * " + ex(outs[i].sym[nk + d]);
    return s;
  };
  // Row `r`'s input at element r (its prologue, or a load), as code ending in `var`,
  // without the offsets of the slots it reads (used_).
  auto input_code = [&](const RowNode& row, const std::string& indent, std::string& var) {
    std::ostringstream b;
    std::map<const Node*, std::string> done;
    used_.clear();
    var.clear();
    for (const PointwiseNode* m : k_.nodes)
      if (m->node == row.input.value.node) var = emit(*m, b, done, indent);
    if (var.empty()) {
      var = "t" + std::to_string(counter_++);
      b << indent << "const " << M << " " << var << " = " << load_text(slot_for_.at(&row.input), R.dtype) << ";\n";
    }
    return b.str();
  };
  auto input_at = [&](const RowNode& row, const std::string& indent, std::string& var) {
    const std::string code = input_code(row, indent, var);
    return at_element(indent, code);
  };
  // The register form's loops over a lane's slots (g, e) around `body`, code at element r
  // that reads the slots `reads` and stores output 0 through STORE0(…): element by
  // element, and, when `vector` and the call's buffers are aligned, each vector slot read
  // (and output 0 written) V elements per access.
  auto slot_loops = [&](std::string body, const std::set<int>& reads) {
    const std::vector<std::string> at_r = red_sizes.empty() ? std::vector<std::string>{} : std::vector<std::string>{"r"};
    const std::string G = std::to_string(slot_groups), O = cuda_type_name(outs[0].dtype);
    const std::string out_vec = "ember_dev::Vec<" + O + ", " + Vs + ">";
    std::string scalar_body = body;
    for (size_t at = scalar_body.find("STORE0("); at != std::string::npos; at = scalar_body.find("STORE0("))
      scalar_body.replace(at, 7, "ember_dev::assign(out0[" + out_offset(0, true) + "], ");
    used_ = reads;
    std::string scalar = "#pragma unroll\n    for (int g = 0; g < " + G + "; ++g) {\n#pragma unroll\n" +
                         "      for (int e = 0; e < " + Vs + "; ++e) {\n        const IDX r = g * " + LV + " + lane * " + Vs +
                         " + e;\n        if (r < " + RED + ") {\n" + offsets("          ", "b", at_r, nk) + scalar_body +
                         "        }\n      }\n    }\n";
    if (!vector) return "  {\n" + scalar + "  }\n";
    // Vector slots: one load at the group's first element; the body reads its registers.
    std::string pre, vec_body = body;
    used_.clear();
    for (int j : reads)
      if (vector_slots.count(j)) used_.insert(j);
    pre = offsets("        ", "b", {"j"}, nk);
    for (int j : used_) {
      const Operand& sl = slots_[j];
      const std::string J = std::to_string(j), vt = std::string("ember_dev::Vec<") + cuda_type_name(sl.dtype) + ", " + Vs + ">";
      pre += "        const " + vt + " w" + J + " = *reinterpret_cast<const " + vt + "*>(in" + std::to_string(sl.buffer) +
             " + o" + J + ");\n";
      const std::string from = "in" + std::to_string(sl.buffer) + "[o" + J + "]", to = "w" + J + ".v[e]";
      for (size_t at = vec_body.find(from); at != std::string::npos; at = vec_body.find(from, at + to.size()))
        vec_body.replace(at, from.size(), to);
    }
    used_.clear();
    for (int j : reads)
      if (!vector_slots.count(j)) used_.insert(j);
    const bool stores = vec_body.find("STORE0(") != std::string::npos;
    if (stores && vector_out) pre += "        " + out_vec + " wo;\n";
    for (size_t at = vec_body.find("STORE0("); at != std::string::npos; at = vec_body.find("STORE0("))
      vec_body.replace(at, 7, vector_out ? "ember_dev::assign(wo.v[e], " : "ember_dev::assign(out0[" + out_offset(0, true) + "], ");
    std::string v = "#pragma unroll\n    for (int g = 0; g < " + G + "; ++g) {\n      const IDX j = g * " + LV +
                    " + lane * " + Vs + ";\n      if (j < " + RED + ") {\n" + pre + "#pragma unroll\n" +
                    "        for (int e = 0; e < " + Vs + "; ++e) {\n          const IDX r = j + e;\n" +
                    offsets("          ", "b", at_r, nk) + vec_body + "        }\n";
    if (stores && vector_out) v += "        *reinterpret_cast<" + out_vec + "*>(out0 + c0 + j) = wo;\n";
    v += "      }\n    }\n";
    return "  if (aligned) {\n" + v + "  } else {\n" + scalar + "  }\n";
  };
  if (registers) {
    // The row's input (its prologue evaluated once per element) into the lane's slots.
    std::string x;
    std::string body = input_code(R, "          ", x);
    body += "          v[g * " + Vs + " + e] = " + x + ";\n";
    os << "  " << A << " v[" << slot_groups * (vector ? V : 1) << "];  // slot g * " << Vs << " + e: element g * " << LV
       << " + lane * " << Vs << " + e of the row\n";
    const std::set<int> reads = used_;
    os << slot_loops(body, reads);
  }
  // One pass: `acc` = the group's combination of f(x) over the row, f given as text of x.
  auto pass = [&](const std::string& acc, RowKind kind, const RowNode& row, const std::string& f, bool keep = false) {
    if (registers) {  // over the lane's slots; `keep`: f(x) replaces x in its slot
      os << "  " << A << " " << acc << " = " << identity_of(kind, A) << ";\n#pragma unroll\n  for (int g = 0; g < "
         << slot_groups << "; ++g) {\n#pragma unroll\n    for (int e = 0; e < " << Vs << "; ++e) {\n      if (" << in_row
         << ") {\n        const " << A << " x = v[g * " << Vs << " + e];\n        const " << A << " y = " << A << "(" << f
         << ");\n" << (keep ? "        v[g * " + Vs + " + e] = y;\n" : "") << "        " << acc << " = " << op_of(kind)
         << "(" << acc << ", y);\n      }\n    }\n  }\n  " << acc << " = " << group(acc, op_of(kind)) << ";\n";
      return;
    }
    std::string x;
    const std::string code = input_at(row, "    ", x);
    const std::string first = split ? "static_cast<IDX>(blockIdx.x) % " + std::to_string(parts) + " * " + std::to_string(chunk) : "0";
    const std::string stop = split ? "rend" : column ? "rstop" : RED;
    if (split)
      os << "  const IDX rbegin = " << first << ", rend = rbegin + " << chunk << " < " << RED << " ? rbegin + " << chunk
         << " : " << RED << ";\n";
    os << "  " << A << " " << acc << " = " << identity_of(kind, A) << ";\n"
       << "  for (IDX r = " << (split ? "rbegin + " : "") << "lane; r < " << stop << "; r += " << LANES << ") {\n"
       << code << "    const " << A << " x = " << x << ";\n"
       << "    " << acc << " = " << op_of(kind) << "(" << acc << ", " << A << "(" << f << "));\n  }\n";
    os << "  " << acc << " = "
       << (column ? "ember_dev::column_reduce(" + acc + ", " + op_of(kind) + ", smem)" : group(acc, op_of(kind)))
       << ";\n";
  };
  std::string value;  // the row node's output 0 at element r (elementwise rows) or per row
  const bool elementwise = !R.is_reduction() || row_shaped;
  std::vector<int> value_slots;  // slots `value` reads (layer norm's weight and bias)
  switch (R.kind) {
    case RowKind::Sum:
    case RowKind::Max:
    case RowKind::Min:
    case RowKind::Prod:
      pass("acc", R.kind, R, "x");
      value = "acc";
      break;
    case RowKind::Mean:
      pass("acc", RowKind::Sum, R, "x");
      value = "acc / " + A + "(" + RED + ")";
      break;
    case RowKind::Var:
      // Two passes: the mean, then the squared deviations from it.
      pass("total", RowKind::Sum, R, "x");
      os << "  const " << A << " mean = total / " << A << "(" << RED << ");\n";
      pass("sq", RowKind::Sum, R, "(x - mean) * (x - mean)");
      value = "sq / " + A + "(" +
              (sym_red.is_const() ? double_text(std::max(0.0, static_cast<double>(red) - R.correction))
                                  : "fmax(0.0, static_cast<double>(" + RED + ") - " + double_text(R.correction) + ")") +
              ")";
      break;
    case RowKind::Softmax:
      pass("mx", RowKind::Max, R, "x");
      pass("sum", RowKind::Sum, R, "ember_dev::exp(x - mx)", registers);  // registers keep exp(x - mx)
      // Each element times the row's reciprocal, one division per row (within an ulp of
      // dividing each; Note [inductor], "CUDA").
      os << "  const " << A << " rsum = " << A << "(1) / sum;\n";
      value = registers ? "x * rsum" : "ember_dev::exp(x - mx) * rsum";
      break;
    case RowKind::LogSoftmax:
      pass("mx", RowKind::Max, R, "x");
      pass("sum", RowKind::Sum, R, "ember_dev::exp(x - mx)");
      os << "  const " << A << " lse = ember_dev::log(sum);\n";
      value = "(x - mx) - lse";
      break;
    case RowKind::LayerNorm: {
      pass("total", RowKind::Sum, R, "x");
      os << "  const " << A << " mean = total / " << A << "(" << RED << ");\n";
      pass("sq", RowKind::Sum, R, "(x - mean) * (x - mean)");
      // Float rows take rsqrtf, as PyTorch's CUDA layer norm does (c10::cuda::compat::rsqrt;
      // Triton's kernels call libdevice's rsqrt): at most 2 ulp from 1 / sqrt, and 0.5 us of
      // W3's 21.5 on an H200 (bench/results/cuda_rows_2026-11-29b). Double keeps 1 / sqrt.
      const std::string var = "sq / " + std::string(A) + "(" + RED + ") + " + A + "(" + double_text(R.eps) + ")";
      os << "  const " << A << " rstd = "
         << (std::string(A) == "float" ? "rsqrtf(" + var + ")" : std::string(A) + "(1) / ember_dev::sqrt(" + var + ")")
         << ";\n";
      value = "(x - mean) * rstd";
      for (const PwOp* p : {&R.weight, &R.bias}) {
        if (p->kind != PwOp::Kind::Load) continue;
        value = "(" + value + (p == &R.weight ? ") * " : ") + ") + load_text(slot_for_.at(p), R.dtype, true);
        value_slots.push_back(slot_for_.at(p));
      }
      if (!k_.root)
        os << "  if (lane == 0) {\n    out1[c1] = ember_dev::cvt<" << cuda_type_name(outs[1].dtype)
           << ">(mean);\n    out2[c2] = ember_dev::cvt<" << cuda_type_name(outs[2].dtype) << ">(rstd);\n  }\n";
      break;
    }
  }
  if (split) {
    // The part's result to the workspace; the second kernel combines a row's parts in order.
    os << "  if (lane == 0) ws[blockIdx.x] = acc;\n}\n\n";
    open_kernel(k_.name, 128, true, "", false);
    os << "  " << A << " acc = " << identity_of(R.kind == RowKind::Mean ? RowKind::Sum : R.kind, A) << ";\n"
       << "  for (int i = lane; i < " << parts << "; i += 32) acc = " << op_of(R.kind == RowKind::Mean ? RowKind::Sum : R.kind)
       << "(acc, ws[row * " << parts << " + i]);\n"
       << "  acc = ember_dev::warp_reduce(acc, " << op_of(R.kind == RowKind::Mean ? RowKind::Sum : R.kind) << ");\n";
  }
  // Further sums/means over the same rows (a row-shaped epilogue reads them): acc<i>.
  for (size_t i = 1; i <= k_.more_rows.size(); ++i) {
    const RowNode& m = *k_.more_rows[i - 1];
    const std::string I = std::to_string(i);
    pass("total" + I, RowKind::Sum, m, "x");
    os << "  const " << A << " acc" << I << " = total" << I
       << (m.kind == RowKind::Mean ? " / " + A + "(" + RED + ")" : std::string()) << ";\n";
  }
  // The last pass: the row's value, the epilogue over it, the store of output 0 — over the
  // row's elements (softmax, layer norm, a row-shaped epilogue), or once per row.
  auto last = [&](const std::string& indent) {
    std::ostringstream b;
    std::map<const Node*, std::string> done;
    used_.clear();
    used_.insert(value_slots.begin(), value_slots.end());
    std::string x;
    if (registers) {
      b << indent << "const " << A << " x = v[g * " << Vs << " + e];\n";
    } else if (elementwise && !row_shaped) {
      std::map<const Node*, std::string> in_done;
      for (const PointwiseNode* m : k_.nodes)
        if (m->node == R.input.value.node) x = emit(*m, b, in_done, indent);
      if (x.empty()) x = load_text(slot_for_.at(&R.input), R.dtype);
      b << indent << "const " << A << " x = " << x << ";\n";
    }
    b << indent << "const " << A << " rv = " << value << ";\n";
    std::string result = "rv";
    if (k_.root) {
      done[R.node] = "rv";
      for (size_t i = 1; i <= k_.more_rows.size(); ++i) done[k_.more_rows[i - 1]->node] = "acc" + std::to_string(i);
      result = emit(*k_.root, b, done, indent);
    }
    b << indent << (registers ? "STORE0(" : "out0[" + out_offset(0, elementwise) + "] = ") << "ember_dev::cvt<"
      << cuda_type_name(outs[0].dtype) << ">(" << result << (registers ? "));\n" : ");\n");
    return b.str();
  };
  if (registers) {
    const std::string body = last("          ");
    const std::set<int> reads = used_;
    os << slot_loops(body, reads);
  } else if (elementwise) {
    os << "  for (IDX r = lane; r < " << RED << "; r += " << LANES << ") {\n" << at_element("    ", last("    "))
       << "  }\n";
  } else {
    std::vector<std::string> none;
    os << (column ? "  if (lane == 0 && row < " + ROWS + ") {\n" : "  if (lane == 0) {\n");
    const std::string code = last("    ");
    os << offsets("    ", "b", none, nk) << code << "  }\n";
  }
  os << "}\n";
  launch.block = split ? 128 : block;
  launch.grid = column ? (rows + kColumnsPerBlock - 1) / kColumnsPerBlock : split || warp ? (rows + 3) / 4 : rows;
  launch.work = sym_rows;
  std::ostringstream rows_of;
  rows_of << sym_rows << " rows of " << sym_red;
  launch.how = rows_of.str() + ", " +
               (column ? "32 rows a block, its warps splitting each row (columns)"
                : warp ? "a warp per row"
                       : "a block per row");
  if (registers)
    launch.how += ", the row in registers (" + std::to_string(slot_groups) + " x " + Vs + " slots per " +
                  (warp ? "lane" : "thread") + (vector ? ", " + Vs + " elements per access when aligned)" : ")");
  launch.aligned_check = vector;
  launch.tune = tune;
  if (tune != TuneKind::Fixed) {
    launch.candidates = launch_candidates(tune, rows, block, level_);
    EMBER_INTERNAL_ASSERT(launch.candidates[0].block == launch.block && launch.candidates[0].grid == launch.grid)
        << "inductor CUDA codegen: kernel " << k_.name << "'s first launch candidate is not its heuristic's";
  }
  if (split) {
    launch.split_symbol = k_.name + "_split";
    launch.split_grid = rows * parts;
    launch.split_block = block;
    launch.workspace_bytes = static_cast<size_t>(rows * parts) * (R.dtype == kDouble ? 8 : 4);
    launch.how = std::to_string(rows) + " rows of " + std::to_string(red) + ", each in " + std::to_string(parts) +
                 " parts of " + std::to_string(chunk) + " (" + launch.split_symbol + "<<<" + std::to_string(rows * parts) +
                 ", " + std::to_string(block) + ">>>), combined a warp per row";
  }
  return os.str();
}

}  // namespace ember::inductor::cuda_codegen
