// Geometry recorded elsewhere: a graph whose strides follow PyTorch's rules, or were written
// by hand, runs as long as its values would be right. Strides of size-1 and empty dims
// never matter; a value whose larger strides differ from the recorded ones is read in the
// recorded layout (a copy); a value of other sizes is a user error naming it (Note
// [inductor], "The wrapper"). Each graph costs one C++ compile.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;
using RecordedGeometryTest = testing::CompileDirTest;

CompiledGraph compile_inductor(Graph& g, const std::vector<Tensor>& examples) {
  register_builtin_backends();
  return lookup_backend("inductor")(g, examples);
}

TEST_F(RecordedGeometryTest, AnExpandKeepingASize1DimIsReadThroughPyTorchsStrides) {
  // PyTorch's expand of [2, 1, 32, 32] to its own shape keeps stride 1024 for the size-1 dim.
  std::unique_ptr<Graph> g = parse_graph(R"(graph expand_same {
  %x : f32[2, 1, 32, 32] = placeholder[x]
  %expand : f32[2, 1, 32, 32] strides=[1024, 1024, 32, 1] = aten::expand(%x, [2, 1, 32, 32], False)
  %mul : f32[2, 1, 32, 32] = aten::mul.Scalar(%expand, 3)
  return (%mul)
})");
  const Tensor x = randn({2, 1, 32, 32});
  EXPECT_EQ(x.expand({2, 1, 32, 32}).strides().vec(), (std::vector<int64_t>{1024, 1024, 32, 1}))
      << "eager expand gives PyTorch's strides";
  expect_close(compile_inductor(*g, {x})({x}).at(0), x * 3, 0, 0);
}

TEST_F(RecordedGeometryTest, ASize1DimMayHaveAnyStrideInAHandWrittenGraph) {
  // unsqueeze's size-1 dim recorded with stride 7 (Ember's and PyTorch's give 3); the
  // kernel reading it never multiplies that stride by a non-zero index.
  std::unique_ptr<Graph> g = parse_graph(R"(graph odd_strides {
  %x : f32[4, 3] = placeholder[x]
  %u : f32[4, 1, 3] strides=[3, 7, 1] = aten::unsqueeze(%x, 1)
  %exp : f32[4, 1, 3] = aten::exp(%u)
  return (%exp)
})");
  const Tensor x = randn({4, 3});
  expect_close(compile_inductor(*g, {x})({x}).at(0), exp(x.unsqueeze(1)), 1.3e-6, 1e-5);
}

TEST_F(RecordedGeometryTest, InputsWithOtherStridesOnSize1OrEmptyDimsNeedNoCopy) {
  std::unique_ptr<Graph> g = parse_graph(R"(graph inputs {
  %x : f32[4, 1] = placeholder[x]
  %e : f32[0, 3] = placeholder[e]
  %neg : f32[4, 1] = aten::neg(%x)
  %sin : f32[0, 3] = aten::sin(%e)
  return (%neg, %sin)
})");
  testing::LogCapture logs("inductor");
  const CompiledGraph run = compile_inductor(*g, {randn({4, 1}), randn({0, 3})});
  // Strides PyTorch could give these (a transposed [1, 4] and an empty slice).
  Tensor x = randn({1, 4}).t();
  ASSERT_EQ(x.strides().vec(), (std::vector<int64_t>{1, 4}));
  const Tensor e = empty_strided({0, 3}, {1, 5});
  const std::vector<Tensor> got = run({x, e});
  expect_close(got[0], -x, 0, 0);
  EXPECT_EQ(got[1].sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(logs.text().find("copied to that layout"), std::string::npos) << logs.text();
}

TEST_F(RecordedGeometryTest, AValueWhoseLargerStridesDifferIsReadInTheRecordedLayout) {
  std::unique_ptr<Graph> g = parse_graph(R"(graph layout {
  %x : f32[3, 4] = placeholder[x]
  %tanh : f32[3, 4] = aten::tanh(%x)
  return (%tanh)
})");
  testing::LogCapture logs("inductor");
  const CompiledGraph run = compile_inductor(*g, {randn({3, 4})});
  const Tensor x = randn({4, 3}).t();  // [3, 4] with strides [1, 3]
  expect_close(run({x}).at(0), tanh(x), 1.3e-6, 1e-5);
  expect_close(run({x}).at(0), tanh(x), 1.3e-6, 1e-5);
  EXPECT_NE(logs.text().find("%x of graph layout has strides [1, 3], but its kernels read it through the recorded "
                             "strides [4, 1]; it is copied to that layout on each call"),
            std::string::npos)
      << logs.text();
  EXPECT_EQ(logs.text().find("copied to that layout"), logs.text().rfind("copied to that layout")) << "logged once";
}

TEST_F(RecordedGeometryTest, AValueOfOtherSizesIsAUserErrorNamingIt) {
  std::unique_ptr<Graph> g = parse_graph(R"(graph sizes {
  %x : f32[3, 4] = placeholder[x]
  %relu : f32[3, 4] = aten::relu(%x)
  return (%relu)
})");
  const CompiledGraph run = compile_inductor(*g, {randn({3, 4})});
  try {
    run({randn({3, 5})});
    FAIL() << "a [3, 5] input ran a graph compiled for [3, 4]";
  } catch (const InternalError& e) {
    FAIL() << "an internal error for a user's input: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("%x of graph sizes is float32 [3, 5], but the graph records float32 [3, 4] for it"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ember
