// The CUDA cumulative sum: its symbol and NVRTC compiling it for every input dtype and the
// result dtypes cumsum gives (int64 for integers and bool, or an explicit dtype), for
// sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/scan.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

TEST(CudaScanSource, CumsumNamesItsDtypesAndFormAndRoundsEachSumToTheResultDtype) {
  const ScanKernel k{.in = kInt32, .out = kInt64};
  EXPECT_EQ(kernel_symbol(k), "ember_cumsum_i32_to_i64");
  EXPECT_EQ(kernel_symbol(ScanKernel{.in = kHalf, .out = kHalf, .sequential = true}),
            "ember_cumsum_sequential_f16_to_f16");
  const std::string src = render_cumsum(ScanKernel{.in = kBFloat16, .out = kBFloat16});
  EXPECT_NE(src.find("return cvt<Out>(cvt<M>(a) + cvt<M>(b));"), std::string::npos) << src;
}

// PyTorch's get_log_num_threads_x_inner_scan, plus one: about 512 threads split between
// rows and columns, 16 to 512 x-threads, and its uint32 wrap for far more rows than columns.
TEST(CudaScanSource, ChunkSizesFollowPyTorchsInnerScanIncludingItsUnsignedWrap) {
  EXPECT_EQ(inner_scan_log_chunk(3, 4), 5);          // 16 x-threads: chunks of 32
  EXPECT_EQ(inner_scan_log_chunk(1, 5000), 10);      // 512 x-threads
  EXPECT_EQ(inner_scan_log_chunk(64, 1024), 7);      // (9 + 10 - 6) / 2 = 6: 64 x-threads
  EXPECT_EQ(inner_scan_log_chunk(1 << 12, 2), 10);   // 9 + (1 - 12) wraps: the largest chunk
  EXPECT_EQ(inner_scan_log_chunk(1 << 10, 2), 5);    // 9 + (1 - 10) = 0: the smallest
}

TEST_F(Nvrtc, CumsumCompilesForSm90ForEveryDtypeInBothForms) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    for (bool sequential : {false, true}) {
      const ScanKernel k{.in = t, .out = is_floating_point(t) ? t : kInt64, .sequential = sequential};
      EXPECT_EQ(compile_cubin(render_cumsum(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
  }
  const ScanKernel explicit_dtype{.in = kHalf, .out = kFloat};
  EXPECT_GT(compile_cubin(render_cumsum(explicit_dtype), "sm_90").cubin.size(), 0u);
}

}  // namespace
}  // namespace ember::kernels::cuda
