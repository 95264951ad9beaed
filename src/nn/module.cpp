// nn::Module: registration of parameters, buffers and children, the recursive walks
// that give PyTorch's dotted names, and state_dict / load_state_dict / safetensors files;
// and the hook through which reads of nn::Attribute reach capture.
#include "ember/nn/module.h"

#include <atomic>
#include <sstream>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/serialize.h"
#include "nn/attribute_hook.h"
#include "support/call_context.h"

namespace ember::nn {

namespace {

std::atomic<AttributeReadHook> g_attribute_read_hook{nullptr};

std::string join(const std::string& prefix, const std::string& name) {
  if (name.empty()) return prefix;
  return prefix.empty() ? name : prefix + "." + name;
}

void check_new_name(const std::string& name, bool taken) {
  EMBER_CHECK_VALUE(!name.empty()) << "module name can't be empty string \"\"";
  EMBER_CHECK_VALUE(name.find('.') == std::string::npos) << "name can't contain \".\", got: " << name;
  EMBER_CHECK_VALUE(!taken) << "attribute '" << name << "' already exists";
}

}  // namespace

void set_attribute_read_hook(AttributeReadHook hook) { g_attribute_read_hook.store(hook); }

void detail::note_attribute_read(const AttributeCell& cell) {
  if (AttributeReadHook hook = g_attribute_read_hook.load(std::memory_order_relaxed)) hook(cell);
}

Tensor& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name, false);
  for (auto& [n, t] : params_) {
    if (n == name) {
      t = std::move(value);
      if (t.defined()) t.requires_grad_(requires_grad);
      return t;
    }
  }
  for (auto& [n, t] : buffers_) check_new_name(name, n == name);
  for (auto& [n, m] : children_) check_new_name(name, n == name);
  if (value.defined()) value.requires_grad_(requires_grad);
  params_.emplace_back(name, std::move(value));
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name, false);
  for (auto& [n, t] : buffers_) {
    if (n == name) {
      t = std::move(value);
      return t;
    }
  }
  for (auto& [n, t] : params_) check_new_name(name, n == name);
  for (auto& [n, m] : children_) check_new_name(name, n == name);
  buffers_.emplace_back(name, std::move(value));
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  EMBER_CHECK_VALUE(module != nullptr) << "register_module: module '" << name << "' is null";
  check_new_name(name, false);
  for (auto& [n, t] : params_) check_new_name(name, n == name);
  for (auto& [n, t] : buffers_) check_new_name(name, n == name);
  for (auto& [n, m] : children_) {
    if (n == name) {
      m = std::move(module);
      return;
    }
  }
  children_.emplace_back(name, std::move(module));
}

Tensor& Module::tensor(const std::string& name) {
  for (auto& [n, t] : params_)
    if (n == name) return t;
  for (auto& [n, t] : buffers_)
    if (n == name) return t;
  EMBER_CHECK_VALUE(false) << "'" << this->name() << "' object has no parameter or buffer '" << name << "'";
  return params_.front().second;  // unreachable: the check above throws
}

const Tensor& Module::tensor(const std::string& name) const { return const_cast<Module*>(this)->tensor(name); }

void Module::collect(const std::string& prefix, bool recurse, bool buffers,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [n, t] : buffers ? buffers_ : params_)
    if (t.defined()) out.emplace_back(join(prefix, n), t);
  if (!recurse) return;
  for (const auto& [n, m] : children_) m->collect(join(prefix, n), true, buffers, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, false, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, true, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  out.emplace_back("", this);
  for (auto& [n, m] : children_)
    for (auto& [sub, mm] : m->named_modules()) out.emplace_back(join(n, sub), mm);
  return out;
}

void Module::train(bool mode) {
  training_ = mode;
  for (auto& [n, m] : children_) m->train(mode);
}

void Module::to(ScalarType dtype) {
  NoGradGuard no_grad;
  for (auto& [n, t] : params_) {
    if (!t.defined() || !t.is_floating_point()) continue;
    bool rg = t.requires_grad();
    t = t.detach().to(dtype);
    t.requires_grad_(rg);
  }
  for (auto& [n, t] : buffers_)
    if (t.defined() && t.is_floating_point()) t = t.to(dtype);
  for (auto& [n, m] : children_) m->to(dtype);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for (auto& [n, t] : params_) {
    if (!t.defined()) continue;
    Tensor moved = t.detach().to(device);
    if (moved.storage() == t.storage()) continue;  // already there: keep the tensor itself
    const bool rg = t.requires_grad();
    const Tensor grad = t.grad();
    t = moved;
    t.requires_grad_(rg);
    if (grad.defined()) t.mutable_grad() = grad.to(device);
  }
  for (auto& [n, t] : buffers_)
    if (t.defined()) t = t.to(device);
  for (auto& [n, m] : children_) m->to(device);
}

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters()) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      NoGradGuard no_grad;
      g = g.detach();
      g.zero_();
    }
  }
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : named_parameters()) out[n] = t.detach();
  for (auto& [n, t] : named_buffers()) out[n] = t.detach();
  return out;
}

void Module::collect_slots(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) {
  for (auto& [n, t] : params_)
    if (t.defined()) out.emplace_back(join(prefix, n), &t);
  for (auto& [n, t] : buffers_)
    if (t.defined()) out.emplace_back(join(prefix, n), &t);
  for (auto& [n, m] : children_) m->collect_slots(join(prefix, n), out);
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots("", slots);
  std::vector<std::string> missing, unexpected, mismatch;
  std::map<std::string, bool> known;
  for (auto& [key, slot] : slots) {
    known[key] = true;
    auto it = state.find(key);
    if (it == state.end()) {
      missing.push_back(key);
      continue;
    }
    if (!(it->second.sizes() == slot->sizes())) {
      std::ostringstream os;
      os << "size mismatch for " << key << ": copying a param with shape " << it->second.sizes()
         << " from checkpoint, the shape in current model is " << slot->sizes() << ".";
      mismatch.push_back(os.str());
    }
  }
  for (auto& [key, t] : state)
    if (!known.count(key)) unexpected.push_back(key);

  std::vector<std::string> problems;
  auto quoted = [](const std::vector<std::string>& keys) {
    std::string s;
    for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", \"" : "\"") + keys[i] + "\"";
    return s;
  };
  // PyTorch's order: missing, unexpected, then size mismatches.
  if (strict && !missing.empty()) problems.push_back("Missing key(s) in state_dict: " + quoted(missing) + ". ");
  if (strict && !unexpected.empty()) problems.push_back("Unexpected key(s) in state_dict: " + quoted(unexpected) + ". ");
  for (auto& m : mismatch) problems.push_back(m);
  if (!problems.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + name() + ":";
    for (auto& p : problems) msg += "\n\t" + p;
    EMBER_CHECK(false) << msg;
  }
  // Only after every check passed, so a failed load leaves the module untouched.
  NoGradGuard no_grad;
  for (auto& [key, slot] : slots) {
    auto it = state.find(key);
    if (it != state.end()) slot->copy_(it->second);
  }
}

void Module::save(const std::string& path) const {
  save_safetensors(state_dict(), path);
}

void Module::load(const std::string& path, bool strict) { load_state_dict(load_safetensors(path), strict); }

Tensor UnaryModule::operator()(const Tensor& input, Loc loc) {
  support::UserLocScope scope(loc);
  return forward(input);
}

}  // namespace ember::nn
