// The CUDA index reductions (max.dim/min.dim, argmax/argmin) and any/all: the row
// geometry that makes a full argmax index the flattened input, and NVRTC compiling every
// kernel for every dtype the ops take, for sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "kernels/cuda/arg_reduce.h"
#include "kernels/cuda/reduce.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

const ScalarType kAll[] = {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

TEST(CudaArgReduceSource, KernelsNameTheirDirectionAndDtype) {
  EXPECT_EQ(kernel_symbol(ArgReduceKernel{.is_max = false, .in = kBFloat16}), "ember_argmin_bf16");
  EXPECT_NE(render_arg_reduce(ArgReduceKernel{.is_max = true, .in = kFloat})
                .find("ember_dev::arg_reduce_rows<true>(values, indices, in, g);"),
            std::string::npos);
}

TEST(CudaArgReduceSource, ReducingEveryDimOfAPermutedTensorWalksItInRowMajorOrder) {
  // [2, 3, 4] seen through permute(2, 0, 1) of a contiguous [3, 4, 2] (strides 1, 8, 2):
  // its last two dims merge into one of 12 (stride 2), the first stays apart, in the
  // view's order, so the row's linear index is the flattened view's.
  const Tensor self = zeros({3, 4, 2}).permute({2, 0, 1});
  const Tensor out = zeros({}, TensorOptions(kInt64));
  const RowGeometry g = reduction_geometry(self, {true, true, true}, out);
  EXPECT_EQ(g.outer_numel, 1);
  EXPECT_EQ(g.inner_numel, 24);
  ASSERT_EQ(g.inner_ndim, 2);
  EXPECT_EQ(g.inner_sizes[0], 2);
  EXPECT_EQ(g.inner_sizes[1], 12);
  EXPECT_EQ(g.inner_strides[1][0], 1);
  EXPECT_EQ(g.inner_strides[1][1], 2);
}

TEST(CudaArgReduceSource, KeepdimOutputsStrideOverTheKeptDimsOnly) {
  const Tensor self = zeros({2, 3, 4});
  const Tensor kept = zeros({2, 1, 4}, TensorOptions(kInt64)), dropped = zeros({2, 4}, TensorOptions(kInt64));
  for (const Tensor& out : {kept, dropped}) {
    const RowGeometry g = reduction_geometry(self, {false, true, false}, out);
    EXPECT_EQ(g.outer_numel, 8);
    EXPECT_EQ(g.inner_numel, 3);
    ASSERT_EQ(g.outer_ndim, 2);
    EXPECT_EQ(g.outer_strides[0][0], 4);
    EXPECT_EQ(g.outer_strides[0][1], 1);
  }
}

TEST_F(Nvrtc, ArgReductionsAndAnyAllCompileForSm90ForEveryDtype) {
  for (ScalarType t : kAll) {
    for (bool is_max : {true, false}) {
      const ArgReduceKernel k{.is_max = is_max, .in = t};
      EXPECT_EQ(compile_cubin(render_arg_reduce(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
      // any (max) and all (min) over truth values.
      const ReduceKernel truth{is_max ? Reduction::Max : Reduction::Min, t, kBool};
      EXPECT_EQ(compile_cubin(render_reduce(truth), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(truth);
    }
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
