// Programs exported by PyTorch 2.11 with dynamic_shapes (tests/export/programs/, made by
// make_dynamic_programs.py): their size symbols, range constraints and SymInt arithmetic
// import as Ember symbolic shapes, so one loaded program — interpreted, or compiled once
// by the inductor — equals PyTorch's outputs at every test size; sizes outside a range or
// breaking a relation between dims are refused naming the input, dim, range or relation
// and the value; size checks the program asserts narrow ranges or become guards.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "export/zip_archive.h"
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

// strided_spectrum: as_strided with symbolic sizes, strides and offset, and _fft_r2c then
// _fft_c2r with a symbolic last_dim_size (Note [aot], "Dynamic shapes").
INSTANTIATE_TEST_SUITE_P(Programs, DynamicProgram, ::testing::Values("mlp_batch", "causal_block", "size_arith", "ranged",
                                                                   "arange_bias", "causal_block_core",
                                                                   "strided_spectrum"),
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

/// Program `name`'s JSON edited by `edit`, saved to a temporary archive.
std::string edited_program(const std::string& name, const std::function<void(nlohmann::json& nodes)>& edit) {
  exporting::ZipContents zip = exporting::read_zip(program_path(name + ".pt2"));
  const std::string entry = name + "/models/model.json";
  nlohmann::json program = nlohmann::json::parse(zip.entries.at(entry));
  edit(program["graph_module"]["graph"]["nodes"]);
  zip.entries[entry] = program.dump();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ember_dynamic_" + name + "_" + std::to_string(getpid()) + ".pt2")).string();
  exporting::write_zip(path, {zip.entries.begin(), zip.entries.end()});
  return path;
}

/// size_arith.pt2 with `nodes` (JSON text) added after its sym_size nodes: SymInt
/// comparisons, sym_not and _assert_scalar as PyTorch writes them for `torch._check`s on sizes.
std::string with_size_checks(const std::string& nodes) {
  return edited_program("size_arith", [&](nlohmann::json& graph_nodes) {
    const nlohmann::json added = nlohmann::json::parse(nodes);
    graph_nodes.insert(graph_nodes.begin() + 2, added.begin(), added.end());  // after the two sym_size nodes
  });
}

std::string sym_node(const std::string& target, const std::string& a, const std::string& b, const std::string& out,
                     const char* kind = "as_sym_bool") {
  return R"({"target": ")" + target + R"(", "inputs": [{"name": "a", "arg": )" + a + R"(, "kind": 1}, {"name": "b", "arg": )" +
         b + R"(, "kind": 1}], "outputs": [{")" + kind + R"(": {"as_name": ")" + out + R"("}}]})";
}
std::string assert_node(const std::string& cond, const std::string& msg) {
  return R"({"target": "torch.ops.aten._assert_scalar.default", "inputs": [{"name": "self", "arg": {"as_sym_bool": {"as_name": ")" +
         cond + R"("}}, "kind": 1}, {"name": "assert_msg", "arg": {"as_string": ")" + msg + R"("}, "kind": 1}], "outputs": [{"as_none": null}]})";
}
const std::string kT = R"({"as_sym_int": {"as_name": "sym_size_int_4"}})";  // x.size(1), s27
const std::string kB = R"({"as_sym_int": {"as_name": "sym_size_int_5"}})";  // y.size(0), s17

TEST(DynamicImport, AssertedSizeComparisonsBecomeChecksOfEveryCall) {
  // t >= 5 (one symbol: its range narrows to [5, 100]) and not (t < b), i.e. b <= t (a
  // relation between two symbols: a guard).
  const std::string path = with_size_checks(
      "[" + sym_node("_operator.ge", kT, R"({"as_int": 5})", "ge") + ", " + assert_node("ge", "t >= 5") + ", " +
      sym_node("_operator.lt", kT, kB, "lt") + ", " +
      R"({"target": "torch.sym_not", "inputs": [{"name": "a", "arg": {"as_sym_bool": {"as_name": "lt"}}, "kind": 1}], "outputs": [{"as_sym_bool": {"as_name": "not_lt"}}]})" +
      ", " + assert_node("not_lt", "b <= t") + "]");
  ExportedProgram p = load_exported(path);
  EXPECT_EQ(p.dynamic_dims().at(1), "s1 = s27 in [5, 100], read from x.size(1)");
  EXPECT_EQ(p({randn({3, 9, 8}), randn({3, 4})}).at(0).sizes(), IntArrayRef({3, 4}));
  const std::string range = error_of([&] { p({randn({3, 4, 8}), randn({3, 4})}); });
  EXPECT_NE(range.find("input 'x' dim 1 of the exported program is 4, outside the range [5, 100] of its dynamic dim s27"),
            std::string::npos)
      << range;
  const std::string relation = error_of([&] { p.compile("eager")({randn({7, 6, 8}), randn({7, 4})}); });
  EXPECT_NE(relation.find("the exported program's sizes break a relation it was traced with"), std::string::npos)
      << relation;
  EXPECT_NE(relation.find("x.size(0) <= x.size(1) (7 vs 6)"), std::string::npos) << relation;  // b is read from x
  std::filesystem::remove(path);
}

TEST(DynamicImport, AnAssertionFalseForTheExampleSizesIsTheProgramsMessage) {
  const std::string path =
      with_size_checks("[" + sym_node("_operator.gt", kB, kT, "gt") + ", " + assert_node("gt", "batch above t") + "]");
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("(torch.ops.aten._assert_scalar.default): the program's assertion"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the program's assertion fails for its example shapes: batch above t"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(DynamicImport, SymbolicScalarArgumentsStaySymbolic) {
  // arange_bias: arange(0, x.size(0)) and x[: x.size(0) - 2], the size as a Scalar and a SymInt.
  ExportedProgram p = load_exported(program_path("arange_bias.pt2"));
  const std::string text = to_string(p.graph());
  EXPECT_NE(text.find("aten::arange.start_step(0, s0"), std::string::npos) << text;
  EXPECT_NE(text.find("s0 - 2"), std::string::npos) << text;
  const std::vector<Tensor> out = p({zeros({9, 3})});
  EXPECT_EQ(out.at(0).sizes(), IntArrayRef({9, 3}));
  EXPECT_EQ(out.at(1).sizes(), IntArrayRef({7, 3}));
  EXPECT_EQ(out.at(0).select(0, 8).select(0, 2).item<float>(), 8.0f);
}

/// arange_bias.pt2 with its node `target` given the symbolic size as argument `arg`.
std::string with_symbolic_argument(const std::string& target, const std::string& arg) {
  return edited_program("arange_bias", [&](nlohmann::json& nodes) {
    for (nlohmann::json& n : nodes) {
      if (n.at("target") != target) continue;
      nlohmann::json inputs = nlohmann::json::array();
      for (const nlohmann::json& in : n.at("inputs"))
        if (in.at("name") != arg) inputs.push_back(in);
      inputs.push_back({{"name", arg}, {"arg", {{"as_sym_int", {{"as_name", "sym_size_int_3"}}}}}, {"kind", 1}});
      n["inputs"] = inputs;
    }
  });
}

TEST(DynamicImport, SymbolicIntegerWhereTheSchemaWantsAPlainIntIsNamed) {
  const std::string path = with_symbolic_argument("torch.ops.aten.unsqueeze.default", "dim");
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("argument 'dim': the integer s0 is symbolic where the schema wants int"), std::string::npos)
      << msg;
  std::filesystem::remove(path);
}

TEST(DynamicImport, AnOpThatWouldFixADynamicSizeIsRefused) {
  // arange with a floating start and a symbolic end: Ember's arange computes its length
  // over the symbols only for integer arguments and reads the end as a number here, which
  // would make every call use the example batch. (A symbolic integer start or step is
  // computed over the symbols.)
  const std::string path = edited_program("arange_bias", [](nlohmann::json& nodes) {
    for (nlohmann::json& n : nodes) {
      if (n.at("target") != "torch.ops.aten.arange.start_step") continue;
      for (nlohmann::json& in : n.at("inputs"))
        if (in.at("name") == "start") in["arg"] = {{"as_float", 0.0}};
    }
  });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("(torch.ops.aten.arange.start_step): Ember's op reads a dynamic size as a plain integer here"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(s0 == 4)"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
