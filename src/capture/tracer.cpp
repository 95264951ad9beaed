// capture/tracer.cpp — see tracer.h and Note [fake tensors].
#include "capture/tracer.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "autograd/autograd_meta.h"
#include "capture/events.h"
#include "capture/graph_recorder.h"
#include "capture/unbacked.h"
#include "core/fake.h"
#include "ember/autograd.h"
#include "ember/compile.h"
#include "ember/config.h"
#include "ember/optim.h"
#include "nn/attribute_hook.h"
#include "ops/autocast.h"
#include "ops/dispatch.h"
#include "support/call_context.h"
#include "support/logging.h"

namespace ember::capture {
namespace {

thread_local Tracer* t_current = nullptr;
/// Traces running on any thread: a fake tensor reaching an op on a thread without one was
/// most likely handed to another thread by the traced function.
std::atomic<int> g_traces_running{0};

/// No tracer on this thread while alive: ops run for real (a flush executing a graph, a
/// backend compiling one, an op run eagerly at a break).
class SuspendTracing {
 public:
  SuspendTracing() : saved_(t_current) { t_current = nullptr; }
  ~SuspendTracing() { t_current = saved_; }
  SuspendTracing(const SuspendTracing&) = delete;
  SuspendTracing& operator=(const SuspendTracing&) = delete;

 private:
  Tracer* saved_;
};

struct BreakInfo {
  const char* id;
  const char* what;
  const char* hint;
};
constexpr BreakInfo kBreaks[] = {
#define GRAPH_BREAK(name, id, what, hint) {id, what, hint},
#include "capture/graph_breaks.def"
#undef GRAPH_BREAK
};

/// Which break a data access is (the texts core and autograd pass to require_data).
BreakKind kind_of_access(const char* what) {
  if (std::strcmp(what, "Tensor.item()") == 0) return BreakKind::Item;
  if (std::strcmp(what, "a tensor used as a bool") == 0) return BreakKind::TensorBool;
  if (std::strcmp(what, "printing a tensor") == 0) return BreakKind::Print;
  if (std::strcmp(what, "Tensor.backward()") == 0) return BreakKind::Backward;
  if (std::strcmp(what, "Tensor.requires_grad_()") == 0 || std::strcmp(what, "Tensor.retain_grad()") == 0 ||
      std::strcmp(what, "Tensor.register_hook()") == 0) {
    return BreakKind::AutogradState;
  }
  return BreakKind::DataRead;
}

/// The grad_fn of a traced tensor that requires grad: named as eager's node would be, so
/// requires_grad(), is_leaf(), grad_fn() and output_nr() answer inside a compiled function
/// as they do eagerly. It has no formula: backward() from a traced tensor is a graph break,
/// after which the tensor is real and has the real node.
class TracedNode final : public autograd::Node {
 public:
  TracedNode(std::string name, uint32_t outputs) : Node(outputs), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&&) override {
    EMBER_INTERNAL_ASSERT(false) << "the traced node " << name_ << " was run by backward()";
  }

 private:
  std::string name_;
};

SourceLoc current_user_loc() {
  const support::CallContext& c = support::call_context();
  return c.has_user_loc ? SourceLoc(c.user_loc.file, c.user_loc.line) : SourceLoc();
}

Stack capture_layer(const ops::OpDef& op, Stack& args) {
  if (Tracer* t = Tracer::current()) return t->record(op, args);
  if (GraphRecorder* r = GraphRecorder::current()) return r->record(op, args);
  for (const IValue& a : args) {
    if (!(a.is_tensor() && a.to_tensor().is_fake())) continue;
    EMBER_CHECK(g_traces_running.load() == 0)
        << "this tensor is being traced by a compiled function and has no data, and this thread is not the one "
           "tracing it: capture follows only the thread that called the compiled function (run this op on that "
           "thread, or call the function that uses other threads outside the compiled function)";
    EMBER_FAIL() << "this tensor was made while tracing a compiled function and has no data; it was kept past the "
                    "trace that made it (e.g. stored outside the function), where it cannot be used";
  }
  return ops::redispatch(ops::DispatchLayer::Capture, op, args);
}

void fake_data_hook(const Tensor& t, const char* what, const std::source_location& loc) {
  if (Tracer* tr = Tracer::current()) tr->on_data_access(t, what, loc);
}

// Reads made inside an op (meta functions, kernels) are Ember's own; the user's code reads
// outside any op.
void fake_offset_hook(const Tensor& t) {
  if (Tracer* tr = Tracer::current(); tr && support::call_context().op_stack.empty()) tr->on_offset_read(t);
}

/// A line in one of Ember's public headers is never the user's (a default argument there
/// would have been evaluated at the user's call).
void outside_state_hook(const char* what) {
  if (Tracer* tr = Tracer::current()) tr->on_outside_state(what);
}

void symbolic_read_hook(const Tensor& t, core::SymbolicRead what) {
  if (Tracer* tr = Tracer::current()) {
    tr->on_symbolic_read(t, what);
  } else if (GraphRecorder* r = GraphRecorder::current()) {
    r->on_symbolic_read(t, what);
  }
}

void grad_read_hook(const Tensor& owner, const Tensor& grad) {
  if (Tracer* tr = Tracer::current()) tr->on_grad_read(owner, grad);
}

void attribute_read_hook(const nn::AttributeCell& cell) {
  if (Tracer* tr = Tracer::current()) tr->on_attribute_read(cell.shared_from_this());
}

}  // namespace

std::string GraphBreak::reason() const {
  const BreakInfo& info = kBreaks[static_cast<int>(kind)];
  std::string out = std::string(info.id) + ": " + info.what;
  if (!detail.empty()) out += " (" + detail + ")";
  return out;
}

const char* GraphBreak::hint() const { return kBreaks[static_cast<int>(kind)].hint; }

void install_capture_hooks() {
  static const bool installed = [] {
    ops::set_layer_handler(ops::DispatchLayer::Capture, &capture_layer);
    core::set_fake_data_hook(&fake_data_hook);
    core::set_fake_offset_hook(&fake_offset_hook);
    core::set_symbolic_read_hook(&symbolic_read_hook);
    core::set_outside_state_hook(&outside_state_hook);
    core::set_grad_read_hook(&grad_read_hook);
    core::set_compiling_hook(&ember::is_compiling);
    nn::set_attribute_read_hook(&attribute_read_hook);
    return true;
  }();
  (void)installed;
}

Tracer* Tracer::current() { return t_current; }

Tracer::Tracer(TraceOptions options, SegmentCompiler compile)
    : options_(std::move(options)), compile_(std::move(compile)) {
  install_capture_hooks();
}

Tracer::~Tracer() = default;

TensorMeta meta_of(const Tensor& t) {
  // The fields themselves: the geometry a graph records is not a read that specializes.
  const TensorImpl& impl = *t.impl();
  TensorMeta m{impl.sizes, impl.strides, t.dtype(), t.device(), t.storage_offset()};
  m.sym = impl.sym;
  return m;
}

Tensor new_fake(const TensorMeta& m, std::shared_ptr<Storage> storage) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  impl->storage_offset = m.storage_offset;
  impl->dtype = m.dtype;
  impl->device = m.device;
  impl->is_fake = true;
  impl->refresh();
  if (!storage) {
    int64_t extent = impl->numel > 0 ? m.storage_offset + 1 : 0;
    for (size_t d = 0; d < m.sizes.size() && impl->numel > 0; ++d) extent += (m.sizes[d] - 1) * m.strides[d];
    // The size and device a real storage would have, without memory (data() is null;
    // reading data goes through require_data, which makes the tensor real first).
    storage =
        std::make_shared<Storage>(nullptr, static_cast<size_t>(extent) * element_size(m.dtype), m.device, nullptr);
  }
  impl->storage = std::move(storage);
  return Tensor(std::move(impl));
}

BoundArgs bind_args(const ops::OpDef& op, const Stack& args,
                    const std::function<std::pair<ValueRef, Tensor>(const Tensor&)>& bind,
                    const std::function<void(const Tensor& arg, const Tensor& fake)>& on_write) {
  BoundArgs b;
  b.graph.reserve(args.size());
  b.fakes = args;
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& a = args[i];
    if (a.is_tensor() && a.to_tensor().defined()) {
      const Tensor& t = a.to_tensor();
      auto [ref, fake] = bind(t);
      b.graph.push_back(Arg::of_value(ref));
      b.fakes[i] = IValue(fake);
      if (op.schema.arguments[i].is_write) on_write(t, fake);
    } else if (a.is_tensor()) {
      b.graph.push_back(Arg::of_literal(IValue()));
      b.fakes[i] = IValue();
    } else if (a.is_tensor_list()) {
      std::vector<std::optional<ValueRef>> refs;
      std::vector<Tensor> fakes;
      for (const Tensor& t : a.to_tensor_list()) {
        auto [ref, fake] = bind(t);
        refs.emplace_back(ref);
        fakes.push_back(std::move(fake));
      }
      b.graph.push_back(Arg::of_values(std::move(refs)));
      b.fakes[i] = IValue(std::move(fakes));
    } else if (std::holds_alternative<std::vector<std::optional<Tensor>>>(a.variant())) {
      std::vector<std::optional<ValueRef>> refs;
      std::vector<std::optional<Tensor>> fakes;
      for (const auto& t : a.to_optional_tensor_list()) {
        if (t && t->defined()) {
          auto [ref, fake] = bind(*t);
          refs.emplace_back(ref);
          fakes.emplace_back(std::move(fake));
        } else {
          refs.emplace_back(std::nullopt);
          fakes.emplace_back(std::nullopt);
        }
      }
      b.graph.push_back(Arg::of_values(std::move(refs)));
      b.fakes[i] = IValue(std::move(fakes));
    } else {
      b.graph.push_back(Arg::of_literal(a));
    }
  }
  return b;
}

Tensor Tracer::make_fake(const TensorMeta& m, std::shared_ptr<Storage> storage, const Tensor* real) {
  Tensor fake = new_fake(m, std::move(storage));
  fake.impl()->sym = m.sym;
  // The same tensor as far as autograd is concerned: requires_grad, grad(), grad_fn and
  // is_leaf() answer as for the real one (an input's grad() is the caller's gradient).
  if (real) fake.impl()->autograd_meta = real->impl()->autograd_meta;
  return fake;
}

void Tracer::set_traced_autograd(const ops::OpDef& op, const Stack& fake_args, std::vector<Tensor>& outs) const {
  if (!is_grad_enabled() || op.not_differentiable) return;
  bool any = false;
  for (const IValue& a : fake_args) {
    if (a.is_tensor()) {
      any = any || (a.to_tensor().defined() && a.to_tensor().requires_grad());
    } else if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) any = any || t.requires_grad();
    } else if (std::holds_alternative<std::vector<std::optional<Tensor>>>(a.variant())) {
      for (const auto& t : a.to_optional_tensor_list()) any = any || (t && t->defined() && t->requires_grad());
    }
  }
  if (!any) return;
  auto node = std::make_shared<TracedNode>(op.backward_name.empty() ? op.name : op.backward_name,
                                           static_cast<uint32_t>(outs.size()));
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined() || !(is_floating_point(outs[k].dtype()) || is_complex(outs[k].dtype()))) continue;
    autograd::AutogradMeta& m = autograd::ensure_meta(outs[k]);
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(k);
  }
}

void Tracer::start_segment() {
  graph_ = std::make_shared<Graph>(options_.name.empty() ? "graph" : options_.name);
  values_.clear();
  live_.clear();
  input_values_.clear();
  input_fakes_.clear();
  input_sources_.clear();
  fake_of_input_.clear();
  dirty_.clear();
}

ValueRef Tracer::add_input(const Tensor& real, const Tensor& fake, std::string_view name, InputSource source,
                           bool attribute) {
  TensorMeta m = meta_of(real);
  m.sym = fake.impl()->sym;  // an argument traced with symbolic sizes (make_symbolic)
  Node* n = attribute ? graph_->add_attribute(name, m) : graph_->add_placeholder(name, m);
  const ValueRef ref = n->out(0);
  values_[real.impl()] = {real.impl_ptr(), ref};
  values_[fake.impl()] = {fake.impl_ptr(), ref};
  input_values_.push_back(real);
  input_fakes_.push_back(fake);
  fake_of_input_[real.impl()] = fake;
  input_sources_.push_back(std::move(source));
  return ref;
}

std::optional<ValueRef> Tracer::find_value(const Tensor& t) const {
  auto it = values_.find(t.impl());
  if (it == values_.end() || it->second.object.lock().get() != t.impl()) return std::nullopt;
  return it->second.ref;
}

ValueRef Tracer::value_for(const Tensor& t) {
  if (auto ref = find_value(t)) return *ref;
  EMBER_CHECK(!t.is_fake()) << "a tensor made while tracing another compiled function (or an earlier call of this "
                               "one) was used here; tensors made during a trace cannot outlive it";
  // A real tensor the function reached from outside its arguments: lift it to an input.
  const Tensor fake = make_fake(meta_of(t), nullptr, &t);
  InputSource source;
  source.kind = InputSource::Kind::Bound;
  source.bound = t;
  if (auto it = slot_of_grad_.find(t.impl()); it != slot_of_grad_.end()) {
    // A gradient read from a parameter's slot: each replay reads the slot again.
    const GradGuard& g = grad_guards_[it->second];
    source.kind = InputSource::Kind::Grad;
    source.bound = g.owner;
    return add_input(t, fake, g.name, std::move(source), false);
  }
  if (auto it = module_tensors_.find(t.impl()); it != module_tensors_.end()) {
    return add_input(t, fake, it->second, std::move(source), /*attribute=*/true);
  }
  return add_input(t, fake, "_lifted_tensor_" + std::to_string(lifted_count_++), std::move(source), false);
}

namespace {

/// Why `op` breaks the graph for complex values ("" if it does not): with grad mode on,
/// a complex argument requires grad, or a complex output would (an argument requires
/// grad). AOT autograd's joint graph differentiates floating values only, so such an op
/// runs eagerly, where autograd takes complex gradients (Note [complex dtypes]).
std::string complex_gradient_reason(const ops::OpDef& op, const Stack& fake_args, const std::vector<TensorMeta>& metas) {
  if (!is_grad_enabled() || op.not_differentiable) return "";
  bool any = false, complex_any = false;
  auto see = [&](const Tensor& t) {
    if (!t.defined() || !t.requires_grad()) return;
    any = true;
    complex_any = complex_any || is_complex(t.dtype());
  };
  for (const IValue& a : fake_args) {
    if (a.is_tensor()) see(a.to_tensor());
    if (a.is_tensor_list())
      for (const Tensor& t : a.to_tensor_list()) see(t);
  }
  if (complex_any) return op.name + " reads a complex tensor that requires grad";
  if (!any) return "";
  for (const TensorMeta& m : metas)
    if (!m.undefined && is_complex(m.dtype)) return op.name + " makes a complex tensor from tensors that require grad";
  return "";
}

}  // namespace

Stack Tracer::break_for_resize(const ops::OpDef& op, Stack& args, const SourceLoc& loc) {
  const Tensor& self = args.at(0).to_tensor();
  for (const auto& handle : argument_handles_) {
    // The function's handle is not the caller's tensor (capture gives it one of its own),
    // so the caller's would keep its old size: refused rather than silently different.
    EMBER_CHECK_KIND(ErrorKind::Unsupported, handle.lock().get() != self.impl())
        << "resize_ of an argument of the compiled function " << options_.name << " at " << loc.str()
        << ": the function sees its arguments through handles of its own, so the caller's tensor would keep its "
        << "old size; resize it before the call, or resize a clone inside";
  }
  on_graph_break(BreakKind::Resize, "", loc);
  SuspendTracing real;
  return ops::redispatch(ops::DispatchLayer::Capture, op, args);
}

Stack Tracer::record(const ops::OpDef& op, Stack& args) {
  const SourceLoc loc = current_user_loc();
  // Note [resize_]: a change of a value's size in place has no node; the graph ends here.
  if (op.resizes) [[unlikely]] return break_for_resize(op, args, loc);
  // An output size computed from data: an unbacked symbol when the knob allows it
  // (capture/unbacked.h), else a break, after which the op runs for real.
  const bool data_dependent = has_data_dependent_size(op, args);
  if (data_dependent) {
    if (std::string why = why_not_unbacked(op, args); !why.empty()) {
      on_graph_break(BreakKind::DynamicShape, std::move(why), loc);
      SuspendTracing real;
      return ops::redispatch(ops::DispatchLayer::Capture, op, args);
    }
    if (!shape_env_) shape_env_ = std::make_shared<core::ShapeEnv>();
  }
  // Registry::finalize makes every functional and view op have one.
  EMBER_INTERNAL_ASSERT(op.meta || data_dependent) << op.name << " reached capture without a meta function";
  if (loc.known()) last_loc_ = loc;

  // Arguments: tensors become graph values; the meta function sees their fakes.
  std::vector<Tensor> written;
  BoundArgs bound = bind_args(
      op, args,
      [&](const Tensor& t) {
        const ValueRef ref = value_for(t);
        return std::make_pair(ref, fake_for(t, ref));
      },
      [&](const Tensor& t, const Tensor&) {
        written.push_back(t);
        if (!t.is_fake()) dirty_.insert(t.impl());
        // The write happens when the graph runs; a fake's version counter counts it now,
        // as eager's would (a real tensor's is bumped by the write itself).
        if (t.is_fake()) t.storage()->bump_version();
      });
  std::vector<Arg>& graph_args = bound.graph;
  Stack& fake_args = bound.fakes;

  const size_t breaks_before = breaks_.size();
  std::vector<TensorMeta> metas = data_dependent ? unbacked_meta(op, fake_args, *shape_env_) : op.meta(fake_args);
  if (breaks_.size() != breaks_before) {
    // The meta function read data (index.Tensor with a bool mask): that broke the graph and
    // made every fake real, and graph_args name values of the graph just flushed. The op
    // runs for real, as an op with a data-dependent shape does.
    SuspendTracing real;
    return ops::redispatch(ops::DispatchLayer::Capture, op, args);
  }
  if (std::string why = complex_gradient_reason(op, fake_args, metas); !why.empty()) {
    on_graph_break(BreakKind::ComplexGrad, std::move(why), loc);
    SuspendTracing real;
    return ops::redispatch(ops::DispatchLayer::Capture, op, args);
  }
  std::vector<Tensor> outs;
  if (metas.empty() && !written.empty()) {
    // copy_ and friends: the result is the written argument itself.
    for (const Tensor& w : written) metas.push_back(meta_of(w));
    Node* n = graph_->add_call(op, std::move(graph_args), std::move(metas), loc);
    n->set_grad_enabled(is_grad_enabled());
    Stack result;
    for (Tensor& w : written) result.emplace_back(std::move(w));
    return result;
  }
  Node* n = graph_->add_call(op, std::move(graph_args), metas, loc);
  n->set_grad_enabled(is_grad_enabled());
  EMBER_LOG(dynamo, DEBUG) << "TRACE %" << n->name() << " = " << op.name << " at " << loc.str();
  const bool view = op.kind == ops::OpKind::View;
  for (size_t k = 0; k < metas.size(); ++k) {
    if (metas[k].undefined) {  // not computed (a backward op's output_mask): None
      outs.emplace_back();
      continue;
    }
    Tensor out = make_fake(metas[k], view ? fake_args[0].to_tensor().storage() : nullptr);
    out.impl()->is_view = view;
    const ValueRef ref = n->out(static_cast<uint32_t>(k));
    values_[out.impl()] = {out.impl_ptr(), ref};
    live_.push_back({out.impl_ptr(), ref});
    outs.push_back(std::move(out));
  }
  set_traced_autograd(op, fake_args, outs);
  if (!op.schema.returns.empty() && op.schema.returns[0].type.is_list) return {IValue(std::move(outs))};
  Stack result;
  for (auto& t : outs) result.emplace_back(t.defined() ? IValue(std::move(t)) : IValue());
  return result;
}

Tensor Tracer::fake_for(const Tensor& t, ValueRef ref) const {
  if (t.is_fake()) return t;
  auto it = fake_of_input_.find(t.impl());
  if (it != fake_of_input_.end()) return it->second;
  EMBER_INTERNAL_ASSERT(false) << "no fake for the real tensor behind %" << ref.node->name();
}

void Tracer::on_data_access(const Tensor& t, const char* what, const std::source_location& loc) {
  if (!t.is_fake() && !dirty_.contains(t.impl())) return;
  if (t.is_fake()) {
    EMBER_CHECK(find_value(t).has_value())
        << what << ": this tensor was made while tracing another compiled function (or an earlier call of this "
        << "one) and has no data";
  }
  const BreakKind kind = kind_of_access(what);
  on_graph_break(kind, kind == BreakKind::AutogradState ? what : "", SourceLoc(loc));
}

void Tracer::on_outside_state(const char* what) {
  if (outside_state_.empty()) outside_state_ = what;
}

void Tracer::on_grad_read(const Tensor& owner, const Tensor& grad) {
  // Note [outside state]: a slot of a real tensor outside the arguments (a parameter,
  // reached through a module or an optimizer) is guarded and its gradient becomes a graph
  // input the replay reads from the slot again, as PyTorch makes `p.grad` an input source.
  // The slot of an argument (whose fake shares its autograd state) or of a tensor made by
  // the trace has no source an entry could name; nor has a gradient that is being traced.
  // Such reads stay outside state (the function is traced on every call).
  bool named = !owner.is_fake() && !(grad.defined() && grad.is_fake());
  for (size_t i = 0; i < input_sources_.size() && named; ++i) {
    named = input_sources_[i].kind == InputSource::Kind::Bound || !input_values_[i].is_same(owner);
  }
  if (!named) {
    on_outside_state("Tensor.grad()");
    return;
  }
  size_t index;
  if (auto it = grad_guard_of_owner_.find(owner.impl()); it != grad_guard_of_owner_.end()) {
    index = it->second;
    if (grad_guards_[index].meta.has_value() != grad.defined()) {
      // The slot changed during the call (backward() after a break): not one guard's worth.
      on_outside_state("Tensor.grad()");
      return;
    }
  } else {
    std::string name = "param_" + std::to_string(grad_guards_.size());
    if (auto m = module_tensors_.find(owner.impl()); m != module_tensors_.end()) name = m->second;
    if (auto o = optimizer_params_.find(owner.impl()); o != optimizer_params_.end()) name = o->second;
    GradGuard g{name + ".grad", owner, std::nullopt, false};
    if (grad.defined()) {
      g.meta = meta_of(grad);
      g.requires_grad = grad.requires_grad();
    }
    index = grad_guards_.size();
    grad_guards_.push_back(std::move(g));
    grad_guard_of_owner_.emplace(owner.impl(), index);
  }
  if (grad.defined()) slot_of_grad_[grad.impl()] = index;
}

void Tracer::on_attribute_read(const std::shared_ptr<const nn::AttributeCell>& cell) {
  if (!attributes_read_.insert(cell.get()).second) return;
  auto it = module_paths_.find(cell->owner());
  const std::string owner = it != module_paths_.end() ? it->second : cell->owner()->name();
  attribute_guards_.push_back(AttributeGuard{owner + "." + cell->name(), cell, cell->value()});
}

void Tracer::make_symbolic(Tensor& fake, int arg, int element) {
  if (!shape_env_) shape_env_ = std::make_shared<core::ShapeEnv>();
  // Named as the guards name the argument: `x`, or `xs[0]` for an element of a list.
  const std::string name =
      arg_name(options_.arg_names, static_cast<size_t>(arg)) + (element >= 0 ? "[" + std::to_string(element) + "]" : "");
  TensorImpl& impl = *fake.impl();
  const size_t rank = impl.sizes.size();
  core::SymGeometry g{core::to_sym(impl.sizes), {}, impl.storage_offset};
  bool any = false;
  for (const DynamicDim& d : options_.dynamic) {
    if (d.arg != arg || d.element != element || d.dim < 0 || static_cast<size_t>(d.dim) >= rank) continue;
    const size_t before = shape_env_->num_symbols();
    g.sizes[d.dim] = shape_env_->create_size(impl.sizes[d.dim], name + ".size(" + std::to_string(d.dim) + ")", d.min,
                                             d.max);
    if (shape_env_->num_symbols() > before) symbol_sources_.push_back({arg, element, d.dim});
    any = any || g.sizes[d.dim].is_symbolic();
  }
  if (!any) return;
  // A stride that equals the product of the sizes inside it (dims taken by increasing
  // stride) is that product, so a contiguous or permuted input keeps its layout at every
  // size; any other stride stays its value.
  std::vector<size_t> order(rank);
  for (size_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return impl.strides[a] < impl.strides[b]; });
  g.strides.assign(rank, 0);
  core::SymInt expected = 1;
  for (size_t d : order) {
    g.strides[d] = impl.strides[d] == expected.hint() ? expected : core::SymInt(impl.strides[d]);
    expected = g.strides[d] * g.sizes[d];
  }
  std::shared_ptr<const core::SymGeometry> geometry = core::share_geometry(std::move(g));
  impl.sym = geometry;
  dynamic_inputs_.push_back({arg, element, std::move(geometry)});
}

void Tracer::on_symbolic_read(const Tensor& t, core::SymbolicRead what) {
  const std::shared_ptr<const core::SymGeometry> g = t.impl()->sym;
  if (!g || !shape_env_) return;
  std::vector<int32_t> symbols;
  auto collect = [&](const core::SymInt& s) {
    const core::SymInt now = core::current(s);
    if (!now.is_symbolic()) return;
    for (int32_t id : core::sym::free_symbols(now.expr()))
      if (std::find(symbols.begin(), symbols.end(), id) == symbols.end()) symbols.push_back(id);
  };
  using Kind = core::SymbolicRead::Kind;
  if (what.kind == Kind::Size) {
    collect(g->sizes[static_cast<size_t>(what.dim)]);
  } else if (what.kind == Kind::Stride) {
    collect(g->strides[static_cast<size_t>(what.dim)]);
  } else {
    for (const core::SymInt& s : g->sizes) collect(s);
    for (const core::SymInt& s : g->strides) collect(s);
    collect(g->storage_offset);
  }
  if (std::any_of(symbols.begin(), symbols.end(), core::sym::is_unbacked)) {
    // A data-dependent size read as an integer has no value until the graph runs: break
    // the graph there (every fake the code holds, `t` too, becomes real), as an item() does.
    std::string names;
    for (int32_t id : symbols)
      if (core::sym::is_unbacked(id))
        names += (names.empty() ? "" : ", ") + core::sym::default_symbol_name(id) + " (" +
                 shape_env_->symbol(id).source + ")";
    on_graph_break(BreakKind::DynamicShape, "the data-dependent size " + names + " read as an integer",
                   current_user_loc());
    return;
  }
  std::string specialized;
  for (int32_t id : symbols) {
    const core::sym::Expr symbol = core::sym::Expr::symbol(id);
    if (shape_env_->simplify(symbol).is_const()) continue;  // specialized already
    const int64_t value = shape_env_->specialize(symbol);
    const core::SymbolInfo& info = shape_env_->symbol(id);
    specialized += std::string(specialized.empty() ? "" : ", ") + "s" + std::to_string(id) + " (" + info.source +
                   ") = " + std::to_string(value);
  }
  core::drop_geometry_if_static(t);
  if (specialized.empty()) return;
  const support::CallContext& c = support::call_context();
  if (c.op_stack.empty()) {
    EMBER_LOG(dynamic, INFO) << "specialized " << specialized << ": user code read the sizes as integers"
                             << (last_loc_.known() ? " at or after " + last_loc_.str() : std::string());
  } else {
    EMBER_LOG(dynamic, INFO) << "specialized " << specialized << ": " << c.op_stack.back()
                             << " reads sizes as integers (its meta function or decomposition is not written "
                                "over SymInt)"
                             << (last_loc_.known() ? " at " + last_loc_.str() : std::string());
  }
}

void Tracer::on_offset_read(const Tensor& t) {
  for (size_t i = 0; i < input_fakes_.size(); ++i) {
    const InputSource& s = input_sources_[i];
    if (s.kind != InputSource::Kind::Bound && input_fakes_[i].storage() == t.storage()) {
      offset_reads_.emplace(s.arg, s.element);
    }
  }
}

void Tracer::on_graph_break(BreakKind kind, std::string detail, SourceLoc loc) {
  if (!loc.known() || loc.line == 0 || support::is_ember_internal(loc.file.c_str())) {
    // `if (tensor)` has no line of its own: name the nearest one known.
    const bool after_op = last_loc_.known();
    loc = after_op ? last_loc_ : options_.where;
    detail += std::string(detail.empty() ? "" : "; ") +
              (after_op ? "at or after this line, the last traced op" : "in the function compiled here") +
              (kind == BreakKind::TensorBool
                   ? ": C++ gives `if (tensor)` no line of its own; tensor.is_nonzero() names its line"
                   : "");
  }
  GraphBreak b{kind, std::move(detail), std::move(loc)};
  EMBER_CHECK_KIND(ErrorKind::Unsupported, !options_.fullgraph)
      << "graph break in a function compiled with fullgraph=true: " << b.reason() << ", at " << b.loc.str()
      << " (hint: " << b.hint() << ")"
      << (config().dynamo.verbose ? "" : "\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace.");
  if (options_.report_breaks) {
    EMBER_LOG(dynamo, WARNING) << "Graph break in " << options_.name << ": " << b.reason() << "\n  from user code at "
                               << b.loc.str() << "\n  hint: " << b.hint();
  }
  EMBER_LOG_ARTIFACT(graph_breaks) << "Graph break: " << b.reason() << " from user code at " << b.loc.str();
  if (options_.report_breaks && has_observers()) {
    notify({CompileEvent::Kind::GraphBreak, options_.name, SourceLoc(), b.reason() + " at " + b.loc.str(), {}, 0});
  }
  breaks_.push_back(b);

  // Every fake the user code may still hold becomes real.
  std::vector<ValueRef> outputs;
  std::vector<std::shared_ptr<TensorImpl>> fakes;
  for (const Live& l : live_) {
    if (auto f = l.fake.lock(); f && f->is_fake) {
      outputs.push_back(l.value);
      fakes.push_back(std::move(f));
    }
  }
  std::vector<Tensor> real = flush(outputs);
  for (size_t i = 0; i < fakes.size(); ++i) materialize(*fakes[i], real[i]);
  for (size_t i = 0; i < input_fakes_.size(); ++i) {
    if (!input_fakes_[i].is_fake()) continue;
    // The user's handle and the real input now share one autograd state, so that autograd
    // changes made after the break (requires_grad_, hooks) reach the real tensor, as they
    // would eagerly.
    autograd::ensure_meta(input_values_[i]);
    materialize(*input_fakes_[i].impl(), input_values_[i]);
  }
  start_segment();
}

std::vector<Tensor> Tracer::flush(const std::vector<ValueRef>& outputs) {
  graph_->set_output(outputs);
  graph_->eliminate_dead_code();
  SuspendTracing real;
  // The graph holds the casts autocast made while tracing: it runs (and compiles) without
  // autocast, as PyTorch runs compiled code.
  ops::ExcludeLayerGuard no_autocast(ops::DispatchLayer::Autocast);
  std::vector<Tensor> results;
  if (graph_->op_count() == 0) {
    results = run_graph(*graph_, input_values_);
  } else {
    graphs_.push_back(graph_);
    last_compiled_ = compile_(graph_, input_values_);
    ran_segment_ = true;
    results = timed_run("", "first run", [&] { return last_compiled_(input_values_); });
  }
  EMBER_INTERNAL_ASSERT(results.size() == outputs.size())
      << "the backend returned " << results.size() << " values for a graph with " << outputs.size() << " outputs";
  return results;
}

void Tracer::materialize(TensorImpl& fake, const Tensor& real) {
  const TensorImpl& r = *real.impl();
  fake.storage = r.storage;
  fake.sizes = r.sizes;
  fake.strides = r.strides;
  fake.storage_offset = r.storage_offset;
  fake.dtype = r.dtype;
  fake.device = r.device;
  fake.is_view = r.is_view;
  fake.view_base = r.view_base;
  fake.autograd_meta = r.autograd_meta;
  fake.sym = nullptr;
  fake.is_fake = false;
  fake.refresh();
}

std::vector<IValue> Tracer::run(const std::vector<CallArg>& args, const Invoker& invoke) {
  start_segment();
  argument_handles_.clear();
  std::vector<CallArg> fakes = args;
  std::unordered_map<const TensorImpl*, Tensor> fake_of_arg;
  auto fake_arg = [&](const Tensor& real, const std::string& name, InputSource source) -> Tensor {
    if (auto it = fake_of_arg.find(real.impl()); it != fake_of_arg.end()) return it->second;
    Tensor fake = make_fake(meta_of(real), nullptr, &real);
    if (!options_.dynamic.empty()) make_symbolic(fake, source.arg, source.element);
    argument_handles_.push_back(fake.impl_ptr());
    add_input(real, fake, name, std::move(source), false);
    fake_of_arg.emplace(real.impl(), fake);
    return fake;
  };
  size_t module_args = 0;
  for (const CallArg& a : args) module_args += std::holds_alternative<nn::Module*>(a);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string name = arg_name(options_.arg_names, i);
    const int arg = static_cast<int>(i);
    if (const auto* t = std::get_if<Tensor>(&args[i])) {
      fakes[i] = fake_arg(*t, name, InputSource{InputSource::Kind::Arg, arg, -1, {}});
    } else if (const auto* list = std::get_if<std::vector<Tensor>>(&args[i])) {
      std::vector<Tensor> fl;
      for (size_t k = 0; k < list->size(); ++k) {
        fl.push_back(fake_arg((*list)[k], name + "_" + std::to_string(k),
                              InputSource{InputSource::Kind::ArgElement, arg, static_cast<int>(k), {}}));
      }
      fakes[i] = std::move(fl);
    } else if (const auto* m = std::get_if<nn::Module*>(&args[i])) {
      const std::string prefix = module_args > 1 ? name + "." : "";
      for (auto& [n, t] : (*m)->named_parameters()) module_tensors_[t.impl()] = prefix + n;
      for (auto& [n, t] : (*m)->named_buffers()) module_tensors_[t.impl()] = prefix + n;
      for (auto& [path, sub] : (*m)->named_modules()) module_paths_[sub] = path.empty() ? name : name + "." + path;
    } else if (const auto* o = std::get_if<optim::Optimizer*>(&args[i])) {
      const std::vector<Tensor>& params = (*o)->params();
      for (size_t k = 0; k < params.size(); ++k) optimizer_params_[params[k].impl()] = name + ".param_" + std::to_string(k);
    }
  }

  std::vector<IValue> fake_results;
  {
    previous_ = t_current;
    t_current = this;
    ++g_traces_running;
    struct Restore {
      Tracer* self;
      ~Restore() {
        t_current = self->previous_;
        --g_traces_running;
      }
    } restore{this};
    // Casts made under autocast are recorded, never cached (Note [autocast]).
    ops::AutocastCacheDisabled no_cast_cache;
    fake_results = invoke(fakes);
  }

  // The last segment: its outputs are the function's tensor results.
  std::vector<ValueRef> outputs;
  output_slots_.clear();
  for (const IValue& r : fake_results) {
    OutputSlot slot;
    if (r.is_tensor() && r.to_tensor().defined()) {
      slot.kind = OutputSlot::Kind::Tensor;
      slot.outputs.push_back(outputs.size());
      outputs.push_back(value_for(r.to_tensor()));
    } else if (r.is_tensor_list()) {
      slot.kind = OutputSlot::Kind::TensorList;
      for (const Tensor& t : r.to_tensor_list()) {
        slot.outputs.push_back(outputs.size());
        outputs.push_back(value_for(t));
      }
    } else {
      slot.kind = OutputSlot::Kind::Constant;
      slot.constant = r;
    }
    output_slots_.push_back(std::move(slot));
  }
  fake_results.clear();  // what is still alive now is held outside the function
  const auto escaped = collect_escaped(outputs);
  std::vector<Tensor> real = flush(outputs);
  for (const auto& [fake, index] : escaped) materialize(*fake, real[index]);
  escaped_ = escaped.size();
  if (breaks_.empty()) {
    final_graph_ = graph_;
    final_compiled_ = graph_->op_count() == 0 ? CompiledGraph(eager_backend(*graph_)) : last_compiled_;
    final_sources_ = input_sources_;
  }
  for (size_t i = 0; i < input_fakes_.size(); ++i) {
    if (input_fakes_[i].is_fake()) materialize(*input_fakes_[i].impl(), input_values_[i]);
  }
  return assemble_results(output_slots_, real);
}

std::vector<std::pair<std::shared_ptr<TensorImpl>, size_t>> Tracer::collect_escaped(std::vector<ValueRef>& outputs) {
  // Note [escaping tensors]: a fake that outlives the function was stored outside it (a
  // static module's parameters, an optimizer's state, a tensor pushed into an outer
  // vector or assigned to a captured variable). As TorchDynamo does for objects a frame
  // creates and leaks, it becomes real: the graph computes its value and the fake turns
  // into that tensor in place, so every handle to it sees eager's values.
  std::vector<std::pair<std::shared_ptr<TensorImpl>, size_t>> escaped;
  for (const Live& l : live_) {
    std::shared_ptr<TensorImpl> f = l.fake.lock();
    if (!f || !f->is_fake) continue;
    size_t index = 0;
    while (index < outputs.size() && !(outputs[index] == l.value)) ++index;
    if (index == outputs.size()) outputs.push_back(l.value);
    escaped.emplace_back(std::move(f), index);
  }
  if (!escaped.empty()) {
    EMBER_LOG(dynamo, DEBUG) << options_.name << ": " << escaped.size()
                             << " tensor(s) made while tracing are held outside the function; they are made real";
  }
  return escaped;
}

std::vector<IValue> assemble_results(const std::vector<OutputSlot>& slots, const std::vector<Tensor>& outputs) {
  std::vector<IValue> results;
  results.reserve(slots.size());
  for (const OutputSlot& s : slots) {
    switch (s.kind) {
      case OutputSlot::Kind::Tensor: results.emplace_back(outputs[s.outputs[0]]); break;
      case OutputSlot::Kind::TensorList: {
        std::vector<Tensor> list;
        for (size_t i : s.outputs) list.push_back(outputs[i]);
        results.emplace_back(std::move(list));
        break;
      }
      case OutputSlot::Kind::Constant: results.push_back(s.constant); break;
    }
  }
  return results;
}

}  // namespace ember::capture
