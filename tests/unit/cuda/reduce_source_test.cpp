// The CUDA row kernels (reductions, softmax): their rendered source and symbols, the row
// geometry of a call (kept dims outer, reduced dims inner, merged where strides allow),
// and NVRTC compiling every reduction and softmax for sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_source.h"
#include "nvrtc_fixture.h"
#include "support/error_of.h"

namespace ember::kernels::cuda {
namespace {

TEST(CudaReduceSource, ReductionRendersItsOpAccumulatorAndDtypes) {
  const ReduceKernel k{.op = Reduction::Sum, .in = kHalf, .out = kFloat};
  EXPECT_EQ(kernel_symbol(k), "ember_reduce_sum_f16_to_f32");
  const std::string src = render_reduce(k);
  EXPECT_NE(src.find("extern \"C\" __global__ void ember_reduce_sum_f16_to_f32(float* out, const ember_dev::Half* in, "
                     "double p0, ember_dev::RowGeometry g)"),
            std::string::npos)
      << src;
  // The op is instantiated for the result dtype, whose accumulation type it picks.
  EXPECT_NE(src.find("reduce_rows<ember_dev::SumOp<float> >(out, in, p0, g);"), std::string::npos) << src;
  EXPECT_NE(src.find("template <> struct SumAcc<int> { typedef long long type; };"), std::string::npos);
}

TEST(CudaReduceSource, EveryReductionHasItsOwnSymbol) {
  const std::vector<std::pair<Reduction, std::string>> cases = {
      {Reduction::Sum, "ember_reduce_sum_i32_to_i64"}, {Reduction::Mean, "ember_reduce_mean_i32_to_i64"},
      {Reduction::Prod, "ember_reduce_prod_i32_to_i64"}, {Reduction::Max, "ember_reduce_amax_i32_to_i64"},
      {Reduction::Min, "ember_reduce_amin_i32_to_i64"}, {Reduction::Var, "ember_reduce_var_i32_to_i64"}};
  for (const auto& [op, symbol] : cases) EXPECT_EQ(kernel_symbol(ReduceKernel{op, kInt32, kInt64}), symbol);
  EXPECT_EQ(kernel_symbol(SoftmaxKernel{.log = true, .in = kBFloat16, .out = kFloat}), "ember_log_softmax_bf16_to_f32");
  EXPECT_NE(render_softmax(SoftmaxKernel{.log = false, .in = kFloat, .out = kFloat})
                .find("ember_dev::softmax_rows<false>(out, in, g);"),
            std::string::npos);
}

TEST(CudaRowGeometry, KeptDimsAreOuterAndReducedDimsInner) {
  // [2, 3, 4] contiguous, reducing dim 1 into a [2, 4] output.
  const RowGeometry g = make_row_geometry({2, 3, 4}, {4, 0, 1}, {12, 4, 1}, {false, true, false});
  EXPECT_EQ(g.outer_numel, 8);
  EXPECT_EQ(g.inner_numel, 3);
  ASSERT_EQ(g.outer_ndim, 2);  // the input's strides 12 and 1 do not merge
  EXPECT_EQ(g.outer_sizes[0], 2);
  EXPECT_EQ(g.outer_sizes[1], 4);
  EXPECT_EQ(g.outer_strides[0][0], 4);
  EXPECT_EQ(g.outer_strides[1][0], 12);
  EXPECT_EQ(g.outer_strides[1][1], 1);
  ASSERT_EQ(g.inner_ndim, 1);
  EXPECT_EQ(g.inner_sizes[0], 3);
  EXPECT_EQ(g.inner_strides[1][0], 4);
}

TEST(CudaRowGeometry, ContiguousReducedDimsMergeAndSizeOneDimsVanish) {
  const RowGeometry g = make_row_geometry({5, 1, 3, 4}, {1, 0, 0, 0}, {12, 12, 4, 1}, {false, true, true, true});
  EXPECT_EQ(g.outer_ndim, 1);
  EXPECT_EQ(g.outer_numel, 5);
  ASSERT_EQ(g.inner_ndim, 1);
  EXPECT_EQ(g.inner_sizes[0], 12);
  EXPECT_EQ(g.inner_strides[1][0], 1);
  // A full reduction of a 0-d tensor is one row of one element.
  const RowGeometry s = make_row_geometry({}, {}, {}, {});
  EXPECT_EQ(s.outer_numel, 1);
  EXPECT_EQ(s.inner_numel, 1);
  // An empty reduced dim: rows of no elements (the identity).
  const RowGeometry e = make_row_geometry({0, 5}, {0, 1}, {5, 1}, {true, false});
  EXPECT_EQ(e.outer_numel, 5);
  EXPECT_EQ(e.inner_numel, 0);
}

TEST(CudaRowGeometry, MoreThanSixteenUnmergeableDimsIsNotImplemented) {
  std::vector<int64_t> sizes(17, 2), strides(17), out(17, 0);
  for (size_t d = 0; d < 17; ++d) strides[d] = int64_t{1} << (2 * (16 - d));  // gaps: no two dims merge
  ember::testing::expect_error([&] { make_row_geometry(sizes, out, strides, std::vector<bool>(17, true)); },
                               "at most 16 reduced dims", ErrorKind::NotImplementedError);
}

const std::vector<ScalarType> kAll = {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

TEST_F(Nvrtc, EveryReductionCompilesForSm90ForEveryDtypeItAllows) {
  for (ScalarType t : kAll) {
    const ScalarType sum_out = is_floating_point(t) ? t : kInt64;
    std::vector<ReduceKernel> kernels = {{Reduction::Sum, t, sum_out}, {Reduction::Prod, t, sum_out},
                                         {Reduction::Max, t, t}, {Reduction::Min, t, t}};
    if (is_floating_point(t)) {
      kernels.push_back({Reduction::Mean, t, t});
      kernels.push_back({Reduction::Var, t, t});
    }
    for (const ReduceKernel& k : kernels) {
      const CubinResult c = compile_cubin(render_reduce(k), "sm_90");
      EXPECT_EQ(c.cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
  }
  // Explicit result dtypes convert before accumulating.
  for (const ReduceKernel& k : {ReduceKernel{Reduction::Sum, kInt32, kFloat}, ReduceKernel{Reduction::Mean, kFloat, kHalf},
                                ReduceKernel{Reduction::Sum, kInt32, kBool}}) {
    EXPECT_GT(compile_cubin(render_reduce(k), "sm_90").cubin.size(), 0u) << kernel_symbol(k);
  }
}

TEST_F(Nvrtc, SoftmaxAndLogSoftmaxCompileForSm90ForEveryFloatDtypeInBothRowForms) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
    for (bool log : {false, true}) {
      // Block rows, and warp rows read one element or 16 bytes at a time.
      const int wide = static_cast<int>(16 / element_size(t));
      for (auto [warp_rows, vec, slots] : {std::tuple{false, 1, 0}, std::tuple{true, 1, 32}, std::tuple{true, wide, 32},
                                           std::tuple{true, 1, 1}, std::tuple{true, wide, wide}}) {
        const SoftmaxKernel k{.log = log, .warp_rows = warp_rows, .vec = vec, .slots = slots, .in = t, .out = t};
        EXPECT_EQ(compile_cubin(render_softmax(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
      }
    }
  }
  EXPECT_EQ(kernel_symbol(SoftmaxKernel{.log = false, .warp_rows = true, .vec = 4, .slots = 8, .in = kFloat, .out = kFloat}),
            "ember_softmax_f32_to_f32_warp_v4_s8");
  for (int vec : {1, 4}) {
    const SoftmaxKernel widening{.log = false, .warp_rows = vec > 1, .vec = vec, .in = kHalf, .out = kFloat};
    EXPECT_GT(compile_cubin(render_softmax(widening), "sm_90").cubin.size(), 0u) << kernel_symbol(widening);
  }
}

TEST(CudaReduceSource, WarpRowLanesHoldThePowerOfTwoSlotsThatCoverTheRowAndOneAccess) {
  EXPECT_EQ(warp_row_slots(1024, 4), 32);
  EXPECT_EQ(warp_row_slots(1000, 8), 32);
  EXPECT_EQ(warp_row_slots(128, 4), 4);  // attention rows of 128 floats: one float4 a lane
  EXPECT_EQ(warp_row_slots(256, 8), 8);
  EXPECT_EQ(warp_row_slots(33, 1), 2);
  EXPECT_EQ(warp_row_slots(8, 1), 1);
  EXPECT_EQ(warp_row_slots(8, 4), 4);  // fewer elements than a lane's one access
  EXPECT_EQ(warp_row_slots(0, 1), 1);
}

TEST(CudaReduceSource, WarpRowsReadSixteenBytesAtATimeOnlyWhereEveryRowStartsAlignedAndHoldsWholeGroups) {
  alignas(16) static float buffer[64];
  const void* aligned = buffer;
  const void* off = buffer + 1;
  EXPECT_EQ(warp_row_vector(1024, kFloat, {aligned, aligned}, {1024}), 4);
  EXPECT_EQ(warp_row_vector(1024, kHalf, {aligned}, {1024, 2048}), 8);
  EXPECT_EQ(warp_row_vector(1000, kHalf, {aligned}, {}), 8);
  EXPECT_EQ(warp_row_vector(1020, kHalf, {aligned}, {1020}), 1);  // 1020 is no multiple of 8
  EXPECT_EQ(warp_row_vector(1024, kFloat, {aligned, off}, {1024}), 1);
  EXPECT_EQ(warp_row_vector(1024, kFloat, {aligned}, {1024, 1026}), 1);  // the second row would start unaligned
  EXPECT_EQ(warp_row_vector(6, kFloat, {aligned}, {6}), 1);
}

}  // namespace
}  // namespace ember::kernels::cuda
