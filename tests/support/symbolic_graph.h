// tests/support/symbolic_graph.h — the text of a graph traced with dynamic shapes (size
// symbols with sources and ranges, guards, sizes, strides and offsets over the symbols),
// for the graph-text tests and the fuzzers' seeds. See Note [graph], "Symbolic geometry".
#pragma once

namespace ember::testing {

inline constexpr const char* kSymbolicGraphText =
    "graph dyn {\n"
    "  symbol s0 = 8 for x.size(0) [2, inf]\n"
    "  symbol s1 = 6 for x.size(1) [2, 64]\n"
    "  symbol s2 = 8 for y.size(0) [2, inf]\n"
    "  guard s2 == s0\n"
    "  guard Mod(s1, 2) == 0\n"
    "  %x : f32[s0, s1] = placeholder[x]\n"
    "  %y : f32[s0, s1] = placeholder[y]\n"
    "  %t : f32[s1, s0] strides=[1, s1] = aten::t(%x)  # model.cpp:3\n"
    "  %max : (f32[s1], i64[s1]) = aten::max.dim(%t, 1, False)  # model.cpp:4\n"
    "  %select : f32[s1] offset=(-s1 + s0*s1) = aten::select.int(%y, 0, -1)  # model.cpp:5\n"
    "  %half : f32[s0, s1 - 3] strides=[s1, 1] offset=3 = aten::slice.Tensor(%x, 1, 3, 9223372036854775807, 1)\n"
    "  return (%t, %max.1, %select, %half)\n"
    "}\n";

}  // namespace ember::testing
