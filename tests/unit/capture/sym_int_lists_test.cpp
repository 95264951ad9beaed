// Tests of size lists that hold symbols (Note [dynamic shapes], "Symbolic int lists"):
// ember::sym_size reads a size without specializing it (a plain int64 in eager code), the
// view/reshape/expand/factory lists built from it keep the symbol through capture, the
// graph text (printed and parsed back), the interpreter (evaluated per call) and the AOT
// stage, so one compile serves every size; a list the symbols cannot satisfy raises at
// the user's line naming the sizes. The GPT-2 block under the inductor:
// tests/unit/inductor/symbolic_block_test.cpp.
#include <gtest/gtest.h>

#include "core/shape_env.h"
#include "ember/ember.h"
#include "graph/text.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::error_of;
using testing::expect_close;
using testing::expect_identical;
using testing::LogCapture;

class SymIntLists : public testing::CompileDirTest {};
class SymIntListsPerBackend : public testing::CompileDirTest, public ::testing::WithParamInterface<const char*> {};

TEST_F(SymIntLists, SymSizeIsAPlainIntegerInEagerCode) {
  const Tensor x = randn({3, 5});
  const SymInt n = sym_size(x, -1);
  EXPECT_FALSE(n.is_symbolic());
  EXPECT_EQ(n.hint(), 5);
  EXPECT_EQ((n * 2 + 1).hint(), 11);
  EXPECT_EQ((n / 2).hint(), 2);
  EXPECT_EQ((SymInt(-7) / 2).hint(), -4) << "floor division, as Python's //";
  EXPECT_EQ((SymInt(-7) % 2).hint(), 1);
  EXPECT_TRUE(n == 5);
  EXPECT_EQ(x.view({sym_size(x, 0) * n}).sizes().vec(), (std::vector<int64_t>{15}));
  EXPECT_EQ(ones({n, SymInt(2)}).sizes().vec(), (std::vector<int64_t>{5, 2}));
}

/// Views, a reshape that must copy, an expand and a factory, all sized by the symbol.
std::vector<Tensor> sized_by_symbol(const Tensor& x) {
  const SymInt n = sym_size(x, 0);
  Tensor flat = x.view({n * 2, -1}).relu();                 // [2n, 8]
  Tensor copied = x.t().reshape({SymInt(4), n * 4}) * 2.0;  // not viewable: clone + view
  Tensor wide = x.sum({1}, true).expand({n, SymInt(3)});    // [n, 3], stride 0
  Tensor mask = triu(ones({n, n}, kBool), 1);               // [n, n]
  return {flat, copied, wide + 1.0, masked_fill(x.matmul(x.t()), mask, 0.0)};
}

TEST_P(SymIntListsPerBackend, ListsBuiltFromSymSizeCompileOnceAndMatchEager) {
  LogCapture logs;
  set_logs("dynamic,recompiles,perf_hints");
  int traces = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++traces;
        const std::vector<Tensor> out = sized_by_symbol(x);
        return std::make_tuple(out[0], out[1], out[2], out[3]);
      },
      {.backend = GetParam(), .name = "lists", .arg_names = {"x"}});
  for (int64_t n : {4, 9, 30, 2}) {
    Tensor x = randn({n, 16});
    mark_dynamic(x, 0);
    const auto [flat, copied, wide, masked] = fn(x);
    const std::vector<Tensor> expected = sized_by_symbol(x);
    const std::string what = "n " + std::to_string(n);
    // Generated kernels may contract a * b + c into an FMA: values to rounding.
    for (size_t i = 0; i < expected.size(); ++i) {
      const Tensor got = i == 0 ? flat : i == 1 ? copied : i == 2 ? wide : masked;
      expect_close(got, expected[i], 1e-5, 1e-5, what);
      ASSERT_EQ(got.strides().vec(), expected[i].strides().vec()) << what << " output " << i;
    }
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one symbolic entry for every n\n" << logs.text();
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

INSTANTIATE_TEST_SUITE_P(Backends, SymIntListsPerBackend, ::testing::Values("eager", "aot_eager", "inductor"));

TEST_F(SymIntLists, GraphTextRoundTripsASymbolicReshapeAndRunsAtOtherSizes) {
  LogCapture logs;
  set_logs("graph_code");
  auto f = [](const Tensor& x) { return x.reshape({sym_size(x, 0) * 2, -1}) + 1.0; };
  auto fn = compile(f, {.backend = "eager", .name = "resh", .arg_names = {"x"}});
  Tensor x = randn({6, 16});
  mark_dynamic(x, 0);
  expect_identical(fn(x), f(x));
  const std::string text = logs.text();
  const size_t start = text.find("graph resh {\n");
  ASSERT_NE(start, std::string::npos) << text;
  const std::string graph = text.substr(start, text.find("\n}\n", start) + 3 - start);
  EXPECT_NE(graph.find(": f32[2*s0, 8] = aten::view(%x, [2*s0, 8])"), std::string::npos) << graph;
  std::unique_ptr<Graph> parsed = parse_graph(graph);
  EXPECT_EQ(to_string(*parsed), graph);
  std::string why;
  // The parsed list holds the parsed environment's symbol: the interpreter evaluates it at
  // each call's size.
  for (int64_t n : {6, 11}) {
    Tensor y = randn({n, 16});
    expect_identical(run_graph(*parsed, {y}).at(0), f(y), "n " + std::to_string(n));
  }
}

TEST_F(SymIntLists, ParserReadsSizeExpressionsOnlyInSymIntLists) {
  const std::string text =
      "graph g {\n"
      "  symbol s0 = 4 for x.size(0) [2, inf]\n"
      "  %x : f32[s0, 6] = placeholder[x]\n"
      "  %view : f32[3*s0, 2] = aten::view(%x, [3*s0, 2])\n"
      "  return (%view)\n"
      "}\n";
  std::unique_ptr<Graph> g = parse_graph(text);
  EXPECT_EQ(to_string(*g), text);
  Tensor x = randn({5, 6});
  expect_identical(run_graph(*g, {x}).at(0), x.view({15, 2}));
  // permute's dims are int[], not SymInt[]: no symbol there.
  const std::string bad = "graph g {\n"
                          "  symbol s0 = 4 for x.size(0) [2, inf]\n"
                          "  %x : f32[s0, 6] = placeholder[x]\n"
                          "  %p : f32[6, s0] strides=[1, 6] = aten::permute(%x, [s0, 0])\n"
                          "  return (%p)\n"
                          "}\n";
  const std::string msg = error_of([&] { parse_graph(bad); });
  EXPECT_NE(msg.find("int[] for argument 'dims'"), std::string::npos) << msg;
}

TEST_F(SymIntLists, AViewTheSymbolsCannotSatisfyRaisesNamingTheSizesAtTheUsersLine) {
  const int line = __LINE__ + 1;
  auto f = [](const Tensor& x) { return x.view({sym_size(x, 0), SymInt(700)}); };
  auto fn = compile(f, {.backend = "eager", .fullgraph = true, .name = "bad", .arg_names = {"x"}});
  const Tensor x = randn({6, 768});
  mark_dynamic(x, 0);
  const std::string msg = error_of([&] { fn(x); });
  EXPECT_NE(msg.find("shape '[s0, 700] (here [6, 700])' is invalid for input of size 768*s0 (here 4608)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("sym_int_lists_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST_F(SymIntLists, GuardIntSpecializesTheSymbolAndAnotherSizeRecompiles) {
  LogCapture logs;
  set_logs("dynamic");
  auto f = [](const Tensor& x) { return x.view({SymInt(sym_size(x, 0).guard_int()), -1}) + 1.0; };
  auto fn = compile(f, {.backend = "eager", .name = "spec", .arg_names = {"x"}, .dynamic = true});
  for (int64_t n : {4, 7}) {
    Tensor x = randn({n, 3});
    expect_identical(fn(x), f(x));
  }
  EXPECT_EQ(fn.cache_size(), 2u);
  EXPECT_NE(logs.text().find("eval s0 == 4 [guard added]"), std::string::npos) << logs.text();
}

}  // namespace
}  // namespace ember
