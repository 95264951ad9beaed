// Every name of the log registry (src/support/log_registry.def) prints something when it
// is turned on and the compiler does what the name is about: no name is accepted and
// silent. A row added to the registry needs a scenario here.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "core/shape_env.h"
#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

class LogChannels : public testing::CompileDirTest {};

// Each scenario compiles afresh, so that compile-time logs are written again.
void eager_compile() {
  compile([](const Tensor& x) { return (x * 2).relu(); })(ones({3}));
}
void aot_compile() {
  compile([](const Tensor& x) { return (x * 2).relu(); }, {.backend = "aot_eager"})(ones({3}));
}
void aot_training_compile() {
  Tensor w = ones({3});
  w.requires_grad_();
  compile([&w](const Tensor& x) { return (x * w).relu().sum(); }, {.backend = "aot_eager"})(ones({3}));
}
void inductor_compile() {
  compile([](const Tensor& x) { return (x * 2).relu().sum(std::vector<int64_t>{1}); },
          {.backend = "inductor"})(ones({4, 5}));
}
void with_a_break() {
  compile([](const Tensor& x) { return x * x.sum().item<double>(); })(ones({2}));
}
void recompiled() {
  auto f = compile([](const Tensor& x) { return x + 1; });
  f(ones({2}));
  f(ones({3}));
}
// A graph run in the interpreter (a write AOT autograd cannot trace, into a value that
// requires grad) and an op without a lowering (cumsum runs its eager kernel inside the
// compiled code).
void slow_inductor_code() {
  Tensor w = ones({4});
  w.requires_grad_();
  compile(
      [&w](const Tensor& x) {
        Tensor y = x * w;
        y.select(0, 0).mul_(2);
        return y.sum();
      },
      {.backend = "inductor"})(ones({4}));
  compile([](const Tensor& x) { return ember::cumsum(x * 2, 0) + 1; }, {.backend = "inductor"})(ones({4}));
}
// Until capture makes sizes symbolic, a shape environment used directly: two symbols and
// a guard between them.
void symbolic_sizes() {
  core::ShapeEnv env;
  const core::SymInt a = env.create_size(8, "x.size(0)");
  const core::SymInt b = env.create_size(6, "y.size(0)");
  (void)(a * 2 == b + 10);
}
void gemm_of_a_new_shape() {
  // A product large enough to be tuned (Note [sgemm autotuning]), of a shape no other test
  // multiplies: it is timed the first time.
  (void)randn({167, 157}).matmul(randn({157, 163}));
}
// Compile mode "reduce-overhead" on a CPU graph: the inductor says why it skips CUDA graphs.
void reduce_overhead_on_the_cpu() {
  compile([](const Tensor& x) { return (x * 3).relu(); }, {.backend = "inductor", .mode = "reduce-overhead"})(ones({3}));
}

const std::map<std::string, std::function<void()>>& scenarios() {
  static const std::map<std::string, std::function<void()>> s = {
      {"dynamo", eager_compile},
      {"dynamic", symbolic_sizes},
      {"aot", aot_compile},
      {"inductor", inductor_compile},
      {"graph", eager_compile},
      {"graph_code", eager_compile},
      {"graph_sizes", eager_compile},
      {"graph_breaks", with_a_break},
      {"guards", eager_compile},
      {"recompiles", recompiled},
      {"recompiles_verbose", recompiled},
      {"aot_graphs", aot_compile},
      {"aot_joint_graph", aot_training_compile},
      {"post_grad_graphs", inductor_compile},
      {"schedule", inductor_compile},
      {"fusion", inductor_compile},
      {"perf_hints", slow_inductor_code},
      {"output_code", inductor_compile},
      {"autotuning", gemm_of_a_new_shape},
      {"cudagraphs", reduce_overhead_on_the_cpu},
  };
  return s;
}

TEST_F(LogChannels, EveryRegisteredNamePrintsWhenItsScenarioRuns) {
  for (const logging::ChannelInfo& c : logging::channels()) {
    auto it = scenarios().find(c.name);
    ASSERT_NE(it, scenarios().end()) << "log name '" << c.name << "' has no scenario in this test";
    set_logs(c.name);
    std::vector<std::string> lines;
    {
      logging::ScopedSink sink([&](const logging::Record& r) {
        if (r.channel == c.name) lines.emplace_back(r.text);
      });
      it->second();
    }
    set_logs();
    EXPECT_FALSE(lines.empty()) << "TORCH_LOGS=" << c.name << " printed nothing on its scenario";
  }
}

TEST_F(LogChannels, EveryScenarioNamesARegisteredChannel) {
  std::set<std::string> names;
  for (const logging::ChannelInfo& c : logging::channels()) names.insert(c.name);
  for (const auto& [name, run] : scenarios()) EXPECT_TRUE(names.contains(name)) << name << " is not registered";
}

TEST_F(LogChannels, GraphPrintsTheCapturedGraphAsATable) {
  set_logs("graph");
  testing::LogCapture logs;
  compile([](const Tensor& x) { return (x * 2).relu(); }, {.name = "tabular", .arg_names = {"x"}})(ones({3}));
  const std::string t = logs.text();
  EXPECT_NE(t.find("TRACED GRAPH\n===== tabular ====="), std::string::npos) << t;
  EXPECT_NE(t.find("opcode"), std::string::npos) << t;
  EXPECT_NE(t.find("placeholder"), std::string::npos) << t;
  EXPECT_NE(t.find("call_function  mul"), std::string::npos) << t;
  EXPECT_NE(t.find("aten::mul.Scalar"), std::string::npos) << t;
  EXPECT_NE(t.find("(x, 2)"), std::string::npos) << t;
  EXPECT_NE(t.find("output"), std::string::npos) << t;
}

TEST_F(LogChannels, PerfHintsNameTheOpThatFallsBackAndTheInterpretedGraph) {
  set_logs("perf_hints");
  testing::LogCapture logs;
  slow_inductor_code();
  const std::string t = logs.text();
  EXPECT_NE(t.find("aten::cumsum"), std::string::npos) << t;
  EXPECT_NE(t.find("runs in the interpreter"), std::string::npos) << t;
}

TEST_F(LogChannels, AotJointGraphPrintsTheTangentsAndTheGradientOutputs) {
  set_logs("aot_joint_graph");
  testing::LogCapture logs;
  aot_training_compile();
  const std::string t = logs.text();
  EXPECT_NE(t.find("aot joint graph"), std::string::npos) << t;
  EXPECT_NE(t.find("tangents_1"), std::string::npos) << t;
  EXPECT_NE(t.find("aten::masked_fill.Scalar"), std::string::npos) << t;  // relu's formula
}

}  // namespace
}  // namespace ember
