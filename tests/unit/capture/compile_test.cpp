// Tests of ember::compile: capture into graphs, replay, guards and recompilation, the
// cache size limit, modules, lifted tensors, mutation, autograd through compiled graphs.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::error_of;

using testing::expect_close;
using testing::RecordingBackend;

class CompileTest : public testing::DiagnosticsTest {
 protected:
  void SetUp() override {
    DiagnosticsTest::SetUp();
    manual_seed(0);
  }
};

TEST_F(CompileTest, CompiledResultEqualsEagerAndTheSecondCallReplaysWithoutRunningTheFunction) {
  int runs = 0;
  auto fn = [&runs](const Tensor& x, const Tensor& y) {
    ++runs;
    return (x * 2 + y).relu().sum(std::vector<int64_t>{1});
  };
  RecordingBackend backend;
  auto compiled = compile(fn, {.custom_backend = backend.fn()});
  Tensor x = randn({4, 5}), y = randn({4, 5});
  expect_close(compiled(x, y), fn(x, y));
  EXPECT_EQ(runs, 2);  // one trace + one eager reference
  Tensor x2 = randn({4, 5}), y2 = randn({4, 5});
  expect_close(compiled(x2, y2), (x2 * 2 + y2).relu().sum(std::vector<int64_t>{1}));
  EXPECT_EQ(runs, 2) << "a call whose guards pass must not run the user function";
  ASSERT_EQ(backend.graphs->size(), 1u);
  EXPECT_EQ(backend.example_counts->at(0), 2u);
  EXPECT_NE(backend.graphs->at(0).find("aten::mul.Scalar(%arg0, 2)"), std::string::npos) << backend.graphs->at(0);
  EXPECT_NE(backend.graphs->at(0).find("aten::relu"), std::string::npos);
  EXPECT_NE(backend.graphs->at(0).find("compile_test.cpp:"), std::string::npos) << "nodes carry the user line";
}

TEST_F(CompileTest, CapturedGraphPrintsItsOpsWithShapesAndUserLines) {
  RecordingBackend backend;
  auto compiled = compile([](const Tensor& x) { return x.t().contiguous() + 1; },
                          {.custom_backend = backend.fn(), .name = "toy", .arg_names = {"x"}});
  compiled(randn({2, 3}));
  ASSERT_EQ(backend.graphs->size(), 1u);
  const std::string& text = backend.graphs->at(0);
  EXPECT_NE(text.find("graph toy {"), std::string::npos) << text;
  EXPECT_NE(text.find("%x : f32[2, 3] = placeholder[x]"), std::string::npos) << text;
  EXPECT_NE(text.find("= aten::transpose.int(%x, 0, 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[3, 2] strides=[1, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::add.Scalar"), std::string::npos) << text;
}

TEST_F(CompileTest, ShapeChangeRecompilesAndEachShapeKeepsItsEntry) {
  int runs = 0;
  auto compiled = compile([&runs](const Tensor& x) {
    ++runs;
    return x.exp();
  });
  compiled(randn({2}));
  compiled(randn({3}));
  compiled(randn({2}));
  compiled(randn({3}));
  EXPECT_EQ(compiled.cache_size(), 2u);
  EXPECT_EQ(runs, 2);
}

TEST_F(CompileTest, DtypeStrideAndRequiresGradAreGuarded) {
  int runs = 0;
  auto compiled = compile([&runs](const Tensor& x) {
    ++runs;
    return x * 3;
  });
  Tensor x = randn({3, 3});
  compiled(x);
  compiled(x.to(kDouble));
  compiled(x.t());
  Tensor leaf = randn({3, 3});
  leaf.requires_grad_();
  compiled(leaf);
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(compiled.cache_size(), 4u);
}

TEST_F(CompileTest, ScalarArgumentsAreGuardedByValue) {
  int runs = 0;
  auto compiled = compile([&runs](const Tensor& x, double scale, int64_t power) {
    ++runs;
    return x.pow(power) * scale;
  });
  Tensor x = randn({4});
  expect_close(compiled(x, 2.0, 2), x.pow(2) * 2.0);
  expect_close(compiled(x, 2.0, 2), x.pow(2) * 2.0);
  expect_close(compiled(x, 3.0, 2), x.pow(2) * 3.0);
  expect_close(compiled(x, 3.0, 3), x.pow(3) * 3.0);
  EXPECT_EQ(runs, 3);
}

TEST_F(CompileTest, VectorsOfNumbersAreGuardedByValue) {
  int runs = 0;
  auto compiled = compile(
      [&runs](const Tensor& x, std::vector<int64_t> shape, const std::vector<double>& weights) {
        ++runs;
        return x.reshape(shape) * weights[0] + weights[1];
      },
      {.arg_names = {"x", "shape", "weights"}});
  Tensor x = randn({6});
  expect_close(compiled(x, {2, 3}, {2.0, 1.0}), x.reshape({2, 3}) * 2.0 + 1.0);
  expect_close(compiled(x, {2, 3}, {2.0, 1.0}), x.reshape({2, 3}) * 2.0 + 1.0);
  expect_close(compiled(x, {3, 2}, {2.0, 1.0}), x.reshape({3, 2}) * 2.0 + 1.0);
  expect_close(compiled(x, {3, 2}, {0.5, 1.0}), x.reshape({3, 2}) * 0.5 + 1.0);
  EXPECT_EQ(runs, 3);
}

TEST_F(CompileTest, CaptureFailureLogsWontConvertAndRunsEagerly) {
  testing::LogCapture logs;
  int runs = 0;
  auto compiled = compile(
      [&runs](const Tensor& x) {
        ++runs;
        EMBER_CHECK(!is_compiling()) << "this function cannot be traced";
        return x + 1;
      },
      {.name = "untraceable"});
  Tensor x = zeros({2});
  EXPECT_EQ(compiled(x).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(compiled(x).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(runs, 3) << "one failed trace, then eager on each call";
  const std::string t = logs.text();
  EXPECT_NE(t.find("WON'T CONVERT untraceable "), std::string::npos) << t;
  EXPECT_NE(t.find("compile_test.cpp line "), std::string::npos) << t;
  EXPECT_NE(t.find("due to:\nRuntimeError: this function cannot be traced"), std::string::npos) << t;
  EXPECT_NE(t.find("from user code:"), std::string::npos) << t;
  EXPECT_NE(t.find("Set TORCHDYNAMO_VERBOSE=1"), std::string::npos) << t;
}

TEST_F(CompileTest, CacheSizeLimitFallsBackToEagerAndLogsTheLastGuardFailure) {
  config().dynamo.cache_size_limit = 2;
  testing::LogCapture logs;
  int runs = 0;
  auto compiled = compile(
      [&runs](const Tensor& x) {
        ++runs;
        return x + 1;
      },
      // Static sizes: automatic dynamic shapes would serve sizes 2..4 from one entry.
      {.name = "grows", .arg_names = {"x"}, .dynamic = false});
  for (int64_t n = 1; n <= 4; ++n) expect_close(compiled(ones({n})), full({n}, 2.0));
  EXPECT_EQ(compiled.cache_size(), 2u);
  EXPECT_EQ(runs, 4) << "two traces, then two eager runs";
  EXPECT_NE(logs.text().find("hit config.cache_size_limit (2)"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("function: 'grows'"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("tensor 'x' size mismatch at index 0. expected 2, actual 3"), std::string::npos)
      << logs.text();
}

TEST_F(CompileTest, RecompilesLogNamesTheFailingGuard) {
  set_logs("recompiles");
  testing::LogCapture logs;
  auto compiled = compile([](const Tensor& x) { return ember::sin(x); }, {.name = "f", .arg_names = {"x"}});
  compiled(randn({2}));
  compiled(randn({2}, kDouble));
  EXPECT_NE(logs.text().find("Recompiling function f"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("tensor 'x' dtype mismatch. expected Float, actual Double"), std::string::npos)
      << logs.text();
}

TEST_F(CompileTest, VectorArgumentsAndTupleResults) {
  auto fn = [](const std::vector<Tensor>& xs) { return std::make_tuple(xs[0] + xs[1], cat(xs, 0)); };
  auto compiled = compile(fn);
  std::vector<Tensor> xs{randn({2}), randn({2})};
  auto [a, b] = compiled(xs);
  auto [ea, eb] = fn(xs);
  expect_close(a, ea);
  expect_close(b, eb);
  std::vector<Tensor> three{randn({2}), randn({2}), randn({2})};
  auto [c, d] = compiled(three);
  EXPECT_EQ(d.size(0), 6);
  EXPECT_EQ(compiled.cache_size(), 2u) << "the list length is guarded";
}

TEST_F(CompileTest, MutationOfAnInputIsReplayed) {
  auto compiled = compile([](Tensor x) {
    x.add_(ones({3}));
    return x * 2;
  });
  Tensor a = zeros({3});
  compiled(a);
  Tensor out = compiled(a);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{4, 4, 4}));
}

TEST_F(CompileTest, ReturningAnInputReturnsTheSameTensor) {
  auto compiled = compile([](const Tensor& x) { return x; });
  Tensor a = randn({2});
  EXPECT_TRUE(compiled(a).is_same(a) || compiled(a).storage() == a.storage());
}

TEST_F(CompileTest, TensorsCapturedFromOutsideAreLiftedToInputs) {
  Tensor bias = randn({3});
  RecordingBackend backend;
  auto compiled = compile([&bias](const Tensor& x) { return x + bias; }, {.custom_backend = backend.fn()});
  Tensor x = randn({3});
  expect_close(compiled(x), x + bias);
  bias.mul_(2.0);  // in place: the replayed graph reads the new values
  expect_close(compiled(x), x + bias);
  EXPECT_NE(backend.graphs->at(0).find("placeholder[_lifted_tensor_0]"), std::string::npos) << backend.graphs->at(0);
}

TEST_F(CompileTest, ModuleParametersBecomeAttributesAndTrainingIsGuarded) {
  nn::Sequential model;
  model.push_back(std::make_shared<nn::Linear>(4, 3));
  model.push_back(std::make_shared<nn::Dropout>(0.5));
  RecordingBackend backend;
  int runs = 0;
  auto compiled = compile(
      [&runs](nn::Sequential& m, const Tensor& x) {
        ++runs;
        return m.forward(x);
      },
      {.custom_backend = backend.fn()});
  model.eval();
  Tensor x = randn({2, 4});
  expect_close(compiled(model, x), model.forward(x));
  EXPECT_NE(backend.graphs->at(0).find("get_attr[0.weight]"), std::string::npos) << backend.graphs->at(0);
  EXPECT_NE(backend.graphs->at(0).find("get_attr[0.bias]"), std::string::npos);
  compiled(model, x);
  EXPECT_EQ(runs, 1);
  model.train();
  compiled(model, x);
  EXPECT_EQ(runs, 2) << "the training flag is guarded";
  EXPECT_EQ(compiled.cache_size(), 2u);
}

TEST_F(CompileTest, ReplacingAParameterFailsTheModuleGuard) {
  nn::Linear lin(2, 2);
  int runs = 0;
  auto compiled = compile([&runs](nn::Linear& m, const Tensor& x) {
    ++runs;
    return m.forward(x);
  });
  Tensor x = randn({1, 2});
  compiled(lin, x);
  lin.tensor("weight") = randn({2, 2});
  expect_close(compiled(lin, x), lin.forward(x));
  EXPECT_EQ(runs, 2);
}

TEST_F(CompileTest, GradientsFlowThroughTheCompiledGraph) {
  auto fn = [](const Tensor& x, const Tensor& w) { return (x.matmul(w)).tanh().sum(); };
  auto compiled = compile(fn);
  Tensor x = randn({3, 4}), w = randn({4, 2});
  w.requires_grad_();
  compiled(x, w).backward();
  Tensor g1 = w.grad().clone();
  w.mutable_grad() = Tensor();
  fn(x, w).backward();
  expect_close(g1, w.grad());
}

TEST_F(CompileTest, NoGradInsideTheFunctionIsReplayed) {
  auto compiled = compile([](const Tensor& x) {
    NoGradGuard no_grad;
    return x * 2;
  });
  Tensor x = randn({2});
  x.requires_grad_();
  compiled(x);
  EXPECT_FALSE(compiled(x).requires_grad());
}

TEST_F(CompileTest, GradModeAtTheCallIsGuarded) {
  int runs = 0;
  auto compiled = compile([&runs](const Tensor& x) {
    ++runs;
    return x * 2;
  });
  Tensor x = randn({2});
  x.requires_grad_();
  EXPECT_TRUE(compiled(x).requires_grad());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(compiled(x).requires_grad());
  }
  EXPECT_EQ(runs, 2);
}

TEST_F(CompileTest, NestedCompiledFunctionsAreInlined) {
  RecordingBackend inner_backend, outer_backend;
  auto inner = compile([](const Tensor& x) { return ember::sin(x); }, {.custom_backend = inner_backend.fn()});
  auto outer = compile([&inner](const Tensor& x) { return inner(x) + 1; }, {.custom_backend = outer_backend.fn()});
  Tensor x = randn({3});
  expect_close(outer(x), ember::sin(x) + 1);
  EXPECT_TRUE(inner_backend.graphs->empty());
  ASSERT_EQ(outer_backend.graphs->size(), 1u);
  EXPECT_NE(outer_backend.graphs->at(0).find("aten::sin"), std::string::npos);
}

TEST_F(CompileTest, GuardOnRetracesWhenTheDeclaredStateChanges) {
  int64_t mode = 1;
  int runs = 0;
  auto compiled = compile([&](const Tensor& x) {
    ++runs;
    guard_on("mode", mode);
    return mode == 1 ? x + 1 : x - 1;
  });
  Tensor x = zeros({1});
  EXPECT_EQ(compiled(x).item<float>(), 1.f);
  mode = 2;
  EXPECT_EQ(compiled(x).item<float>(), -1.f);
  EXPECT_EQ(runs, 2);
}

TEST_F(CompileTest, ManyThreadsShareOneCompile) {
  std::atomic<int> runs{0};
  auto compiled = compile([&runs](const Tensor& x) {
    ++runs;
    return ember::cos(x) * 2;
  });
  Tensor x = randn({16});
  Tensor expected = ember::cos(x) * 2;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        Tensor y = compiled(x);
        if (y.to_vector<float>() != expected.to_vector<float>()) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(compiled.cache_size(), 1u);
}

TEST_F(CompileTest, UnknownBackendNamesTheRegisteredOnes) {
  std::string msg = error_of([] { compile([](const Tensor& x) { return x; }, {.backend = "nope"}); });
  EXPECT_NE(msg.find("unknown backend 'nope'; registered backends: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("eager"), std::string::npos) << msg;
}

TEST_F(CompileTest, ABackendErrorIsBackendCompilerFailedUnlessErrorsAreSuppressed) {
  Backend broken = [](Graph&, const std::vector<Tensor>&) -> CompiledGraph {
    EMBER_FAIL() << "the toy compiler cannot do this";
  };
  auto compiled = compile([](const Tensor& x) { return x + 1; }, {.custom_backend = broken});
  try {
    compiled(ones({2}));
    FAIL() << "expected BackendCompilerFailed";
  } catch (const BackendCompilerFailed& e) {
    EXPECT_NE(std::string(e.what()).find("backend='custom' raised:\nRuntimeError: the toy compiler cannot do this"),
              std::string::npos)
        << e.what();
  }
  config().dynamo.suppress_errors = true;
  testing::LogCapture logs;
  auto suppressed = compile([](const Tensor& x) { return x + 1; }, {.custom_backend = broken, .name = "g"});
  EXPECT_EQ(suppressed(ones({2})).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_NE(logs.text().find("WON'T CONVERT g"), std::string::npos) << logs.text();
}

TEST_F(CompileTest, AUserErrorDuringCaptureIsTheEagerError) {
  auto compiled = compile([](const Tensor& x, const Tensor& y) { return x + y; });
  std::string msg = error_of([&] { compiled(ones({2}), ones({3})); });
  EXPECT_NE(msg.find("must match the size of tensor b"), std::string::npos) << msg;
  EXPECT_NE(msg.find("compile_test.cpp:"), std::string::npos) << msg;
}

TEST_F(CompileTest, StepLogsMarkStartAndEndOfCaptureAndTheDefaultInductorBackend) {
  set_logs("dynamo");
  testing::LogCapture logs;
  compile([](const Tensor& x) { return x * x; }, {.name = "sq"})(ones({2}));
  const std::string t = logs.text();
  const auto s1 = t.find("Step 1: torchdynamo start tracing sq"), e1 = t.find("Step 1: torchdynamo done tracing sq");
  // No backend named: the default is the inductor, as torch.compile's.
  const auto s2 = t.find("Step 2: calling compiler function inductor"),
             e2 = t.find("Step 2: done compiler function inductor");
  ASSERT_NE(s1, std::string::npos) << t;
  ASSERT_NE(s2, std::string::npos) << t;
  ASSERT_NE(e2, std::string::npos) << t;
  ASSERT_NE(e1, std::string::npos) << t;
  EXPECT_LT(s1, s2);
  EXPECT_LT(s2, e2);
  EXPECT_LT(e2, e1);
}

TEST_F(CompileTest, DebugDynamoLogsEveryTracedOpWithItsLine) {
  set_logs("+dynamo");
  testing::LogCapture logs;
  compile([](const Tensor& x) { return x.neg(); })(ones({2}));
  EXPECT_NE(logs.text().find("TRACE %neg = aten::neg at "), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("compile_test.cpp:"), std::string::npos) << logs.text();
}

TEST_F(CompileTest, FakeTensorKeptPastATraceThatFailedRaisesWhenUsed) {
  // A trace that completes makes the tensors it leaks real (Note [escaping tensors],
  // escaping_tensors_test.cpp); one that fails under fullgraph leaves them fake.
  Tensor kept;
  auto compiled = compile(
      [&kept](const Tensor& x) {
        kept = x * 2;
        graph_break();
        return x + 1;
      },
      {.fullgraph = true});
  EXPECT_NE(error_of([&] { compiled(ones({2})); }).find("graph break"), std::string::npos);
  std::string msg = error_of([&] { (void)(kept + 1); });
  EXPECT_NE(msg.find("made while tracing a compiled function"), std::string::npos) << msg;
  msg = error_of([&] { (void)kept.to_vector<float>(); });
  EXPECT_NE(msg.find("no data"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
