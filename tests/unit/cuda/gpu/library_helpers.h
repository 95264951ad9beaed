// Shared by the GEMM and convolution GPU tests: values that every dtype holds exactly (so
// CPU and GPU round the same exact sums once, whatever order they add in), and the
// fixtures that also need cuBLASLt or cuDNN (a GPU machine without them fails, saying
// which library and how to point Ember at it).
#pragma once

#include "gpu_helpers.h"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/cudnn.h"

namespace ember::gpu_test {

/// `sizes` filled with multiples of 1/4 in [-2, 2] (exact in float16, bfloat16 and TF32;
/// products and sums of them are exact in float32), as `dtype`. `seed` varies them.
inline Tensor quarters(IntArrayRef sizes, ScalarType dtype, uint64_t seed = 1) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t state = 0x9E3779B97F4A7C15ULL * (seed + 1);
  for (double& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = (static_cast<double>((state >> 33) % 17) - 8) / 4;
  }
  return tensor(v, {n}, TensorOptions(kDouble)).reshape(sizes).to(dtype);
}

inline const std::vector<ScalarType> kFloatDtypes = {kFloat, kDouble, kHalf, kBFloat16};

/// A GPU test that also needs a library (`available`: cublaslt_available, cudnn_available).
template <bool (*available)(std::string*)>
class GpuWithLibrary : public Gpu {
 protected:
  void SetUp() override {
    Gpu::SetUp();
    if (IsSkipped()) return;
    std::string reason;
    ASSERT_TRUE(available(&reason)) << reason;
  }
};
using GpuBlas = GpuWithLibrary<kernels::cuda::cublaslt_available>;
using GpuDnn = GpuWithLibrary<kernels::cuda::cudnn_available>;

/// Sets a config bool for the life of the object.
class ScopedFlag {
 public:
  ScopedFlag(bool& flag, bool value) : flag_(flag), old_(flag) { flag = value; }
  ~ScopedFlag() { flag_ = old_; }

 private:
  bool& flag_;
  bool old_;
};

}  // namespace ember::gpu_test
