// The CUDA cumulative sum: its symbol and NVRTC compiling it for every input dtype and the
// result dtypes cumsum gives (int64 for integers and bool, or an explicit dtype), for
// sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/scan.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

TEST(CudaScanSource, CumsumNamesItsDtypesAndAccumulatesIntegersInInt64) {
  const ScanKernel k{.in = kInt32, .out = kInt32};
  EXPECT_EQ(kernel_symbol(k), "ember_cumsum_i32_to_i32");
  EXPECT_NE(render_cumsum(k).find("typedef typename SumAcc<Out>::type A;"), std::string::npos);
}

TEST_F(Nvrtc, CumsumCompilesForSm90ForEveryDtype) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    const ScanKernel k{.in = t, .out = is_floating_point(t) ? t : kInt64};
    EXPECT_EQ(compile_cubin(render_cumsum(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
  }
  const ScanKernel explicit_dtype{.in = kHalf, .out = kFloat};
  EXPECT_GT(compile_cubin(render_cumsum(explicit_dtype), "sm_90").cubin.size(), 0u);
}

}  // namespace
}  // namespace ember::kernels::cuda
