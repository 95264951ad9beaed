// graph/text.h — pieces of the graph text format shared by the printer and the parser.
//
//   graph fn {
//     %x : f32[4, 4] = placeholder[x]
//     %fc1_weight : f32[8, 4] = get_attr[fc1.weight]
//     %_tensor_constant0 : i64[3] = constant[_tensor_constant0]
//     %t : f32[4, 4] strides=[1, 4] = aten::t(%x)  # model.cpp:12
//     %max : (f32[4], i64[4]) = aten::max.dim(%t, 1, False)  # model.cpp:13
//     %cat : f32[8] = aten::cat([%max.0, %x_row], 0) {no_grad}  # model.cpp:14
//     return (%t, %max.1)
//   }
//
// A graph traced with dynamic shapes opens with its size symbols and the guards between
// them, and writes sizes, strides and offsets over the symbols (Note [dynamic shapes]):
//
//   graph fn {
//     symbol s0 = 8 for x.size(0) [2, inf]
//     symbol s1 = 8 for y.size(0) [2, 64]
//     guard Mod(s0, 4) == 0
//     %x : f32[s0, 16] = placeholder[x]
//     %t : f32[16, s0] strides=[1, 16] = aten::t(%x)
//     %v : f32[2*s0, 8] = aten::view(%x, [2*s0, 8])
//
// `symbol NAME = HINT for SOURCE [LO, HI]`: the example value it was traced with (what a
// repro's inputs are made with), where the value is read on a call, and its range.
//
// Geometry: short dtype, sizes, then `strides=[…]` unless contiguous, `offset=N` unless 0,
// `device=…` unless cpu. Arguments are positional, every schema argument present (defaults
// filled in). A value is %name, or %name.k for output k of a node with several outputs.
// A SymInt[] list may hold size expressions over the symbols (`[2*s0, 8]`).
// Literals: None, True/False, integers, floats (always with '.', 'e', inf or nan), lists
// [a, b], strings "…" (C escapes), dtypes torch.float32, devices device("cpu").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/graph.h"

namespace ember::core {
class ShapeEnv;
}

namespace ember::graph_text {

/// "f32", "bf16", "i64", "b8", … as FX prints dtypes.
std::string_view short_dtype(ScalarType t);
std::optional<ScalarType> parse_short_dtype(std::string_view s);
/// "f32[4, 4] strides=[1, 4]" — see the format above.
std::string format_meta(const TensorMeta& m);
/// "[s0, 16]" (over the size symbols when the value has them) or "[8, 16]".
std::string format_sizes(const TensorMeta& m);
/// The shape environment a graph's geometry is written over (the one its symbolic values
/// refer to; a parsed graph's values own theirs); null for a static graph.
const core::ShapeEnv* shape_env_of(const Graph& g);
/// The header lines of a graph with size symbols (`symbol …`, `guard …`), unindented.
std::vector<std::string> symbol_lines(const Graph& g);
/// A literal argument as the format spells it.
std::string format_literal(const IValue& v);
/// "%name" or "%name.k".
std::string format_ref(const ValueRef& v);

/// The graph as FX's print_tabular shows it (TORCH_LOGS=graph): one row per node with
/// its opcode, name, target, args and kwargs, in aligned columns. For reading only.
std::string tabular(const Graph& g);

}  // namespace ember::graph_text
