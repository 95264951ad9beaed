// autograd/view_history.cpp — in-place writes into views (PyTorch's CopySlices) and the
// regeneration of views' histories after their base changed (AsStridedBackward0 nodes).
// Views know their base through TensorImpl::view_base, set by the dispatcher for every
// view op, so views taken before anything required grad are covered too. See Note
// [autograd], "In-place ops".
#include "autograd/autograd_meta.h"
#include "ember/ops/creation.h"
#include "ember/ops/view.h"
#include "ops/registry.h"

namespace ember::autograd {
namespace {

/// Where a tensor's elements lie in its storage.
struct StridedGeometry {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  explicit StridedGeometry(const Tensor& t)
      : sizes(t.sizes().vec()), strides(t.strides().vec()), offset(t.storage_offset()) {}
};

/// The history of a view of `base`: the view's gradient, placed where the view's elements
/// lie in the base (summed where they repeat), becomes the base's gradient.
class AsStridedViewNode final : public Node {
 public:
  AsStridedViewNode(StridedGeometry base, StridedGeometry view)
      : Node(1), base_(std::move(base)), view_(std::move(view)) {}
  std::string name() const override { return "AsStridedBackward0"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const Tensor& g = grads.at(0);
    if (!g.defined()) return {Tensor()};
    return {ops::as_strided_backward(g, base_.sizes, base_.strides, base_.offset, view_.sizes, view_.strides,
                                     view_.offset)};
  }

 private:
  StridedGeometry base_, view_;
};

/// The base's history after an in-place write into one of its views: `fn` is the write's
/// node (input 0: the view's old value; the others: the written values). The base's
/// gradient goes to its old history with the view's region replaced by fn's gradient for
/// the view's old value (zero for a copy or fill); fn's other gradients go to the written
/// values. next_edges_: the base's old edge, then fn's edges 1…
class CopySlices final : public Node {
 public:
  CopySlices(StridedGeometry base, StridedGeometry view, std::shared_ptr<Node> fn)
      : Node(1), base_(std::move(base)), view_(std::move(view)), fn_(std::move(fn)) {}
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    std::vector<Tensor> out(next_edges_.size());
    const Tensor& g = grads.at(0);
    if (!g.defined()) return out;
    // The gradient laid out as the base is, so the view's geometry finds its region.
    Tensor result = empty_strided(base_.sizes, base_.strides, g.dtype());
    result.copy_(g);
    Tensor region = result.as_strided(view_.sizes, view_.strides, view_.offset - base_.offset);
    std::vector<Tensor> res = fn_->apply({region.clone()});
    if (res.at(0).defined()) {
      region.copy_(res[0]);
    } else {
      region.fill_(0);  // the view's old value did not need a gradient; a write's is zero anyway
    }
    out[0] = std::move(result);
    for (size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = std::move(res[i]);
    return out;
  }

 private:
  StridedGeometry base_, view_;
  std::shared_ptr<Node> fn_;
};

const AutogradMeta* meta_of_impl(const TensorImpl& impl) {
  return static_cast<const AutogradMeta*>(impl.autograd_meta.get());
}

}  // namespace

void refresh_view_history(const Tensor& t) {
  if (!t.defined() || !t.impl()->view_base) return;
  const std::shared_ptr<TensorImpl>& base_impl = t.impl()->view_base;
  const AutogradMeta* bm = meta_of_impl(*base_impl);
  const std::shared_ptr<Node> now = bm ? bm->grad_fn : nullptr;
  AutogradMeta* m = meta_of(t);
  const std::shared_ptr<Node> recorded = m ? m->view_base_fn.lock() : nullptr;
  if (now == recorded) return;
  const Tensor base(base_impl);
  const Edge edge = gradient_edge(base);  // the base is no view: no recursion
  AutogradMeta& tm = ensure_meta(t);
  tm.view_base_fn = now;
  if (!edge.is_valid()) return;
  auto node = std::make_shared<AsStridedViewNode>(StridedGeometry(base), StridedGeometry(t));
  node->next_edges_ = {edge};
  tm.grad_fn = std::move(node);
  tm.output_nr = 0;
}

void rebase_view_history(const Tensor& view, std::shared_ptr<Node> fn) {
  const Tensor base(view.impl()->view_base);
  const Edge old_edge = gradient_edge(base);
  auto copy_slices = std::make_shared<CopySlices>(StridedGeometry(base), StridedGeometry(view), fn);
  copy_slices->next_edges_.push_back(old_edge);
  for (size_t i = 1; i < fn->next_edges().size(); ++i) copy_slices->next_edges_.push_back(fn->next_edges()[i]);
  AutogradMeta& bm = ensure_meta(base);
  bm.grad_fn = copy_slices;
  bm.output_nr = 0;

  auto view_node = std::make_shared<AsStridedViewNode>(StridedGeometry(base), StridedGeometry(view));
  view_node->next_edges_ = {Edge{copy_slices, 0}};
  AutogradMeta& vm = ensure_meta(view);
  vm.grad_fn = std::move(view_node);
  vm.output_nr = 0;
  vm.view_base_fn = copy_slices;
}

}  // namespace ember::autograd
