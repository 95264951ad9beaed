// save_exported: archives Ember writes read back into Ember equal to what was saved, and —
// where a Python with PyTorch 2.11 is configured (EMBER_TORCH_PYTHON) — torch.export.load
// reads and runs them to PyTorch's outputs. Programs: the ones PyTorch exported, saved
// again, and a graph Ember captured with compile().
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "unit/debug/debug_helpers.h"

namespace ember {
namespace {

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_save_" + std::to_string(getpid()) + "_" + name)).string();
}

/// The Python with PyTorch 2.11 to check archives with: $EMBER_TORCH_PYTHON, else the one
/// CMake was configured with; "" when neither names an existing file.
std::string torch_python() {
  for (const char* candidate : {static_cast<const char*>(std::getenv("EMBER_TORCH_PYTHON")), EMBER_TORCH_PYTHON})
    if (candidate != nullptr && *candidate != '\0' && std::filesystem::exists(candidate)) return candidate;
  return "";
}

class SavedProgram : public ::testing::TestWithParam<std::string> {};

TEST_P(SavedProgram, ReadsBackIntoEmberWithTheSameGraphAndOutputs) {
  const std::string name = GetParam();
  ExportedProgram p = load_exported(program_path(name + ".pt2"));
  const std::string path = temp_path(name + ".pt2");
  save_exported(p, path);
  ExportedProgram q = load_exported(path);
  std::string why;
  EXPECT_TRUE(structurally_equal(p.graph(), q.graph(), &why)) << why << "\n" << p.graph() << q.graph();
  const auto io = load_safetensors(program_path(name + "_io.safetensors"));
  std::vector<Tensor> inputs;
  for (const std::string& in : q.signature().user_inputs()) inputs.push_back(io.at("input." + in));
  const std::vector<Tensor> a = p(inputs), b = q(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(check_close(b[k], a[k]).ok) << k;
  EXPECT_EQ(p.state().size(), q.state().size());
  std::filesystem::remove(path);
}

TEST_P(SavedProgram, TorchExportLoadRunsItToPyTorchsOutputs) {
  const std::string python = torch_python();
  if (python.empty())
    GTEST_SKIP() << "no Python with PyTorch 2.11: set EMBER_TORCH_PYTHON (or CMake's EMBER_TORCH_PYTHON) to run it";
  const std::string name = GetParam();
  const std::string path = temp_path(name + ".pt2");
  save_exported(load_exported(program_path(name + ".pt2")), path);
  const auto r = testing::run_command("'" + python + "' '" EMBER_EXPORT_PROGRAMS_DIR "/../check_with_torch.py' '" +
                                      path + "' '" + program_path(name + "_io.safetensors") + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("OK "), std::string::npos) << r.output;
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Programs, SavedProgram, ::testing::Values("mlp", "cnn", "block", "stateful", "stateful_training_ir"),
                         [](const auto& info) { return info.param; });

/// A function Ember captures: a module's parameters become Attribute inputs.
struct Captured {
  std::shared_ptr<Graph> graph;
  std::map<std::string, Tensor> state;
};

Captured capture_mlp(nn::Linear& fc, const Tensor& x) {
  Captured c;
  CompileOptions o;
  o.custom_backend = [&](Graph& g, const std::vector<Tensor>&) {
    c.graph = std::shared_ptr<Graph>(g.clone());
    return eager_backend(g);
  };
  o.fullgraph = true;
  auto f = compile([](nn::Linear& m, const Tensor& t) { return softmax(m(t).relu(), -1); }, o);
  f(fc, x);
  for (const auto& [n, t] : fc.named_parameters()) c.state[n] = t;
  return c;
}

TEST(SaveExported, CapturedGraphRoundTripsThroughTheArchive) {
  manual_seed(0);
  nn::Linear fc(8, 4);
  const Tensor x = randn({3, 8});
  Captured c = capture_mlp(fc, x);
  ASSERT_NE(c.graph, nullptr);
  const std::string path = temp_path("captured.pt2");
  save_exported(*c.graph, c.state, path);
  ExportedProgram q = load_exported(path);
  const std::vector<Tensor> out = q({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(check_close(out[0], softmax(fc(x).relu(), -1)).ok);
  std::filesystem::remove(path);
}

TEST(SaveExported, TorchExportLoadRunsACapturedGraph) {
  const std::string python = torch_python();
  if (python.empty())
    GTEST_SKIP() << "no Python with PyTorch 2.11: set EMBER_TORCH_PYTHON (or CMake's EMBER_TORCH_PYTHON) to run it";
  manual_seed(0);
  nn::Linear fc(8, 4);
  const Tensor x = randn({3, 8});
  Captured c = capture_mlp(fc, x);
  const std::string path = temp_path("captured_torch.pt2"), io = temp_path("captured_io.safetensors");
  save_exported(*c.graph, c.state, path);
  std::map<std::string, Tensor> tensors{{"output.0", softmax(fc(x).relu(), -1).detach()}};
  for (Node* in : c.graph->inputs())
    if (in->kind() == NodeKind::Placeholder) tensors["input." + in->name()] = x;
  save_safetensors(tensors, io);
  const auto r = testing::run_command("'" + python + "' '" EMBER_EXPORT_PROGRAMS_DIR "/../check_with_torch.py' '" +
                                      path + "' '" + io + "'");
  EXPECT_EQ(r.status, 0) << r.output << "\n" << *c.graph;
  EXPECT_NE(r.output.find("OK 1 outputs"), std::string::npos) << r.output;
  std::filesystem::remove(path);
  std::filesystem::remove(io);
}

TEST(SaveExported, ProgramWithDynamicDimsIsRefusedAndKeepsItsSymbols) {
  ExportedProgram p = load_exported(program_path("ranged.pt2"));
  try {
    save_exported(p, temp_path("ranged.pt2"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the graph's sizes are over size symbols (symbol s0 = 3 for x.size(0) [2, 64]); "
                                         "Ember writes programs with static shapes only"),
              std::string::npos)
        << e.what();
  }
  // Nothing was specialized: another size still runs.
  EXPECT_EQ(p({zeros({5, 6}), zeros({5, 4})}).at(0).sizes(), IntArrayRef({5, 4}));
}

TEST(SaveExported, MissingStateTensorIsNamed) {
  manual_seed(0);
  nn::Linear fc(8, 4);
  Captured c = capture_mlp(fc, randn({3, 8}));
  try {
    save_exported(*c.graph, {}, temp_path("nostate.pt2"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no state tensor for the attribute"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
