// inductor/freezing.h — freezing (torch._inductor.config.freezing) for inference graphs:
// module parameters become graph constants, the calls computed from constants alone are
// folded at compile time, and each float32 GEMM whose weight is a constant runs on a
// packed oneDNN matmul with its epilogue (bias, ReLU/GELU, adds) as post-ops
// (kernels/cpu/packed_linear.h), or on the unpacked path where the per-shape timing says
// that is faster. See Note [freezing] (docs/notes/inductor.md).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/graph.h"
#include "inductor/ir.h"
#include "kernels/cpu/packed_conv.h"
#include "kernels/cpu/packed_linear.h"

namespace ember::inductor {

/// Why freezing does not apply to graph `g` compiled now with `examples` ("" when it
/// does): the knob is off, a training graph (aot::current_graph_role()), a graph over
/// size symbols, a graph on a CUDA device, or examples without data.
std::string why_not_freezing(const Graph& g, const std::vector<Tensor>& examples, bool on_cuda);

/// Freezing's graph step. Requires: an inference graph, `examples` one real tensor per
/// Graph::inputs(). Guarantees: every Attribute input that the graph does not write
/// (aot::GraphRole::input_writes) is read through a Constant node holding its example
/// (detached); every pure call of static sizes whose tensor arguments are all constants,
/// and whose outputs are no larger than its largest input, is a Constant computed now with
/// the eager kernels (a weight's `t()` or `permute`); the inputs stay (a caller still passes
/// them). Logs each fold at DEBUG and a summary at INFO on `inductor`.
std::unique_ptr<Graph> freeze_parameters(const Graph& g, const std::vector<Tensor>& examples);

/// A float32 GEMM or 2-D convolution with a constant weight and the epilogue absorbed into
/// it: `chain[0]` (aten::mm or aten::addmm, run by `packed`; or aten::convolution, run by
/// `conv`) and the calls after it that read only the previous one's value, each the single
/// reader of the one before; the last one's value is the result. A GEMM's: views keeping the
/// last dim, an add of a bias or of a value computed before the GEMM, relu, gelu. A
/// convolution's: multiplies and adds of per-channel constants (batch norm in eval mode,
/// folded into the packed weight and bias), then an add of a value computed before the
/// convolution (a residual), then relu.
struct FrozenLinear {
  std::vector<const Node*> chain;
  ValueRef input;                                      // the GEMM's or convolution's input
  std::vector<ValueRef> add_operands;                  // per Add post-op (or sum), the value it adds
  std::shared_ptr<kernels::cpu::PackedLinear> packed;  // a GEMM's, or
  std::shared_ptr<kernels::cpu::PackedConv> conv;      // a convolution's (chain[0] aten::convolution),
  /// and when the chain goes on into a second frozen convolution that reads the first one's
  /// result alone (a ResNet block's conv1 -> conv2), that one's: the two run as
  /// PackedConv::run_then, the intermediate in oneDNN's layout; add_operands are then the
  /// second one's.
  std::shared_ptr<kernels::cpu::PackedConv> conv_next;
  /// "%mm: 256x1024x4096 +bias +gelu_erf, weight BA16a64b" for logs and the report.
  std::string text;
};

/// Finds the frozen linears and convolutions of `g` (a graph freeze_parameters made, after
/// the graph passes), packs each weight once (a convolution's with its batch norm folded
/// in), and makes the nodes each absorbs Extern in `lowered` (no longer pointwise, so no
/// kernel computes them); the wrapper runs each at its first node's position (two
/// convolutions merged into one step at the first's). Logs each at INFO on `inductor`.
std::vector<FrozenLinear> plan_frozen_linears(const Graph& g, LoweredGraph& lowered);

/// Runs `l` at its GEMM's position: the packed primitive writing the result, or the chain's
/// calls one by one with their eager kernels — whichever the per-shape timing chose (timed
/// at the first call of each product, epilogue and thread count; cached for the process;
/// logged on the `autotuning` artifact), or the eager calls when an operand does not have
/// its recorded layout. `bind` receives each node's outputs it computed (the last node's
/// alone when packed).
void run_frozen_linear(const FrozenLinear& l, const std::function<const Tensor&(const ValueRef&)>& value_of,
                       const std::function<void(const Node*, std::vector<Tensor>)>& bind);

/// How many frozen linears have run packed / unpacked in this process (tests).
int64_t frozen_linear_runs(bool packed);

/// Fixes run_frozen_linear's choice (true: packed, false: unpacked) instead of timing it;
/// nullopt times it again. For tests and measurements.
void force_frozen_linear_choice(std::optional<bool> packed);

}  // namespace ember::inductor
