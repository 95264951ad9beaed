// kernels/cuda/cublaslt_off.cpp — cublaslt.h in a build without CUDA: nothing runs.
#include "ember/error.h"
#include "kernels/cuda/cublaslt.h"

namespace ember::kernels::cuda {
namespace {
constexpr const char* kNotBuilt = "Ember was built without CUDA (EMBER_CUDA=OFF)";
}

bool cublaslt_available(std::string* reason) {
  if (reason) *reason = kNotBuilt;
  return false;
}
int64_t cublaslt_version() { EMBER_FAIL() << kNotBuilt; }
void lt_matmul(const LtMatmul&) { EMBER_FAIL() << kNotBuilt; }

}  // namespace ember::kernels::cuda
