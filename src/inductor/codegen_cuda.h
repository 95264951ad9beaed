// inductor/codegen_cuda.h — the CUDA code generator's kernel writer, shared by its files:
// codegen_cuda.cpp (operands, bodies, pointwise kernels, the translation unit and the
// launch plan) and codegen_cuda_rows.cpp (row kernels). Internal to the inductor. See
// Note [inductor] (docs/notes/inductor.md), "CUDA".
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "inductor/pipeline.h"
#include "inductor/symbolic.h"

namespace ember::inductor::cuda_codegen {

/// Threads per block of pointwise kernels (the heuristic's; launch tuning may choose others).
inline constexpr int kPointwiseBlock = 256;
/// Rows of at most this many elements go a warp per row (4 warps per block); longer rows a
/// block per row.
inline constexpr int64_t kWarpRowMax = 1024;

/// Softmax, log_softmax and layer norm rows of at most this many elements hold the row in
/// registers (longer rows re-read it from memory at each pass).
inline constexpr int64_t kRegisterRowMax = 8192;

/// How a row kernel holds its row (codegen_cuda_rows.cpp): read from memory at each pass
/// (reductions, long rows), or read once into registers — a warp per row for rows of at
/// most kWarpRowMax elements, else a block per row.
enum class RowForm { Passes, WarpRegisters, BlockRegisters };
RowForm row_form(RowKind kind, int64_t row_elements);
/// Threads per block of a block-per-row register form: at most 16 elements per thread.
int register_row_block(int64_t row_elements);

/// One way a kernel reads or writes a buffer: its index into the kernel's buffers (inputs
/// then outputs), its storage dtype, and its element stride along each dim of the kernel's
/// index space (0 where broadcast): `sym` as expressions over the size symbols (constants
/// in a static kernel), which the kernel's text and the layout decisions use; `strides`
/// their values at the example sizes, for the heuristics' choices.
struct Operand {
  int buffer = 0;
  ScalarType dtype = kFloat;
  std::vector<int64_t> strides;
  std::vector<core::sym::Expr> sym;
};

/// `v` as constant expressions.
std::vector<core::sym::Expr> constants(const std::vector<int64_t>& v);
/// A size expression as CUDA C++ text: a constant's digits, or an expression over the
/// kernel's `ks` argument.
inline std::string ex(const core::sym::Expr& e) { return c_expr(e, CDialect::Cuda); }

/// Writes one kernel's CUDA C++ and its launch. Sizes and strides are compiled in for a
/// static kernel; a kernel over size symbols reads them from its `ks` argument (the
/// expressions' text), and its layout decisions hold for every size: they are made on the
/// expressions (a merge of dims, a unit stride, registers for a row of constant length),
/// the heuristics' choices (a warp or a block per row, columns) on the example sizes.
/// Offsets are computed per element.
class CudaKernelWriter {
 public:
  /// `level`: how many launch candidates the kernel is written for (its launch bounds).
  /// `num_slots`: the graph's value slots when it is compiled over size symbols (else 0).
  CudaKernelWriter(Kernel& k, std::set<std::string>& functions, TuningLevel level = TuningLevel::Off,
                   size_t num_slots = 0);
  std::string write(CudaLaunch& launch);

 private:
  std::string write_pointwise(CudaLaunch& launch);
  std::string write_row(CudaLaunch& launch);  // codegen_cuda_rows.cpp

  /// The slot (index into slots_) of a load of `op` through `strides` (`sym` as
  /// expressions), registering its buffer in Kernel::inputs on first use.
  int slot_of(const PwOp& op, const std::vector<int64_t>& strides, const std::vector<core::sym::Expr>& sym);
  /// A load's strides as expressions: its symbolic strides in a symbolic kernel, else its
  /// strides as constants.
  std::vector<core::sym::Expr> load_strides(const PwOp& op) const;
  /// Output `m`'s element strides as expressions (0 along size-1 dims).
  std::vector<core::sym::Expr> output_strides(const TensorMeta& m) const;
  /// The kernel's size-symbol parameter (", const ember_dev::Sizes<N> ks"), or "".
  std::string sizes_parameter() const;
  /// Emits node `p`'s operations (members it reads first) at `indent`; returns the
  /// variable holding its value. Loads read slot j at offset `o<j>` (recorded in used_).
  std::string emit(const PointwiseNode& p, std::ostringstream& os, std::map<const Node*, std::string>& done,
                   const std::string& indent);
  /// Slot j's element converted to `body`'s math type (bool for a bool load).
  std::string load_text(int j, ScalarType body, bool direct = false);
  /// The kernel's parameter list: `const S* __restrict__ in<b>`, then `O* out<i>`.
  std::string parameters(const std::vector<Operand>& outs) const;
  /// "IDX o<j> = <base><j> + sum idx * stride" for each used slot.
  std::string offsets(const std::string& indent, const std::string& base, const std::vector<std::string>& idx,
                      size_t first_dim) const;

  Kernel& k_;
  std::set<std::string>& functions_;
  TuningLevel level_;
  size_t num_slots_ = 0;
  bool symbolic_ = false;  // the kernel is generated over size symbols
  std::set<const Node*> members_;
  std::vector<Operand> slots_;
  std::map<const PwOp*, int> slot_for_;
  std::set<int> used_;  // slots read by the code emitted since it was last cleared
  int counter_ = 0;
};

/// The helpers generated kernels call beyond kernels/cuda's prelude: warp and block
/// reductions, NaN-propagating min/max, the math constants of the lowering's formulas.
const char* cuda_codegen_prelude();
/// The C++ type a body of `t` computes in: float for f16/bf16/f32, double for f64.
const char* math_type(ScalarType t);
/// A number as CUDA C++ text of type double (non-finite values through their bits).
std::string double_text(double v);
/// Drops size-1 dims and merges dim d into the one before it when every operand's
/// strides allow (st[d-1] == st[d] * size[d]), as the expressions prove it; updates
/// `sizes`, `sym_sizes` (the same sizes as expressions) and every operand.
void collapse(std::vector<int64_t>& sizes, std::vector<core::sym::Expr>& sym_sizes, std::vector<Operand*> operands);
/// "[s0, 768]": sizes as a kernel's comment shows them (IntArrayRef's form for constants).
std::string sizes_text(const std::vector<core::sym::Expr>& sizes);
/// Declarations `<prefix><d>` of the multi-index of linear index `lin` over `sizes`.
std::string decompose_text(const std::string& indent, const std::string& lin, const std::string& prefix,
                           const std::vector<core::sym::Expr>& sizes, std::vector<std::string>& names);
/// "int" when every index and offset of the operands over `sizes` fits in 31 bits, else
/// "long long".
const char* index_type(const std::vector<int64_t>& sizes, const std::vector<const Operand*>& operands);

}  // namespace ember::inductor::cuda_codegen
