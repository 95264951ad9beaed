// autograd/tensor_autograd.cpp — Tensor's autograd methods (declared in ember/tensor.h).
//
// The Autograd dispatch layer is installed by requires_grad_(true): a static initializer
// in a static library runs only if its object file happens to be linked, while every
// tensor that requires grad is either made so by requires_grad_ (a leaf) or produced by
// the layer itself (a non-leaf), so the layer is always in place before it has work.
#include <atomic>

#include "autograd/autograd_meta.h"
#include "core/fake.h"
#include "ops/dispatch.h"

namespace ember {

using autograd::AutogradMeta;
using autograd::ensure_meta;
using autograd::meta_of;

namespace {
std::atomic<unsigned> g_next_hook_id{1};
}  // namespace

const Tensor& Tensor::requires_grad_(bool requires_grad, Loc loc) const {
  EMBER_CHECK(defined()) << "requires_grad_: tensor is undefined";
  AutogradMeta* m = meta_of(*this);
  if (m && m->grad_fn) {
    EMBER_CHECK(requires_grad)
        << "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
           "subgraph that doesn't require differentiation use var_no_grad = var.detach().";
    return *this;
  }
  EMBER_CHECK(!requires_grad || is_floating_point() || ::ember::is_complex(dtype()))
      << "only Tensors of floating point and complex dtype can require gradients";
  if (is_fake() && requires_grad != autograd::requires_grad(*this)) {
    // A traced tensor becomes (or stops being) a leaf of the autograd graph: the ops
    // recorded so far must not see the new flag, and those after it must, so the graph
    // ends here (a graph break makes the tensor real) and the flag is set on real data.
    require_data("Tensor.requires_grad_()", loc);
    m = meta_of(*this);
  }
  if (requires_grad) autograd::install_autograd_layer();
  if (requires_grad || m) ensure_meta(*this).requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const { return autograd::requires_grad(*this); }

Tensor Tensor::grad() const {
  // The slot may hold another tensor on the next call (backward after zero_grad makes a
  // new one): a traced function reads it as a graph input that each replay reads from the
  // slot again, guarded (Note [outside state]).
  const AutogradMeta* m = meta_of(*this);
  Tensor g = m ? m->grad : Tensor();
  core::note_grad_read(*this, g);
  return g;
}

Tensor& Tensor::mutable_grad() const {
  core::note_outside_state("Tensor.mutable_grad()");
  return ensure_meta(*this).grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  autograd::refresh_view_history(*this);
  const AutogradMeta* m = meta_of(*this);
  return m ? m->grad_fn : nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = meta_of(*this);
  return m ? m->output_nr : 0;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

void Tensor::retain_grad(Loc loc) const {
  EMBER_CHECK(requires_grad()) << "can't retain_grad on Tensor that has requires_grad=False";
  if (is_leaf()) return;  // leaves keep their gradient anyway
  // The gradient is kept by the real tensor's grad_fn, which a traced tensor does not
  // have yet: a graph break makes it real first.
  if (is_fake()) {
    require_data("Tensor.retain_grad()", loc);
    if (is_leaf()) return;
  }
  AutogradMeta& m = ensure_meta(*this);
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->retained_.emplace_back(m.output_nr, impl_ptr());
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = meta_of(*this);
  return m && m->retains_grad;
}

Tensor Tensor::detach(Loc loc) const {
  if (!defined()) return *this;
  static const ops::OpDef& detach_op = ops::registry().get("aten::detach");
  return ops::call_tensor(detach_op, {*this}, loc);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, Loc loc) const {
  std::vector<Tensor> grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, retain_graph, loc);
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook, Loc loc) const {
  EMBER_CHECK(requires_grad()) << "cannot register a hook on a tensor that doesn't require gradient";
  // The hook belongs on the real tensor's grad_fn or leaf: a graph break makes it real.
  if (is_fake()) require_data("Tensor.register_hook()", loc);
  const unsigned id = g_next_hook_id.fetch_add(1);
  AutogradMeta& m = ensure_meta(*this);
  if (m.grad_fn) {
    m.grad_fn->pre_hooks_.push_back({m.output_nr, {id, std::move(hook)}});
  } else {
    m.hooks.emplace_back(id, std::move(hook));
  }
  return id;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* m = meta_of(*this);
  if (!m) return;
  std::erase_if(m->hooks, [&](const auto& h) { return h.first == handle; });
  if (m->grad_fn) std::erase_if(m->grad_fn->pre_hooks_, [&](const auto& h) { return h.second.first == handle; });
}

}  // namespace ember
