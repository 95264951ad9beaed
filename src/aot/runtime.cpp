// aot/runtime.cpp — runs a partitioned training graph: the compiled forward under
// no_grad, its outputs given one grad_fn (CompiledFunctionBackward, as PyTorch names it)
// that holds the saved values as SavedVariables (version check, freed after backward
// unless retain_graph) and runs the compiled backward, compiled on its first call (a code
// generator may start on it ahead, while the forward compiles). A graph over size symbols
// runs at each call's sizes: its backward reads them from the saved tensors' and tangents'
// sizes (Note [backward symbols] in partition.cpp). Contract in aot/joint.h;
// see Note [aot], "The runtime".
#include <mutex>

#include "aot/aot.h"
#include "aot/joint.h"
#include "autograd/autograd_meta.h"
#include "capture/events.h"
#include "capture/repro_hooks.h"
#include "core/sym_geometry.h"
#include "ember/autograd.h"
#include "ember/ops/creation.h"
#include "graph/interpreter.h"
#include "support/logging.h"

namespace ember::aot {
namespace {

/// The role of `p`'s backward graph: every output held (gradients), its inputs the
/// forward's saved outputs, then saved inputs, then the tangents.
GraphRole backward_role(const Partition& p, int aot_id) {
  GraphRole role{GraphRole::Kind::Backward, aot_id};
  role.first_held_output = 0;
  role.saved_forward_outputs = p.saved_outputs;
  role.first_tangent = p.saved_outputs + p.saved_inputs.size();
  return role;
}

struct TrainingState {
  std::shared_ptr<Partition> partition;
  std::vector<int> tangent_of_output;
  std::vector<int> grad_of_input;
  size_t num_forward_outputs = 0;
  std::vector<TensorMeta> tangent_meta;  // zeros for a tangent no gradient reached
  bool symbolic_tangents = false;         // a tangent's sizes are over size symbols
  CompiledGraph forward;
  Backend inner;
  std::string inner_name;
  int aot_id = -1;
  std::string function;  // the compiled function's name, for compile_times()
  std::mutex backward_mu;
  CompiledGraph backward;  // compiled on the first backward call
};

class CompiledFunctionBackward final : public autograd::Node {
 public:
  /// `symbols`: the forward call's symbol values (graph::symbol_values), when a tangent's
  /// sizes are over symbols: a tangent no gradient reached is zeros of this call's sizes.
  CompiledFunctionBackward(std::shared_ptr<TrainingState> state, std::vector<autograd::SavedVariable> saved,
                           std::vector<int64_t> symbols)
      : Node(static_cast<uint32_t>(state->tangent_meta.size())),
        state_(std::move(state)),
        saved_(std::move(saved)),
        symbols_(std::move(symbols)) {}

  std::string name() const override { return "CompiledFunctionBackward"; }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    std::vector<Tensor> inputs;
    inputs.reserve(saved_.size() + grads.size());
    for (const autograd::SavedVariable& s : saved_) inputs.push_back(s.unpack());
    for (size_t t = 0; t < grads.size(); ++t) {
      if (grads[t].defined()) {
        // Note [contiguous tangents]: the joint graph traced each tangent contiguous, and
        // the backward graph's views of it (the expand in sum's formula) record the
        // strides that layout gives; a gradient of another layout (an expanded scalar from
        // `.sum().backward()`, strides all 0) is made contiguous here, as AOTAutograd's
        // runtime does, so the compiled backward reads it at the traced strides.
        inputs.push_back(grads[t].is_contiguous() ? grads[t] : grads[t].contiguous());
      } else {
        const TensorMeta& m = state_->tangent_meta[t];
        std::vector<int64_t> sizes = m.sizes;
        if (m.sym) {
          for (size_t d = 0; d < sizes.size(); ++d)
            sizes[d] = core::sym::evaluate(core::current(m.sym->sizes[d]).expr(), symbols_);
        }
        inputs.push_back(zeros(sizes, TensorOptions(m.dtype)));
      }
    }
    CompiledGraph backward;
    bool compiled_now = false;
    {
      std::lock_guard lock(state_->backward_mu);
      if (!state_->backward) {
        EMBER_LOG(aot, INFO) << "aot: compiling the backward graph " << state_->partition->backward->name();
        capture::PhaseTimer timer(state_->function, "backward compile (first backward call)");
        GraphRoleScope role(backward_role(*state_->partition, state_->aot_id));
        state_->backward =
            capture::compile_with_repro(*state_->partition->backward, inputs, state_->inner, state_->inner_name, "aot");
        compiled_now = true;
      }
      backward = state_->backward;
    }
    NoGradGuard no_grad;
    std::vector<Tensor> out = compiled_now ? capture::timed_run(state_->function, "first backward run",
                                                                [&] { return backward(inputs); })
                                           : backward(inputs);
    EMBER_INTERNAL_ASSERT(out.size() == next_edges_.size())
        << "CompiledFunctionBackward: the backward graph returned " << out.size() << " gradients for "
        << next_edges_.size() << " inputs";
    return out;
  }

  void release_variables() override {
    for (auto& s : saved_) s.reset();
  }

 private:
  std::shared_ptr<TrainingState> state_;
  std::vector<autograd::SavedVariable> saved_;
  std::vector<int64_t> symbols_;
};

std::string producer_of(const Tensor& t) {
  const autograd::AutogradMeta* m = autograd::meta_of(t);
  return m && m->grad_fn ? m->grad_fn->name() : std::string();
}

}  // namespace

CompiledGraph make_training_function(std::shared_ptr<Partition> p, const JointGraph& joint,
                                     const std::vector<Tensor>& example_inputs, const Backend& inner,
                                     const std::string& inner_name, int aot_id, const CompileAhead& ahead) {
  auto state = std::make_shared<TrainingState>();
  state->partition = p;
  state->tangent_of_output = joint.tangent_of_output;
  state->grad_of_input = joint.grad_of_input;
  state->num_forward_outputs = joint.num_forward_outputs;
  const std::vector<Node*> bw_inputs = p->backward->inputs();
  const size_t first_tangent = p->saved_outputs + p->saved_inputs.size();
  for (size_t t = first_tangent; t < bw_inputs.size(); ++t) {
    state->tangent_meta.push_back(bw_inputs[t]->meta()[0]);
    state->symbolic_tangents = state->symbolic_tangents || state->tangent_meta.back().sym != nullptr;
  }
  state->inner = inner;
  state->inner_name = inner_name;
  state->aot_id = aot_id;
  state->function = capture::current_compile_function();
  if (state->function.empty()) state->function = capture::kNoFunction;
  if (ahead) {
    GraphRoleScope role(backward_role(*p, aot_id));
    ahead(*p->backward);
  }
  {
    NoGradGuard no_grad;
    GraphRole forward_role{GraphRole::Kind::Forward, aot_id};
    forward_role.first_held_output = joint.num_forward_outputs;
    GraphRoleScope role(forward_role);
    state->forward = capture::compile_with_repro(*p->forward, example_inputs, inner, inner_name, "aot");
  }
  return [state](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
    std::vector<Tensor> outs;
    {
      NoGradGuard no_grad;
      outs = state->forward(inputs);
    }
    const Partition& p = *state->partition;
    std::vector<autograd::SavedVariable> saved;
    saved.reserve(p.saved_outputs + p.saved_inputs.size());
    for (size_t i = 0; i < p.saved_outputs; ++i) {
      const size_t at = state->num_forward_outputs + i;
      saved.emplace_back(outs[at], "CompiledFunctionBackward", static_cast<uint32_t>(at));
    }
    for (size_t i : p.saved_inputs) {
      const autograd::AutogradMeta* m = autograd::meta_of(inputs[i]);
      saved.emplace_back(inputs[i], producer_of(inputs[i]), m ? m->output_nr : 0);
    }
    outs.resize(state->num_forward_outputs);
    std::vector<int64_t> symbols;
    if (state->symbolic_tangents) symbols = graph::symbol_values(*p.forward, inputs);
    auto node = std::make_shared<CompiledFunctionBackward>(state, std::move(saved), std::move(symbols));
    node->next_edges_.resize(
        std::count_if(state->grad_of_input.begin(), state->grad_of_input.end(), [](int g) { return g >= 0; }));
    for (size_t i = 0; i < state->grad_of_input.size(); ++i) {
      const int g = state->grad_of_input[i];
      if (g >= 0 && autograd::requires_grad(inputs[i])) node->next_edges_[g] = autograd::gradient_edge(inputs[i]);
    }
    std::vector<bool> given(node->num_inputs(), false);
    for (size_t o = 0; o < outs.size(); ++o) {
      const int t = state->tangent_of_output[o];
      if (t < 0 || given[t] || !outs[o].defined()) continue;
      given[t] = true;
      autograd::AutogradMeta& m = autograd::ensure_meta(outs[o]);
      m.grad_fn = node;
      m.output_nr = static_cast<uint32_t>(t);
    }
    return outs;
  };
}

}  // namespace ember::aot
