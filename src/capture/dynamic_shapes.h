// capture/dynamic_shapes.h — which sizes a compiled function's next trace makes symbolic:
// the marks of mark_dynamic / mark_static, CompileOptions::dynamic, the sizes automatic
// dynamic shapes found changing, and the backends that run one graph for many sizes.
// See Note [dynamic shapes].
#pragma once

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "capture/tracer.h"

namespace ember::capture {

/// A size of a tensor argument: (arg, element of a tensor list or -1, dim).
using ArgDim = std::tuple<int, int, int64_t>;

/// Whether the backend of `options` runs a graph traced with symbolic sizes for every
/// size its guards admit: one declared with with_symbolic_sizes ("eager", "aot_eager",
/// "inductor", the CompileProfiler's, a user's). Other backends compile for the example
/// sizes, so their traces stay static. An unknown backend name: false.
bool backend_takes_symbolic_sizes(const CompileOptions& options);

/// The sizes of `args` the next trace makes symbolic: every size under dynamic=true, the
/// dims passed to mark_dynamic and those in `automatic` under dynamic=nullopt, none under
/// dynamic=false; never a dim passed to mark_static. Each with mark_dynamic's bounds.
std::vector<DynamicDim> plan_dynamic(const std::vector<CallArg>& args, std::optional<bool> dynamic,
                                     const std::set<ArgDim>& automatic);

/// Whether dim `dim` of `t` was passed to mark_static.
bool is_marked_static(const Tensor& t, int64_t dim);

/// The tensor of `args` a size belongs to, or null.
const Tensor* tensor_at(const std::vector<CallArg>& args, int arg, int element);

}  // namespace ember::capture
