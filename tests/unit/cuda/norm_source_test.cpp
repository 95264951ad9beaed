// The CUDA norm kernels (layer norm, batch norm and its backward): their symbols, the
// statistics dtype, and NVRTC compiling every dtype combination the ops allow for sm_90
// (no GPU needed).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "kernels/cuda/norm.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

const ScalarType kFloats[] = {kFloat, kDouble, kHalf, kBFloat16};

TEST(CudaNormSource, StatisticsAreFloatForHalfAndBFloat16) {
  EXPECT_EQ(norm_stat_dtype(kHalf), kFloat);
  EXPECT_EQ(norm_stat_dtype(kBFloat16), kFloat);
  EXPECT_EQ(norm_stat_dtype(kFloat), kFloat);
  EXPECT_EQ(norm_stat_dtype(kDouble), kDouble);
}

TEST(CudaNormSource, KernelsNameTheirDtypes) {
  EXPECT_EQ(kernel_symbol(LayerNormKernel{.in = kHalf, .stat = kFloat}), "ember_layer_norm_f16_stat_f32");
  EXPECT_EQ(kernel_symbol(BatchNormKernel{.backward = true, .in = kBFloat16, .param = kFloat, .stat = kFloat}),
            "ember_batch_norm_backward_bf16_param_f32_stat_f32");
  const std::string src =
      render_batch_norm(BatchNormKernel{.backward = false, .in = kHalf, .param = kHalf, .stat = kFloat});
  EXPECT_NE(src.find("ember_batch_norm_f16_param_f16_stat_f32(ember_dev::Half* y, float* save_mean"), std::string::npos)
      << src;
}

TEST_F(Nvrtc, LayerNormCompilesForSm90ForEveryFloatDtypeInBothRowForms) {
  for (ScalarType t : kFloats) {
    const int wide = static_cast<int>(16 / element_size(t));
    for (auto [warp_rows, vec, slots] : {std::tuple{false, 1, 0}, std::tuple{true, 1, 32}, std::tuple{true, wide, 32},
                                         std::tuple{true, wide, wide}}) {
      const LayerNormKernel k{.in = t, .stat = norm_stat_dtype(t), .warp_rows = warp_rows, .vec = vec, .slots = slots};
      EXPECT_EQ(compile_cubin(render_layer_norm(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
  }
}

TEST_F(Nvrtc, BatchNormItsEvaluationPassAndItsBackwardCompileForSm90ForEveryDtypeCombination) {
  for (ScalarType t : kFloats) {
    for (auto [backward, eval] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false}}) {
      // Parameters in the input's dtype, or float beside half/bfloat16; the backward reads
      // running stats (the parameters' dtype) in evaluation.
      auto kernel = [&](ScalarType param, ScalarType stat) {
        return BatchNormKernel{.backward = backward, .eval = eval, .in = t, .param = param, .stat = stat};
      };
      std::vector<BatchNormKernel> kernels = {kernel(t, norm_stat_dtype(t))};
      if (is_reduced_float(t)) kernels.push_back(kernel(kFloat, kFloat));
      if (backward) kernels.push_back(kernel(t, t));
      for (const BatchNormKernel& k : kernels)
        EXPECT_EQ(compile_cubin(render_batch_norm(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
