// autograd/autograd_meta.cpp — grad mode, per-tensor autograd state, saved tensors
// (with their version check) and the leaf node AccumulateGrad.
#include "autograd/autograd_meta.h"

#include <atomic>
#include <sstream>

#include "core/shape.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/view.h"

namespace ember {

namespace {
thread_local bool t_grad_enabled = true;
}  // namespace

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

namespace autograd {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}  // namespace

Node::Node(uint32_t num_inputs) : num_inputs_(num_inputs), sequence_nr_(g_next_sequence_nr.fetch_add(1)) {}

AutogradMeta* meta_of(const Tensor& t) {
  if (!t.defined()) return nullptr;
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta.get());
}

AutogradMeta& ensure_meta(const Tensor& t) {
  auto& slot = t.impl()->autograd_meta;
  if (!slot) slot = std::make_shared<AutogradMeta>();
  return static_cast<AutogradMeta&>(*slot);
}

bool requires_grad(const Tensor& t) {
  refresh_view_history(t);
  const AutogradMeta* m = meta_of(t);
  return m && (m->requires_grad || m->grad_fn);
}

Edge gradient_edge(const Tensor& t) {
  refresh_view_history(t);
  AutogradMeta* m = meta_of(t);
  if (!m) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(Tensor(t.impl_ptr()));
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

Tensor alias_without_grad(const Tensor& t) {
  if (!t.defined()) return t;
  auto impl = std::make_shared<TensorImpl>();
  const TensorImpl& src = *t.impl();
  impl->storage = src.storage;
  impl->sizes = src.sizes;
  impl->strides = src.strides;
  impl->storage_offset = src.storage_offset;
  impl->dtype = src.dtype;
  impl->device = src.device;
  impl->numel = src.numel;
  impl->is_contiguous = src.is_contiguous;
  impl->is_view = src.is_view;
  return Tensor(std::move(impl));
}

std::string tensor_type_name(const Tensor& t) {
  switch (t.dtype()) {
    case kFloat: return "torch.FloatTensor";
    case kDouble: return "torch.DoubleTensor";
    case kHalf: return "torch.HalfTensor";
    case kBFloat16: return "torch.BFloat16Tensor";
    case kLong: return "torch.LongTensor";
    case kInt: return "torch.IntTensor";
    case kInt16: return "torch.ShortTensor";
    case kInt8: return "torch.CharTensor";
    case kUInt8: return "torch.ByteTensor";
    case kBool: return "torch.BoolTensor";
    case kComplexFloat: return "torch.ComplexFloatTensor";
    case kComplexDouble: return "torch.ComplexDoubleTensor";
  }
  return "torch." + std::string(scalar_type_name(t.dtype())) + "Tensor";
}

// --- SavedVariable -------------------------------------------------------------------

SavedVariable::SavedVariable(const Tensor& t, std::string producer, uint32_t output_nr)
    : data_(alias_without_grad(t)),
      version_(t.defined() ? t._version() : 0),
      producer_(std::move(producer)),
      output_nr_(output_nr),
      defined_(t.defined()) {}

void SavedVariable::reset() { data_ = Tensor(); }

Tensor SavedVariable::unpack() const {
  if (!defined_) return Tensor();
  EMBER_CHECK(data_.defined())
      << "Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
         "you need to access saved tensors after calling backward.";
  if (data_._version() != version_) {
    std::ostringstream msg;
    msg << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
        << tensor_type_name(data_) << " " << data_.sizes() << "]";
    if (!producer_.empty()) msg << ", which is output " << output_nr_ << " of " << producer_ << ",";
    msg << " is at version " << data_._version() << "; expected version " << version_ << " instead.";
    EMBER_FAIL() << msg.str();
  }
  return data_;
}

// --- AccumulateGrad ------------------------------------------------------------------

namespace {

/// Whether `g` is a view whose base nothing else holds: the base's handle lives only in
/// g's view_base and the buffer only in the two of them. Derivative formulas end in such
/// views (a weight gradient reshaped back, a bias gradient summed to [1, 1, n] and viewed
/// as [n]), and so do compiled backward graphs whose output is a view of a kernel's buffer.
bool sole_view_of_dead_base(const TensorImpl& impl) {
  if (!impl.is_view || !impl.view_base || impl.view_base.use_count() != 1) return false;
  const TensorImpl& base = *impl.view_base;
  return base.storage == impl.storage && !base.view_base && !base.autograd_meta && impl.storage.use_count() == 2;
}

/// Whether `g` may become a leaf's .grad without a copy: no other handle, view or base
/// shares its TensorImpl or its buffer (a view counts when its base is otherwise dead),
/// it carries no autograd state, and its buffer is exactly its elements in a dense
/// layout — the layout clone() would give it, so taking it changes nothing a caller can
/// observe but the copy.
bool owned_alone(const Tensor& g) {
  const TensorImpl& impl = *g.impl();
  if (g.impl_ptr().use_count() != 1 || !impl.storage) return false;
  if (impl.is_view ? !sole_view_of_dead_base(impl) : impl.view_base || impl.storage.use_count() != 1) return false;
  if (impl.is_fake || impl.autograd_meta || impl.storage_offset != 0) return false;
  if (!core::is_non_overlapping_and_dense(impl.sizes, impl.strides)) return false;
  return impl.storage->nbytes() == static_cast<size_t>(impl.numel) * element_size(impl.dtype);
}

/// Takes `g` (owned_alone) as a plain tensor: a view of a dead base stops being a view, so
/// the stolen .grad has no _base, as the copy it replaces would not.
Tensor steal(Tensor g) {
  TensorImpl& impl = *g.impl();
  impl.is_view = false;
  impl.view_base.reset();
  return g;
}

/// PyTorch's obeys_layout_contract: a leaf's .grad has the leaf's strides (on every dim
/// larger than 1) when the leaf is non-overlapping and dense, and is contiguous otherwise.
bool obeys_layout_contract(const Tensor& g, const Tensor& variable) {
  if (!core::is_non_overlapping_and_dense(variable.sizes(), variable.strides())) return g.is_contiguous();
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (g.size(d) != 1 ? g.stride(d) != variable.stride(d) : g.stride(d) == 0) return false;
  }
  return true;
}

/// PyTorch's clone_obey_contract: a copy of `g` laid out as the contract asks.
Tensor clone_obey_contract(const Tensor& g, const Tensor& variable) {
  if (!core::is_non_overlapping_and_dense(variable.sizes(), variable.strides())) {
    Tensor c = contiguous(g);
    return c.is_same(g) ? g.clone() : c;
  }
  Tensor copy = empty_strided(variable.sizes(), variable.strides(), TensorOptions(g.dtype()).device(g.device()));
  copy.copy_(g);
  return copy;
}

}  // namespace

AccumulateGrad::AccumulateGrad(Tensor variable) : Node(1), variable_(std::move(variable)) {
  // Leaves run as soon as they are ready, as in PyTorch, so .grad fills early.
  sequence_nr_ = UINT64_MAX;
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  AutogradMeta& m = ensure_meta(variable_);
  for (const auto& [id, hook] : m.hooks) {
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  if (!m.grad.defined()) {
    // The first gradient: taken as it is when nothing else can see it and it has the
    // leaf's layout (PyTorch's AccumulateGrad steals it too), otherwise a copy in the
    // leaf's layout — it may alias a user's tensor, be an expanded (stride-0) view, or
    // come channels_last from a convolution (Note [channels_last convolution]).
    m.grad = owned_alone(g) && obeys_layout_contract(g, variable_) ? steal(std::move(g)) : clone_obey_contract(g, variable_);
  } else {
    m.grad.add_(g);
  }
  return {};
}

}  // namespace autograd
}  // namespace ember
