// Programs exported by PyTorch 2.11 (tests/export/programs/, made by make_programs.py):
// each is loaded, run with the interpreter and with the inductor, and compared with
// PyTorch's outputs (values at assert_close's tolerances, dtypes, sizes) and, for programs
// that update buffers in place, with PyTorch's buffers after the run.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"

namespace ember {
namespace {

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }

/// torch.testing.assert_close's default tolerances for a dtype.
std::pair<double, double> tolerances(ScalarType t) {
  switch (t) {
    case kFloat: return {1.3e-6, 1e-5};
    case kDouble: return {1e-7, 1e-7};
    case kHalf: return {1e-3, 1e-5};
    case kBFloat16: return {1.6e-2, 1e-5};
    default: return {0, 0};
  }
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const auto [rtol, atol] = tolerances(want.dtype());
  Tensor g = got.to(kDouble).contiguous(), w = want.to(kDouble).contiguous();
  const double* gp = g.data_ptr<double>();
  const double* wp = w.data_ptr<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    // The model's outputs are finite; a NaN anywhere is a failure.
    ASSERT_LE(std::abs(gp[i] - wp[i]), atol + rtol * std::abs(wp[i])) << what << " element " << i;
  }
}

class ImportedProgram : public ::testing::TestWithParam<std::string> {};

void check_program(const std::string& name, const std::string& backend) {
  ExportedProgram p = load_exported(program_path(name + ".pt2"));
  const auto io = load_safetensors(program_path(name + "_io.safetensors"));
  std::vector<Tensor> inputs;
  for (const std::string& in : p.signature().user_inputs()) inputs.push_back(io.at("input." + in));
  std::vector<Tensor> outs = backend == "interpreter" ? p(inputs) : p.compile(backend)(inputs);
  size_t expected = 0;
  while (io.contains("output." + std::to_string(expected))) ++expected;
  ASSERT_EQ(outs.size(), expected);
  for (size_t k = 0; k < outs.size(); ++k) expect_close(outs[k], io.at("output." + std::to_string(k)), name + " output " + std::to_string(k) + " (" + backend + ")");
  // Buffers after one run: those the program updates hold PyTorch's new values.
  for (const auto& [key, want] : io) {
    if (key.rfind("state.", 0) != 0) continue;
    const std::string buffer = key.substr(6);
    ASSERT_TRUE(p.state().contains(buffer)) << buffer;
    expect_close(p.state().at(buffer).contiguous(), want, name + " buffer " + buffer + " (" + backend + ")");
  }
}

TEST_P(ImportedProgram, InterpreterMatchesPyTorchOutputsAndBuffers) { check_program(GetParam(), "interpreter"); }

TEST_P(ImportedProgram, InductorMatchesPyTorchOutputsAndBuffers) { check_program(GetParam(), "inductor"); }

INSTANTIATE_TEST_SUITE_P(Programs, ImportedProgram, ::testing::Values("mlp", "cnn", "block", "stateful"),
                         [](const auto& info) { return info.param; });

TEST(ImportedProgram, SignatureNamesInputsOutputsAndState) {
  ExportedProgram p = load_exported(program_path("stateful.pt2"));
  EXPECT_EQ(p.signature().user_inputs(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(p.signature().user_outputs().size(), 4u);
  EXPECT_EQ(p.schema_version(), "8.17");
  EXPECT_TRUE(p.state().contains("lin.weight"));
  EXPECT_TRUE(p.state().contains("running"));
  EXPECT_TRUE(p.state().contains("steps"));
  int mutations = 0, constants = 0;
  for (const auto& o : p.signature().outputs) mutations += o.kind == ExportOutputKind::BufferMutation;
  for (const auto& i : p.signature().inputs) constants += i.kind == ExportInputKind::TensorConstant;
  EXPECT_EQ(mutations, 2);
  EXPECT_EQ(constants, 1);
  EXPECT_EQ(p.graph().constants().size(), 1u);
}

TEST(ImportedProgram, BufferUpdatesAccumulateOverRuns) {
  ExportedProgram p = load_exported(program_path("stateful.pt2"));
  const auto io = load_safetensors(program_path("stateful_io.safetensors"));
  p({io.at("input.x"), io.at("input.y")});
  p({io.at("input.x"), io.at("input.y")});
  EXPECT_EQ(p.state().at("steps").item<int64_t>(), 2);
}

TEST(ImportedProgram, NamedRunTakesAndGivesSignatureNames) {
  ExportedProgram p = load_exported(program_path("mlp.pt2"));
  const auto io = load_safetensors(program_path("mlp_io.safetensors"));
  auto outs = p.run({{"x", io.at("input.x")}});
  ASSERT_EQ(outs.size(), 1u);
  expect_close(outs.begin()->second, io.at("output.0"), "mlp named");
}

TEST(ImportedProgram, GraphUsesCoreAtenCallsWithDefaultsFilled) {
  ExportedProgram p = load_exported(program_path("mlp.pt2"));
  const std::string text = to_string(p.graph());
  EXPECT_NE(text.find("aten::addmm(%fc1_bias, %x, %permute, 1, 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("get_attr[fc1.weight]"), std::string::npos) << text;
  EXPECT_NE(text.find("placeholder[x]"), std::string::npos) << text;
  // The graph reads back from its text.
  EXPECT_TRUE(structurally_equal(*parse_graph(text), p.graph()));
}

}  // namespace
}  // namespace ember
