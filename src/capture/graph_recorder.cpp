// capture/graph_recorder.cpp — the recorder the AOT stage traces derivative formulas with
// (graph_recorder.h). Each op on its fakes becomes a Call node whose output geometry the
// op's meta function gives; the outputs are new fakes (views share their base's storage,
// as the Tracer's do) and carry the symbolic geometry the meta function gave them; a
// formula that reads such a size as an integer specializes it (on_symbolic_read). Contract in graph_recorder.h; see Note [aot].
#include "capture/graph_recorder.h"

#include <algorithm>

#include "capture/tracer.h"
#include "core/shape_env.h"
#include "ops/dispatch.h"
#include "support/call_context.h"
#include "support/logging.h"

namespace ember::capture {
namespace {

thread_local GraphRecorder* t_recorder = nullptr;

}  // namespace

GraphRecorder::GraphRecorder(Graph& g) : g_(g), previous_(t_recorder) {
  install_capture_hooks();
  t_recorder = this;
}

GraphRecorder::~GraphRecorder() { t_recorder = previous_; }

GraphRecorder* GraphRecorder::current() { return t_recorder; }

Tensor GraphRecorder::fake(ValueRef v) {
  auto key = std::make_pair(static_cast<const Node*>(v.node), v.index);
  if (auto it = fakes_.find(key); it != fakes_.end()) return it->second;
  const TensorMeta& m = v.node->meta().at(v.index);
  EMBER_INTERNAL_ASSERT(!m.undefined) << "recorder: %" << v.node->name() << "." << v.index << " is None";
  Tensor t = new_fake(m, nullptr);
  t.impl()->sym = m.sym;  // the value's geometry over the trace's size symbols, if it has one
  values_[t.impl()] = {t.impl_ptr(), v};
  fakes_.emplace(key, t);
  return t;
}

ValueRef GraphRecorder::value(const Tensor& t) {
  if (auto it = values_.find(t.impl()); it != values_.end() && it->second.object.lock().get() == t.impl())
    return it->second.ref;
  EMBER_INTERNAL_ASSERT(!t.is_fake()) << "recorder: a fake tensor from another trace reached a derivative formula";
  Node* n = g_.add_constant("_tensor_constant", t);
  values_[t.impl()] = {t.impl_ptr(), n->out(0)};
  fakes_.emplace(std::make_pair(static_cast<const Node*>(n), 0u), t);
  return n->out(0);
}

Stack GraphRecorder::record(const ops::OpDef& op, Stack& args) {
  EMBER_CHECK(op.kind != ops::OpKind::Dynamic)
      << op.name << ": its output size depends on data, which a traced derivative formula cannot read";
  EMBER_INTERNAL_ASSERT(op.meta) << op.name << " reached the recorder without a meta function";
  std::vector<Tensor> written;
  BoundArgs bound = bind_args(
      op, args,
      [&](const Tensor& t) {
        const ValueRef ref = value(t);
        return std::make_pair(ref, t.is_fake() ? t : fake(ref));
      },
      [&](const Tensor&, const Tensor& f) { written.push_back(f); });
  std::vector<Arg>& graph_args = bound.graph;
  Stack& fake_args = bound.fakes;
  std::vector<TensorMeta> metas = op.meta(fake_args);
  if (metas.empty() && !written.empty()) {
    // copy_ and friends: the result is the written argument itself.
    for (const Tensor& w : written) metas.push_back(meta_of(w));
    Node* n = g_.add_call(op, std::move(graph_args), std::move(metas), loc_);
    n->set_grad_enabled(grad_enabled_);
    Stack result;
    for (Tensor& w : written) result.emplace_back(std::move(w));
    return result;
  }
  Node* n = g_.add_call(op, std::move(graph_args), metas, loc_);
  n->set_grad_enabled(grad_enabled_);
  const bool view = op.kind == ops::OpKind::View;
  std::vector<Tensor> outs;
  for (size_t k = 0; k < metas.size(); ++k) {
    if (metas[k].undefined) {
      outs.emplace_back();
      continue;
    }
    Tensor out = new_fake(metas[k], view ? fake_args[0].to_tensor().storage() : nullptr);
    out.impl()->sym = metas[k].sym;
    out.impl()->is_view = view;
    const ValueRef ref = n->out(static_cast<uint32_t>(k));
    values_[out.impl()] = {out.impl_ptr(), ref};
    fakes_.emplace(std::make_pair(static_cast<const Node*>(n), static_cast<uint32_t>(k)), out);
    outs.push_back(std::move(out));
  }
  if (!op.schema.returns.empty() && op.schema.returns[0].type.is_list) return {IValue(std::move(outs))};
  Stack result;
  for (auto& t : outs) result.emplace_back(t.defined() ? IValue(std::move(t)) : IValue());
  return result;
}

std::string GraphRecorder::specialize_read(const core::SymGeometry& g, core::SymbolicRead what) {
  // The symbols read, as the environment knows them now (one specialized earlier reads
  // as a constant and is not specialized again).
  std::vector<core::SymInt> read;
  auto collect = [&](const core::SymInt& s) {
    const core::SymInt now = core::current(s);
    if (now.is_symbolic()) read.push_back(now);
  };
  using Kind = core::SymbolicRead::Kind;
  if (what.kind == Kind::Size) {
    collect(g.sizes[static_cast<size_t>(what.dim)]);
  } else if (what.kind == Kind::Stride) {
    collect(g.strides[static_cast<size_t>(what.dim)]);
  } else {
    for (const core::SymInt& s : g.sizes) collect(s);
    for (const core::SymInt& s : g.strides) collect(s);
    collect(g.storage_offset);
  }
  std::string specialized;
  for (const core::SymInt& s : read) {
    core::ShapeEnv& env = *s.env();
    for (int32_t id : core::sym::free_symbols(s.expr())) {
      const core::sym::Expr symbol = core::sym::Expr::symbol(id);
      if (env.simplify(symbol).is_const()) continue;  // specialized by an earlier symbol of this read
      // A data-dependent size has no value to specialize to: specialize raises the error
      // that says so, and the training graph runs in the interpreter (aot.cpp).
      const int64_t value = env.specialize(symbol);
      specialized += std::string(specialized.empty() ? "" : ", ") + core::sym::default_symbol_name(id) + " (" +
                     env.symbol(id).source + ") = " + std::to_string(value);
    }
  }
  return specialized;
}

void GraphRecorder::on_symbolic_read(const Tensor& t, core::SymbolicRead what) {
  const std::shared_ptr<const core::SymGeometry> g = t.impl()->sym;
  if (!g) return;
  const std::string specialized = specialize_read(*g, what);
  core::drop_geometry_if_static(t);
  if (specialized.empty()) return;
  const support::CallContext& c = support::call_context();
  const std::string who = !c.op_stack.empty() ? std::string(c.op_stack.back()) + " (its meta function or "
                                                                                  "decomposition is not written over "
                                                                                  "SymInt)"
                                              : (what_.empty() ? std::string("a traced derivative formula") : what_);
  EMBER_LOG(dynamic, INFO) << "specialized " << specialized << ": " << who << " reads sizes as integers"
                           << (loc_.known() ? " (backward of the op at " + loc_.str() + ")" : std::string());
}

}  // namespace ember::capture
