// capture/compile_mode.cpp — CompileOptions::mode by name and the thread's mode in force
// (compile_mode.h).
#include "capture/compile_mode.h"

#include "ember/error.h"

namespace ember::capture {
namespace {
thread_local CompileMode t_mode = CompileMode::Default;
}  // namespace

namespace {
/// Every mode by its name (PyTorch's torch.compile mode names).
constexpr struct {
  const char* name;
  CompileMode mode;
} kModes[] = {
    {"default", CompileMode::Default},
    {"reduce-overhead", CompileMode::ReduceOverhead},
    {"max-autotune", CompileMode::MaxAutotune},
    {"max-autotune-no-cudagraphs", CompileMode::MaxAutotuneNoCudagraphs},
};
}  // namespace

CompileMode parse_compile_mode(const std::string& name) {
  if (name.empty()) return CompileMode::Default;
  std::string names;
  for (const auto& m : kModes) {
    if (name == m.name) return m.mode;
    names += std::string(names.empty() ? "" : ", ") + "\"" + m.name + "\"";
  }
  EMBER_FAIL_KIND(::ember::ErrorKind::ValueError) << "compile: unknown mode \"" << name << "\"; the modes are " << names;
}

const char* compile_mode_name(CompileMode m) {
  for (const auto& e : kModes)
    if (e.mode == m) return e.name;
  return "default";
}

CompileMode current_compile_mode() { return t_mode; }

CompileModeScope::CompileModeScope(CompileMode m) : saved_(t_mode) { t_mode = m; }
CompileModeScope::~CompileModeScope() { t_mode = saved_; }

Backend backend_with_mode(const CompileOptions& options, Backend backend) {
  const CompileMode mode = parse_compile_mode(options.mode);
  if (mode == CompileMode::Default) return backend;
  EMBER_CHECK_VALUE(!options.custom_backend && options.backend == "inductor")
      << "compile: mode \"" << options.mode << "\" is a setting of the inductor backend, but the function is compiled "
      << "with " << (options.custom_backend ? "a custom backend" : "backend '" + options.backend + "'");
  return [mode, backend = std::move(backend)](Graph& g, const std::vector<Tensor>& examples) {
    CompileModeScope scope(mode);
    return backend(g, examples);
  };
}

}  // namespace ember::capture
