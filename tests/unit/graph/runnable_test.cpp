// to_runnable_cpp: the generated program compiles against this build of Ember (with the
// settings of ember/build_info.h), runs, and prints the checksums run_graph gives on the
// same inputs.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/build_info.h"
#include "support/graph_helpers.h"

namespace ember {
namespace {

using testing::add_op;
using testing::meta_of;

// The inputs a generated main() makes are made in-process by runnable_input (the same
// steps as the program's make_input helper); the checksum test below holds them together.

/// Summary lines as the program prints them, for run_graph's outputs.
std::vector<std::string> summaries(const std::vector<Tensor>& outs) {
  std::vector<std::string> lines;
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string sizes;
    for (int64_t s : outs[k].sizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
    char buf[512];
    std::snprintf(buf, sizeof buf, "output %zu: sizes=[%s] dtype=%s checksum=%.17g", k, sizes.c_str(),
                  std::string(dtype_name(outs[k].dtype())).c_str(), outs[k].to(kDouble).sum().item<double>());
    lines.push_back(buf);
  }
  return lines;
}

// --- running a program -----------------------------------------------------------------------

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

/// Writes `source` into a fresh directory, builds it as build_info.h says and runs it with
/// each of `runs`' argument strings ("" for none); the results in that order (the build's
/// failure alone, its directory kept, when it does not build).
std::vector<CommandResult> compile_and_run_each(const std::string& source, const std::vector<std::string>& runs) {
  std::string dir_template = (std::filesystem::temp_directory_path() / "ember_runnable_XXXXXX").string();
  const char* dir = mkdtemp(dir_template.data());
  if (!dir) return {{-1, "mkdtemp failed"}};
  const std::filesystem::path cpp = std::filesystem::path(dir) / "fx_graph_runnable.cpp";
  const std::filesystem::path exe = std::filesystem::path(dir) / "fx_graph_runnable";
  std::ofstream(cpp) << source;
  CommandResult built = run_command(build_info::compile_command(cpp.string(), exe.string()));
  if (built.status != 0) {
    built.output = "compiling failed (" + cpp.string() + "):\n" + built.output;
    return {built};
  }
  std::vector<CommandResult> out;
  for (const std::string& args : runs) out.push_back(run_command(exe.string() + (args.empty() ? "" : " " + args)));
  std::filesystem::remove_all(dir);  // the tests print the source with a failure
  return out;
}

/// Writes `source` into a fresh directory, builds it as build_info.h says and runs it.
CommandResult compile_and_run(const std::string& source) { return compile_and_run_each(source, {""}).at(0); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// A graph using each kind of node, argument and output the generator handles.
std::unique_ptr<Graph> rich_graph() {
  auto g = std::make_unique<Graph>("rich");
  Node* x = g->add_placeholder("x", meta_of({4, 6}, kFloat, {1, 5}, 3));  // non-contiguous, offset
  Node* w = g->add_attribute("fc.weight", meta_of({6, 6}));
  Node* idx = g->add_placeholder("int", meta_of({3}, kInt64));  // a C++ keyword as a name
  Node* mask = g->add_placeholder("outputs", meta_of({4, 6}, kBool));
  Node* h = g->add_placeholder("h", meta_of({3, 2}, kHalf));
  Node* c = g->add_constant("_tensor_constant0", tensor<float>({0.5f, -1.0f, 2.0f, 1e-05f, 3.0f, -4.5f}));
  Node* ci = g->add_constant("_tensor_constant1", tensor<int64_t>({2, 0}));
  Node* cb = g->add_constant("_tensor_constant2", tensor<bool>({true, false, true, false, true, false}, {6}));
  Node* ct = g->add_constant("_tensor_constant3", tensor<double>({1, 2, 3, 4, 5, 6}, {2, 3}).t());  // strided
  Node* c0 = g->add_constant("_tensor_constant4", scalar_tensor(7.0));                              // 0-dim
  manual_seed(5);
  Node* big = g->add_constant("big", randn({40, 30}));  // too large to write out
  Node* big_row = add_op(*g, "aten::select.int", {big, 0, 0});

  Node* mm = add_op(*g, "aten::mm", {x, w}, SourceLoc("model.cpp", 10));
  Node* add = add_op(*g, "aten::add.Tensor", {mm, c, 2});
  Node* sp = add_op(*g, "aten::split_with_sizes", {add, std::vector<int64_t>{1, 3}});
  Node* mx = add_op(*g, "aten::max.dim", {sp->out(1), 1, true});
  Node* cat = add_op(*g, "aten::cat", {std::vector<ValueRef>{sp->out(1), mx->out(0)}, 1});
  Node* gathered =
      add_op(*g, "aten::index.Tensor", {cat, std::vector<std::optional<ValueRef>>{ci->out(), std::nullopt}});
  Node* ge = add_op(*g, "aten::gelu", {gathered, "tanh"});
  ge->set_grad_enabled(false);
  Node* filled = add_op(*g, "aten::masked_fill.Scalar", {x, mask, -std::numeric_limits<double>::infinity()});
  Node* clamped = add_op(*g, "aten::clamp", {filled, -3.5, None{}});
  Node* masked = add_op(*g, "aten::masked_fill.Scalar", {add_op(*g, "aten::mul.Scalar", {x, 1e-05}), cb, 0.25});
  Node* hf = add_op(*g, "aten::_to_copy", {h, kDouble});
  Node* both = add_op(*g, "aten::add.Tensor", {hf, ct, 1});
  // Random integer inputs lie in [0, 10): brought into range before they index.
  Node* picked = add_op(*g, "aten::index_select", {x, 0, add_op(*g, "aten::remainder.Scalar", {idx, 4})});
  Node* s = add_op(*g, "aten::sum.dim_IntList", {clamped, std::vector<int64_t>{0}, false});
  Node* biased = add_op(*g, "aten::add.Tensor", {add_op(*g, "aten::mul.Scalar", {c0, 0.5}), big_row, 1});
  g->set_output(
      {ge->out(), mx->out(1), s->out(), masked->out(), both->out(), picked->out(), biased->out(), sp->out(0)});
  return g;
}

TEST(RunnableProgram, PrintsTheChecksumsRunGraphGivesOnTheSameInputs) {
  auto g = rich_graph();
  const std::string source = to_runnable_cpp(*g);

  // In-process: the same seed, the same inputs in the same order, then the stand-in for the
  // constant too large to write out (forward() makes it first).
  manual_seed(0);
  std::vector<Tensor> inputs;
  for (const Node* in : g->inputs()) inputs.push_back(runnable_input(in->meta()[0]));
  auto expected_graph = g->clone();
  expected_graph->set_constant("big", runnable_input(g->find("big")->meta()[0]));
  const std::vector<std::string> expected = summaries(run_graph(*expected_graph, inputs));

  CommandResult run = compile_and_run(source);
  ASSERT_EQ(run.status, 0) << run.output << "\n" << source;
  EXPECT_EQ(lines_of(run.output), expected) << source;
}

TEST(RunnableProgram, AGraphOverSizeSymbolsRunsAtTheSizesItsArgumentsGive) {
  // Size lists and the inputs' geometry are written over the symbols' values (`ks`):
  // forward() reads s0 from x and the mask's count u0 from the index's output, and main()
  // makes the inputs at the example values or at those of `s0=<size>`.
  auto g = parse_graph(R"(graph dyn {
  symbol s0 = 6 for x.size(0) [2, inf]
  symbol u0 for aten::index.Tensor (a bool mask) [0, inf]
  %x : f32[s0, 4] = placeholder[x]
  %w : f32[4, 3] = placeholder[w]
  %mm : f32[s0, 3] = aten::mm(%x, %w)
  %view : f32[3, s0] = aten::view(%mm, [3, s0])
  %gt : b8[s0, 4] = aten::gt.Scalar(%x, 0)
  %index : f32[u0] = aten::index.Tensor(%x, [%gt])
  %view_1 : f32[1, u0] = aten::view(%index, [1, u0])
  return (%view, %view_1)
})");
  const std::string source = to_runnable_cpp(*g);
  EXPECT_NE(source.find("int64_t ks[2] = {6, 0};"), std::string::npos) << source;
  EXPECT_NE(source.find("ks[0] = x.size(0);"), std::string::npos) << source;
  EXPECT_NE(source.find("ks[1] = index.size(0);"), std::string::npos) << source;
  EXPECT_NE(source.find("std::vector<int64_t>{3, ks[0]}"), std::string::npos) << source;
  EXPECT_NE(source.find("make_input({ks[0], 4}, {4, 1}, 0, ember::ScalarType::Float)"), std::string::npos) << source;

  // In-process: the inputs main() makes at s0 = 6 and at s0 = 9 (same seed, same order).
  auto expected_at = [&](int64_t rows) {
    manual_seed(0);
    const Tensor x = runnable_input(meta_of({rows, 4})), w = runnable_input(meta_of({4, 3}));
    const Tensor mm = matmul(x, w), picked = index(x, {x > 0});
    return summaries({mm.view({3, rows}), picked.view({1, picked.size(0)})});
  };
  const std::vector<CommandResult> runs = compile_and_run_each(source, {"", "s0=9", "s3=5", "s0=x"});
  ASSERT_EQ(runs.size(), 4u) << runs[0].output << "\n" << source;
  ASSERT_EQ(runs[0].status, 0) << runs[0].output;
  EXPECT_EQ(lines_of(runs[0].output), expected_at(6));
  ASSERT_EQ(runs[1].status, 0) << runs[1].output;
  EXPECT_EQ(lines_of(runs[1].output), expected_at(9));
  for (size_t k : {2, 3}) {
    EXPECT_NE(runs[k].status, 0) << runs[k].output;
    EXPECT_NE(runs[k].output.find("expected s<k>=<size> with k < 1 (the graph's input symbols)"), std::string::npos)
        << runs[k].output;
  }
}

TEST(RunnableProgram, SpellsOutTheGraphAndEachCall) {
  auto g = rich_graph();
  const std::string source = to_runnable_cpp(*g);
  // The graph's text is the header comment.
  for (const std::string& line : lines_of(to_string(*g))) {
    EXPECT_NE(source.find("//   " + line + "\n"), std::string::npos) << line;
  }
  for (const char* s : {
           "#include <ember/ember.h>",
           "std::vector<ember::Tensor> forward(const ember::Tensor& x, const ember::Tensor& fc_weight, "
           "const ember::Tensor& int_, const ember::Tensor& outputs_, const ember::Tensor& h)",
           "ember::Tensor mm = ember::call_op(\"aten::mm\", {x, fc_weight}).at(0).to_tensor();  // model.cpp:10",
           "ember::Tensor add = ember::call_op(\"aten::add.Tensor\", {mm, _tensor_constant0, "
           "ember::Scalar(int64_t{2})}).at(0).to_tensor();",
           "ember::Stack max = ember::call_op(\"aten::max.dim\", {split_with_sizes.at(1), int64_t{1}, true});",
           "std::vector<ember::Tensor> split_with_sizes = ember::call_op(\"aten::split_with_sizes\", {add, "
           "std::vector<int64_t>{1, 3}, int64_t{0}}).at(0).to_tensor_list();",
           "{std::vector<ember::Tensor>{split_with_sizes.at(1), max.at(0).to_tensor()}, int64_t{1}}",
           "std::vector<std::optional<ember::Tensor>>{_tensor_constant1, std::nullopt}",
           "ember::call_op(\"aten::remainder.Scalar\", {int_, ember::Scalar(int64_t{4})})",
           "ember::NoGradGuard no_grad;\n    return ember::call_op(\"aten::gelu\", {index, std::string(\"tanh\")})",
           "ember::Scalar(1e-05)",
           "ember::ScalarType::Double",
           "ember::Tensor _tensor_constant0 = ember::tensor<float>(std::vector<float>{0.5f, -1.0f, 2.0f, 1e-05f, "
           "3.0f, -4.5f}, std::vector<int64_t>{6}, ember::ScalarType::Float);",
           "ember::Tensor masked_fill = ember::call_op(\"aten::masked_fill.Scalar\", {x, outputs_, "
           "ember::Scalar(-std::numeric_limits<double>::infinity())})",
           "ember::tensor<bool>(std::vector<bool>{true, false, true, false, true, false}",
           "restrided(ember::tensor<double>(std::vector<double>{1.0, 4.0, 2.0, 5.0, 3.0, 6.0}, "
           "std::vector<int64_t>{3, 2}, ember::ScalarType::Double), {1, 3}, 0)",
           "ember::tensor<float>(std::vector<float>{7.0f}, std::vector<int64_t>{}, "
           "ember::ScalarType::Float).reshape(std::vector<int64_t>{})",
           "// constant big (f32[40, 30]): 1200 elements, too many to write out; random values of its geometry "
           "stand in for it.\n  ember::Tensor big = make_input({40, 30}, {30, 1}, 0, ember::ScalarType::Float);",
           "ember::manual_seed(0);\n  ember::Tensor x = make_input({4, 6}, {1, 5}, 3, ember::ScalarType::Float);  "
           "// placeholder x",
           "ember::Tensor fc_weight = make_input({6, 6}, {6, 1}, 0, ember::ScalarType::Float);  // get_attr fc.weight",
           "return {gelu, max.at(1).to_tensor(), sum, masked_fill_1, add_1, index_select, add_2, "
           "split_with_sizes.at(0)};",
       }) {
    EXPECT_NE(source.find(s), std::string::npos) << s << "\n----\n" << source;
  }
}

TEST(RunnableProgram, ConstantsWithoutAValueGetARandomStandIn) {
  auto g =
      parse_graph("graph g {\n  %c : f32[2, 2] = constant[c]\n  %n : f32[2, 2] = aten::neg(%c)\n  return (%n)\n}\n");
  const std::string source = to_runnable_cpp(*g);
  EXPECT_NE(source.find("// constant c (f32[2, 2]): its value is not part of this graph; random values of its "
                        "geometry stand in for it.\n  ember::Tensor c = make_input({2, 2}, {2, 1}, 0, "
                        "ember::ScalarType::Float);"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("std::vector<ember::Tensor> forward() {"), std::string::npos) << source;
}

}  // namespace
}  // namespace ember
