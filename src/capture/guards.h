// capture/guards.h — the conditions under which a cache entry's compiled artifact may run
// in place of the user function (docs/design.md, "Capture"): tensor sizes, strides, dtype,
// device and requires_grad (the storage offset only where the traced code read it);
// scalar values; list lengths; module identity, tensors and training flags; grad mode;
// the autocast state;
// aliasing between arguments; values declared with guard_on(); module attributes
// (nn::Attribute) the trace read. See Note [capture], "Guards".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ember/compile.h"
#include "ops/autocast.h"

namespace ember::capture {

/// A value read through guard_on(): where it lives and what it was when traced.
struct UserGuard {
  std::string name;
  std::variant<const int64_t*, const double*, const bool*, const std::string*> where;
  IValue expected;
  SourceLoc loc;
};

/// A module attribute (nn::Attribute) read while tracing: its value cell (kept alive by
/// the guard) and the value read. See Note [module attributes].
struct AttributeGuard {
  std::string name;  // "model.ln.eps" for a module argument's, else "LayerNorm.eps"
  std::shared_ptr<const nn::AttributeCell> cell;
  IValue expected;
};

/// A gradient slot the trace read (Tensor::grad() of a tensor reached outside the
/// arguments: a parameter an optimizer updates). The gradient is a graph input read from
/// the slot at each replay, so the guard is what the compiled code depends on: whether the
/// slot holds a gradient, and its dtype, device, sizes, strides and requires_grad. See
/// Note [outside state].
struct GradGuard {
  std::string name;  // "fc1.weight.grad"
  Tensor owner;      // the tensor whose slot was read (kept alive, as a lifted input is)
  std::optional<TensorMeta> meta;  // nullopt: the slot was empty
  bool requires_grad = false;
};

/// A tensor argument traced with symbolic geometry: its sizes and strides over the
/// symbols (a stride that was the product of the sizes after it is that product). See
/// Note [dynamic shapes].
struct DynamicInput {
  int arg = 0;
  int element = -1;  // index in a std::vector<Tensor> argument, or -1
  std::shared_ptr<const core::SymGeometry> geometry;
};

/// Where the value of a size symbol is read on each call: size `dim` of a tensor argument.
struct SymbolSource {
  int arg = 0;
  int element = -1;
  int64_t dim = 0;
};

/// A size of a tensor argument that differs from the one an entry was traced with
/// (automatic dynamic shapes).
struct SizeChange {
  int arg = 0;
  int element = -1;
  int64_t dim = 0;
  std::string name;  // "x", "xs[1]"
  int64_t before = 0;
  int64_t after = 0;
};

/// The gradient held by `owner`'s slot, read without telling capture (replay and guards).
Tensor grad_slot(const Tensor& owner);

class GuardSet {
 public:
  /// Guards on every argument of a call as it is now, and on the thread's grad mode and
  /// autocast state.
  static GuardSet for_call(const std::vector<CallArg>& args, const std::vector<std::string>& arg_names);
  void add_user_guard(UserGuard g) { user_.push_back(std::move(g)); }
  /// Also guards the storage offset of tensor argument `arg` (element `element` of a
  /// tensor list, or -1): the traced code read it.
  void guard_storage_offset(int arg, int element);
  void add_attribute_guard(AttributeGuard g) { attributes_.push_back(std::move(g)); }
  void add_grad_guard(GradGuard g) { grads_.push_back(std::move(g)); }
  /// The guards of a trace with dynamic sizes: the sizes that `inputs` made symbolic are
  /// checked through `env` (each symbol's range and every guard the trace recorded, over
  /// the values read from `sources`, symbol by symbol) instead of by value, and the
  /// strides by their expressions.
  void set_shape_env(std::shared_ptr<const core::ShapeEnv> env, const std::vector<SymbolSource>& sources,
                     const std::vector<DynamicInput>& inputs);
  const core::ShapeEnv* shape_env() const { return shape_env_.get(); }
  /// When `args` fail these guards only because static sizes of tensor arguments changed
  /// (every other guard, dtype, rank and symbolic relation passing): those sizes. Empty
  /// otherwise.
  std::vector<SizeChange> size_changes(const std::vector<CallArg>& args) const;

  /// Whether `args` (and the current state) pass every guard. No lock; no allocation
  /// except for guard_on strings.
  bool check(const std::vector<CallArg>& args) const;
  /// The first guard that fails, as PyTorch words it ("tensor 'x' size mismatch at index 0.
  /// expected 4, actual 8"), or nullopt when all pass.
  std::optional<std::string> first_failure(const std::vector<CallArg>& args) const;
  /// Every guard that fails, one line each (TORCH_LOGS=recompiles_verbose).
  std::vector<std::string> all_failures(const std::vector<CallArg>& args) const;
  /// When the first failure is a number argument's value, what that means and what to do
  /// instead; nullopt otherwise.
  std::optional<std::string> value_change_hint(const std::vector<CallArg>& args) const;
  /// One line per guard, for explain() and the guards log.
  std::vector<std::string> describe() const;

 private:
  struct TensorGuard {
    int arg = 0;
    int element = -1;  // index in a std::vector<Tensor> argument, or -1
    std::string name;
    TensorMeta meta;
    bool requires_grad = false;
    bool check_offset = false;  // the traced code read the storage offset
    int same_as = -1;  // index (into tensors_) of an earlier tensor guard with the same TensorImpl
    /// Traced with symbolic sizes: the symbolic dims and strides are checked through the
    /// shape environment; the plain ones by value.
    std::shared_ptr<const core::SymGeometry> sym;
  };
  struct ValueGuard {  // a number argument, or the length of a tensor list
    int arg = 0;
    std::string name;
    IValue expected;
    bool is_length = false;
    std::optional<std::vector<double>> doubles;  // a std::vector<double> argument
  };
  struct ModuleGuard {
    int arg = 0;
    std::string name;
    const nn::Module* module = nullptr;
    std::vector<std::pair<std::string, const TensorImpl*>> tensors;  // parameters then buffers
    std::vector<std::pair<std::string, bool>> training;              // per submodule
  };

  struct OptimizerGuard {  // an optimizer argument: the same object with the same parameters
    int arg = 0;
    std::string name;
    const optim::Optimizer* optimizer = nullptr;
    std::vector<const TensorImpl*> params;
  };
  /// The first tensor guard on the same TensorImpl as tensor guard i (itself when none).
  size_t root(size_t i) const { return tensors_[i].same_as >= 0 ? static_cast<size_t>(tensors_[i].same_as) : i; }
  const Tensor* tensor_of(const std::vector<CallArg>& args, const TensorGuard& g) const;
  std::optional<std::string> fail_tensor(const std::vector<CallArg>& args, const TensorGuard& g) const;
  std::optional<std::string> fail_value(const std::vector<CallArg>& args, const ValueGuard& g) const;
  std::optional<std::string> fail_module(const std::vector<CallArg>& args, const ModuleGuard& g) const;
  static std::optional<std::string> fail_optimizer(const std::vector<CallArg>& args, const OptimizerGuard& g);
  std::optional<std::string> fail_user(const UserGuard& g) const;
  static std::optional<std::string> fail_attribute(const AttributeGuard& g);
  static std::optional<std::string> fail_grad(const GradGuard& g);
  std::optional<std::string> autocast_failure() const;
  /// Reads each symbol's value from `args` into `values` (ranks already checked) and
  /// checks the shape environment and the symbolic strides. Allocates nothing for up to
  /// kInlineSymbols symbols.
  bool check_shapes(const std::vector<CallArg>& args) const;
  std::optional<std::string> shape_failure(const std::vector<CallArg>& args) const;
  std::vector<int64_t> symbol_values(const std::vector<CallArg>& args) const;
  /// Whether the guards after the tensors' (values, modules, optimizers, guard_on,
  /// attributes, gradient slots) pass. No allocation unless one fails.
  bool others_pass(const std::vector<CallArg>& args) const;
  /// Whether any guard other than the tensors' geometry fails.
  bool other_guard_fails(const std::vector<CallArg>& args) const;
  static constexpr size_t kInlineSymbols = 16;

  std::vector<TensorGuard> tensors_;
  std::vector<ValueGuard> values_;
  std::vector<ModuleGuard> modules_;
  std::vector<OptimizerGuard> optimizers_;
  std::vector<UserGuard> user_;
  std::vector<AttributeGuard> attributes_;
  std::vector<GradGuard> grads_;
  std::shared_ptr<const core::ShapeEnv> shape_env_;
  /// Per symbol: the tensor guard (index into tensors_) and dim its value is read from.
  std::vector<std::pair<size_t, int64_t>> symbol_reads_;
  bool grad_enabled_ = true;
  ops::AutocastState autocast_;  // the casts the graph holds depend on it
};

/// "arg0", … unless the user named the arguments.
std::string arg_name(const std::vector<std::string>& names, size_t i);

}  // namespace ember::capture
