// kernels/cuda/nvrtc_off.cpp — nvrtc.h in a build without CUDA: nothing compiles.
#include "kernels/cuda/nvrtc.h"

#include "ember/error.h"

namespace ember::kernels::cuda {
namespace {
constexpr const char* kNotBuilt = "Ember was built without CUDA (EMBER_CUDA=OFF)";
}

bool nvrtc_available(std::string* reason) {
  if (reason) *reason = kNotBuilt;
  return false;
}
std::string nvrtc_version() { EMBER_FAIL() << kNotBuilt; }
std::vector<std::string> nvrtc_flags(const std::string&) { EMBER_FAIL() << kNotBuilt; }
std::string cubin_cache_dir() { EMBER_FAIL() << kNotBuilt; }
CubinResult compile_cubin(const std::string&, const std::string&) { EMBER_FAIL() << kNotBuilt; }
void* get_kernel(const std::string&, const std::string&, int) { EMBER_FAIL() << kNotBuilt; }
void* get_kernel(const std::string&, int, const std::function<std::string()>&) { EMBER_FAIL() << kNotBuilt; }
std::vector<void*> get_kernels(const std::string&, const std::vector<std::string>&, int) { EMBER_FAIL() << kNotBuilt; }
void launch_kernel(void*, unsigned, unsigned, void**, void*) { EMBER_FAIL() << kNotBuilt; }

}  // namespace ember::kernels::cuda
