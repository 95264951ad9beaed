// save_exported: archives Ember writes read back into Ember equal to what was saved, and —
// where a Python with PyTorch 2.11 is configured (EMBER_TORCH_PYTHON) — torch.export.load
// reads and runs them to PyTorch's outputs. Programs: the ones PyTorch exported, saved
// again, and the graph of a function Ember compiled (save_exported of a Compiled).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "export/pt2_format.h"
#include "export/zip_archive.h"
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

INSTANTIATE_TEST_SUITE_P(Programs, SavedProgram, ::testing::Values("mlp", "cnn", "block", "stateful", "stateful_training_ir", "sdpa_block",
                                           "sdpa_block_training_ir", "buffers_constants", "several_outputs", "kv_cache",
                                           "resizes_training_ir"),
                         [](const auto& info) { return info.param; });

/// A module whose parameters and buffer have qualified names ("fc1.weight", "scale").
struct TwoLayer : nn::Module {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(8, 16));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 4));
  TwoLayer() { register_buffer("scale", full({4}, 0.5)); }
  Tensor operator()(const Tensor& x) { return softmax((*fc2)((*fc1)(x).relu()) * tensor("scale"), -1); }
};

/// Options for a compiled function under test: `backend`, the whole function one graph.
CompileOptions options(const std::string& backend) {
  CompileOptions o;
  o.backend = backend;
  o.fullgraph = true;
  return o;
}

/// The error `save` raises (FAIL when it raises none).
std::string save_error(const std::function<void()>& save) {
  try {
    save();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

/// The names in an archive's weights or constants config (`config` is kWeightsConfigPath or
/// kConstantsConfigPath), whatever the archive's root folder is called.
std::set<std::string> payload_names(const std::string& archive, std::string_view config) {
  std::set<std::string> names;
  for (const auto& [entry, data] : exporting::read_zip(archive).entries) {
    if (!entry.ends_with(config)) continue;
    const nlohmann::json parsed = nlohmann::json::parse(data);
    for (const auto& [name, _] : parsed.at("config").items()) names.insert(name);
  }
  return names;
}

TEST(SaveExported, NonPersistentBufferIsStoredWithTheConstantsAsPyTorchStoresIt) {
  // buffers_constants: `mean` a persistent buffer, `inv_std` a non-persistent one, `table` and
  // `rows` plain tensor attributes. PyTorch's verifier refuses an archive holding a
  // non-persistent buffer among the weights.
  const std::string original = program_path("buffers_constants.pt2");
  const std::string path = temp_path("buffers_constants.pt2");
  save_exported(load_exported(original), path);
  for (const std::string& archive : {original, path}) {
    const auto weights = payload_names(archive, exporting::kWeightsConfigPath);
    const auto constants = payload_names(archive, exporting::kConstantsConfigPath);
    EXPECT_TRUE(weights.contains("mean")) << archive;
    EXPECT_FALSE(weights.contains("inv_std")) << archive;
    EXPECT_TRUE(constants.contains("inv_std")) << archive;
    EXPECT_EQ(constants.size(), 3u) << archive;  // inv_std and the two attributes
  }
  ExportedProgram q = load_exported(path);
  EXPECT_TRUE(q.state().contains("inv_std"));
  std::filesystem::remove(path);
}

TEST(SaveExported, CompiledModuleFunctionReadsBackWithItsParametersAsState) {
  manual_seed(0);
  TwoLayer m;
  const Tensor x = randn({3, 8});
  auto f = compile([](TwoLayer& mod, const Tensor& t) { return mod(t); }, options("aot_eager"));
  const Tensor want = f(m, x);
  const std::string path = temp_path("compiled.pt2");
  save_exported(f, path);
  ExportedProgram q = load_exported(path);
  std::vector<std::string> keys;
  for (const auto& [k, t] : q.state()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "scale"}));
  EXPECT_EQ(q.signature().user_inputs().size(), 1u);
  for (const ExportInputSpec& s : q.signature().inputs) {
    if (s.target == "scale") {
      EXPECT_EQ(s.kind, ExportInputKind::Buffer);
    } else if (s.target == "fc1.weight") {
      EXPECT_EQ(s.kind, ExportInputKind::Parameter);
    }
  }
  const std::vector<Tensor> out = q({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(check_close(out[0], want).ok);
  EXPECT_TRUE(check_close(out[0], m(x)).ok);
  // The state is the module's values when saved: a parameter changed since is read back.
  {
    NoGradGuard no_grad;
    m.fc2->tensor("bias").add_(1.0);
  }
  save_exported(f, path);
  EXPECT_TRUE(check_close(load_exported(path)({x}).at(0), m(x)).ok);
  std::filesystem::remove(path);
}

TEST(SaveExported, TorchExportLoadRunsACompiledFunction) {
  const std::string python = torch_python();
  if (python.empty())
    GTEST_SKIP() << "no Python with PyTorch 2.11: set EMBER_TORCH_PYTHON (or CMake's EMBER_TORCH_PYTHON) to run it";
  manual_seed(0);
  TwoLayer m;
  const Tensor x = randn({3, 8});
  auto f = compile([](TwoLayer& mod, const Tensor& t) { return mod(t); }, options("eager"));
  const Tensor want = f(m, x);
  const std::string path = temp_path("compiled_torch.pt2"), io = temp_path("compiled_io.safetensors");
  save_exported(f, path);
  std::map<std::string, Tensor> tensors{{"output.0", want.detach()}};
  for (const std::string& in : load_exported(path).signature().user_inputs()) tensors["input." + in] = x;
  ASSERT_EQ(tensors.size(), 2u);
  save_safetensors(tensors, io);
  const auto r = testing::run_command("'" + python + "' '" EMBER_EXPORT_PROGRAMS_DIR "/../check_with_torch.py' '" +
                                      path + "' '" + io + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("OK 1 outputs"), std::string::npos) << r.output;
  std::filesystem::remove(path);
  std::filesystem::remove(io);
}

// _embedding_bag's offsets check is Ember's own op: a program for PyTorch holds the ATen
// op that stands for it (a clone of the offsets), and reads back to the same outputs.
TEST(SaveExported, EmbeddingBagsOffsetsCheckIsWrittenAsAnAtenClone) {
  auto f = compile(
      [](const Tensor& w, const Tensor& idx, const Tensor& off) {
        return std::get<0>(_embedding_bag(w, idx, off, false, 1, false, std::nullopt, false, -1));
      },
      options("eager"));
  const Tensor w = randn({10, 3}), idx = tensor<int64_t>({1, 2, 4, 5, 4, 3}), off = tensor<int64_t>({0, 2, 2, 5});
  const Tensor want = f(w, idx, off);
  const std::string path = temp_path("embedding_bag.pt2");
  save_exported(f, path);
  std::string model;
  for (const auto& [entry, data] : exporting::read_zip(path).entries)
    if (data.find("\"graph_module\"") != std::string::npos) model = data;
  ASSERT_FALSE(model.empty());
  EXPECT_NE(model.find("torch.ops.aten.clone.default"), std::string::npos);
  EXPECT_EQ(model.find("ember"), std::string::npos);
  ExportedProgram q = load_exported(path);
  EXPECT_TRUE(check_close(q({w, idx, off}).at(0), want).ok);
  std::filesystem::remove(path);
}

TEST(SaveExported, CompiledFunctionNotCalledYetIsRefused) {
  auto f = compile([](const Tensor& t) { return t.relu(); }, options("eager"));
  const std::string e = save_error([&] { save_exported(f, temp_path("uncalled.pt2")); });
  EXPECT_NE(e.find("nothing is captured yet: call the function (with the inputs the program is for) before saving it"),
            std::string::npos)
      << e;
}

TEST(SaveExported, CompiledFunctionWithSeveralCacheEntriesIsRefused) {
  CompileOptions o = options("eager");
  o.dynamic = false;
  auto f = compile([](const Tensor& t) { return t.relu(); }, o);
  f(randn({2, 3}));
  f(randn({4, 3}));
  ASSERT_EQ(f.cache_size(), 2u);
  const std::string e = save_error([&] { save_exported(f, temp_path("entries.pt2")); });
  EXPECT_NE(e.find("it has 2 cache entries (one per input signature its calls had"), std::string::npos) << e;
  EXPECT_NE(e.find("save a function called with one input signature"), std::string::npos) << e;
}

TEST(SaveExported, CompiledFunctionWithGraphBreaksIsRefused) {
  CompileOptions o = options("eager");
  o.fullgraph = false;
  auto f = compile(
      [](const Tensor& t) {
        Tensor a = t.relu();
        graph_break();
        return a * 2;
      },
      o);
  f(randn({2, 3}));
  const std::string e = save_error([&] { save_exported(f, temp_path("breaks.pt2")); });
  EXPECT_NE(e.find("its calls run as 2 graphs split by 1 graph break, and an archive holds one graph: remove the "
                   "breaks (CompileOptions::fullgraph = true"),
            std::string::npos)
      << e;
}

TEST(SaveExported, SymbolicCompiledFunctionIsRefusedAsASymbolicGraph) {
  CompileOptions o = options("eager");
  o.dynamic = true;
  auto f = compile([](const Tensor& t) { return t.relu() + 1; }, o);
  f(randn({5, 3}));
  const std::string e = save_error([&] { save_exported(f, temp_path("symbolic.pt2")); });
  EXPECT_NE(e.find("the graph's sizes are over size symbols"), std::string::npos) << e;
  EXPECT_NE(e.find("Ember writes programs with static shapes only"), std::string::npos) << e;
}

TEST(SaveExported, CompiledFunctionWithANumberArgumentIsRefused) {
  CompileOptions o = options("eager");
  o.arg_names = {"x", "scale"};
  auto f = compile([](const Tensor& t, double s) { return t * s; }, o);
  f(randn({2, 3}), 2.0);
  const std::string e = save_error([&] { save_exported(f, temp_path("number.pt2")); });
  EXPECT_NE(e.find("argument 1 ('scale') is a double; an exported program's inputs are tensors"), std::string::npos)
      << e;
}

TEST(SaveExported, CompiledFunctionReadingAGlobalTensorIsRefused) {
  const Tensor bias = randn({3});
  auto f = compile([&bias](const Tensor& t) { return t + bias; }, options("eager"));
  f(randn({2, 3}));
  const std::string e = save_error([&] { save_exported(f, temp_path("global.pt2")); });
  EXPECT_NE(e.find("is a tensor the function reads from outside its arguments"), std::string::npos) << e;
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
  ExportedProgram p = load_exported(program_path("mlp.pt2"));
  const std::string e = save_error([&] { save_exported(p.graph(), {}, temp_path("nostate.pt2")); });
  EXPECT_NE(e.find("no state tensor for the attribute"), std::string::npos) << e;
}

}  // namespace
}  // namespace ember
