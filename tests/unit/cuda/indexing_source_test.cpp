// The CUDA indexing kernels (advanced indexing offsets, gather/put at offsets, gather and
// scatter along a dim): their symbols, the geometry of the dims around the indexed ones,
// and NVRTC compiling every kernel for every dtype for sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "kernels/cuda/indexing.h"
#include "nvrtc_fixture.h"
#include "ops/registry.h"
#include "support/error_of.h"

namespace ember::kernels::cuda {
namespace {

const std::vector<IndexKernelKind> kDataKinds = {IndexKernelKind::Gather,    IndexKernelKind::Put,
                                                 IndexKernelKind::PutAdd,    IndexKernelKind::GatherDim,
                                                 IndexKernelKind::ScatterDim, IndexKernelKind::ScatterAdd};

TEST(CudaIndexSource, SymbolsNameTheKernelAndDtype) {
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::Offsets, .dtype = kInt32}), "ember_index_offsets_i32");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::PutAdd, .dtype = kHalf}), "ember_index_put_add_f16");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::ScatterAdd, .dtype = kBFloat16}),
            "ember_scatter_add_bf16");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::GatherDim, .dtype = kBool}), "ember_gather_b8");
}

TEST(CudaIndexSource, AccumulationsAddInTheMathTypeInOneThreadsOrder) {
  const std::string put = render_index(IndexKernel{.kind = IndexKernelKind::PutAdd, .dtype = kHalf});
  EXPECT_NE(put.find("ember_dev::index_put<true>(self, values, adv, g);"), std::string::npos) << put;
  EXPECT_NE(put.find("return cvt<T>(cvt<M>(a) + cvt<M>(b));"), std::string::npos);
  const std::string scatter = render_index(IndexKernel{.kind = IndexKernelKind::ScatterDim, .dtype = kFloat});
  EXPECT_NE(scatter.find("ember_dev::scatter_dim<false>(index, src, out, n, is, ss, os, g);"), std::string::npos);
}

TEST(CudaIndexGeometry, PreAndPostDimsKeepTheirStridesAndDropSizeOne) {
  const Tensor t = empty({2, 1, 5, 3, 4});
  const IndexGeometry g = make_index_geometry(t, {0, 1}, 7, {3, 4});
  EXPECT_EQ(g.P, 2);
  EXPECT_EQ(g.B, 7);
  EXPECT_EQ(g.Q, 12);
  ASSERT_EQ(g.pre_ndim, 1);
  EXPECT_EQ(g.pre_sizes[0], 2);
  EXPECT_EQ(g.pre_strides[0], 60);
  ASSERT_EQ(g.post_ndim, 2);
  EXPECT_EQ(g.post_sizes[0], 3);
  EXPECT_EQ(g.post_strides[0], 4);
  EXPECT_EQ(g.post_sizes[1], 4);
  EXPECT_EQ(g.post_strides[1], 1);
}

TEST(CudaIndexGeometry, AnEmptyPreDimMakesNoWork) {
  const IndexGeometry g = make_index_geometry(empty({0, 3}), {0}, 4, {});
  EXPECT_EQ(g.P * g.B * g.Q, 0);
}

TEST(CudaIndexGeometry, MoreThanSixteenDimsAroundTheIndexIsNotImplemented) {
  const std::vector<int64_t> sizes(18, 2);
  const Tensor t = ember::empty(IntArrayRef(sizes));
  std::vector<int64_t> post;
  for (int64_t d = 1; d < 18; ++d) post.push_back(d);
  const std::string msg = testing::error_of([&] { make_index_geometry(t, {}, 2, post); },
                                            ErrorKind::NotImplementedError);
  EXPECT_NE(msg.find("at most 16 dims after the indexed ones; this call has 17"), std::string::npos) << msg;
}

TEST(CudaFacets, TheIndexingOpsHaveCudaKernels) {
  for (const char* n : {"index_select", "gather", "scatter.src", "scatter.value", "scatter_add", "index.Tensor", "index_put", "embedding"}) {
    const ops::OpDef& op = ops::registry().get(std::string("aten::") + n);
    EXPECT_TRUE(static_cast<bool>(op.cuda)) << n << " has no CUDA kernel";
    EXPECT_TRUE(op.cuda_site.present()) << n;
  }
}

TEST_F(Nvrtc, EveryIndexingKernelCompilesForSm90ForEveryDtype) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool})
    for (IndexKernelKind kind : kDataKinds) {
      const IndexKernel k{.kind = kind, .dtype = t};
      EXPECT_EQ(compile_cubin(render_index(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
  for (ScalarType t : {kInt64, kInt32}) {
    const IndexKernel k{.kind = IndexKernelKind::Offsets, .dtype = t};
    EXPECT_EQ(compile_cubin(render_index(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
