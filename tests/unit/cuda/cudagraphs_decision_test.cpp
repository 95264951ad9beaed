// Host tests of CUDA graphs (inductor/cudagraphs.cpp, capture/compile_mode.cpp): which
// graphs compiled for cuda:0 may be captured and the reason given for the others (graph
// text: no device needed), compile mode names, and the skip logged on
// TORCH_LOGS=cudagraphs when "reduce-overhead" compiles a graph that is not on a GPU.
#include <gtest/gtest.h>

#include <string>

#include "capture/compile_mode.h"
#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/graph.h"
#include "inductor/cudagraphs.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember::inductor {
namespace {

std::string why(const std::string& text) { return why_not_cudagraphs(*parse_graph(text)); }

TEST(CudaGraphDecision, APointwiseAndRowGraphOnTheGpuIsCaptured) {
  EXPECT_EQ(why(R"(graph ok {
  %x : f32[8, 16] device=cuda:0 = placeholder[x]
  %mul : f32[8, 16] device=cuda:0 = aten::mul.Scalar(%x, 2)
  %softmax : f32[8, 16] device=cuda:0 = aten::_softmax(%mul, -1, False)
  return (%softmax)
})"),
            "");
}

TEST(CudaGraphDecision, ACpuScalarBesideGpuTensorsIsCpuDevice) {
  EXPECT_EQ(why(R"(graph scalar {
  %x : f32[8] device=cuda:0 = placeholder[x]
  %s : f32[] = placeholder[s]
  %mul : f32[8] device=cuda:0 = aten::mul.Tensor(%x, %s)
  return (%mul)
})"),
            "cpu device (%s)");
}

TEST(CudaGraphDecision, ACpuGraphIsCpuDevice) {
  EXPECT_EQ(why(R"(graph cpu {
  %x : f32[8] = placeholder[x]
  %relu : f32[8] = aten::relu(%x)
  return (%relu)
})"),
            "cpu device (%x)");
}

TEST(CudaGraphDecision, ACpuConstantReadByAGpuOpIsCaptured) {
  // The same value at every call; a copy of it to the device would refuse to be captured.
  EXPECT_EQ(why(R"(graph constant {
  %x : f32[8] device=cuda:0 = placeholder[x]
  %c : f32[] = constant[_tensor_constant0]
  %mul : f32[8] device=cuda:0 = aten::mul.Tensor(%x, %c)
  return (%mul)
})"),
            "");
}

TEST(CudaGraphDecision, AnOpCheckingValuesOnTheHostIsAHostSync) {
  // _embedding_bag's offsets check reads them on the host: the graph is not captured.
  EXPECT_EQ(why(R"(graph bag {
  %off : i64[3] device=cuda:0 = placeholder[off]
  %idx : i64[6] device=cuda:0 = placeholder[idx]
  %checked : i64[3] device=cuda:0 = ember::_embedding_bag_checked_offsets(%off, %idx)
  %add : i64[3] device=cuda:0 = aten::add.Scalar(%checked, 1, 1)
  return (%add)
})"),
            "host sync (%checked, ember::_embedding_bag_checked_offsets)");
}

TEST(CudaGraphDecision, IndexPutWithABoolMaskIsAHostSync) {
  // The mask's coordinates are read on the host when the op runs; integer indices are not.
  EXPECT_EQ(why(R"(graph masked {
  %x : f32[4, 3] device=cuda:0 = placeholder[x]
  %mask : b8[4] device=cuda:0 = placeholder[mask]
  %v : f32[] device=cuda:0 = placeholder[v]
  %index_put : f32[4, 3] device=cuda:0 = aten::index_put(%x, [%mask], %v, False)
  return (%index_put)
})"),
            "host sync (%index_put, aten::index_put)");
  EXPECT_EQ(why(R"(graph rows {
  %x : f32[4, 3] device=cuda:0 = placeholder[x]
  %i : i64[2] device=cuda:0 = placeholder[i]
  %v : f32[] device=cuda:0 = placeholder[v]
  %index_put : f32[4, 3] device=cuda:0 = aten::index_put(%x, [%i], %v, False)
  return (%index_put)
})"),
            "");
}

TEST(CudaGraphDecision, AWriteIntoAnInputIsMutatedInputs) {
  EXPECT_EQ(why(R"(graph mutates {
  %x : f32[8] device=cuda:0 = placeholder[x]
  %y : f32[8] device=cuda:0 = placeholder[y]
  %add_ : f32[8] device=cuda:0 = aten::add_.Tensor(%x, %y, 1)
  %mul : f32[8] device=cuda:0 = aten::mul.Scalar(%y, 2)
  return (%mul)
})"),
            "mutated inputs (%add_, aten::add_.Tensor)");
}

TEST(CudaGraphDecision, AnOutputViewingAnInputAliasesIt) {
  EXPECT_EQ(why(R"(graph aliases {
  %x : f32[8] device=cuda:0 = placeholder[x]
  %view : f32[2, 4] device=cuda:0 = aten::view(%x, [2, 4])
  %relu : f32[8] device=cuda:0 = aten::relu(%x)
  return (%view, %relu)
})"),
            "output aliases input (%x)");
}

TEST(CudaGraphDecision, ARandomOpIsRefused) {
  EXPECT_EQ(why(R"(graph random {
  %x : f32[8] device=cuda:0 = placeholder[x]
  %rand : f32[8] device=cuda:0 = aten::rand_like(%x, None, None, None, None, None)
  %add : f32[8] device=cuda:0 = aten::add.Tensor(%x, %rand, 1)
  return (%add)
})"),
            "random op (%rand, aten::rand_like)");
}

TEST(CompileMode, ModesAreReadByTheirTorchCompileNames) {
  EXPECT_EQ(capture::parse_compile_mode("default"), capture::CompileMode::Default);
  EXPECT_EQ(capture::parse_compile_mode(""), capture::CompileMode::Default);
  EXPECT_EQ(capture::parse_compile_mode("reduce-overhead"), capture::CompileMode::ReduceOverhead);
  try {
    capture::parse_compile_mode("reduce_overhead");
    FAIL() << "an unknown mode is an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown mode \"reduce_overhead\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"reduce-overhead\""), std::string::npos) << e.what();
  }
}

TEST(CompileMode, AModeWithAnotherBackendIsAnError) {
  auto f = [](const Tensor& x) { return x + 1; };
  EXPECT_THROW(compile(f, {.backend = "eager", .mode = "reduce-overhead"}), Error);
  EXPECT_THROW(compile(f, {.backend = "inductor", .mode = "fast"}), Error);
  EXPECT_NO_THROW(compile(f, {.backend = "eager", .mode = "default"}));
}

class CudaGraphLog : public testing::CompileDirTest {};

TEST_F(CudaGraphLog, ReduceOverheadOnACpuGraphLogsTheSkipAndEqualsEager) {
  auto f = [](const Tensor& x) { return (x * 2).relu() + 1; };
  testing::LogCapture logs("cudagraphs");
  auto compiled = compile(f, {.backend = "inductor", .mode = "reduce-overhead"});
  const Tensor x = randn({4, 5});
  for (int call = 0; call < 3; ++call) EXPECT_EQ(compiled(x).to_vector<float>(), f(x).to_vector<float>());
  EXPECT_NE(logs.text().find("skipping cudagraphs due to cpu device (%"), std::string::npos) << logs.text();
  EXPECT_EQ(testing::count_of(logs.text(), "skipping cudagraphs"), 1u) << "said once, at compile: " << logs.text();
}

}  // namespace
}  // namespace ember::inductor
