// inductor/ir.h — the loop-level IR of the inductor CPU backend: what lowering makes of a
// captured graph (pointwise bodies over an index space, extern calls, views), and the
// kernels the scheduler groups them into. See Note [inductor] (docs/notes/inductor.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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
  ScalarType dtype = kFloat;
  std::vector<PwOp> body;  // the last operation is the result
};

/// How each Call node of the graph is run.
enum class NodeRole : uint8_t { Pointwise, View, Extern };

/// A fused kernel: pointwise nodes computed in one loop nest, writing only `root`.
struct Kernel {
  std::string name;                        // cpp_fused_<ops>_<k>
  const PointwiseNode* root = nullptr;     // the only node it materializes
  std::vector<const PointwiseNode*> nodes; // every node it computes, in graph order
  std::vector<ValueRef> inputs;            // the buffers it reads, in argument order (filled by codegen)
};

/// Lowering's result: the role of every Call node, and the pointwise nodes by node.
struct LoweredGraph {
  std::map<const Node*, NodeRole> roles;
  std::map<const Node*, PointwiseNode> pointwise;
};

/// Text of a pointwise body, one operation per line (ir_pre_fusion / debug logs).
std::string to_string(const PointwiseNode& p);

}  // namespace ember::inductor
