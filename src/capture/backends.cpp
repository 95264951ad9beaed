// capture/backends.cpp — backends by name (torch._dynamo's backend registry). "eager" is
// built in; the AOT and inductor libraries register theirs.
#include <map>
#include <mutex>

#include "ember/compile.h"

namespace ember {
namespace {

/// A backend declared to take symbolic sizes (with_symbolic_sizes): the wrapper's type is
/// the declaration, found again with std::function::target.
struct SymbolicSizesBackend {
  Backend inner;
  CompiledGraph operator()(Graph& graph, const std::vector<Tensor>& examples) const { return inner(graph, examples); }
};

struct BackendRegistry {
  std::mutex mu;
  std::map<std::string, Backend> backends;
};

BackendRegistry& backend_registry() {
  static BackendRegistry* r = [] {
    auto* reg = new BackendRegistry;
    reg->backends.emplace("eager", with_symbolic_sizes([](Graph& g, const std::vector<Tensor>&) {
                            return eager_backend(g);
                          }));
    return reg;
  }();
  return *r;
}

}  // namespace

Backend with_symbolic_sizes(Backend backend) {
  EMBER_CHECK_VALUE(static_cast<bool>(backend)) << "with_symbolic_sizes: expected a backend function, got an empty one";
  if (takes_symbolic_sizes(backend)) return backend;
  return SymbolicSizesBackend{std::move(backend)};
}

bool takes_symbolic_sizes(const Backend& backend) { return backend.target<SymbolicSizesBackend>() != nullptr; }

CompiledGraph eager_backend(Graph& graph) {
  return [&graph](const std::vector<Tensor>& inputs) { return run_graph(graph, inputs); };
}

void register_backend(const std::string& name, Backend backend) {
  BackendRegistry& r = backend_registry();
  std::lock_guard lock(r.mu);
  EMBER_CHECK_VALUE(!name.empty() && backend) << "register_backend: expected a name and a backend function";
  EMBER_CHECK_VALUE(r.backends.emplace(name, std::move(backend)).second)
      << "register_backend: a backend named '" << name << "' is already registered";
}

Backend lookup_backend(const std::string& name) {
  BackendRegistry& r = backend_registry();
  std::lock_guard lock(r.mu);
  auto it = r.backends.find(name);
  if (it != r.backends.end()) return it->second;
  std::string known;
  for (const auto& [n, b] : r.backends) known += (known.empty() ? "" : ", ") + n;
  EMBER_FAIL_KIND(ErrorKind::ValueError) << "unknown backend '" << name << "'; registered backends: " << known;
}

std::vector<std::string> list_backends() {
  BackendRegistry& r = backend_registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [n, b] : r.backends) out.push_back(n);
  return out;
}

}  // namespace ember
