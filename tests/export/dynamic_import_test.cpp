// Programs exported by PyTorch 2.11 with dynamic_shapes (tests/export/programs/, made by
// make_dynamic_programs.py): their size symbols, range constraints and SymInt arithmetic
// import as Ember symbolic shapes, so one loaded program — interpreted, or compiled once
// by the inductor — equals PyTorch's outputs at every test size; sizes outside a range or
// breaking a relation between dims are refused naming the input, dim, range or relation
// and the value.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "graph/text.h"
#include "inductor/inductor.h"

namespace ember {
namespace {

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

/// Runs `run` on each test size's inputs and compares with PyTorch's outputs.
void check_sizes(const std::string& name, const ExportedProgram& p,
                 const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& run, const std::string& how) {
  for (int k = 0; k < 3; ++k) {
    const auto io = load_safetensors(program_path(name + "_io" + std::to_string(k) + ".safetensors"));
    std::vector<Tensor> inputs;
    for (const std::string& in : p.signature().user_inputs()) inputs.push_back(io.at("input." + in));
    const std::vector<Tensor> outs = run(inputs);
    size_t expected = 0;
    while (io.contains("output." + std::to_string(expected))) ++expected;
    ASSERT_EQ(outs.size(), expected);
    for (size_t i = 0; i < outs.size(); ++i) {
      const CloseCheck c = check_close(outs[i], io.at("output." + std::to_string(i)));
      EXPECT_TRUE(c.ok) << name << " size " << k << " output " << i << " (" << how << "): " << c.mismatch
                        << " (max abs error " << c.max_abs_error << ")";
    }
  }
}

class DynamicProgram : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicProgram, InterpreterMatchesPyTorchAtEverySize) {
  ExportedProgram p = load_exported(program_path(GetParam() + ".pt2"));
  EXPECT_NE(graph_text::shape_env_of(p.graph()), nullptr) << "the graph is over size symbols";
  check_sizes(GetParam(), p, [&](const std::vector<Tensor>& in) { return p(in); }, "interpreter");
}

TEST_P(DynamicProgram, InductorCompilesOnceOverSymbolsAndMatchesPyTorchAtEverySize) {
  ExportedProgram p = load_exported(program_path(GetParam() + ".pt2"));
  const int64_t before = inductor::compiler_invocations();
  ExportedCallable fn = p.compile("inductor");
  check_sizes(GetParam(), p, fn, "inductor");
  EXPECT_LE(inductor::compiler_invocations() - before, 1) << "one compile serves every size";
  const std::string source = inductor::last_compile_report().source;
  EXPECT_NE(source.find("const int64_t* ks"), std::string::npos) << "kernels read the sizes at run time:\n" << source;
}

INSTANTIATE_TEST_SUITE_P(Programs, DynamicProgram, ::testing::Values("mlp_batch", "causal_block", "size_arith", "ranged"),
                         [](const auto& info) { return info.param; });

TEST(DynamicImport, SymbolsTakeTheProgramsRangesAndInputSources) {
  ExportedProgram p = load_exported(program_path("size_arith.pt2"));
  const std::string text = to_string(p.graph());
  // PyTorch's s17 (batch, unbounded) and s27 (t in [3, 100]) in input order.
  EXPECT_NE(text.find("symbol s0 = 3 for x.size(0) [2, inf]"), std::string::npos) << text;
  EXPECT_NE(text.find("symbol s1 = 5 for x.size(1) [3, 100]"), std::string::npos) << text;
  EXPECT_NE(text.find("%y : f32[s0, 4] = placeholder[y]"), std::string::npos) << text;
  // sym_size, mul and floordiv nodes become the views' size lists over the symbols.
  EXPECT_NE(text.find("aten::view(%x, [s0, 2*s1, 4])"), std::string::npos) << text;
  EXPECT_NE(text.find("[s0*s1, -1]"), std::string::npos) << text;
}

TEST(DynamicImport, SizeOutsideTheRangeNamesInputDimRangeAndValue) {
  ExportedProgram p = load_exported(program_path("ranged.pt2"));
  const std::string msg = error_of([&] { p({zeros({65, 6}), zeros({65, 4})}); });
  EXPECT_NE(msg.find("input 'x' dim 0 of the exported program is 65, outside the range [2, 64] of its dynamic dim s17"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("dynamic_import_test.cpp:" + std::to_string(__LINE__ - 4)), std::string::npos) << msg;
  const std::string compiled = error_of([&] { p.compile("inductor")({zeros({1, 6}), zeros({1, 4})}); });
  EXPECT_NE(compiled.find("is 1, outside the range [2, 64]"), std::string::npos) << compiled;
}

TEST(DynamicImport, DimsThatMustBeEqualAreCheckedWithBothValues) {
  ExportedProgram p = load_exported(program_path("ranged.pt2"));
  const std::string msg = error_of([&] { p({zeros({5, 6}), zeros({7, 4})}); });
  EXPECT_NE(msg.find("input 'y' dim 0 of the exported program is 7, but the program requires it to equal s17 "
                     "(s17 = input 'x' dim 0 = 5) = 5"),
            std::string::npos)
      << msg;
  const std::string arith = error_of([&] { p({zeros({5, 6}), zeros({5, 5})}); });
  EXPECT_NE(arith.find("input 'y' dim 1 of the exported program is 5, but the program requires it to equal 4"),
            std::string::npos)
      << arith;
}

}  // namespace
}  // namespace ember
