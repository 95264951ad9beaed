// Programs exported by PyTorch 2.11 (tests/export/programs/, made by make_programs.py):
// each is loaded, run with the interpreter and with the inductor, and compared with
// PyTorch's outputs (values at assert_close's tolerances, dtypes, sizes) and, for programs
// that update buffers in place, with PyTorch's buffers after the run.
#include <gtest/gtest.h>

#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"

namespace ember {
namespace {

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  const CloseCheck c = check_close(got, want);
  EXPECT_TRUE(c.ok) << what << ": " << c.mismatch << " (max abs error " << c.max_abs_error << ")";
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

INSTANTIATE_TEST_SUITE_P(Programs, ImportedProgram, ::testing::Values("mlp", "cnn", "block", "stateful", "stateful_training_ir", "sdpa_block",
                                           "sdpa_block_training_ir", "buffers_constants", "several_outputs", "kv_cache",
                                           "resizes_training_ir"),
                         [](const auto& info) { return info.param; });

TEST(CheckClose, AppliesAssertCloseDefaultTolerancesPerDtype) {
  const Tensor want = full({3}, Scalar(100.0));
  EXPECT_TRUE(check_close(want + 1e-4, want).ok);   // within 1e-5 + 1.3e-6 * 100
  EXPECT_FALSE(check_close(want + 2e-4, want).ok);  // past it
  EXPECT_FALSE(check_close(want.to(kDouble), want).ok);
  EXPECT_FALSE(check_close(want.reshape({3, 1}), want).ok);
  const Tensor ints = full({2}, Scalar(int64_t{5}), TensorOptions(kInt64));
  EXPECT_FALSE(check_close(ints + 1, ints).ok);  // integers must be equal
  const Tensor nan = full({1}, Scalar(std::nan("")));
  EXPECT_TRUE(check_close(nan, nan).ok);
}

TEST(CheckClose, ComplexValuesUseTheirRealTypesTolerancesOnTheModulus) {
  // complex64: float32's tolerances (1.3e-6, 1e-5), applied to |got - want| and |want|.
  const Tensor want = view_as_complex(full({2, 2}, Scalar(100.0)));  // 100+100j twice
  const auto shifted = [&](double re, double im) {
    return view_as_complex(view_as_real(want) + tensor<float>({float(re), float(im), float(re), float(im)}, {2, 2}));
  };
  EXPECT_TRUE(check_close(shifted(1e-4, 1e-4), want).ok);   // 1.41e-4 <= 1e-5 + 1.3e-6 * 141.4
  EXPECT_FALSE(check_close(shifted(2e-4, 0), want).ok) << "past the tolerance in the real part";
  EXPECT_FALSE(check_close(shifted(0, 2e-4), want).ok) << "past the tolerance in the imaginary part";
  const CloseCheck c = check_close(shifted(0, 2e-4), want);
  EXPECT_NE(c.mismatch.find("j)"), std::string::npos) << c.mismatch;
  EXPECT_EQ(default_tolerances(kComplexDouble), default_tolerances(kDouble));
  EXPECT_FALSE(check_close(want.to(kComplexDouble), want).ok);  // dtypes differ
}

TEST(ImportedProgram, ResizeIsImportedAsViewsOfThePaddedOrKeptElements) {
  // resizes_training_ir.pt2 shrinks a clone and grows a product (make_programs.py): as
  // PyTorch's functionalization, the first is an as_strided view, the second a zero-padded
  // copy viewed so; no node changes a value's size in place.
  ExportedProgram p = load_exported(program_path("resizes_training_ir.pt2"));
  const std::string text = to_string(p.graph());
  EXPECT_EQ(text.find("resize_"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::as_strided"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::constant_pad_nd"), std::string::npos) << text;
}

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

TEST(ImportedProgram, CallInsideEmberCompileIsOneGraphWithBufferWriteBack) {
  ExportedProgram p = load_exported(program_path("stateful.pt2"));
  const auto io = load_safetensors(program_path("stateful_io.safetensors"));
  auto f = compile([&](const Tensor& x, const Tensor& y) { return p({x, y}); },
                   {.backend = "inductor", .fullgraph = true, .name = "stateful_program"});
  const std::vector<Tensor> outs = f(io.at("input.x"), io.at("input.y"));
  ASSERT_EQ(outs.size(), 4u);
  for (size_t k = 0; k < outs.size(); ++k) expect_close(outs[k], io.at("output." + std::to_string(k)), "compiled call");
  expect_close(p.state().at("running"), io.at("state.running"), "running after one compiled call");
  f(io.at("input.x"), io.at("input.y"));  // replayed: the buffers advance again
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
