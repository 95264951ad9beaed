// debug/gradients.cpp — the training check of the accuracy tools (PyTorch's
// run_fwd_maybe_bwd): a function of a graph's inputs, some of which require grad, run
// forward and then backward from fixed output gradients, giving its outputs followed by
// the gradients of those inputs; eager, compiled and float64 runs are compared with same().
// See Note [minifier] (docs/notes/minifier.md), "Training graphs".
#include "debug/repro.h"
#include "ember/debug.h"
#include "ember/ember.h"
#include "support/logging.h"

namespace ember::debug {
namespace {

/// The gradient fed to output `k`: multiples of 1/4 in [-1.25, 1.25] (exact in every
/// floating type, so float32 and float64 runs start from the same values), varied so that
/// a wrong element or a transposed gradient shows.
Tensor output_gradient(const Tensor& out, size_t k) {
  std::vector<double> v(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int64_t>((i * 7 + k * 3) % 11) - 5) / 4;
  return tensor(v).reshape(out.sizes()).to(out.dtype());
}

}  // namespace

bool needs_gradients(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor input_copy(const Tensor& value, const TensorMeta& m) {
  Tensor c;
  {
    NoGradGuard no_grad;  // the copy into the new storage records no history
    c = with_geometry(value.detach(), m);
  }
  if (value.requires_grad() && c.is_floating_point()) c.requires_grad_(true);
  return c;
}

std::vector<Tensor> run_forward_backward(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                         const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  {
    EnableGradGuard grad_on;
    outputs = fn(inputs);
  }
  std::vector<Tensor> differentiable, seeds, wrt;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].defined() || !outputs[k].requires_grad()) continue;
    differentiable.push_back(outputs[k]);
    seeds.push_back(output_gradient(outputs[k], k));
  }
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) wrt.push_back(t);
  std::vector<Tensor> grads(wrt.size());
  if (!differentiable.empty()) grads = autograd::grad(differentiable, wrt, seeds, /*retain_graph=*/false, /*allow_unused=*/true);
  NoGradGuard no_grad;
  std::vector<Tensor> results;
  for (const Tensor& o : outputs) results.push_back(o.defined() ? o.detach() : o);
  // An input no gradient reaches gets zeros, in eager and compiled runs alike.
  for (size_t i = 0; i < wrt.size(); ++i) results.push_back(grads[i].defined() ? grads[i] : zeros_like(wrt[i]));
  return results;
}

std::vector<Tensor> run_graph_with_gradients(const Graph& g, const std::vector<Tensor>& inputs) {
  return run_forward_backward([&](const std::vector<Tensor>& in) { return run_graph(g, in); }, inputs);
}

std::optional<std::vector<Tensor>> run_graph_fp64_with_gradients(const Graph& g, const std::vector<Tensor>& inputs) {
  auto g64 = g.clone();
  for (const auto& [name, value] : g.constants())
    if (value.defined() && value.is_floating_point()) g64->set_constant(name, value.to(kDouble));
  std::vector<Tensor> wide;
  {
    NoGradGuard no_grad;
    for (const Tensor& t : inputs) {
      if (!t.defined() || !t.is_floating_point()) {
        wide.push_back(t);
        continue;
      }
      Tensor w = t.detach().to(kDouble);
      if (t.requires_grad()) w.requires_grad_(true);
      wide.push_back(w);
    }
  }
  try {
    return run_graph_with_gradients(*g64, wide);
  } catch (const Error& e) {
    EMBER_LOG(dynamo, INFO) << "could not run graph " << g.name() << " forward and backward in float64 (the accuracy "
                            << "check compares with eager alone): " << e.message();
    return std::nullopt;
  }
}

std::string gradient_named(const std::string& why, const Graph& g, const std::vector<Tensor>& inputs) {
  const std::string head = "output ";
  if (why.rfind(head, 0) != 0) return why;
  const size_t colon = why.find(':');
  size_t k = 0;
  try {
    k = std::stoul(why.substr(head.size(), colon - head.size()));
  } catch (const std::logic_error&) {
    return why;
  }
  const size_t n_out = g.outputs().size();
  if (k < n_out) return why;
  const std::vector<Node*> ins = g.inputs();
  size_t seen = 0;
  for (size_t i = 0; i < inputs.size() && i < ins.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    if (seen++ == k - n_out)
      return "gradient of input %" + ins[i]->name() + " (input " + std::to_string(i) + ")" + why.substr(colon);
  }
  return why;
}

}  // namespace ember::debug
