// The CUDA pooling kernels (max, average and adaptive average, forward and backward):
// their symbols and NVRTC compiling every kernel for every dtype the ops take, for sm_90
// (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/pool.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

TEST(CudaPoolSource, KernelsNameTheirOpAndDtype) {
  EXPECT_EQ(kernel_symbol(PoolKernel{Pool::AdaptiveBackward, kBFloat16}), "ember_pool_adaptive_avg_backward_bf16");
  const std::string src = render_pool(PoolKernel{Pool::MaxBackward, kHalf});
  // Backward kernels run over grad_input's elements, forward ones over the output's.
  EXPECT_NE(src.find("const long long n = p.planes * p.in_h * p.in_w;"), std::string::npos) << src;
  EXPECT_NE(render_pool(PoolKernel{Pool::MaxForward, kFloat}).find("const long long n = p.planes * p.out_h * p.out_w;"),
            std::string::npos);
}

TEST_F(Nvrtc, EveryPoolingKernelCompilesForSm90ForEveryDtypeItTakes) {
  for (Pool op : {Pool::MaxForward, Pool::AvgForward, Pool::AdaptiveForward, Pool::MaxBackward, Pool::AvgBackward,
                  Pool::AdaptiveBackward}) {
    std::vector<ScalarType> dtypes = {kFloat, kDouble, kHalf, kBFloat16};
    if (op == Pool::AvgForward || op == Pool::AvgBackward) dtypes.push_back(kInt64);  // avg_pool2d takes int64
    for (ScalarType t : dtypes) {
      const PoolKernel k{op, t};
      EXPECT_EQ(compile_cubin(render_pool(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
