// autograd/layer.cpp — the Autograd dispatch layer. When grad mode is on and a tensor
// argument requires grad, it runs the op below, saves the op's inputs and outputs, and
// makes a FormulaNode (the op's registered derivative) the grad_fn of the outputs.
// In-place ops arrive here as copy_ (functionalized at dispatch), whose formula node
// becomes the new history of the written tensor, or, for a view, of its base through
// CopySlices (view_history.cpp). See Note [autograd].
#include <mutex>

#include "autograd/autograd_meta.h"
#include "ops/autocast.h"
#include "ops/dispatch.h"

namespace ember::autograd {
namespace {

/// Dtypes whose values carry gradients: floating and complex (Note [complex dtypes]).
bool is_differentiable_type(ScalarType t) { return is_floating_point(t) || is_complex(t); }

struct Geometry {
  std::vector<int64_t> sizes;
  ScalarType dtype = kFloat;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  Device device;
};

Geometry geometry_of(const Tensor& t) {
  return t.defined() ? Geometry{t.sizes().vec(), t.dtype(), t.strides().vec(), t.storage_offset(), t.device()}
                     : Geometry{};
}

/// The tensor inputs ("slots") of a call, in the order derivative formulas return
/// gradients for them: Tensor and Tensor? arguments (None -> nullptr), then each element
/// of a Tensor[] / Tensor?[] argument, in schema order.
std::vector<const Tensor*> tensor_slots(const ops::OpDef& op, const Stack& args) {
  std::vector<const Tensor*> slots;
  for (size_t i = 0; i < args.size() && i < op.schema.arguments.size(); ++i) {
    const ops::ArgType& type = op.schema.arguments[i].type;
    if (type.base != ops::BaseType::Tensor) continue;
    const IValue& a = args[i];
    if (!type.is_list) {
      slots.push_back(a.is_tensor() ? &a.to_tensor() : nullptr);
    } else if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) slots.push_back(&t);
    } else if (!a.is_none()) {
      for (const auto& t : a.to_optional_tensor_list()) slots.push_back(t ? &*t : nullptr);
    }
  }
  return slots;
}

std::string producer_of(const Tensor& t) {
  const AutogradMeta* m = meta_of(t);
  return m && m->grad_fn ? m->grad_fn->name() : std::string();
}
uint32_t output_nr_of(const Tensor& t) {
  const AutogradMeta* m = meta_of(t);
  return m ? m->output_nr : 0;
}

/// One saved argument: a non-tensor value as is, tensors as SavedVariables.
struct SavedArg {
  IValue value;  // non-tensor arguments (and None)
  std::vector<SavedVariable> tensors;
  std::vector<Geometry> geometry;
  enum Kind { kValue, kTensor, kTensorList, kOptionalTensorList } kind = kValue;
  std::vector<bool> present;  // kOptionalTensorList: which elements are not None
};

class FormulaNode final : public Node {
 public:
  FormulaNode(const ops::OpDef& op, std::vector<SavedArg> args, uint32_t num_outputs)
      : Node(num_outputs), op_(op), args_(std::move(args)) {}

  std::string name() const override { return op_.backward_name; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_variables() override {
    for (auto& a : args_)
      for (auto& s : a.tensors) s.reset();
    for (auto& s : outputs_) s.reset();
  }

  const ops::OpDef& op_;
  std::vector<SavedArg> args_;
  std::vector<SavedVariable> outputs_;
  std::vector<Geometry> output_geometry_;
  std::vector<Geometry> slot_geometry_;
};

class Context final : public ops::DerivativeContext {
 public:
  Context(const FormulaNode& node, const std::vector<Tensor>& grads)
      : node_(node), grads_(grads), args_(node.args_.size()), outputs_(node.outputs_.size()) {}

  const IValue& arg(size_t i) const override {
    const SavedArg& a = node_.args_.at(i);
    if (a.kind == SavedArg::kValue) return a.value;
    if (!args_[i]) {
      switch (a.kind) {
        case SavedArg::kTensor:
          args_[i] = IValue(a.tensors[0].unpack());
          break;
        case SavedArg::kTensorList: {
          std::vector<Tensor> list;
          for (const auto& s : a.tensors) list.push_back(s.unpack());
          args_[i] = IValue(std::move(list));
          break;
        }
        default: {
          std::vector<std::optional<Tensor>> list;
          size_t k = 0;
          for (bool p : a.present) list.push_back(p ? std::optional<Tensor>(a.tensors[k++].unpack()) : std::nullopt);
          args_[i] = IValue(std::move(list));
        }
      }
    }
    return *args_[i];
  }
  IntArrayRef arg_sizes(size_t i) const override { return node_.args_.at(i).geometry.at(0).sizes; }
  ScalarType arg_dtype(size_t i) const override { return node_.args_.at(i).geometry.at(0).dtype; }
  IntArrayRef arg_strides(size_t i) const override { return node_.args_.at(i).geometry.at(0).strides; }
  int64_t arg_storage_offset(size_t i) const override { return node_.args_.at(i).geometry.at(0).storage_offset; }
  const Tensor& output(size_t i) const override {
    if (!outputs_.at(i)) outputs_[i] = node_.outputs_[i].unpack();
    return *outputs_[i];
  }
  IntArrayRef output_sizes(size_t i) const override { return node_.output_geometry_.at(i).sizes; }
  ScalarType output_dtype(size_t i) const override { return node_.output_geometry_.at(i).dtype; }
  Device output_device(size_t i) const override { return node_.output_geometry_.at(i).device; }
  size_t num_outputs() const override { return node_.outputs_.size(); }
  const Tensor& grad(size_t i) const override { return grads_.at(i); }
  bool needs_grad(size_t slot) const override { return node_.next_edges_.at(slot).is_valid(); }

 private:
  const FormulaNode& node_;
  const std::vector<Tensor>& grads_;
  mutable std::vector<std::optional<IValue>> args_;
  mutable std::vector<std::optional<Tensor>> outputs_;
};

std::vector<Tensor> FormulaNode::apply(std::vector<Tensor>&& grads) {
  std::vector<Tensor> result(next_edges_.size());
  if (std::none_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined(); })) return result;
  Context ctx(*this, grads);
  std::vector<Tensor> formula = op_.derivative(ctx);
  EMBER_INTERNAL_ASSERT(formula.size() == next_edges_.size())
      << op_.name << ": the derivative returned " << formula.size() << " gradients for " << next_edges_.size()
      << " tensor inputs";
  for (size_t i = 0; i < formula.size(); ++i) {
    if (!next_edges_[i].is_valid() || !formula[i].defined()) continue;
    Tensor g = std::move(formula[i]);
    const Geometry& want = slot_geometry_[i];
    if (g.sizes() != IntArrayRef(want.sizes)) g = ops::sum_to(g, want.sizes);
    if (g.dtype() != want.dtype) g = g.to(want.dtype);
    result[i] = std::move(g);
  }
  return result;
}

bool is_inplace_leaf(const Tensor& t) {
  const AutogradMeta* m = meta_of(t);
  return m && m->requires_grad && !m->grad_fn;
}

std::vector<Tensor> flatten_outputs(const Stack& out) {
  std::vector<Tensor> flat;
  for (const IValue& v : out) {
    if (v.is_tensor()) flat.push_back(v.to_tensor());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list()) flat.push_back(t);
  }
  return flat;
}

[[noreturn]] void no_derivative(const ops::OpDef& op) {
  EMBER_FAIL_KIND(ErrorKind::NotImplementedError)
      << "the derivative for '" << op.name << "' is not implemented; its inputs require grad (wrap the call in "
      << "ember::NoGradGuard, or detach() the inputs, if no gradient is needed through it)";
}

Stack autograd_layer(const ops::OpDef& op, Stack& args) {
  using ops::DispatchLayer;
  // Note [resize_]: refused for a tensor that requires grad in any grad mode, as PyTorch.
  if (op.resizes) [[unlikely]] {
    EMBER_CHECK(!requires_grad(args[0].to_tensor())) << "cannot resize variables that require grad";
  }
  if (!is_grad_enabled() || op.not_differentiable) return ops::redispatch(DispatchLayer::Autograd, op, args);
  const std::vector<const Tensor*> slots = tensor_slots(op, args);
  bool any = false;
  for (const Tensor* t : slots) any = any || (t && requires_grad(*t));
  if (!any) return ops::redispatch(DispatchLayer::Autograd, op, args);

  // Writes into existing tensors (copy_, fill_): the written tensor gets a new history;
  // a write into a view rebases the view's base (CopySlices).
  const bool writes_output = !op.schema.returns.empty() && op.schema.returns[0].is_write;
  Tensor written_view;
  if (writes_output) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (!op.schema.arguments[i].is_write || !args[i].is_tensor()) continue;
      const Tensor& w = args[i].to_tensor();
      EMBER_CHECK(!is_inplace_leaf(w)) << "a leaf Variable that requires grad is being used in an in-place operation.";
      if (w.impl()->view_base) {
        EMBER_CHECK(!is_inplace_leaf(Tensor(w.impl()->view_base)))
            << "a view of a leaf Variable that requires grad is being used in an in-place operation.";
        written_view = w;
      }
    }
  }
  if (!op.derivative) {
    // Ops whose outputs cannot carry gradients (comparisons, argmax, …) need no formula.
    bool differentiable = true;
    if (op.meta) {
      differentiable = false;
      for (const auto& m : op.meta(args)) differentiable = differentiable || is_differentiable_type(m.dtype);
    }
    if (differentiable) no_derivative(op);
    Stack out = ops::redispatch(DispatchLayer::Autograd, op, args);
    for (const Tensor& t : flatten_outputs(out))
      if (is_differentiable_type(t.dtype())) no_derivative(op);
    return out;
  }

  std::vector<Edge> edges;
  std::vector<Geometry> slot_geometry;
  for (const Tensor* t : slots) {
    edges.push_back(t && requires_grad(*t) ? gradient_edge(*t) : Edge{});
    slot_geometry.push_back(t ? geometry_of(*t) : Geometry{});
  }
  std::vector<SavedArg> saved(args.size());
  auto is_written = [&](size_t i) { return i < op.schema.arguments.size() && op.schema.arguments[i].is_write; };
  auto save_arg = [&](size_t i) {
    const IValue& a = args[i];
    SavedArg& s = saved[i];
    auto save = [&](const Tensor& t) {
      const Storage* target = ops::inplace_target();
      if (target && t.defined() && t.storage().get() == target && !is_written(i)) {
        // The functional op of an in-place op: copy_ is about to overwrite this value.
        Tensor snapshot;
        {
          NoGradGuard no_grad;
          snapshot = t.clone();
        }
        s.tensors.emplace_back(snapshot, producer_of(t), output_nr_of(t));
      } else {
        s.tensors.emplace_back(t, producer_of(t), output_nr_of(t));
      }
      s.geometry.push_back(geometry_of(t));
    };
    if (a.is_tensor()) {
      s.kind = SavedArg::kTensor;
      save(a.to_tensor());
    } else if (a.is_tensor_list()) {
      s.kind = SavedArg::kTensorList;
      for (const Tensor& t : a.to_tensor_list()) save(t);
    } else if (std::holds_alternative<std::vector<std::optional<Tensor>>>(a.variant())) {
      s.kind = SavedArg::kOptionalTensorList;
      for (const auto& t : a.to_optional_tensor_list()) {
        s.present.push_back(t.has_value());
        if (t) save(*t);
      }
    } else {
      s.value = a;
    }
  };
  // An argument the op writes (copy_'s self, batch norm's running statistics) is saved as
  // the op leaves it: the write bumps its version, and a formula that reads it (batch
  // norm in evaluation, whose statistics the op leaves unchanged) must see that version.
  for (size_t i = 0; i < args.size(); ++i)
    if (!is_written(i)) save_arg(i);

  Stack out = ops::redispatch(DispatchLayer::Autograd, op, args);
  for (size_t i = 0; i < args.size(); ++i)
    if (is_written(i)) save_arg(i);
  std::vector<Tensor> outs = flatten_outputs(out);
  auto node = std::make_shared<FormulaNode>(op, std::move(saved), static_cast<uint32_t>(outs.size()));
  node->next_edges_ = std::move(edges);
  node->slot_geometry_ = std::move(slot_geometry);

  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i];
    node->outputs_.emplace_back(t, op.backward_name, static_cast<uint32_t>(i));
    node->output_geometry_.push_back(geometry_of(t));
  }
  if (written_view.defined()) {
    // (an integral view, written from a floating value, carries no gradient)
    if (is_differentiable_type(written_view.dtype())) rebase_view_history(written_view, node);
    return out;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i];
    if (!is_differentiable_type(t.dtype())) continue;
    AutogradMeta& m = ensure_meta(t);  // for copy_/fill_ this is self's meta: its history is rebased
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    // A view's history goes stale when its base is later written in place: remember the
    // base's grad_fn now (refresh_view_history compares).
    if (op.kind == ops::OpKind::View && t.impl()->view_base) {
      const auto* bm = static_cast<const AutogradMeta*>(t.impl()->view_base->autograd_meta.get());
      m.view_base_fn = bm ? bm->grad_fn : nullptr;
    }
  }
  return out;
}

}  // namespace

void install_autograd_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::set_layer_handler(ops::DispatchLayer::Autograd, &autograd_layer);
    // Autocast caches the casts of weights: float32 leaves that require grad (Note [autocast]).
    ops::set_autocast_leaf_test([](const Tensor& t) { return requires_grad(t) && t.is_leaf(); });
  });
}

}  // namespace ember::autograd
