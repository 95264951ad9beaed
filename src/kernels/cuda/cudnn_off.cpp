// kernels/cuda/cudnn_off.cpp — cudnn.h in a build without CUDA, or without cuDNN's
// headers (cudnn.h was not found next to the toolkit's): no convolution runs.
#include "ember/error.h"
#include "kernels/cuda/cudnn.h"

namespace ember::kernels::cuda {
namespace {
#ifdef EMBER_CUDNN_HEADERS_MISSING
constexpr const char* kNotBuilt =
    "Ember was built without cuDNN's headers (cudnn.h was not found beside the CUDA toolkit's)";
#else
constexpr const char* kNotBuilt = "Ember was built without CUDA (EMBER_CUDA=OFF)";
#endif
}

bool cudnn_available(std::string* reason) {
  if (reason) *reason = kNotBuilt;
  return false;
}
int64_t cudnn_version() { EMBER_FAIL() << kNotBuilt; }
void cudnn_convolution(const CudnnConv&) { EMBER_FAIL() << kNotBuilt; }

}  // namespace ember::kernels::cuda
