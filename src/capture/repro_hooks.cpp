// capture/repro_hooks.cpp — the REPRO_AFTER cut points (repro_hooks.h).
#include "capture/repro_hooks.h"

#include <memory>
#include <mutex>

#include "ember/config.h"

namespace ember::capture {
namespace {

std::mutex g_mu;
std::shared_ptr<const ReproWrapper> g_wrapper;

}  // namespace

void set_repro_wrapper(ReproWrapper wrapper) {
  auto w = std::make_shared<const ReproWrapper>(std::move(wrapper));
  std::lock_guard lock(g_mu);
  g_wrapper = std::move(w);
}

CompiledGraph compile_with_repro(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& compiler,
                                 const std::string& compiler_name, const std::string& cut) {
  if (config().dynamo.repro_after == cut) {
    std::shared_ptr<const ReproWrapper> w;
    {
      std::lock_guard lock(g_mu);
      w = g_wrapper;
    }
    if (w && *w) return (*w)(g, example_inputs, compiler, compiler_name, cut);
  }
  return compiler(g, example_inputs);
}

}  // namespace ember::capture
