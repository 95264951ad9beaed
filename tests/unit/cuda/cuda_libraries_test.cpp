// The CUDA libraries Ember opens at run time for GEMM (cuBLASLt) and convolution (cuDNN),
// without a GPU: where each is looked for and what a program hears when none can be
// opened; on a machine that has them (the toolkit's directory), that every function Ember
// calls is found; the pointwise kernels around those calls (empty products, the
// convolution bias) compiled by NVRTC for sm_90; and the geometries cuDNN takes.
#include <gtest/gtest.h>

#include <array>

#include <cstdlib>

#include "ember/error.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/dynlib.h"
#include "kernels/cuda/gemm.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

/// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) unsetenv(name_);
    else setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

const LibrarySearch kMissing{.what = "libmissing, which runs nothing",
                             .env = "EMBER_TEST_MISSING_LIBRARY",
                             .soname = "libember_missing_test.so.7",
                             .dirs = {"/nonexistent/toolkit/lib64", ""}};

TEST(CudaLibraries, TheEnvironmentVariableIsTriedFirstThenTheSonameThenEachDirectory) {
  ScopedEnv env("EMBER_TEST_MISSING_LIBRARY", "/opt/mine/libmissing.so");
  const std::vector<std::string> want{"/opt/mine/libmissing.so", "libember_missing_test.so.7",
                                      "/nonexistent/toolkit/lib64/libember_missing_test.so.7"};
  EXPECT_EQ(library_candidates(kMissing), want);
}

TEST(CudaLibraries, AnEmptyEnvironmentVariableIsNotAPath) {
  ScopedEnv env("EMBER_TEST_MISSING_LIBRARY", "");
  EXPECT_EQ(library_candidates(kMissing).front(), "libember_missing_test.so.7");
}

TEST(CudaLibraries, ALibraryThatCannotBeOpenedRaisesNamingItEveryPathAndTheVariable) {
  ScopedEnv env("EMBER_TEST_MISSING_LIBRARY", "/opt/mine/libmissing.so");
  try {
    open_library(kMissing);
    FAIL() << "opened a library that does not exist";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot open libmissing, which runs nothing"), std::string::npos) << m;
    EXPECT_NE(m.find("set EMBER_TEST_MISSING_LIBRARY to the path of libember_missing_test.so.7"), std::string::npos)
        << m;
    EXPECT_NE(m.find("\n  /opt/mine/libmissing.so: "), std::string::npos) << m;
    EXPECT_NE(m.find("\n  libember_missing_test.so.7: "), std::string::npos) << m;
    EXPECT_NE(m.find("\n  /nonexistent/toolkit/lib64/libember_missing_test.so.7: "), std::string::npos) << m;
  }
}

TEST(CudaLibraries, AWorkingOverrideIsTakenBeforeTheSoname) {
  // libdl's own soname stands in for a library at a path of the user's choosing.
  ScopedEnv env("EMBER_TEST_MISSING_LIBRARY", "libc.so.6");
  void* h = open_library(kMissing);
  ASSERT_NE(h, nullptr);
  EXPECT_NE(library_symbol(h, "malloc"), nullptr);
}

TEST(CudaLibraries, CublasLtOpensWithEveryFunctionOrSaysWhyNot) {
  std::string reason;
  if (!cublaslt_available(&reason)) {
    EXPECT_FALSE(reason.empty());
    GTEST_SKIP() << "cuBLASLt not available: " << reason;
  }
  EXPECT_GE(cublaslt_version(), 130000);
}

TEST(CudaLibraries, CudnnOpensWithEveryFunctionOrSaysWhyNot) {
  std::string reason;
  if (!cudnn_available(&reason)) {
    EXPECT_FALSE(reason.empty());
    GTEST_SKIP() << "cuDNN not available: " << reason;
  }
  EXPECT_EQ(cudnn_version() / 10000, 9);
}

TEST(CudaLibraries, ATransposedConvolutionFitsCudnnOnlyWithOutputPaddingBelowTheStride) {
  cpu::Conv2dParams p;
  p.batch = 1;
  p.in_channels = p.out_channels = 2;
  p.in_h = 1;
  p.in_w = 5;
  p.kernel_h = 1;
  p.kernel_w = 3;
  p.stride_w = 2;
  p.dilation_w = 3;
  p.out_h = 1;
  // (in - 1) * stride + dilation * (kernel - 1) + 1 + output_padding
  for (int64_t op : {0, 1, 2}) {
    p.out_w = 4 * 2 + 3 * 2 + 1 + op;
    EXPECT_EQ(cudnn_fits(p, true), op < 2) << "output_padding " << op;
    EXPECT_TRUE(cudnn_fits(p, false));
  }
}

TEST(CudaLibraries, A3dTransposedConvolutionFitsCudnnOnlyWithOutputPaddingBelowTheStrideInEveryDim) {
  // Conv3dParams of a transposed convolution run from its output (in) back to its input
  // (out), as conv3d_setup makes them: in = (out - 1) * stride + dilation * (kernel - 1) + 1
  // + output_padding per dim.
  cpu::Conv3dParams p;
  p.batch = 1;
  p.in_channels = p.out_channels = 2;
  p.out = {3, 4, 5};
  p.kernel = {3, 2, 3};
  p.stride = {2, 1, 3};
  p.dilation = {1, 3, 2};
  p.pad = {1, 0, 1};
  for (size_t d = 0; d < 3; ++d) {
    for (int64_t op : {0, 1, 2}) {
      std::array<int64_t, 3> out_padding{};
      out_padding[d] = op;
      for (size_t i = 0; i < 3; ++i)
        p.in[i] = (p.out[i] - 1) * p.stride[i] - 2 * p.pad[i] + p.dilation[i] * (p.kernel[i] - 1) + 1 + out_padding[i];
      EXPECT_EQ(cudnn_fits(p, true), op < p.stride[d]) << "dim " << d << ", output_padding " << op;
    }
  }
  EXPECT_TRUE(cudnn_fits(p, false));
}

class CudaLibraryKernels : public Nvrtc {};

TEST_F(CudaLibraryKernels, EmptyProductAndBiasKernelsCompileForEveryFloatingDtype) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
    for (const PointwiseKernel& k : {empty_product_kernel(t, true), empty_product_kernel(t, false), bias_add_kernel(t)}) {
      const CubinResult r = compile_cubin(render_pointwise(k), "sm_90");
      EXPECT_FALSE(r.cubin.empty()) << kernel_symbol(k);
    }
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
