// Host tests of the inductor's CUDA code generator (inductor/codegen_cuda*.cpp): graphs
// whose tensors live on cuda:0 (graph text: no device needed) lower and fuse as on the
// CPU, their generated CUDA C++ NVRTC-compiles for sm_90, and the launch plan's geometry
// (vector or scalar pointwise kernels, a warp or a block per row, exact grids) is the one
// the generator promises.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "ember/graph.h"
#include "generated_cuda.h"
#include "inductor/codegen_cuda.h"
#include "inductor/inductor.h"
#include "inductor/pipeline.h"
#include "kernels/cuda/nvrtc.h"
#include "nvrtc_fixture.h"
#include "support/log_capture.h"

namespace ember::inductor {
namespace {

using InductorCudaSource = kernels::cuda::Nvrtc;

/// How many times `needle` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// NVRTC compiles the source for sm_90 (the H100's architecture); the failure names the log.
void expect_compiles(const Generated& r) {
  EXPECT_NO_THROW(kernels::cuda::compile_cubin(r.code.source, "sm_90")) << r.code.source;
}

TEST_F(InductorCudaSource, PointwiseChainIsOneVectorKernelThatCompilesForSm90) {
  // W1: sigmoid(relu(x * 2 + 1) * x - 0.5) * tanh(x) + clamp(exp(x), max=10).
  const Generated r = generate(R"(graph w1 {
  %x : f32[300, 257] device=cuda:0 = placeholder[x]
  %mul : f32[300, 257] device=cuda:0 = aten::mul.Scalar(%x, 2)
  %add : f32[300, 257] device=cuda:0 = aten::add.Scalar(%mul, 1, 1)
  %relu : f32[300, 257] device=cuda:0 = aten::relu(%add)
  %mul_1 : f32[300, 257] device=cuda:0 = aten::mul.Tensor(%relu, %x)
  %sub : f32[300, 257] device=cuda:0 = aten::sub.Scalar(%mul_1, 0.5, 1)
  %sigmoid : f32[300, 257] device=cuda:0 = aten::sigmoid(%sub)
  %tanh : f32[300, 257] device=cuda:0 = aten::tanh(%x)
  %mul_2 : f32[300, 257] device=cuda:0 = aten::mul.Tensor(%sigmoid, %tanh)
  %exp : f32[300, 257] device=cuda:0 = aten::exp(%x)
  %clamp : f32[300, 257] device=cuda:0 = aten::clamp(%exp, None, 10)
  %add_1 : f32[300, 257] device=cuda:0 = aten::add.Tensor(%mul_2, %clamp, 1)
  return (%add_1)
})");
  ASSERT_EQ(r.kernels.size(), 1u);
  ASSERT_EQ(r.code.launches.size(), 1u);
  const CudaLaunch& l = r.code.launches[0];
  EXPECT_TRUE(l.aligned_check) << "contiguous float32: 4 elements per 16-byte access";
  EXPECT_EQ(l.block, 256);
  EXPECT_EQ(l.grid, (300 * 257 / 4 + 255) / 256) << "one thread per 4 elements, exact";
  EXPECT_NE(r.code.source.find("ember_dev::Vec<float, 4>"), std::string::npos) << r.code.source;
  EXPECT_NE(r.code.source.find("scalar_ops.def: sigmoid"), std::string::npos) << "formulas come from the table";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, HalfAndBFloat16PointwiseOverTransposedInputsCompileAsStridedKernels) {
  const Generated r = generate(R"(graph halves {
  %x : f16[64, 48] device=cuda:0 = placeholder[x]
  %y : bf16[48, 64] device=cuda:0 = placeholder[y]
  %t : f16[48, 64] strides=[1, 48] device=cuda:0 = aten::t(%x)
  %gelu : f16[48, 64] device=cuda:0 = aten::gelu(%t, "tanh")
  %mul : f16[48, 64] device=cuda:0 = aten::mul.Scalar(%gelu, 0.25)
  %cast : bf16[48, 64] device=cuda:0 = aten::_to_copy(%mul, torch.bfloat16, None, None, None, False, None)
  %add : bf16[48, 64] device=cuda:0 = aten::add.Tensor(%cast, %y, 1)
  %lt : b8[48, 64] device=cuda:0 = aten::lt.Scalar(%y, 0)
  %where : bf16[48, 64] device=cuda:0 = aten::where.self(%lt, %add, %y)
  return (%where, %mul)
})");
  ASSERT_FALSE(r.kernels.empty());
  for (const CudaLaunch& l : r.code.launches) EXPECT_GT(l.grid, 0);
  EXPECT_NE(r.code.source.find("ember_dev::cvt<float>(in"), std::string::npos) << "half loads compute in float";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, ShortRowsGoAWarpPerRowAndLongRowsABlockPerRow) {
  const Generated r = generate(R"(graph rows {
  %x : f32[64, 4096] device=cuda:0 = placeholder[x]
  %y : f32[33, 17] device=cuda:0 = placeholder[y]
  %sum : f32[64] device=cuda:0 = aten::sum.dim_IntList(%x, [1], False, None)
  %mul : f32[64] device=cuda:0 = aten::mul.Scalar(%sum, 0.5)
  %amax : f32[1, 17] device=cuda:0 = aten::amax(%y, [0], True)
  %var : f32[64] device=cuda:0 = aten::var.correction(%x, [1], 1, False)
  return (%mul, %amax, %var)
})");
  ASSERT_EQ(r.code.launches.size(), 3u);
  int warp_rows = 0, block_rows = 0;
  for (const CudaLaunch& l : r.code.launches) {
    if (l.how.find("a warp per row") != std::string::npos) {
      ++warp_rows;
      EXPECT_EQ(l.grid, (17 + 3) / 4) << "17 rows of 33, 4 warps per block";
    } else {
      ++block_rows;
      EXPECT_EQ(l.grid, 64) << "a block per row of 4096";
    }
  }
  EXPECT_EQ(warp_rows, 1);
  EXPECT_EQ(block_rows, 2);
  expect_compiles(r);
}

TEST_F(InductorCudaSource, ColumnReductionsGo32RowsABlockWithItsWarpsSplittingEachRow) {
  const Generated r = generate(R"(graph columns {
  %g : f32[256, 4096] device=cuda:0 = placeholder[g]
  %h : f16[8192, 16] device=cuda:0 = placeholder[h]
  %sum : f32[1, 4096] device=cuda:0 = aten::sum.dim_IntList(%g, [0], True, None)
  %var : f32[4096] device=cuda:0 = aten::var.correction(%g, [0], 1, False)
  %mean : f16[16] device=cuda:0 = aten::mean.dim(%h, [0], False, None)
  return (%sum, %var, %mean)
})");
  ASSERT_EQ(r.code.launches.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NE(r.code.launches[i].how.find("32 rows a block, its warps splitting each row (columns)"), std::string::npos)
        << r.code.launches[i].how;
    EXPECT_EQ(r.code.launches[i].grid, 4096 / 32);
    EXPECT_EQ(r.code.launches[i].block, 256) << "8 warps, each walking every 8th reduced element";
  }
  // Each warp's partial results are combined through shared memory, the variance's mean
  // before its second pass.
  EXPECT_EQ(occurrences(r.code.source, "ember_dev::column_reduce("), 3u) << r.code.source;
  EXPECT_NE(r.code.launches[2].how.find("a block per row"), std::string::npos) << "16 columns: too few for a thread each";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, FewLongRowsSplitIntoPartsCombinedByASecondKernel) {
  const Generated r = generate(R"(graph split {
  %x : f32[1024, 1024] device=cuda:0 = placeholder[x]
  %y : bf16[3, 70000] device=cuda:0 = placeholder[y]
  %sum : f32[] device=cuda:0 = aten::sum(%x, None)
  %mul : f32[] device=cuda:0 = aten::mul.Scalar(%sum, 2)
  %mean : bf16[3] device=cuda:0 = aten::mean.dim(%y, [1], False, None)
  %amax : f32[1024] device=cuda:0 = aten::amax(%x, [1], False)
  return (%mul, %mean, %amax)
})");
  ASSERT_EQ(r.code.launches.size(), 3u);
  const CudaLaunch& full = r.code.launches[0];
  EXPECT_EQ(full.split_symbol, r.kernels[0].name + "_split") << "one row of 2^20: split";
  EXPECT_EQ(full.split_grid, 256) << "parts of at least 4096 elements";
  EXPECT_EQ(full.grid, 1) << "a warp combines the row's parts";
  EXPECT_EQ(full.workspace_bytes, 256u * 4);
  const CudaLaunch& mean = r.code.launches[1];
  EXPECT_EQ(mean.split_grid, 3 * 17) << "3 rows of 70000, 17 parts each";
  EXPECT_TRUE(r.code.launches[2].split_symbol.empty()) << "1024 rows: no split";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, SoftmaxRowWithEpilogueAndLayerNormCompile) {
  const Generated r = generate(R"(graph norms {
  %x : f16[128, 1000] device=cuda:0 = placeholder[x]
  %z : bf16[8, 2048] device=cuda:0 = placeholder[z]
  %w : f32[2048] device=cuda:0 = placeholder[w]
  %b : f32[2048] device=cuda:0 = placeholder[b]
  %softmax : f16[128, 1000] device=cuda:0 = aten::_softmax(%x, -1, False)
  %mul : f16[128, 1000] device=cuda:0 = aten::mul.Scalar(%softmax, 3)
  %ln : (bf16[8, 2048] device=cuda:0, bf16[8, 1] device=cuda:0, bf16[8, 1] device=cuda:0) = aten::native_layer_norm(%z, [2048], %w, %b, 1e-05)
  %logsm : f16[128, 1000] device=cuda:0 = aten::_log_softmax(%x, 1, False)
  return (%mul, %ln.0, %ln.1, %ln.2, %logsm)
})");
  ASSERT_EQ(r.kernels.size(), 3u) << "softmax with its epilogue, layer norm, log_softmax";
  EXPECT_EQ(r.code.launches[0].grid, 128 / 4) << "rows of 1000 go a warp per row";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, SoftmaxRowsMultiplyByTheRowsReciprocal) {
  // One division per row, not per element: in registers (rows of 1024) and re-reading the
  // row (rows of 10000).
  const Generated r = generate(R"(graph softmaxes {
  %x : f32[64, 1024] device=cuda:0 = placeholder[x]
  %y : f32[4, 10000] device=cuda:0 = placeholder[y]
  %s : f32[64, 1024] device=cuda:0 = aten::_softmax(%x, -1, False)
  %t : f32[4, 10000] device=cuda:0 = aten::_softmax(%y, -1, False)
  return (%s, %t)
})");
  ASSERT_EQ(r.code.launches.size(), 2u);
  const std::string& src = r.code.source;
  EXPECT_EQ(occurrences(src, "const float rsum = float(1) / sum;"), 2u) << src;
  EXPECT_NE(src.find("x * rsum"), std::string::npos) << src;
  EXPECT_NE(src.find("ember_dev::exp(x - mx) * rsum"), std::string::npos) << src;
  EXPECT_EQ(src.find("/ sum"), src.find("/ sum;")) << "no element divided by the sum";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, FloatLayerNormRowsTakeRsqrtfAsPyTorchsCudaKernelAndDoubleRowsOneOverSqrt) {
  const Generated r = generate(R"(graph norms {
  %x : f32[64, 1024] device=cuda:0 = placeholder[x]
  %h : f16[64, 1024] device=cuda:0 = placeholder[h]
  %d : f64[64, 1024] device=cuda:0 = placeholder[d]
  %a : (f32[64, 1024] device=cuda:0, f32[64, 1] device=cuda:0, f32[64, 1] device=cuda:0) = aten::native_layer_norm(%x, [1024], None, None, 1e-05)
  %b : (f16[64, 1024] device=cuda:0, f32[64, 1] device=cuda:0, f32[64, 1] device=cuda:0) = aten::native_layer_norm(%h, [1024], None, None, 1e-05)
  %c : (f64[64, 1024] device=cuda:0, f64[64, 1] device=cuda:0, f64[64, 1] device=cuda:0) = aten::native_layer_norm(%d, [1024], None, None, 1e-05)
  return (%a.0, %b.0, %c.0)
})");
  ASSERT_EQ(r.code.launches.size(), 3u);
  const std::string& src = r.code.source;
  EXPECT_EQ(occurrences(src, "const float rstd = rsqrtf("), 2u) << "float and half rows (their math in float)\n" << src;
  EXPECT_NE(src.find("const double rstd = double(1) / ember_dev::sqrt("), std::string::npos) << src;
  expect_compiles(r);
}

TEST_F(InductorCudaSource, SoftmaxAndLayerNormRowsThatFitHoldTheRowInRegisters) {
  const Generated r = generate(R"(graph registers {
  %x : f32[64, 1024] device=cuda:0 = placeholder[x]
  %h : f16[33, 77] device=cuda:0 = placeholder[h]
  %z : f32[16, 768] device=cuda:0 = placeholder[z]
  %w : f32[768] device=cuda:0 = placeholder[w]
  %b : f32[768] device=cuda:0 = placeholder[b]
  %q : bf16[4, 4096] device=cuda:0 = placeholder[q]
  %mul : f32[64, 1024] device=cuda:0 = aten::mul.Scalar(%x, 2)
  %softmax : f32[64, 1024] device=cuda:0 = aten::_softmax(%mul, -1, False)
  %add : f32[64, 1024] device=cuda:0 = aten::add.Tensor(%softmax, %x, 1)
  %logsm : f16[33, 77] device=cuda:0 = aten::_log_softmax(%h, 1, False)
  %ln : (f32[16, 768] device=cuda:0, f32[16, 1] device=cuda:0, f32[16, 1] device=cuda:0) = aten::native_layer_norm(%z, [768], %w, %b, 1e-05)
  %ln2 : (bf16[4, 4096] device=cuda:0, bf16[4, 1] device=cuda:0, bf16[4, 1] device=cuda:0) = aten::native_layer_norm(%q, [4096], None, None, 1e-05)
  return (%add, %logsm, %ln.0, %ln.1, %ln.2, %ln2.0)
})");
  ASSERT_EQ(r.code.launches.size(), 4u) << "softmax with its prologue and epilogue, log_softmax, two layer norms";
  for (const CudaLaunch& l : r.code.launches)
    EXPECT_NE(l.how.find("the row in registers"), std::string::npos) << l.how;
  const CudaLaunch& softmax = r.code.launches[0];
  EXPECT_NE(softmax.how.find("a warp per row, the row in registers (8 x 4 slots per lane, 4 elements per access"),
            std::string::npos)
      << softmax.how;
  EXPECT_TRUE(softmax.aligned_check) << "rows of 1024 floats start 16-byte aligned";
  EXPECT_EQ(softmax.grid, 64 / 4);
  EXPECT_FALSE(r.code.launches[1].aligned_check) << "rows of 77 halves: not a whole number of 8-element groups";
  EXPECT_NE(r.code.launches[1].how.find("(3 x 1 slots per lane)"), std::string::npos) << r.code.launches[1].how;
  EXPECT_NE(r.code.launches[3].how.find("a block per row, the row in registers (2 x 8 slots per thread"),
            std::string::npos)
      << r.code.launches[3].how;
  EXPECT_EQ(r.code.launches[3].block, 256);
  EXPECT_EQ(r.code.launches[3].grid, 4);
  // The rows are read once: 16-byte loads into the slots, no loop re-reading the row.
  const std::string& src = r.code.source;
  EXPECT_NE(src.find("float v[32];"), std::string::npos) << src;
  EXPECT_NE(src.find("const ember_dev::Vec<float, 4> w0 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("*reinterpret_cast<ember_dev::Vec<float, 4>*>(out0 + c0 + j) = wo;"), std::string::npos) << src;
  EXPECT_NE(src.find("ember_dev::Vec<ember_dev::BFloat16, 8>"), std::string::npos) << src;
  EXPECT_EQ(src.find("for (IDX r = lane;"), std::string::npos) << "no pass re-reads a row from memory:\n" << src;
  expect_compiles(r);
}

TEST_F(InductorCudaSource, LongOrMisalignedRowsLeaveTheRegisterVectorForm) {
  const Generated r = generate(R"(graph long_rows {
  %x : f32[4, 20000] device=cuda:0 = placeholder[x]
  %y : f32[8, 767] strides=[769, 1] device=cuda:0 = placeholder[y]
  %softmax : f32[4, 20000] device=cuda:0 = aten::_softmax(%x, -1, False)
  %z : f32[5, 1] device=cuda:0 = placeholder[z]
  %d : f64[3, 50] device=cuda:0 = placeholder[d]
  %softmax_1 : f32[8, 767] device=cuda:0 = aten::_softmax(%y, -1, False)
  %softmax_2 : f32[5, 1] device=cuda:0 = aten::_softmax(%z, -1, False)
  %logsm : f64[3, 50] device=cuda:0 = aten::_log_softmax(%d, -1, False)
  return (%softmax, %softmax_1, %softmax_2, %logsm)
})");
  ASSERT_EQ(r.code.launches.size(), 4u);
  EXPECT_EQ(r.code.launches[0].how.find("registers"), std::string::npos) << "rows of 20000 are re-read at each pass";
  EXPECT_NE(r.code.source.find("for (IDX r = lane; r < 20000;"), std::string::npos) << r.code.source;
  const CudaLaunch& odd = r.code.launches[1];
  EXPECT_NE(odd.how.find("the row in registers (24 x 1 slots per lane)"), std::string::npos) << odd.how;
  EXPECT_FALSE(odd.aligned_check) << "rows 769 floats apart: element by element";
  EXPECT_NE(r.code.launches[2].how.find("the row in registers (1 x 1 slots per lane)"), std::string::npos)
      << r.code.launches[2].how;
  EXPECT_NE(r.code.launches[3].how.find("(1 x 2 slots per lane, 2 elements per access when aligned)"), std::string::npos)
      << "doubles: 2 per 16-byte access; " << r.code.launches[3].how;
  expect_compiles(r);
}

TEST(InductorCudaRowForm, TheRowFormFollowsTheKindAndTheRowLength) {
  using cuda_codegen::row_form;
  EXPECT_EQ(row_form(RowKind::Softmax, 1), cuda_codegen::RowForm::WarpRegisters);
  EXPECT_EQ(row_form(RowKind::LogSoftmax, 1024), cuda_codegen::RowForm::WarpRegisters);
  EXPECT_EQ(row_form(RowKind::LayerNorm, 1025), cuda_codegen::RowForm::BlockRegisters);
  EXPECT_EQ(row_form(RowKind::Softmax, cuda_codegen::kRegisterRowMax), cuda_codegen::RowForm::BlockRegisters);
  EXPECT_EQ(row_form(RowKind::Softmax, cuda_codegen::kRegisterRowMax + 1), cuda_codegen::RowForm::Passes);
  EXPECT_EQ(row_form(RowKind::Sum, 100), cuda_codegen::RowForm::Passes) << "reductions read their row once anyway";
  EXPECT_EQ(cuda_codegen::register_row_block(4096), 256) << "16 elements per thread";
  EXPECT_EQ(cuda_codegen::register_row_block(4097), 512);
}

TEST_F(InductorCudaSource, ZeroDimValuesAreRecomputedByTheirReadersInsteadOfAKernelEach) {
  // A capturable AdamW step of one parameter (the step count on the device): the bias
  // corrections and the step size are 0-dim chains read by the update. They are computed
  // again in the update's kernel; the new step count, a graph output, keeps its own kernel.
  const Generated r = generate(R"(graph adamw {
  %param : f32[1000] device=cuda:0 = placeholder[param]
  %grad : f32[1000] device=cuda:0 = placeholder[grad]
  %m : f32[1000] device=cuda:0 = placeholder[m]
  %v : f32[1000] device=cuda:0 = placeholder[v]
  %step : f32[] device=cuda:0 = placeholder[step]
  %add : f32[] device=cuda:0 = aten::add.Scalar(%step, 1, 1)
  %mul : f32[1000] device=cuda:0 = aten::mul.Scalar(%param, 0.99999)
  %mul_1 : f32[1000] device=cuda:0 = aten::mul.Scalar(%m, 0.9)
  %add_1 : f32[1000] device=cuda:0 = aten::add.Tensor(%mul_1, %grad, 0.1)
  %mul_2 : f32[1000] device=cuda:0 = aten::mul.Scalar(%grad, 0.001)
  %mul_3 : f32[1000] device=cuda:0 = aten::mul.Tensor(%mul_2, %grad)
  %mul_4 : f32[1000] device=cuda:0 = aten::mul.Scalar(%v, 0.999)
  %add_2 : f32[1000] device=cuda:0 = aten::add.Tensor(%mul_4, %mul_3, 1)
  %pow : f32[] device=cuda:0 = aten::pow.Scalar(0.9, %add)
  %neg : f32[] device=cuda:0 = aten::neg(%pow)
  %add_3 : f32[] device=cuda:0 = aten::add.Scalar(%neg, 1.0, 1)
  %pow_1 : f32[] device=cuda:0 = aten::pow.Scalar(0.999, %add)
  %neg_1 : f32[] device=cuda:0 = aten::neg(%pow_1)
  %add_4 : f32[] device=cuda:0 = aten::add.Scalar(%neg_1, 1.0, 1)
  %reciprocal : f32[] device=cuda:0 = aten::reciprocal(%add_3)
  %mul_5 : f32[] device=cuda:0 = aten::mul.Scalar(%reciprocal, 0.001)
  %neg_2 : f32[] device=cuda:0 = aten::neg(%mul_5)
  %sqrt : f32[] device=cuda:0 = aten::sqrt(%add_4)
  %reciprocal_1 : f32[] device=cuda:0 = aten::reciprocal(%neg_2)
  %mul_6 : f32[] device=cuda:0 = aten::mul.Scalar(%reciprocal_1, 1e-08)
  %mul_7 : f32[] device=cuda:0 = aten::mul.Tensor(%sqrt, %neg_2)
  %sqrt_1 : f32[1000] device=cuda:0 = aten::sqrt(%add_2)
  %div : f32[1000] device=cuda:0 = aten::div.Tensor(%sqrt_1, %mul_7)
  %add_5 : f32[1000] device=cuda:0 = aten::add.Tensor(%div, %mul_6, 1)
  %div_1 : f32[1000] device=cuda:0 = aten::div.Tensor(%add_1, %add_5)
  %add_6 : f32[1000] device=cuda:0 = aten::add.Tensor(%mul, %div_1, 1)
  return (%add_6, %add_1, %add_2, %add)
})");
  ASSERT_EQ(r.kernels.size(), 2u) << r.code.source;
  EXPECT_EQ(r.kernels[0].root->node->name(), "add");
  EXPECT_TRUE(r.kernels[0].root->sizes.empty());
  const Kernel& update = r.kernels[1];
  EXPECT_EQ(update.root->sizes, std::vector<int64_t>{1000});
  for (const char* recomputed : {"pow", "neg_2", "mul_6", "mul_7"})
    EXPECT_TRUE(r.lowered.recomputed.count(r.graph->find(recomputed))) << recomputed;
  EXPECT_FALSE(r.lowered.recomputed.count(r.graph->find("add"))) << "a graph output keeps its kernel";
  // The update reads the step count itself, not a buffer of a 0-dim kernel.
  std::set<std::string> loaded, computed;
  for (const PointwiseNode* n : update.nodes) computed.insert(n->node->name());
  for (const PointwiseNode* n : update.nodes)
    for (const PwOp& op : n->body)
      if (op.kind == PwOp::Kind::Load && !computed.count(op.value.node->name())) loaded.insert(op.value.node->name());
  EXPECT_EQ(loaded, (std::set<std::string>{"param", "grad", "m", "v", "step"}));
  expect_compiles(r);
}

TEST_F(InductorCudaSource, KernelsOverSizeSymbolsTakeTheirValuesAndCompileForSm90) {
  // x's rows (s0) and the attention-like rows' length (s1) are symbols: every kernel takes
  // their values (ember_dev::Sizes), its bounds and offsets are expressions over them, and
  // its grid is computed per call from its work items (CudaLaunch::work). Layout decisions
  // hold for every size: the layer norm's rows of 768 stay in registers, the softmax rows
  // of s1 elements do not (the slots are sized for a constant length), the column sum's
  // 4096 rows go 32 a block whatever s0 is.
  const Generated r = generate(R"(graph dynamic {
  symbol s0 = 8 for x.size(0) [2, inf]
  symbol s1 = 77 for m.size(1) [2, inf]
  %x : f32[s0, 768] device=cuda:0 = placeholder[x]
  %w : f32[768] device=cuda:0 = placeholder[w]
  %b : f32[768] device=cuda:0 = placeholder[b]
  %m : f32[s0, s1] device=cuda:0 = placeholder[m]
  %g : f32[s0, 4096] device=cuda:0 = placeholder[g]
  %mul : f32[s0, 768] device=cuda:0 = aten::mul.Scalar(%x, 2)
  %ln : (f32[s0, 768] device=cuda:0, f32[s0, 1] device=cuda:0, f32[s0, 1] device=cuda:0) = aten::native_layer_norm(%mul, [768], %w, %b, 1e-05)
  %softmax : f32[s0, s1] device=cuda:0 = aten::_softmax(%m, -1, False)
  %var : f32[s0] device=cuda:0 = aten::var.correction(%m, [1], 1, False)
  %sum : f32[1, 4096] device=cuda:0 = aten::sum.dim_IntList(%g, [0], True, None)
  %t : f32[s1, s0] strides=[1, s1] device=cuda:0 = aten::t(%m)
  %add : f32[s1, s0] strides=[1, s1] device=cuda:0 = aten::add.Scalar(%t, 1, 1)
  return (%ln.0, %softmax, %var, %sum, %add)
})");
  ASSERT_EQ(r.code.launches.size(), 5u) << r.code.source;
  const std::string& src = r.code.source;
  EXPECT_EQ(occurrences(src, ", const ember_dev::Sizes<2> ks) {"), 5u) << src;
  const std::vector<int64_t> ks = {5, 1030};  // a call's s0 and s1
  std::map<std::string, const CudaLaunch*> by_node;
  for (size_t k = 0; k < r.kernels.size(); ++k) {
    const Kernel& kernel = r.kernels[k];
    by_node[(kernel.root ? kernel.root->node : kernel.row->node)->name()] = &r.code.launches[k];
    EXPECT_TRUE(r.code.launches[k].takes_sizes) << kernel.name;
    EXPECT_EQ(r.code.launches[k].candidates.size(), 1u) << "not tuned: one size's times hold for no other";
  }
  ASSERT_TRUE(by_node.count("ln") && by_node.count("softmax") && by_node.count("var") && by_node.count("sum") &&
              by_node.count("add"))
      << src;
  const CudaLaunch& ln = *by_node["ln"];
  EXPECT_NE(ln.how.find("the row in registers"), std::string::npos) << ln.how;
  EXPECT_EQ(core::sym::evaluate(ln.work, ks), 5) << "a row per x row";
  const CudaLaunch& softmax = *by_node["softmax"];
  EXPECT_EQ(softmax.how.find("registers"), std::string::npos) << softmax.how;
  EXPECT_NE(softmax.how.find("a warp per row"), std::string::npos) << "77 at the example sizes: " << softmax.how;
  EXPECT_EQ(heuristic_grid(softmax.tune, core::sym::evaluate(softmax.work, ks), softmax.block), 2) << "4 rows a block";
  EXPECT_NE(src.find("fmax(0.0, static_cast<double>(ks[1]) - 1.0)"), std::string::npos) << "var's divisor per call";
  const CudaLaunch& sum = *by_node["sum"];
  EXPECT_NE(sum.how.find("32 rows a block"), std::string::npos) << sum.how;
  EXPECT_EQ(heuristic_grid(sum.tune, core::sym::evaluate(sum.work, ks), sum.block), 4096 / 32);
  const CudaLaunch& add = *by_node["add"];
  EXPECT_FALSE(add.aligned_check) << "a transposed read: an element per thread";
  EXPECT_EQ(core::sym::evaluate(add.work, ks), 5 * 1030);
  EXPECT_NE(src.find("typedef long long IDX;"), std::string::npos) << "no size symbol is known to fit 31 bits";
  expect_compiles(r);
}

TEST_F(InductorCudaSource, AContiguousPointwiseKernelOverASymbolKeepsItsVectorPathAndTail) {
  const Generated r = generate(R"(graph w1 {
  symbol s0 = 300 for x.size(0) [2, inf]
  %x : f32[s0, 257] device=cuda:0 = placeholder[x]
  %mul : f32[s0, 257] device=cuda:0 = aten::mul.Scalar(%x, 2)
  %sigmoid : f32[s0, 257] device=cuda:0 = aten::sigmoid(%mul)
  return (%sigmoid)
})");
  ASSERT_EQ(r.code.launches.size(), 1u);
  const CudaLaunch& l = r.code.launches[0];
  EXPECT_TRUE(l.takes_sizes);
  EXPECT_TRUE(l.aligned_check) << "the two dims merge into one contiguous dim of 257 * s0";
  // Work items of 4 elements: ⌈257 s0 / 4⌉ at each call.
  EXPECT_EQ(core::sym::evaluate(l.work, std::vector<int64_t>{3}), (257 * 3 + 3) / 4);
  EXPECT_EQ(heuristic_grid(l.tune, core::sym::evaluate(l.work, std::vector<int64_t>{1000}), l.block),
            ((257 * 1000 + 3) / 4 + 255) / 256);
  EXPECT_NE(r.code.source.find("ember_dev::Vec<float, 4>"), std::string::npos) << r.code.source;
  EXPECT_NE(r.code.source.find("&& i < (257 * ks[0]); ++i)"), std::string::npos) << "the scalar tail:\n"
                                                                                 << r.code.source;
  expect_compiles(r);
}

TEST(InductorCudaLowering, AGraphWithMoreSizeSymbolsThanAKernelsParametersHoldRunsInTheInterpreterSayingWhy) {
  // Every kernel takes all the symbols' values as one by-value argument; 400 of them
  // (3.2 KB) beside the buffers would pass a launch's 4 KiB of parameters.
  std::string text = "graph many {\n";
  for (int i = 0; i < 400; ++i)
    text += "  symbol s" + std::to_string(i) + " = " + std::to_string(i + 2) + " for x" + std::to_string(i) +
            ".size(0) [2, inf]\n";
  for (int i = 0; i < 400; ++i)
    text += "  %x" + std::to_string(i) + " : f32[s" + std::to_string(i) + "] device=cuda:0 = placeholder[x" +
            std::to_string(i) + "]\n";
  text += "  %add : f32[s0] device=cuda:0 = aten::add.Scalar(%x0, 1, 1)\n  return (%add)\n}\n";
  std::unique_ptr<Graph> g = parse_graph(text);
  testing::LogCapture logs("inductor");
  (void)compile_fx_inner(*g, {});
  EXPECT_NE(logs.text().find("it has 400 size symbols, more than the 384 a CUDA kernel's parameters hold"),
            std::string::npos)
      << logs.text();
}

TEST_F(InductorCudaSource, GemmIsAnExternCallAndItsEpilogueAKernel) {
  const Generated r = generate(R"(graph linear {
  %x : f32[32, 64] device=cuda:0 = placeholder[x]
  %w : f32[128, 64] device=cuda:0 = placeholder[w]
  %bias : f32[128] device=cuda:0 = placeholder[bias]
  %t : f32[64, 128] strides=[1, 64] device=cuda:0 = aten::t(%w)
  %addmm : f32[32, 128] device=cuda:0 = aten::addmm(%bias, %x, %t, 1, 1)
  %gelu : f32[32, 128] device=cuda:0 = aten::gelu(%addmm, "none")
  return (%gelu)
})");
  for (const auto& [node, role] : r.lowered.roles) {
    if (node->target() == "aten::mm") {
      EXPECT_EQ(role, NodeRole::Extern) << "the GEMM runs cuBLASLt through its eager CUDA op";
    }
    if (node->target() == "aten::add.Tensor" || node->target() == "aten::gelu") {
      EXPECT_EQ(role, NodeRole::Pointwise) << node->target();
    }
  }
  ASSERT_EQ(r.kernels.size(), 1u) << "bias add + gelu";
  expect_compiles(r);
  EXPECT_NE(launch_plan_text(r.kernels, r.code).find(r.kernels[0].name + "<<<"), std::string::npos);
}

TEST(InductorCudaLowering, ACudaInputBesideACpuResultIsNotLowered) {
  // A node reading a tensor on another device (a copy to the CPU) stays an extern call.
  std::unique_ptr<Graph> g = parse_graph(R"(graph copies {
  %x : f32[4] device=cuda:0 = placeholder[x]
  %cpu : f32[4] = aten::_to_copy(%x, None, None, device("cpu"), None, False, None)
  %exp : f32[4] device=cuda:0 = aten::exp(%x)
  return (%cpu, %exp)
})");
  const LoweredGraph l = lower(*g);
  for (const auto& [node, role] : l.roles) {
    if (node->name() == "cpu") {
      EXPECT_EQ(role, NodeRole::Extern);
    }
    if (node->name() == "exp") {
      EXPECT_EQ(role, NodeRole::Pointwise);
    }
  }
}

TEST(InductorCudaLowering, ACausalMaskBuiltOnTheHostAndCopiedIsAHostConstantToFold) {
  // W5's attention: the mask made on the CPU inside the function, then copied to the GPU.
  std::unique_ptr<Graph> g = parse_graph(R"(graph w5 {
  %att : f32[2, 4, 16, 16] device=cuda:0 = placeholder[att]
  %y : f32[16, 16] = placeholder[y]
  %ones : b8[16, 16] = aten::ones([16, 16], torch.bool, None, None, None)
  %triu : b8[16, 16] = aten::triu(%ones, 1)
  %mask : b8[16, 16] device=cuda:0 = aten::_to_copy(%triu, None, None, device("cuda:0"), None, False, None)
  %masked : f32[2, 4, 16, 16] device=cuda:0 = aten::masked_fill.Scalar(%att, %mask, -inf)
  %moved : f32[16, 16] device=cuda:0 = aten::_to_copy(%y, None, None, device("cuda:0"), None, False, None)
  return (%masked, %moved)
})");
  const HostConstants hc = find_host_constants(*g);
  ASSERT_EQ(hc.copies.size(), 1u) << "the input's copy is not a constant";
  EXPECT_EQ((*hc.copies.begin())->name(), "mask");
  EXPECT_EQ(hc.host.size(), 2u) << "ones and triu";
  EXPECT_TRUE(hc.host.count(g->find("triu")));
  EXPECT_FALSE(hc.host.count(g->find("y"))) << "a function input is never a host constant";
}

TEST(InductorCudaLowering, RandomHostValuesAreNotHostConstants) {
  std::unique_ptr<Graph> g = parse_graph(R"(graph random {
  %rand : f32[4] = aten::rand([4], None, None, None, None)
  %moved : f32[4] device=cuda:0 = aten::_to_copy(%rand, None, None, device("cuda:0"), None, False, None)
  return (%moved)
})");
  EXPECT_TRUE(find_host_constants(*g).copies.empty()) << "a random value is drawn at every call";
}

// An optimizer's step on CUDA parameters keeps its step count on the host (a 0-dim CPU
// tensor, as PyTorch's AdamW does) and computes its bias corrections from it there: those
// CPU scalars are eager calls on the host, never device kernels (a kernel writing a host
// buffer is an illegal address on the GPU). The device kernel takes the CPU scalar it
// reads by value, so the update still fuses into one kernel.
TEST_F(InductorCudaSource, CpuScalarsInAGraphForCudaAreComputedOnTheHostAndPassedByValue) {
  const Generated r = generate(R"(graph step {
  %p : f32[64] device=cuda:0 = placeholder[p]
  %g : f32[64] device=cuda:0 = placeholder[g]
  %step : f32[] = placeholder[step]
  %add : f32[] = aten::add.Scalar(%step, 1, 1)
  %pow : f32[] = aten::pow.Scalar(0.9, %add)
  %rsub : f32[] = aten::sub.Tensor(%step, %pow, 1)
  %mul : f32[64] device=cuda:0 = aten::mul.Scalar(%g, 0.1)
  %div : f32[64] device=cuda:0 = aten::div.Tensor(%mul, %rsub)
  %sub : f32[64] device=cuda:0 = aten::sub.Tensor(%p, %div, 1)
  return (%sub, %add)
})");
  for (const char* host : {"add", "pow", "rsub"}) {
    const Node* n = r.graph->find(host);
    ASSERT_NE(n, nullptr) << host;
    EXPECT_EQ(r.lowered.roles.at(n), NodeRole::Extern)
        << "%" << host << " is a CPU scalar: its eager kernel on the host";
  }
  for (const auto& [node, p] : r.lowered.pointwise)
    EXPECT_TRUE(node->meta()[0].device.is_cuda()) << "%" << node->name() << " lowered into a device kernel";
  for (const char* fused : {"mul", "div", "sub"})
    EXPECT_EQ(r.lowered.roles.at(r.graph->find(fused)), NodeRole::Pointwise) << "%" << fused << " fuses";
  ASSERT_EQ(r.code.launches.size(), 1u) << "one device kernel: the update";
  const CudaLaunch& l = r.code.launches[0];
  ASSERT_EQ(r.kernels[0].inputs.size(), 3u) << "g, the host scalar, p";
  ASSERT_EQ(l.by_value.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    const Node* in = r.kernels[0].inputs[b].node;
    EXPECT_EQ(l.by_value[b], in->name() == "rsub") << "%" << in->name() << " passed by value only if on the host";
  }
  EXPECT_NE(r.code.source.find("const ember_dev::HostScalar<float> in"), std::string::npos) << r.code.source;
  expect_compiles(r);
}

}  // namespace
}  // namespace ember::inductor
