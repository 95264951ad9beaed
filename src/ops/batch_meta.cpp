// ops/batch_meta.cpp — a symbolic batch dim through ops whose meta functions read plain
// sizes: convolutions, 2-D pooling, batch norm, flip (the table below).
//
// Those meta functions are written over int64 sizes, so a dynamic trace that reaches one
// specializes every symbol of its inputs (capture's symbolic-read hook). For the ops in the
// table, dim 0 of the listed outputs is dim 0 of the listed inputs and nothing else of the
// result depends on it, so the batch can stay symbolic: the wrapper reads the inputs' other
// dims (specializing only those), runs the op's meta on stand-ins holding the example
// sizes, and gives the batch outputs dim 0 back as the symbol. Whatever does not fit the
// pattern runs the op's own meta (specializing as before). The dynamic conformance line
// checks every op of the table at other batch sizes. See Note [dynamic shapes], "A
// symbolic batch through ops written over int64".
#include <algorithm>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace ember::ops {
namespace {

/// An op, the arguments that carry the batch in dim 0 (tensors), and the outputs whose
/// dim 0 is that batch (an output that is 0-dim, such as a mean loss, stays static).
struct BatchRow {
  const char* op;
  std::vector<size_t> batch_inputs;
  std::vector<size_t> batch_outputs;
};

// clang-format off
const std::vector<BatchRow>& batch_rows() {
  static const std::vector<BatchRow> rows = {
      {"aten::convolution",                           {0},          {0}},
      {"aten::convolution_backward",                  {0, 1},       {0}},
      {"aten::max_pool2d_with_indices",               {0},          {0, 1}},
      {"aten::max_pool2d_with_indices_backward",      {0, 1, 7},    {0}},
      {"aten::avg_pool2d",                            {0},          {0}},
      {"aten::avg_pool2d_backward",                   {0, 1},       {0}},
      {"aten::_adaptive_avg_pool2d",                  {0},          {0}},
      {"aten::_adaptive_avg_pool2d_backward",         {0, 1},       {0}},
      {"aten::native_batch_norm",                     {0},          {0}},
      {"aten::native_batch_norm_backward",            {0, 1},       {0}},
      {"aten::flip",                                  {0},          {0}},
  };
  return rows;
}
// clang-format on

bool is_const(const core::SymInt& s) { return !core::current(s).is_symbolic(); }

/// The batch of `t` once its other dims are read (specialized): its dim-0 size, when
/// that is its only symbolic size, stride or offset; nullopt otherwise.
std::optional<core::SymInt> batch_of(const Tensor& t) {
  if (!core::is_symbolic(t) || t.dim() == 0) return std::nullopt;
  for (int64_t d = 1; d < t.dim(); ++d) (void)t.size(d);  // the other dims become static
  if (!core::is_symbolic(t)) return std::nullopt;         // the batch was one of them
  const core::SymGeometry& g = *t.impl()->sym;
  const core::SymInt batch = core::current(g.sizes[0]);
  // A data-dependent batch has no example value to run the meta at: the op's own meta
  // reads it, which breaks the graph there (Note [dynamic shapes]).
  if (is_const(batch) || core::ShapeEnv::has_unbacked(batch.expr()) || !is_const(g.storage_offset))
    return std::nullopt;
  for (size_t d = 1; d < g.sizes.size(); ++d)
    if (!is_const(g.sizes[d])) return std::nullopt;
  for (const core::SymInt& s : g.strides)
    if (!is_const(s)) return std::nullopt;
  return batch;
}


/// Whether dim 0 of `m` is its outermost (its stride spans every other dim), so that its
/// other strides do not depend on the batch.
bool batch_outermost(const TensorMeta& m) {
  for (size_t d = 1; d < m.sizes.size(); ++d)
    if (m.sizes[d] > 1 && m.strides[0] < m.strides[d] * m.sizes[d]) return false;
  return true;
}

MetaFn with_symbolic_batch(MetaFn meta, BatchRow row) {
  return [meta = std::move(meta), row = std::move(row)](const Stack& a) -> std::vector<TensorMeta> {
    // Symbolic literals (a size list over the symbols) and symbolic tensors outside the
    // batch inputs: the op's own meta.
    for (const IValue& v : a)
      if (v.is_sym_int() || v.is_sym_int_list() ||
          (v.is_tensor_list() && std::any_of(v.to_tensor_list().begin(), v.to_tensor_list().end(),
                                             [](const Tensor& t) { return core::is_symbolic(t); })))
        return meta(a);
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].is_tensor() && core::is_symbolic(a[i].to_tensor()) &&
          std::find(row.batch_inputs.begin(), row.batch_inputs.end(), i) == row.batch_inputs.end())
        return meta(a);
    std::optional<core::SymInt> batch;
    Stack static_args = a;
    for (size_t i : row.batch_inputs) {
      if (i >= a.size() || !a[i].is_tensor() || !core::is_symbolic(a[i].to_tensor())) continue;
      const std::optional<core::SymInt> b = batch_of(a[i].to_tensor());
      if (!b || (batch && b->expr() != batch->expr())) return meta(a);
      batch = b;
      static_args[i] = without_symbols(a[i].to_tensor());
    }
    if (!batch) return meta(a);
    std::vector<TensorMeta> out = meta(static_args);
    for (size_t k : row.batch_outputs) {
      TensorMeta& m = out.at(k);
      if (m.undefined || m.sizes.empty()) continue;  // a 0-dim result (a mean loss) has no batch
      if (m.sizes[0] != batch->hint() || m.storage_offset != 0 || !batch_outermost(m)) return meta(a);
      core::SymInts sizes = core::to_sym(m.sizes);
      sizes[0] = *batch;
      m = core::make_meta(sizes, core::to_sym(m.strides), core::SymInt(0), m.dtype, m.device);
    }
    return out;
  };
}

}  // namespace

void register_symbolic_batch(Registry& r) {
  for (const BatchRow& row : batch_rows()) {
    OpDef& op = r.edit(row.op);
    EMBER_INTERNAL_ASSERT(op.meta) << row.op << ": a symbolic batch row for an op without a meta function";
    op.meta = with_symbolic_batch(op.meta, row);
  }
}

}  // namespace ember::ops
