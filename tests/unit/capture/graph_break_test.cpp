// Tests of graph breaks: every break reason splits the function into graphs whose results
// equal eager, carries the user line, raises under fullgraph, and explain() reports it.
#include <gtest/gtest.h>

#include <sstream>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::error_of;

using testing::expect_close;
using testing::RecordingBackend;

class GraphBreakTest : public testing::DiagnosticsTest {
 protected:
  void SetUp() override {
    DiagnosticsTest::SetUp();
    manual_seed(0);
  }
};

Tensor branchy(const Tensor& x) {
  Tensor y = x * 2;
  if (y.sum().item<double>() > 0) return y + 1;  // data-dependent: a graph break
  return y - 1;
}

TEST_F(GraphBreakTest, ItemSplitsTheGraphAndBothBranchesAreRight) {
  RecordingBackend backend;
  int runs = 0;
  auto compiled = compile(
      [&runs](const Tensor& x) {
        ++runs;
        return branchy(x);
      },
      {.custom_backend = backend.fn()});
  Tensor pos = ones({3}), neg = -ones({3});
  expect_close(compiled(pos), branchy(pos));
  expect_close(compiled(neg), branchy(neg));
  expect_close(compiled(pos), branchy(pos));
  EXPECT_EQ(runs, 3) << "a function with breaks runs on every call (segment mode)";
  // Segments: [mul, sum] once, [add] and [sub] once each: reused, not recompiled.
  EXPECT_EQ(backend.graphs->size(), 3u);
  EXPECT_EQ(compiled.cache_size(), 1u);
}

TEST_F(GraphBreakTest, IntermediatesLiveAcrossTheBreakBecomeRealTensors) {
  auto fn = [](const Tensor& x) {
    Tensor y = x.exp();
    double s = y.sum().item<double>();
    return y * s;
  };
  auto compiled = compile(fn);
  Tensor x = randn({5});
  expect_close(compiled(x), fn(x));
  expect_close(compiled(x), fn(x));
}

TEST_F(GraphBreakTest, TensorUsedAsBoolBreaks) {
  auto fn = [](const Tensor& x) { return (x.sum() > 0) ? x.relu() : x.neg(); };
  auto out = explain(fn)(randn({4}));
  ASSERT_EQ(out.graph_break_count, 1u);
  EXPECT_NE(out.break_reasons[0].reason.find("a tensor used as a bool"), std::string::npos);
}

TEST_F(GraphBreakTest, PrintingBreaksAndPrintsRealValues) {
  std::ostringstream printed;
  auto compiled = compile([&printed](const Tensor& x) {
    Tensor y = x + 1;
    printed << y.str();
    return y * 2;
  });
  compiled(zeros({2}));
  EXPECT_EQ(printed.str(), "tensor([1., 1.])");
}

TEST_F(GraphBreakTest, DataDependentShapeOpBreaksAndRunsEagerly) {
  auto fn = [](const Tensor& x) {
    Tensor idx = nonzero(x > 0);
    return idx.sum() + x.sum();
  };
  auto out = explain(fn)(tensor<float>({1, -1, 2, 0}));
  ASSERT_EQ(out.graph_break_count, 1u);
  EXPECT_NE(out.break_reasons[0].reason.find("GB0006"), std::string::npos) << out.break_reasons[0].reason;
  EXPECT_NE(out.break_reasons[0].reason.find("aten::nonzero"), std::string::npos) << out.break_reasons[0].reason;
  auto compiled = compile(fn);
  Tensor x = tensor<float>({1, -1, 2, 0});
  expect_close(compiled(x), fn(x));
}

TEST_F(GraphBreakTest, AnOpWhoseMetaFunctionReadsDataBreaksAndRunsEagerly) {
  // index with a bool mask reads the mask to know its output's size: the read breaks the
  // graph while the op is being recorded, after another op went into the graph.
  auto fn = [](const Tensor& x, const Tensor& idx, const Tensor& mask) {
    Tensor picked = index(x, {idx});
    Tensor masked = index(x, {mask});
    return picked.sum() + masked.sum() * 2;
  };
  const Tensor x = randn({4, 3}), idx = tensor<int64_t>({0, 2}), mask = tensor<bool>({true, false, true, true});
  auto compiled = compile(fn);
  expect_close(compiled(x, idx, mask), fn(x, idx, mask));
  const Tensor mask2 = tensor<bool>({false, true, false, false});
  expect_close(compiled(x, idx, mask2), fn(x, idx, mask2));
}

TEST_F(GraphBreakTest, ExplicitGraphBreak) {
  auto fn = [](const Tensor& x) {
    Tensor y = ember::sin(x);
    graph_break();
    return ember::cos(y);
  };
  auto out = explain(fn)(randn({3}));
  EXPECT_EQ(out.graph_count, 2u);
  EXPECT_EQ(out.graph_break_count, 1u);
  EXPECT_NE(out.break_reasons[0].reason.find("ember::graph_break() was called"), std::string::npos);
  EXPECT_NE(out.break_reasons[0].loc.file.find("graph_break_test.cpp"), std::string::npos);
}

TEST_F(GraphBreakTest, BackwardInsideTheFunctionBreaksAndGradientsAreRight) {
  Tensor w = randn({3});
  w.requires_grad_();
  auto fn = [&w](const Tensor& x) {
    Tensor loss = (x * w).sum();
    loss.backward();
    return loss.detach();
  };
  auto compiled = compile(fn);
  Tensor x = randn({3});
  compiled(x);
  Tensor g = w.grad().clone();
  expect_close(g, x);
  auto out = explain(fn)(x);
  ASSERT_EQ(out.graph_break_count, 1u);
  EXPECT_NE(out.break_reasons[0].reason.find("Tensor.backward()"), std::string::npos);
}

TEST_F(GraphBreakTest, FullgraphRaisesNamingTheReasonAndTheLine) {
  auto compiled = compile([](const Tensor& x) { return x * x.sum().item<double>(); }, {.fullgraph = true});
  try {
    compiled(ones({2}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("graph break in a function compiled with fullgraph=true: GB0001: Tensor.item()"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("graph_break_test.cpp:" + std::to_string(__LINE__ - 10)), std::string::npos) << msg;
  }
}

TEST_F(GraphBreakTest, ExplainCountsGraphsBreaksOpsAndPrintsTheGuideSummary) {
  auto fn = [](const Tensor& a, Tensor b) {
    Tensor x = a / (a.abs() + 1);
    if (b.sum().item<double>() < 0) b = b * -1;
    Tensor y = x * b;
    graph_break();
    return y + 1;
  };
  auto out = explain(fn)(randn({10}), randn({10}));
  EXPECT_EQ(out.graph_count, 3u);
  EXPECT_EQ(out.graph_break_count, 2u);
  ASSERT_EQ(out.ops_per_graph.size(), 3u);
  EXPECT_EQ(out.op_count, out.ops_per_graph[0].size() + out.ops_per_graph[1].size() + out.ops_per_graph[2].size());
  const std::string s = out.str();
  EXPECT_EQ(s.find("Dynamo produced 3 graphs with 2 graph breaks and " + std::to_string(out.op_count) + " ops"), 0u)
      << s;
  EXPECT_NE(s.find("1. GB0001: Tensor.item() reads a tensor's value"), std::string::npos) << s;
  EXPECT_NE(s.find("2. GB0007: ember::graph_break() was called"), std::string::npos) << s;
  EXPECT_NE(s.find("graph_break_test.cpp\", line "), std::string::npos) << s;
  EXPECT_NE(s.find("Out Guards:"), std::string::npos) << s;
  for (const auto& g : out.graphs) testing::expect_round_trip(*g);
  EXPECT_NE(s.find("tensor 'arg0': Float [10]"), std::string::npos) << s;
}

TEST_F(GraphBreakTest, ExplainOfABreakFreeFunctionHasOneGraph) {
  auto out = explain([](const Tensor& x) { return x.relu() + 1; })(randn({2}));
  EXPECT_EQ(out.graph_count, 1u);
  EXPECT_EQ(out.graph_break_count, 0u);
  EXPECT_EQ(out.op_count, 2u);
  ASSERT_EQ(out.graphs.size(), 1u);
  EXPECT_EQ(out.graphs[0]->op_count(), 2u);
}

TEST_F(GraphBreakTest, ReadingAnOutsideTensorAnOpWroteFlushesFirst) {
  Tensor counter = zeros({1});
  auto compiled = compile([&counter](const Tensor& x) {
    counter.add_(x.sum());
    return x * counter.item<double>();
  });
  Tensor x = ones({2});
  Tensor out = compiled(x);
  EXPECT_EQ(counter.item<float>(), 2.f);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST_F(GraphBreakTest, BreaksAreLoggedOnTheFirstTraceWithTheirLine) {
  testing::LogCapture logs;
  auto compiled = compile([](const Tensor& x) { return x * x.sum().item<double>(); }, {.name = "brk"});
  compiled(ones({2}));
  EXPECT_NE(logs.text().find("Graph break in brk: GB0001: Tensor.item()"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("graph_break_test.cpp:"), std::string::npos) << logs.text();
  const size_t lines = logs.lines.size();
  compiled(ones({2}));
  EXPECT_EQ(logs.lines.size(), lines) << "segment mode re-runs do not repeat the warning";
}

}  // namespace
}  // namespace ember
