// capture/repro_hooks.cpp — the REPRO_AFTER cut points (repro_hooks.h), where any
// exception a compiler throws becomes an ember::Error.
#include "capture/repro_hooks.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <typeinfo>

#include "ember/config.h"

namespace ember::capture {
namespace {

std::mutex g_mu;
std::shared_ptr<const ReproWrapper> g_wrapper;

/// "std::runtime_error" for the exception's dynamic type.
std::string type_name(const std::exception& e) {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : typeid(e).name();
  std::free(name);
  return out;
}

/// Rethrows the exception in flight as an ember::Error (unchanged if it is one), keeping
/// its message and naming its C++ type.
[[noreturn]] void rethrow_as_error() {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    EMBER_FAIL() << foreign_exception_message(e);
  } catch (...) {
    EMBER_FAIL() << "an exception that is not a std::exception";
  }
}

/// `compiler`, and the callable it returns, raising only ember::Error: what a backend
/// throws (a custom one may throw std::runtime_error) reaches BackendCompilerFailed,
/// suppress_errors and the repro machinery, which all catch ember::Error.
Backend raising_ember_errors(const Backend& compiler) {
  return [compiler](Graph& g, const std::vector<Tensor>& example_inputs) -> CompiledGraph {
    CompiledGraph compiled;
    try {
      compiled = compiler(g, example_inputs);
    } catch (...) {
      rethrow_as_error();
    }
    return [compiled = std::move(compiled)](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
      try {
        return compiled(inputs);
      } catch (...) {
        rethrow_as_error();
      }
    };
  };
}

}  // namespace

std::string foreign_exception_message(const std::exception& e) { return type_name(e) + ": " + e.what(); }

void set_repro_wrapper(ReproWrapper wrapper) {
  auto w = std::make_shared<const ReproWrapper>(std::move(wrapper));
  std::lock_guard lock(g_mu);
  g_wrapper = std::move(w);
}

CompiledGraph compile_with_repro(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& compiler,
                                 const std::string& compiler_name, const std::string& cut) {
  const Backend checked = raising_ember_errors(compiler);
  if (config().dynamo.repro_after == cut) {
    std::shared_ptr<const ReproWrapper> w;
    {
      std::lock_guard lock(g_mu);
      w = g_wrapper;
    }
    if (w && *w) return (*w)(g, example_inputs, checked, compiler_name, cut);
  }
  return checked(g, example_inputs);
}

}  // namespace ember::capture
