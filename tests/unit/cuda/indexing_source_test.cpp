// The CUDA indexing kernels (advanced indexing offsets, gather/put at offsets, gather,
// scatter and scatter_reduce along a dim, masked_scatter): their symbols, the geometry of the dims around the indexed ones,
// and NVRTC compiling every kernel for every dtype for sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/reduce_source.h"
#include "nvrtc_fixture.h"
#include "ops/registry.h"
#include "support/error_of.h"

namespace ember::kernels::cuda {
namespace {

const std::vector<IndexKernelKind> kDataKinds = {IndexKernelKind::Gather,     IndexKernelKind::Put,
                                                 IndexKernelKind::PutAdd,     IndexKernelKind::GatherDim,
                                                 IndexKernelKind::ScatterDim, IndexKernelKind::ScatterAdd};

TEST(CudaIndexSource, SymbolsNameTheKernelAndDtype) {
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::Offsets, .dtype = kInt32}), "ember_index_offsets_i32");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::PutAdd, .dtype = kHalf}), "ember_index_put_add_f16");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::ScatterAdd, .dtype = kBFloat16}),
            "ember_scatter_add_bf16");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::GatherDim, .dtype = kBool}), "ember_gather_b8");
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::Put, .dtype = kFloat, .sorted = true}),
            "ember_index_put_sorted_f32");
}

TEST(CudaIndexSource, AccumulationsAddInTheMathTypeInOneThreadsOrder) {
  const std::string put = render_index(IndexKernel{.kind = IndexKernelKind::PutAdd, .dtype = kHalf});
  EXPECT_NE(put.find("ember_dev::index_put<true>(self, values, adv, g);"), std::string::npos) << put;
  EXPECT_NE(put.find("return cvt<T>(cvt<M>(a) + cvt<M>(b));"), std::string::npos);
  const std::string scatter = render_index(IndexKernel{.kind = IndexKernelKind::ScatterDim, .dtype = kFloat});
  EXPECT_NE(scatter.find("ember_dev::scatter_dim<false>(index, src, out, n, is, ss, os, g);"), std::string::npos);
}

TEST(CudaIndexSource, ManyWritesOverFewTargetsGoThroughTheSortedKernels) {
  EXPECT_TRUE(use_sorted_writes(100000, 1));      // x[idx] = v on a 1-d x
  EXPECT_TRUE(use_sorted_writes(4096, 768));      // embedding's backward
  EXPECT_FALSE(use_sorted_writes(8, 1));          // a few writes: one thread walks them
  EXPECT_FALSE(use_sorted_writes(100, 1 << 20));  // enough threads already
  const std::string src =
      render_index(IndexKernel{.kind = IndexKernelKind::ScatterAdd, .dtype = kHalf, .sorted = true});
  EXPECT_NE(src.find("ember_dev::scatter_sorted<true>(sorted, perm, src, out, n, st, ss, os, g);"), std::string::npos);
}

TEST(CudaIndexSource, ScatterReduceNamesItsReductionAndWalksEachLineInOrder) {
  const IndexKernel amin{.kind = IndexKernelKind::ScatterReduce, .dtype = kHalf, .reduce = cpu::ScatterReduce::kAmin};
  EXPECT_EQ(kernel_symbol(amin), "ember_scatter_reduce_amin_f16");
  const IndexKernel mean{.kind = IndexKernelKind::ScatterReduce, .dtype = kInt32, .reduce = cpu::ScatterReduce::kMean};
  EXPECT_EQ(kernel_symbol(mean), "ember_scatter_reduce_mean_i32");
  // The rendered call picks the reduction by cpu::ScatterReduce's value (mean is 2).
  EXPECT_NE(render_index(mean).find("ember_dev::scatter_reduce_dim<2>(index, src, out, cnt, n, is, ss, os, cs, L, "
                                    "include_self, g);"),
            std::string::npos);
  EXPECT_EQ(kernel_symbol(IndexKernel{.kind = IndexKernelKind::MaskedScatter, .dtype = kBool}),
            "ember_masked_scatter_b8");
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
  const std::string msg =
      testing::error_of([&] { make_index_geometry(t, {}, 2, post); }, ErrorKind::NotImplementedError);
  EXPECT_NE(msg.find("at most 16 dims after the indexed ones; this call has 17"), std::string::npos) << msg;
}

TEST(CudaFacets, TheIndexingOpsHaveCudaKernels) {
  for (const char* n : {"index_select", "gather", "scatter.src", "scatter.value", "scatter_add", "scatter_reduce.two",
                        "masked_scatter", "index.Tensor", "index_put", "embedding"}) {
    const ops::OpDef& op = ops::registry().get(std::string("aten::") + n);
    EXPECT_TRUE(static_cast<bool>(op.cuda)) << n << " has no CUDA kernel";
    EXPECT_TRUE(op.cuda_site.present()) << n;
  }
}

TEST_F(Nvrtc, EveryIndexingKernelCompilesForSm90) {
  auto compiles = [](const IndexKernel& k) {
    EXPECT_EQ(compile_cubin(render_index(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
  };
  // The accumulating kernels do arithmetic in each dtype's math type: every dtype. The
  // others only move elements: one dtype of each width and bool.
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool})
    for (IndexKernelKind kind : {IndexKernelKind::PutAdd, IndexKernelKind::ScatterAdd})
      for (bool sorted : {false, true}) compiles({kind, t, sorted});
  for (ScalarType t : {kDouble, kFloat, kBFloat16, kInt8, kBool})
    for (IndexKernelKind kind : kDataKinds)
      if (kind != IndexKernelKind::PutAdd && kind != IndexKernelKind::ScatterAdd) compiles({kind, t});
  for (ScalarType t : {kDouble, kHalf, kBool})
    for (IndexKernelKind kind : {IndexKernelKind::Put, IndexKernelKind::ScatterDim}) compiles({kind, t, true});
  for (ScalarType t : {kInt64, kInt32}) compiles({IndexKernelKind::Offsets, t});
  // scatter_reduce combines in each dtype's math type (bool's is int64): every dtype and
  // every reduction; masked_scatter moves elements.
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    for (cpu::ScatterReduce r : {cpu::ScatterReduce::kSum, cpu::ScatterReduce::kProd, cpu::ScatterReduce::kMean,
                                 cpu::ScatterReduce::kAmax, cpu::ScatterReduce::kAmin})
      compiles({.kind = IndexKernelKind::ScatterReduce, .dtype = t, .reduce = r});
    compiles({.kind = IndexKernelKind::MaskedScatter, .dtype = t});
  }
}

TEST_F(Nvrtc, TheRangeChecksReductionsCompileForSm90) {
  // value_range (host_checks.h): min and max of indices and of bernoulli's probabilities,
  // as doubles.
  for (ScalarType t : {kInt64, kInt32, kFloat, kDouble, kHalf, kBFloat16})
    for (Reduction op : {Reduction::Min, Reduction::Max}) {
      const ReduceKernel k{.op = op, .in = t, .out = kDouble};
      EXPECT_EQ(compile_cubin(render_reduce(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
}

}  // namespace
}  // namespace ember::kernels::cuda
