// ember/nn/module.h — nn::Module, the base of every layer, as torch.nn.Module: named
// parameters, buffers and children, recursive dotted names, train/eval, state_dict and
// safetensors checkpoints. Design: docs/notes/nn.md.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/attribute.h"
#include "ember/tensor.h"

namespace ember::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Registers `value` as a parameter (requires_grad set unless `requires_grad` is false).
  /// The returned reference stays valid for the module's life.
  Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  /// Recursive, in registration order, with dotted names ("0.weight", "ln.bias").
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// Direct children in registration order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  /// This module ("") and every descendant with its dotted name (not owning: valid while
  /// this module lives; works for modules not held by a shared_ptr too).
  std::vector<std::pair<std::string, Module*>> named_modules();

  /// Sets training mode on this module and every descendant.
  virtual void train(bool mode = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Converts floating parameters and buffers to `dtype` in place (keeps requires_grad).
  void to(ScalarType dtype);
  /// Moves every parameter (with its gradient) and buffer to `device` in place, keeping
  /// requires_grad, as torch.nn.Module.to(device).
  void to(Device device);
  /// Drops every parameter's gradient (set_to_none, PyTorch 2's default) or zeroes it.
  void zero_grad(bool set_to_none = true);

  /// Parameters and buffers under PyTorch's key names, detached (sharing storage).
  std::map<std::string, Tensor> state_dict() const;
  /// Copies values into this module's tensors. With strict, missing and unexpected keys
  /// are errors; size mismatches always are. All problems are listed in one Error.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);
  void save(const std::string& path) const;
  void load(const std::string& path, bool strict = true);

  /// This module's own parameter or buffer `name` (raises if absent). Layers read their
  /// tensors through it, so to(dtype) and load_state_dict are seen at once.
  Tensor& tensor(const std::string& name);
  const Tensor& tensor(const std::string& name) const;

  /// Visits this module and every descendant (pre-order, registration order, as
  /// named_modules) without building names: on_module(m), then on_tensor(t) for each of m's
  /// own parameters and then buffers. Capture's guards use it on every call.
  template <typename OnModule, typename OnTensor>
  void visit(OnModule&& on_module, OnTensor&& on_tensor) const {
    on_module(*this);
    for (const auto& p : params_) on_tensor(p.second);
    for (const auto& b : buffers_) on_tensor(b.second);
    for (const auto& c : children_) c.second->visit(on_module, on_tensor);
  }

  /// The layer's name for printing ("Linear").
  virtual std::string name() const { return "Module"; }

 protected:
  /// An Attribute, so a compiled function that reads it (is_training()) is guarded on it.
  Attribute<bool> training_{this, "training", true};

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, bool recurse, bool buffers,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_slots(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out);

  // Deques keep registration order (PyTorch's OrderedDict) and references stable; names
  // are few, so lookup is linear.
  std::deque<std::pair<std::string, Tensor>> params_;
  std::deque<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

/// A module with a single-tensor forward; operator() calls forward. Call a module as
/// `m(x)`, as in PyTorch: errors and graph breaks inside it then name your line (a
/// direct `m.forward(x)` has no line of its own to give them).
class UnaryModule : public Module {
 public:
  virtual Tensor forward(const Tensor& input) = 0;
  Tensor operator()(const Tensor& input, Loc loc = Loc::current());
};

}  // namespace ember::nn
