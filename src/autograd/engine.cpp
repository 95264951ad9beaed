// autograd/engine.cpp — the backward engine: counts how many edges lead into each node,
// then runs nodes whose inputs are complete (latest-created first, as PyTorch's CPU
// queue does), summing gradients that meet at a node. Also backward() and grad().
#include <algorithm>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "autograd/autograd_meta.h"
#include "ops/dispatch.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "support/call_context.h"

namespace ember::autograd {
namespace {

void accumulate(Tensor& slot, Tensor g) {
  if (!g.defined()) return;
  slot = slot.defined() ? slot + g : std::move(g);
}

struct LaterFirst {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

std::string size_str(const Tensor& t) {
  std::ostringstream os;
  os << "torch.Size(" << t.sizes() << ")";
  return os.str();
}

/// Validates the roots and makes their seed gradients.
std::vector<Edge> make_roots(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
                             std::vector<Tensor>& seeds) {
  EMBER_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size())
      << "got " << grad_tensors.size() << " gradients for " << tensors.size() << " tensors";
  std::vector<Edge> roots;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t.defined()) << "element " << i << " of tensors is undefined";
    EMBER_CHECK(requires_grad(t)) << "element " << i << " of tensors does not require grad and does not have a grad_fn";
    Tensor g = grad_tensors.empty() ? Tensor() : grad_tensors[i];
    if (g.defined()) {
      EMBER_CHECK(g.sizes() == t.sizes()) << "Mismatch in shape: grad_output[" << i << "] has a shape of "
                                          << size_str(g) << " and output[" << i << "] has a shape of " << size_str(t)
                                          << ".";
    } else {
      EMBER_CHECK(t.numel() == 1) << "grad can be implicitly created only for scalar outputs";
      g = ones_like(t);
    }
    roots.push_back(gradient_edge(t));
    seeds.push_back(std::move(g));
  }
  return roots;
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Edge>& roots, const std::vector<Tensor>& grads, bool retain_graph,
                                 const std::vector<Edge>& capture) {
  NoGradGuard no_grad;  // backward itself is not recorded (no create_graph yet)

  // 1. Dependencies: how many edges lead into each node reachable from the roots.
  std::unordered_map<Node*, int> deps;
  std::vector<std::shared_ptr<Node>> order;  // every reachable node, in discovery order
  std::unordered_set<Node*> seen;
  for (const Edge& e : roots) {
    if (seen.insert(e.function.get()).second) order.push_back(e.function);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Edge& e : order[i]->next_edges_) {
      if (!e.is_valid()) continue;
      ++deps[e.function.get()];
      if (seen.insert(e.function.get()).second) order.push_back(e.function);
    }
  }

  // 2. For grad(): run only the nodes from which a captured edge is reachable below them.
  const bool capturing = !capture.empty();
  std::unordered_set<Node*> targets, reaches, must_run;
  if (capturing) {
    for (const Edge& e : capture)
      if (e.is_valid()) targets.insert(e.function.get());
    // Reverse topological order (Kahn's over a copy of deps), children before parents.
    std::unordered_map<Node*, int> pending = deps;
    std::vector<Node*> topo;
    for (const auto& n : order)
      if (!pending.count(n.get())) topo.push_back(n.get());
    for (size_t i = 0; i < topo.size(); ++i) {
      for (const Edge& e : topo[i]->next_edges_)
        if (e.is_valid() && --pending[e.function.get()] == 0) topo.push_back(e.function.get());
    }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Node* n = *it;
      bool below = false;
      for (const Edge& e : n->next_edges_) below = below || (e.is_valid() && reaches.count(e.function.get()));
      if (below) must_run.insert(n);
      if (below || targets.count(n)) reaches.insert(n);
    }
  }

  // 3. Seed the input buffers and run nodes as they become ready.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto buffer_of = [&](Node* n) -> std::vector<Tensor>& {
    auto& b = buffers[n];
    if (b.empty()) b.resize(n->num_inputs());
    return b;
  };
  for (size_t i = 0; i < roots.size(); ++i) accumulate(buffer_of(roots[i].function.get())[roots[i].input_nr], grads[i]);

  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, LaterFirst> ready;
  std::unordered_set<Node*> queued;
  for (const Edge& e : roots) {
    if (!deps.count(e.function.get()) && queued.insert(e.function.get()).second) ready.push(e.function);
  }
  std::vector<Tensor> captured(capture.size());

  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    std::vector<Tensor> inputs = std::move(buffer_of(node.get()));
    buffers.erase(node.get());

    for (auto& [input_nr, hook] : node->pre_hooks_) {
      if (!inputs[input_nr].defined()) continue;
      Tensor r = hook.second(inputs[input_nr]);
      if (r.defined()) inputs[input_nr] = r;
    }
    for (auto& [input_nr, weak] : node->retained_) {
      std::shared_ptr<TensorImpl> impl = weak.lock();
      if (!impl || !inputs[input_nr].defined()) continue;
      AutogradMeta& m = ensure_meta(Tensor(impl));
      m.grad = m.grad.defined() ? m.grad + inputs[input_nr] : inputs[input_nr].clone();
    }
    if (capturing) {
      for (size_t i = 0; i < capture.size(); ++i) {
        if (capture[i].function.get() != node.get()) continue;
        Tensor g = inputs[capture[i].input_nr];
        if (auto* acc = dynamic_cast<AccumulateGrad*>(node.get())) {
          // A leaf's hooks see its gradient in grad() as they do in backward().
          if (const AutogradMeta* m = meta_of(acc->variable()))
            for (const auto& [id, hook] : m->hooks)
              if (g.defined()) {
                Tensor r = hook(g);
                if (r.defined()) g = r;
              }
        }
        captured[i] = g;
      }
      if (!must_run.count(node.get())) continue;
    }

    std::vector<Tensor> outputs = node->apply(std::move(inputs));
    if (!retain_graph) node->release_variables();
    EMBER_INTERNAL_ASSERT(outputs.size() == node->next_edges_.size() || node->next_edges_.empty())
        << node->name() << " returned " << outputs.size() << " gradients for " << node->next_edges_.size() << " inputs";
    for (size_t i = 0; i < node->next_edges_.size(); ++i) {
      const Edge& e = node->next_edges_[i];
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      accumulate(buffer_of(next)[e.input_nr], std::move(outputs[i]));
      if (--deps[next] == 0 && queued.insert(next).second) ready.push(e.function);
    }
  }
  return captured;
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors, bool retain_graph,
              Loc loc) {
  support::UserLocScope scope(loc);
  // Called inside a compiled function, backward() is a graph break: the tensors are real
  // by now, and the backward pass runs eagerly, outside the trace.
  for (const Tensor& t : tensors) t.require_data("Tensor.backward()", loc);
  for (const Tensor& t : grad_tensors) t.require_data("Tensor.backward()", loc);
  ops::ExcludeLayerGuard eager(ops::DispatchLayer::Capture);
  // The backward pass undoes the forward's casts and runs each derivative in the dtypes
  // its forward ran in, inside an autocast scope or not (Note [autocast]).
  ops::ExcludeLayerGuard no_autocast(ops::DispatchLayer::Autocast);
  std::vector<Tensor> seeds;
  std::vector<Edge> roots;
  {
    NoGradGuard no_grad;
    roots = make_roots(tensors, grad_tensors, seeds);
  }
  run_backward(roots, seeds, retain_graph, {});
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool allow_unused, Loc loc) {
  support::UserLocScope scope(loc);
  for (const Tensor& t : outputs) t.require_data("Tensor.backward()", loc);
  for (const Tensor& t : grad_outputs) t.require_data("Tensor.backward()", loc);
  ops::ExcludeLayerGuard eager(ops::DispatchLayer::Capture);
  // The backward pass undoes the forward's casts and runs each derivative in the dtypes
  // its forward ran in, inside an autocast scope or not (Note [autocast]).
  ops::ExcludeLayerGuard no_autocast(ops::DispatchLayer::Autocast);
  std::vector<Tensor> seeds;
  std::vector<Edge> roots, capture;
  {
    NoGradGuard no_grad;
    roots = make_roots(outputs, grad_outputs, seeds);
  }
  EMBER_CHECK(!inputs.empty()) << "grad requires at least one input";
  for (const Tensor& in : inputs) {
    EMBER_CHECK(in.defined() && requires_grad(in)) << "One of the differentiated Tensors does not require grad";
    capture.push_back(gradient_edge(in));
  }
  std::vector<Tensor> result = run_backward(roots, seeds, retain_graph, capture);
  for (const Tensor& g : result) {
    EMBER_CHECK(allow_unused || g.defined())
        << "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if "
           "this is the desired behavior.";
  }
  return result;
}

}  // namespace ember::autograd
