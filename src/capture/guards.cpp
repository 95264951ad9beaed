// capture/guards.cpp — building, checking and explaining guards (guards.h).
#include "capture/guards.h"

#include <cmath>
#include <sstream>

#include "autograd/autograd_meta.h"
#include "ember/autograd.h"
#include "ember/optim.h"
#include "graph/text.h"

namespace ember::capture {
namespace {

bool same_doubles(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  }
  return true;
}

bool same_value(const IValue& a, const IValue& b) {
  if (a.is_double() && b.is_double()) {
    const double x = a.to_double(), y = b.to_double();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  if (a.is_int() && b.is_int()) return a.to_int() == b.to_int();
  if (a.is_bool() && b.is_bool()) return a.to_bool() == b.to_bool();
  if (a.is_string() && b.is_string()) return a.to_string_ref() == b.to_string_ref();
  if (a.is_int_list() && b.is_int_list()) return a.to_int_list() == b.to_int_list();
  if (a.is_double_list() && b.is_double_list()) return a.to_double_list() == b.to_double_list();
  return false;
}

IValue value_of_arg(const CallArg& a) {
  if (const auto* i = std::get_if<int64_t>(&a)) return *i;
  if (const auto* l = std::get_if<std::vector<int64_t>>(&a)) return *l;
  if (const auto* d = std::get_if<double>(&a)) return *d;
  if (const auto* b = std::get_if<bool>(&a)) return *b;
  return IValue();
}

std::string show(const IValue& v) {
  if (v.is_double()) return graph_text::format_literal(v);  // 1.0, not 1: a float guard reads as one
  std::ostringstream os;
  if (v.is_bool()) {
    os << (v.to_bool() ? "True" : "False");
  } else if (v.is_string()) {
    os << '"' << v.to_string_ref() << '"';
  } else {
    os << v;
  }
  return os.str();
}

/// How `impl` differs from `meta` (dtype, device, rank, sizes, strides, and the storage
/// offset when `offset`), worded as PyTorch's tensor guards, or nullopt.
std::optional<std::string> geometry_mismatch(const TensorImpl& impl, const TensorMeta& meta, bool offset,
                                             const core::SymGeometry* sym = nullptr) {
  std::ostringstream os;
  if (impl.dtype != meta.dtype) {
    os << "dtype mismatch. expected " << scalar_type_name(meta.dtype) << ", actual " << scalar_type_name(impl.dtype);
    return os.str();
  }
  if (!(impl.device == meta.device)) {
    os << "device mismatch. expected " << meta.device << ", actual " << impl.device;
    return os.str();
  }
  if (impl.sizes.size() != meta.sizes.size()) {
    os << "rank mismatch. expected " << meta.sizes.size() << ", actual " << impl.sizes.size();
    return os.str();
  }
  for (size_t d = 0; d < impl.sizes.size(); ++d) {
    if (sym && sym->sizes[d].is_symbolic()) continue;  // checked through the shape environment
    if (impl.sizes[d] != meta.sizes[d]) {
      os << "size mismatch at index " << d << ". expected " << meta.sizes[d] << ", actual " << impl.sizes[d];
      return os.str();
    }
  }
  for (size_t d = 0; d < impl.strides.size(); ++d) {
    if (sym && sym->strides[d].is_symbolic()) continue;
    if (impl.strides[d] != meta.strides[d]) {
      os << "stride mismatch at index " << d << ". expected " << meta.strides[d] << ", actual " << impl.strides[d];
      return os.str();
    }
  }
  if (offset && impl.storage_offset != meta.storage_offset) {
    os << "storage offset mismatch. expected " << meta.storage_offset << ", actual " << impl.storage_offset;
    return os.str();
  }
  return std::nullopt;
}

bool same_geometry(const TensorImpl& impl, const TensorMeta& meta) {
  return impl.dtype == meta.dtype && impl.device == meta.device && impl.sizes == meta.sizes &&
         impl.strides == meta.strides;
}

std::string show_doubles(const std::vector<double>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

IValue read_user(const UserGuard& g) {
  return std::visit([](const auto* p) { return IValue(*p); }, g.where);
}

}  // namespace

std::string arg_name(const std::vector<std::string>& names, size_t i) {
  return i < names.size() ? names[i] : "arg" + std::to_string(i);
}

GuardSet GuardSet::for_call(const std::vector<CallArg>& args, const std::vector<std::string>& arg_names) {
  GuardSet gs;
  gs.grad_enabled_ = is_grad_enabled();
  gs.autocast_ = ops::autocast_state();
  auto add_tensor = [&](int arg, int element, std::string name, const Tensor& t) {
    TensorGuard g;
    g.arg = arg;
    g.element = element;
    g.name = std::move(name);
    g.meta = TensorMeta{t.sizes().vec(), t.strides().vec(), t.dtype(), t.device(), t.storage_offset()};
    g.requires_grad = t.requires_grad();
    for (size_t k = 0; k < gs.tensors_.size(); ++k) {
      if (const Tensor* other = gs.tensor_of(args, gs.tensors_[k]); other && other->is_same(t)) {
        g.same_as = static_cast<int>(k);
        break;
      }
    }
    gs.tensors_.push_back(std::move(g));
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const int arg = static_cast<int>(i);
    const std::string name = arg_name(arg_names, i);
    if (const auto* t = std::get_if<Tensor>(&args[i])) {
      EMBER_CHECK_VALUE(t->defined()) << "compiled function: argument '" << name << "' is an undefined tensor";
      add_tensor(arg, -1, name, *t);
    } else if (const auto* list = std::get_if<std::vector<Tensor>>(&args[i])) {
      gs.values_.push_back({arg, name, IValue(static_cast<int64_t>(list->size())), true, std::nullopt});
      for (size_t k = 0; k < list->size(); ++k) {
        EMBER_CHECK_VALUE((*list)[k].defined())
            << "compiled function: element " << k << " of argument '" << name << "' is an undefined tensor";
        add_tensor(arg, static_cast<int>(k), name + "[" + std::to_string(k) + "]", (*list)[k]);
      }
    } else if (const auto* m = std::get_if<nn::Module*>(&args[i])) {
      ModuleGuard g;
      g.arg = arg;
      g.name = name;
      g.module = *m;
      for (auto& [path, sub] : (*m)->named_modules()) {
        g.training.emplace_back(path.empty() ? name : name + "." + path, sub->is_training());
        for (auto& [n, t] : sub->named_parameters(false)) g.tensors.emplace_back(path.empty() ? n : path + "." + n, t.impl());
        for (auto& [n, t] : sub->named_buffers(false)) g.tensors.emplace_back(path.empty() ? n : path + "." + n, t.impl());
      }
      gs.modules_.push_back(std::move(g));
    } else if (const auto* o = std::get_if<optim::Optimizer*>(&args[i])) {
      OptimizerGuard g{arg, name, *o, {}};
      for (const Tensor& p : (*o)->params()) g.params.push_back(p.impl());
      gs.optimizers_.push_back(std::move(g));
    } else {
      ValueGuard g{arg, name, value_of_arg(args[i]), false, std::nullopt};
      if (const auto* d = std::get_if<std::vector<double>>(&args[i])) g.doubles = *d;
      gs.values_.push_back(std::move(g));
    }
  }
  return gs;
}

const Tensor* GuardSet::tensor_of(const std::vector<CallArg>& args, const TensorGuard& g) const {
  if (g.arg >= static_cast<int>(args.size())) return nullptr;
  const CallArg& a = args[g.arg];
  if (g.element < 0) return std::get_if<Tensor>(&a);
  const auto* list = std::get_if<std::vector<Tensor>>(&a);
  if (!list || g.element >= static_cast<int>(list->size())) return nullptr;
  return &(*list)[g.element];
}

std::optional<std::string> GuardSet::fail_tensor(const std::vector<CallArg>& args, const TensorGuard& g) const {
  const Tensor* t = tensor_of(args, g);
  std::ostringstream os;
  os << "tensor '" << g.name << "' ";
  if (!t || !t->defined()) return os.str() + "is missing";
  if (auto f = geometry_mismatch(*t->impl(), g.meta, g.check_offset, g.sym.get())) return os.str() + *f;
  if (t->requires_grad() != g.requires_grad) {
    os << "requires_grad mismatch. expected requires_grad=" << g.requires_grad;
    return os.str();
  }
  const size_t i = static_cast<size_t>(&g - tensors_.data());
  for (size_t k = 0; k < i; ++k) {
    const Tensor* other = tensor_of(args, tensors_[k]);
    const bool same = other && other->is_same(*t);
    if (same != (root(i) == root(k))) {
      return os.str() + (same ? "is now the same tensor as '" : "is no longer the same tensor as '") +
             tensors_[k].name + "'";
    }
  }
  return std::nullopt;
}

std::optional<std::string> GuardSet::fail_value(const std::vector<CallArg>& args, const ValueGuard& g) const {
  const CallArg& a = args[g.arg];
  const auto* tensors = std::get_if<std::vector<Tensor>>(&a);
  const auto* ints = std::get_if<std::vector<int64_t>>(&a);
  const auto* doubles = std::get_if<std::vector<double>>(&a);
  bool same;
  if (g.is_length) {
    same = tensors && static_cast<int64_t>(tensors->size()) == g.expected.to_int();
  } else if (ints) {
    same = g.expected.is_int_list() && *ints == g.expected.to_int_list();
  } else if (doubles) {
    same = g.doubles && same_doubles(*doubles, *g.doubles);
  } else {
    same = same_value(value_of_arg(a), g.expected);
  }
  if (same) return std::nullopt;
  if (g.is_length) {
    return "len('" + g.name + "') == " + show(g.expected) + " (actual " +
           (tensors ? std::to_string(tensors->size()) : std::string("not a list")) + ")";
  }
  const std::string expected = g.doubles ? show_doubles(*g.doubles) : show(g.expected);
  const std::string actual = doubles ? show_doubles(*doubles) : show(value_of_arg(a));
  return "'" + g.name + "' == " + expected + " (actual " + actual + ")";
}

std::optional<std::string> GuardSet::fail_module(const std::vector<CallArg>& args, const ModuleGuard& g) const {
  const auto* m = std::get_if<nn::Module*>(&args[g.arg]);
  if (!m || *m != g.module) return "module '" + g.name + "' is not the module that was traced";
  std::optional<std::string> failure;
  size_t mi = 0, ti = 0;
  (*m)->visit(
      [&](const nn::Module& sub) {
        if (failure) return;
        if (mi >= g.training.size()) {
          failure = "module '" + g.name + "' has a submodule added after tracing";
        } else if (sub.is_training() != g.training[mi].second) {
          failure = "module '" + g.training[mi].first + "' training == " + (g.training[mi].second ? "True" : "False");
        }
        ++mi;
      },
      [&](const Tensor& t) {
        if (failure) return;
        if (ti >= g.tensors.size()) {
          failure = "module '" + g.name + "' has a tensor added after tracing";
        } else if (t.impl() != g.tensors[ti].second) {
          failure = "module '" + g.name + "': '" + g.tensors[ti].first + "' is not the tensor that was traced";
        }
        ++ti;
      });
  if (!failure && (mi != g.training.size() || ti != g.tensors.size())) {
    failure = "module '" + g.name + "' lost a submodule or tensor after tracing";
  }
  return failure;
}

std::optional<std::string> GuardSet::fail_optimizer(const std::vector<CallArg>& args, const OptimizerGuard& g) {
  const auto* o = std::get_if<optim::Optimizer*>(&args[g.arg]);
  if (!o || *o != g.optimizer) return "optimizer '" + g.name + "' is not the optimizer that was traced";
  const std::vector<Tensor>& params = (*o)->params();
  if (params.size() != g.params.size()) return "optimizer '" + g.name + "' has other parameters than when traced";
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].impl() != g.params[i]) {
      return "optimizer '" + g.name + "': parameter " + std::to_string(i) + " is not the tensor that was traced";
    }
  }
  return std::nullopt;
}

std::optional<std::string> GuardSet::fail_user(const UserGuard& g) const {
  IValue actual = read_user(g);
  if (same_value(actual, g.expected)) return std::nullopt;
  return "guard_on('" + g.name + "') == " + show(g.expected) + " (actual " + show(actual) + ")";
}

std::optional<std::string> GuardSet::fail_attribute(const AttributeGuard& g) {
  if (g.cell->equals(g.expected)) return std::nullopt;
  return "module attribute '" + g.name + "' == " + show(g.expected) + " (actual " + show(g.cell->value()) + ")";
}

Tensor grad_slot(const Tensor& owner) {
  const autograd::AutogradMeta* m = autograd::meta_of(owner);
  return m ? m->grad : Tensor();
}

std::optional<std::string> GuardSet::fail_grad(const GradGuard& g) {
  const Tensor grad = grad_slot(g.owner);
  const std::string tensor = "tensor '" + g.name + "' ";
  if (!g.meta) {
    if (!grad.defined()) return std::nullopt;
    return tensor + "is no longer None (the traced code skipped an empty gradient)";
  }
  if (!grad.defined()) return tensor + "is None (expected a gradient)";
  if (auto f = geometry_mismatch(*grad.impl(), *g.meta, false)) return tensor + *f;
  if (grad.requires_grad() != g.requires_grad) {
    return tensor + "requires_grad mismatch. expected requires_grad=" + (g.requires_grad ? "1" : "0");
  }
  return std::nullopt;
}

bool GuardSet::check(const std::vector<CallArg>& args) const {
  if (is_grad_enabled() != grad_enabled_) return false;
  if (ops::autocast_state() != autocast_) return false;
  for (const auto& g : tensors_) {
    const Tensor* t = tensor_of(args, g);
    if (!t || !t->defined()) return false;
    const TensorImpl& impl = *t->impl();
    if (g.sym) [[unlikely]] {
      // Symbolic dims and strides: check_shapes below.
      if (impl.dtype != g.meta.dtype || !(impl.device == g.meta.device) || impl.sizes.size() != g.meta.sizes.size() ||
          (g.check_offset && impl.storage_offset != g.meta.storage_offset) || t->requires_grad() != g.requires_grad) {
        return false;
      }
      for (size_t d = 0; d < impl.sizes.size(); ++d) {
        if ((!g.sym->sizes[d].is_symbolic() && impl.sizes[d] != g.meta.sizes[d]) ||
            (!g.sym->strides[d].is_symbolic() && impl.strides[d] != g.meta.strides[d])) {
          return false;
        }
      }
      continue;
    }
    if (impl.dtype != g.meta.dtype || !(impl.device == g.meta.device) || impl.sizes != g.meta.sizes ||
        impl.strides != g.meta.strides || (g.check_offset && impl.storage_offset != g.meta.storage_offset) ||
        t->requires_grad() != g.requires_grad) {
      return false;
    }
  }
  if (shape_env_ && !check_shapes(args)) return false;
  for (size_t i = 1; i < tensors_.size(); ++i) {
    const Tensor* t = tensor_of(args, tensors_[i]);
    for (size_t k = 0; k < i; ++k) {
      if (tensor_of(args, tensors_[k])->is_same(*t) != (root(i) == root(k))) return false;
    }
  }
  return others_pass(args);
}

bool GuardSet::others_pass(const std::vector<CallArg>& args) const {
  for (const auto& g : values_)
    if (fail_value(args, g)) return false;
  for (const auto& g : modules_)
    if (fail_module(args, g)) return false;
  for (const auto& g : optimizers_)
    if (fail_optimizer(args, g)) return false;
  for (const auto& g : user_)
    if (fail_user(g)) return false;
  for (const auto& g : attributes_)
    if (!g.cell->equals(g.expected)) return false;
  for (const auto& g : grads_) {
    const Tensor grad = grad_slot(g.owner);
    if (grad.defined() != g.meta.has_value() ||
        (grad.defined() && (!same_geometry(*grad.impl(), *g.meta) || grad.requires_grad() != g.requires_grad))) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> GuardSet::autocast_failure() const {
  const ops::AutocastState now = ops::autocast_state();
  if (now == autocast_) return std::nullopt;
  return "autocast state mismatch. expected " + autocast_.str() + ", actual " + now.str();
}

void GuardSet::guard_storage_offset(int arg, int element) {
  for (TensorGuard& g : tensors_)
    if (g.arg == arg && g.element == element) g.check_offset = true;
}

std::vector<std::string> GuardSet::all_failures(const std::vector<CallArg>& args) const {
  std::vector<std::string> out;
  auto add = [&](std::optional<std::string> f) {
    if (f) out.push_back(std::move(*f));
  };
  if (is_grad_enabled() != grad_enabled_) {
    out.push_back(std::string("grad mode mismatch. expected ") + (grad_enabled_ ? "enabled" : "disabled"));
  }
  add(autocast_failure());
  for (const auto& g : values_)
    if (g.is_length) add(fail_value(args, g));
  for (const auto& g : tensors_) add(fail_tensor(args, g));
  add(shape_failure(args));
  for (const auto& g : values_)
    if (!g.is_length) add(fail_value(args, g));
  for (const auto& g : modules_) add(fail_module(args, g));
  for (const auto& g : optimizers_) add(fail_optimizer(args, g));
  for (const auto& g : user_) add(fail_user(g));
  for (const auto& g : grads_) add(fail_grad(g));
  return out;
}

std::optional<std::string> GuardSet::value_change_hint(const std::vector<CallArg>& args) const {
  if (is_grad_enabled() != grad_enabled_ || autocast_failure()) return std::nullopt;
  for (const auto& g : values_)
    if (g.is_length && fail_value(args, g)) return std::nullopt;
  for (const auto& g : tensors_)
    if (fail_tensor(args, g)) return std::nullopt;
  for (const auto& g : values_) {
    if (g.is_length || !fail_value(args, g)) continue;
    const bool is_double = g.doubles.has_value() || g.expected.is_double();
    const char* type = g.doubles                  ? "a std::vector<double>"
                       : is_double                ? "a double"
                       : g.expected.is_int_list() ? "a std::vector<int64_t>"
                       : g.expected.is_bool()     ? "a bool"
                                                  : "an integer";
    const std::string what = "argument " + std::to_string(g.arg) + " (" + g.name + "), " + type + ", changed: ";
    // C++ arithmetic on a number happens outside the trace, so a number cannot become a
    // graph input the way PyTorch makes a changed float one (Note [capture], "Guards").
    const std::string specialized = what + (is_double ? "doubles" : "numbers") +
                                    " are specialized into the graph by value, so each new value "
                                    "compiles again";
    if (g.expected.is_int_list() || g.expected.is_bool()) return specialized;
    return specialized +
           "; pass a value that changes from call to call as a 0-dim tensor (ember::scalar_tensor(value)) to keep "
           "one graph";
  }
  return std::nullopt;
}

std::optional<std::string> GuardSet::first_failure(const std::vector<CallArg>& args) const {
  if (is_grad_enabled() != grad_enabled_) {
    return std::string("grad mode mismatch. expected ") + (grad_enabled_ ? "enabled" : "disabled");
  }
  if (auto f = autocast_failure()) return f;
  for (const auto& g : values_)
    if (g.is_length)
      if (auto f = fail_value(args, g)) return f;
  for (const auto& g : tensors_)
    if (auto f = fail_tensor(args, g)) return f;
  if (auto f = shape_failure(args)) return f;
  for (const auto& g : values_)
    if (!g.is_length)
      if (auto f = fail_value(args, g)) return f;
  for (const auto& g : modules_)
    if (auto f = fail_module(args, g)) return f;
  for (const auto& g : optimizers_)
    if (auto f = fail_optimizer(args, g)) return f;
  for (const auto& g : user_)
    if (auto f = fail_user(g)) return f;
  for (const auto& g : attributes_)
    if (auto f = fail_attribute(g)) return f;
  for (const auto& g : grads_)
    if (auto f = fail_grad(g)) return f;
  return std::nullopt;
}

std::vector<std::string> GuardSet::describe() const {
  std::vector<std::string> out;
  out.push_back(std::string("grad mode is ") + (grad_enabled_ ? "enabled" : "disabled"));
  // Always checked; said when the trace ran under autocast.
  if (autocast_.any_enabled()) out.push_back(autocast_.str());
  for (const auto& g : values_) {
    const std::string value = g.doubles ? show_doubles(*g.doubles) : show(g.expected);
    out.push_back(g.is_length ? "len('" + g.name + "') == " + value : "'" + g.name + "' == " + value);
  }
  // A symbolic size or stride prints as its expression (`[s0, 16]`); the shape
  // environment's guards follow the tensors, over sources (`2 <= x.size(0)`).
  auto show_dims = [this](const std::vector<int64_t>& values, const core::SymInts* sym) {
    if (!sym) {
      std::ostringstream os;
      os << IntArrayRef(values);
      return os.str();
    }
    std::string text = "[";
    for (size_t d = 0; d < values.size(); ++d) {
      text += (d ? ", " : "") +
              ((*sym)[d].is_symbolic() ? shape_env_->format((*sym)[d].expr()) : std::to_string(values[d]));
    }
    return text + "]";
  };
  for (const auto& g : tensors_) {
    std::ostringstream os;
    os << "tensor '" << g.name << "': " << scalar_type_name(g.meta.dtype) << " "
       << show_dims(g.meta.sizes, g.sym ? &g.sym->sizes : nullptr) << " strides "
       << show_dims(g.meta.strides, g.sym ? &g.sym->strides : nullptr) << " on " << g.meta.device
       << ", requires_grad=" << g.requires_grad;
    if (g.same_as >= 0) os << ", same tensor as '" << tensors_[g.same_as].name << "'";
    out.push_back(os.str());
    if (g.check_offset) {
      out.push_back("tensor '" + g.name + "': storage offset == " + std::to_string(g.meta.storage_offset) +
                    " (read while tracing)");
    }
  }
  if (shape_env_) {
    for (std::string& line : shape_env_->format_guards()) out.push_back(std::move(line));
  }
  for (const auto& g : modules_) {
    out.push_back("module '" + g.name + "' is the traced module, with its " + std::to_string(g.tensors.size()) +
                  " parameters and buffers and the training flags of its " + std::to_string(g.training.size()) +
                  " modules");
  }
  for (const auto& g : optimizers_) {
    out.push_back("optimizer '" + g.name + "' is the traced optimizer, with its " + std::to_string(g.params.size()) +
                  " parameters");
  }
  for (const auto& g : user_) out.push_back("guard_on('" + g.name + "') == " + show(g.expected));
  for (const auto& g : attributes_) out.push_back("module attribute '" + g.name + "' == " + show(g.expected));
  for (const auto& g : grads_) {
    std::ostringstream os;
    os << "tensor '" << g.name << "' (a gradient slot): ";
    if (g.meta) {
      os << scalar_type_name(g.meta->dtype) << " " << IntArrayRef(g.meta->sizes) << " strides "
         << IntArrayRef(g.meta->strides) << " on " << g.meta->device << ", requires_grad=" << g.requires_grad;
    } else {
      os << "None";
    }
    out.push_back(os.str());
  }
  return out;
}

void GuardSet::set_shape_env(std::shared_ptr<const core::ShapeEnv> env, const std::vector<SymbolSource>& sources,
                             const std::vector<DynamicInput>& inputs) {
  EMBER_INTERNAL_ASSERT(env && sources.size() == env->num_symbols())
      << sources.size() << " sources for " << (env ? env->num_symbols() : 0) << " symbols";
  auto guard_of = [this](int arg, int element) {
    for (size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].arg == arg && tensors_[i].element == element) return i;
    EMBER_INTERNAL_ASSERT(false) << "no tensor guard for argument " << arg << " element " << element;
  };
  for (const DynamicInput& in : inputs) {
    TensorGuard& g = tensors_[guard_of(in.arg, in.element)];
    g.sym = in.geometry;
    // An argument passed twice has one fake: its other guards check the same geometry.
    for (TensorGuard& other : tensors_)
      if (other.same_as >= 0 && &tensors_[static_cast<size_t>(other.same_as)] == &g) other.sym = in.geometry;
  }
  symbol_reads_.clear();
  for (const SymbolSource& s : sources) symbol_reads_.emplace_back(guard_of(s.arg, s.element), s.dim);
  shape_env_ = std::move(env);
}

bool GuardSet::check_shapes(const std::vector<CallArg>& args) const {
  const size_t n = symbol_reads_.size();
  int64_t inline_values[kInlineSymbols];
  std::vector<int64_t> many;
  int64_t* values = inline_values;
  if (n > kInlineSymbols) [[unlikely]] {
    many.resize(n);
    values = many.data();
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& [guard, dim] = symbol_reads_[i];
    values[i] = tensor_of(args, tensors_[guard])->impl()->sizes[static_cast<size_t>(dim)];
  }
  const std::span<const int64_t> span(values, n);
  if (!shape_env_->check(span)) return false;
  for (const auto& g : tensors_) {
    if (!g.sym) continue;
    const TensorImpl& impl = *tensor_of(args, g)->impl();
    for (size_t d = 0; d < impl.sizes.size(); ++d) {
      const core::SymInt& size = g.sym->sizes[d];
      const core::SymInt& stride = g.sym->strides[d];
      if (size.is_symbolic() && core::sym::evaluate(size.expr(), span) != impl.sizes[d]) return false;
      if (stride.is_symbolic() && core::sym::evaluate(stride.expr(), span) != impl.strides[d]) return false;
    }
  }
  return true;
}

std::vector<int64_t> GuardSet::symbol_values(const std::vector<CallArg>& args) const {
  std::vector<int64_t> values;
  for (const auto& [guard, dim] : symbol_reads_) {
    const Tensor* t = tensor_of(args, tensors_[guard]);
    values.push_back(t->impl()->sizes[static_cast<size_t>(dim)]);
  }
  return values;
}

std::optional<std::string> GuardSet::shape_failure(const std::vector<CallArg>& args) const {
  if (!shape_env_) return std::nullopt;
  for (const auto& g : tensors_)
    if (fail_tensor(args, g)) return std::nullopt;  // reported as the tensor's own failure
  const std::vector<int64_t> values = symbol_values(args);
  if (std::string f = shape_env_->first_failure(values); !f.empty()) return f;
  for (const auto& g : tensors_) {
    if (!g.sym) continue;
    const TensorImpl& impl = *tensor_of(args, g)->impl();
    for (size_t d = 0; d < impl.sizes.size(); ++d) {
      const core::SymInt& stride = g.sym->strides[d];
      if (!stride.is_symbolic()) continue;
      const int64_t expected = core::sym::evaluate(stride.expr(), values);
      if (expected != impl.strides[d]) {
        return "tensor '" + g.name + "' stride mismatch at index " + std::to_string(d) + ". expected " +
               shape_env_->format_with_sources(stride.expr()) + " = " + std::to_string(expected) + ", actual " +
               std::to_string(impl.strides[d]);
      }
    }
  }
  return std::nullopt;
}

bool GuardSet::other_guard_fails(const std::vector<CallArg>& args) const {
  return is_grad_enabled() != grad_enabled_ || autocast_failure() || !others_pass(args);
}

std::vector<SizeChange> GuardSet::size_changes(const std::vector<CallArg>& args) const {
  std::vector<SizeChange> changes;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorGuard& g = tensors_[i];
    const Tensor* t = tensor_of(args, g);
    if (!t || !t->defined()) return {};
    const TensorImpl& impl = *t->impl();
    if (impl.dtype != g.meta.dtype || !(impl.device == g.meta.device) || impl.sizes.size() != g.meta.sizes.size() ||
        t->requires_grad() != g.requires_grad) {
      return {};
    }
    for (size_t k = 0; k < i; ++k) {
      if (tensor_of(args, tensors_[k])->is_same(*t) != (root(i) == root(k))) return {};
    }
    if (g.same_as >= 0) continue;  // the same tensor as an earlier argument
    for (size_t d = 0; d < impl.sizes.size(); ++d) {
      if (g.sym && g.sym->sizes[d].is_symbolic()) continue;
      if (impl.sizes[d] != g.meta.sizes[d]) {
        changes.push_back({g.arg, g.element, static_cast<int64_t>(d), g.name, g.meta.sizes[d], impl.sizes[d]});
      }
    }
  }
  if (changes.empty() || other_guard_fails(args)) return {};
  return changes;
}

}  // namespace ember::capture
