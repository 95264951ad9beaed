// inductor/ir.h — the loop-level IR of the inductor CPU backend: what lowering makes of a
// captured graph (pointwise bodies over an index space, extern calls, views), and the
// kernels the scheduler groups them into. See Note [inductor] (docs/notes/inductor.md).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/sym_expr.h"
#include "ember/graph.h"

namespace ember::inductor {

/// One operation of a pointwise body, in SSA form: `args` index earlier operations.
struct PwOp {
  enum class Kind : uint8_t { Load, Constant, Call };
  Kind kind = Kind::Constant;
  /// Load: the graph value read, its storage dtype (converted to the body's dtype on load;
  /// kBool loads give a mask), and its index map: the element stride of each dim of the
  /// body's index space (0 where the value is broadcast).
  ValueRef value;
  ScalarType dtype = kFloat;
  std::vector<int64_t> strides;
  /// In a symbolic body (PointwiseNode::sym_sizes set): the same strides as expressions
  /// over the size symbols (constants where static); empty otherwise.
  std::vector<core::sym::Expr> sym_strides;
  /// Constant: its value, converted to the body's dtype as eager converts a Scalar.
  double constant = 0;
  /// Call: a function of the generated code's prelude (`op_sigmoid`, `where`) applied to
  /// `args`, then `literal` (an extra argument such as alpha) when not empty.
  std::string fn;
  std::vector<int> args;
  std::string literal;
};

/// A graph node computed elementwise: result[i] = body(i) for every multi-index i of
/// `sizes`, stored through the node's own strides (its meta: eager's layout).
struct PointwiseNode {
  const Node* node = nullptr;
  std::vector<int64_t> sizes;
  /// In a graph compiled over size symbols: `sizes` as expressions (constants where
  /// static); empty for a static node. `sizes` then holds the example values.
  std::vector<core::sym::Expr> sym_sizes;
  /// The type the body computes in: the result's, or for a comparison (`mask`) the type
  /// it compares in.
  ScalarType dtype = kFloat;
  std::vector<PwOp> body;  // the last operation is the result
  /// A comparison: the body's result is a mask (Vectorized<T>::Mask lanes, bool scalars),
  /// stored as bool and read by where() in the same kernel as it is.
  bool mask = false;
};

/// What a row node computes from each reduction range ("row") of its input.
enum class RowKind : uint8_t { Sum, Mean, Max, Min, Var, Prod, Softmax, LogSoftmax, LayerNorm };

/// A reduction node: its input's index space (in_sizes) splits into kept dims (the outer
/// index space) and the reduced dims `reduced` (the reduction range, the "row"); for
/// every index i of the kept dims, one pass or several over the input's elements x[i, :].
/// Sum/Mean/Max/Min/Var/Prod reduce any set of dims and write one value per kept index
/// (out_sizes: the kept sizes, with 1 for each reduced dim under keepdim);
/// Softmax/LogSoftmax/LayerNorm reduce the last dim only and write a row per row
/// (out_sizes == in_sizes), LayerNorm also its mean and rstd per row (outputs 1 and 2).
/// Codegen picks the loop order from the operands' strides (a row kernel vectorized
/// along the innermost reduced dim, or a column kernel vectorized along the innermost
/// kept dim).
struct RowNode {
  const Node* node = nullptr;
  RowKind kind = RowKind::Sum;
  std::vector<int64_t> in_sizes;
  std::vector<int64_t> out_sizes;
  /// In a graph compiled over size symbols: in_sizes / out_sizes as expressions (constants
  /// where static), and the loads' PwOp::sym_strides set; empty for a static row.
  std::vector<core::sym::Expr> sym_in_sizes, sym_out_sizes;
  /// One flag per dim of in_sizes: whether it is reduced.
  std::vector<bool> reduced;
  ScalarType dtype = kFloat;
  /// Loads over in_sizes: the input (argument 0), and LayerNorm's weight and bias (kind
  /// Constant when absent).
  PwOp input, weight, bias;
  double eps = 0;
  /// Var: the divisor is max(0, N - correction), N the number of reduced elements.
  double correction = 1;

  /// Whether it writes one value per kept index (not a row per row).
  bool is_reduction() const { return kind != RowKind::Softmax && kind != RowKind::LogSoftmax && kind != RowKind::LayerNorm; }
  /// Whether the reduced dims are exactly the last dim.
  bool reduces_last_dim_only() const;
};

/// `strides` of a load over row node `r`'s output index space (an epilogue's) as strides
/// over its input's: kept dims take the output's strides in order, reduced dims 0 (keepdim
/// or not). `over_input`: they are over the input's already. Both code generators use it.
template <typename I>
std::vector<I> to_input_space(const RowNode& r, const std::vector<I>& strides, bool over_input) {
  if (over_input) return strides;
  std::vector<I> in(r.in_sizes.size(), I(0));
  const bool keepdim = strides.size() == in.size();
  for (size_t d = 0, j = 0; d < in.size(); ++d) {
    if (r.reduced[d]) {
      if (keepdim) ++j;
      continue;
    }
    if (j < strides.size()) in[d] = strides[j];
    ++j;
  }
  return in;
}

/// The element strides of output `m` of a row kernel (0 on size-1 dims) over row node
/// `r`'s input index space. Both code generators use it.
inline std::vector<int64_t> row_output_strides(const RowNode& r, const TensorMeta& m) {
  std::vector<int64_t> strides;
  for (size_t d = 0; d < m.sizes.size(); ++d) strides.push_back(m.sizes[d] == 1 ? 0 : m.strides[d]);
  return to_input_space(r, strides, m.sizes.size() == r.in_sizes.size());
}

/// How each Call node of the graph is run.
enum class NodeRole : uint8_t { Pointwise, Row, View, Extern };

/// A fused kernel: pointwise nodes computed in one loop nest, storing its `outputs` (the
/// root, nodes also read outside the kernel, the outputs of sibling kernels merged into
/// it); or a row kernel built around `row`: a loop over rows whose passes read the input
/// through the prologue (pointwise nodes inlined into the row's input load) and whose last
/// pass computes the epilogue (pointwise nodes over the row's output, `root` the last),
/// writing the root (or, without an epilogue, every output of the row node).
struct Kernel {
  std::string name;                        // cpp_fused_<ops>_<k>
  const PointwiseNode* root = nullptr;     // a pointwise node it writes (null: it writes `row`)
  const RowNode* row = nullptr;            // the reduction it computes, if any
  /// Further sums/means over `row`'s rows, each its own pass, read by a row-shaped
  /// epilogue (scheduler.cpp's joins_rows); they store nothing.
  std::vector<const RowNode*> more_rows;
  std::vector<const PointwiseNode*> nodes; // every pointwise node it computes, in graph order
  /// Pointwise kernels: the nodes it stores, in graph order (the root among them).
  std::vector<const PointwiseNode*> outputs;
  std::vector<ValueRef> inputs;            // the buffers it reads, in argument order (filled by codegen)
  /// Inputs a kernel with one output may write that output over (filled by codegen): every
  /// read of them is at the output's own index map and dtype, so element i is read before
  /// element i is written and no other element is read. Their pointers and the output's
  /// carry no __restrict. The wrapper reuses one when it dies here (Note [inductor], in place).
  std::vector<int> may_alias_output;
  /// A value this pointwise kernel stores that is to be written into a graph input
  /// (aot::GraphRole::input_writes; mark_input_writes, before code generation): the input's
  /// node, its position among the graph's inputs, and which stored output writes it.
  struct WrittenInput {
    const Node* input = nullptr;
    size_t graph_input = 0;
    size_t output = 0;
  };
  std::vector<WrittenInput> written_inputs;
  /// Pointwise kernels of several outputs (CPU code): per stored output, in `outputs`'
  /// order, which of `written_inputs` it may be written over on the terms above (filled by
  /// codegen). Such a kernel stores an element's outputs after all its loads of that
  /// element (Note [inductor], "Writes into graph inputs").
  std::vector<std::vector<int>> may_alias_stored;
  /// The node at whose position the wrapper runs it (the root, or an earlier sibling's).
  const Node* run_at = nullptr;

  /// The node at whose position the wrapper runs it.
  const Node* root_node() const { return run_at ? run_at : root ? root->node : row->node; }
  /// The position of buffer `v` among `inputs`, appended when it is not there yet.
  int input_index(const ValueRef& v) {
    for (size_t b = 0; b < inputs.size(); ++b)
      if (inputs[b] == v) return static_cast<int>(b);
    inputs.push_back(v);
    return static_cast<int>(inputs.size()) - 1;
  }
  /// Whether it is generated over size symbols (then it also takes their values, `ks`).
  bool symbolic() const { return row ? !row->sym_in_sizes.empty() : !root->sym_sizes.empty(); }
};

/// Lowering's result: the role of every Call node, the pointwise and row nodes by node.
struct LoweredGraph {
  std::map<const Node*, NodeRole> roles;
  std::map<const Node*, PointwiseNode> pointwise;
  std::map<const Node*, RowNode> rows;
  /// Pointwise nodes every reader computes again in its own body (0-dim values on CUDA,
  /// lowering.cpp's recompute_scalars): no kernel computes or stores them.
  std::set<const Node*> recomputed;
};

/// A Call operation as code: `<prefix><fn>(<args>[, <literal>])`, its arguments the
/// variables `vars` holds for earlier operations (both code generators emit calls so).
std::string call_text(const PwOp& op, const std::vector<std::string>& vars, const std::string& prefix = "");

/// Text of a pointwise body, one operation per line (ir_pre_fusion / debug logs).
std::string to_string(const PointwiseNode& p);
std::string to_string(const RowNode& r);
const char* row_kind_name(RowKind k);
/// "over the last dim" or "over dims [0, 2]".
std::string row_dims_text(const RowNode& r);

}  // namespace ember::inductor
