// The CUDA sort kernels (load, one bitonic stage, store): their symbols, the number of
// stages a line needs, NVRTC compiling every stage for every dtype for sm_90, and the
// CUDA facets of cat, sort and topk.
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/sort.h"
#include "nvrtc_fixture.h"
#include "ops/registry.h"

namespace ember::kernels::cuda {
namespace {

TEST(CudaSortSource, SymbolsNameTheStageAndDtype) {
  EXPECT_EQ(kernel_symbol(SortKernel{.stage = SortStage::Load, .dtype = kHalf}), "ember_sort_load_f16");
  EXPECT_EQ(kernel_symbol(SortKernel{.stage = SortStage::Step, .dtype = kInt64}), "ember_sort_step_i64");
  EXPECT_EQ(kernel_symbol(SortKernel{.stage = SortStage::Store, .dtype = kBool}), "ember_sort_store_b8");
}

TEST(CudaSortSource, HalfAndBFloat16KeysCompareAsFloat) {
  const std::string src = render_sort(SortKernel{.stage = SortStage::Step, .dtype = kBFloat16});
  EXPECT_NE(src.find("ember_sort_step_bf16(float* keys, long long* idx"), std::string::npos) << src;
  // Ties fall back to the index, so every network gives the stable sort.
  EXPECT_NE(src.find("return ia < ib;"), std::string::npos);
}

TEST(CudaSortSource, ALineOfNNeedsTheBitonicStagesOfTheNextPowerOfTwo) {
  EXPECT_EQ(bitonic_stages(1), 0);
  EXPECT_EQ(bitonic_stages(2), 1);
  EXPECT_EQ(bitonic_stages(5), 6);      // L = 8: 3 * 4 / 2
  EXPECT_EQ(bitonic_stages(1000), 55);  // L = 1024
}

TEST(CudaFacets, CatSortAndTopkHaveCudaKernels) {
  for (const char* n : {"cat", "sort", "sort.stable", "topk"}) {
    const ops::OpDef& op = ops::registry().get(std::string("aten::") + n);
    EXPECT_TRUE(static_cast<bool>(op.cuda)) << n << " has no CUDA kernel";
    EXPECT_TRUE(op.cuda_site.present()) << n;
  }
}

TEST_F(Nvrtc, EverySortStageCompilesForSm90ForEveryDtype) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool})
    for (SortStage s : {SortStage::Load, SortStage::Step, SortStage::Store}) {
      const SortKernel k{.stage = s, .dtype = t};
      EXPECT_EQ(compile_cubin(render_sort(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
}

}  // namespace
}  // namespace ember::kernels::cuda
