// capture/unbacked.h — ops whose output size is computed from their input's data
// (`nonzero`, indexing with a bool mask, `masked_select` which is written as one), traced
// under config().dynamo.capture_dynamic_output_shape_ops: the size becomes an unbacked
// symbol u0, u1, … of the trace's shape environment and the graph goes on past the op;
// with the knob off such a call breaks the graph with PyTorch's reason. See Note
// [dynamic shapes], "Data-dependent sizes".
#pragma once

#include <string>
#include <vector>

#include "core/shape_env.h"
#include "ember/graph.h"
#include "ops/registry.h"

namespace ember::capture {

/// Whether a call of `op` with `args` has an output whose size depends on the values of
/// its inputs: an op that allocates its own output (OpKind::Dynamic, `nonzero`) or
/// `index.Tensor` with a bool/uint8 mask among its indices.
bool has_data_dependent_size(const ops::OpDef& op, const Stack& args);

/// Why such a call breaks the graph instead of being traced with an unbacked size; empty
/// when it can be traced (the knob is on and the call has a form the table in
/// unbacked.cpp covers). With the knob off it is PyTorch's text: `dynamic shape operator:
/// aten::nonzero; to enable, set …`.
std::string why_not_unbacked(const ops::OpDef& op, const Stack& args);

/// The outputs' geometry of such a call (`fake_args`: its arguments as fakes), its
/// data-dependent size a new unbacked symbol of `env`.
std::vector<TensorMeta> unbacked_meta(const ops::OpDef& op, const Stack& fake_args, core::ShapeEnv& env);

}  // namespace ember::capture
