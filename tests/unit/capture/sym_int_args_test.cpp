// Tests of single SymInt arguments (Note [dynamic shapes], "Symbolic int lists" and
// "Single SymInt arguments"): a start, end, length, index, split size or arange end computed
// from ember::sym_size keeps its symbol through capture, the graph text (printed and parsed
// back), the interpreter (evaluated per call) and the inductor, so one compile serves every
// size with eager's values, sizes and strides; flatten/unflatten of symbolic dims stay
// symbolic; the guards such a trace records print readably.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::LogCapture;

class SymIntArgs : public testing::CompileDirTest {};
class SymIntArgsPerBackend : public testing::CompileDirTest, public ::testing::WithParamInterface<const char*> {};

/// Compiles `f` (one tensor in, a tuple of results out) under `backend`, calls it at each
/// `sizes` (dim 0 marked dynamic; `rows(n)` makes the input) and checks every result against
/// eager: values, sizes, strides and dtype. Returns the logs.
template <size_t N, typename F, typename Make>
std::string expect_one_compile_matches_eager(const char* backend, const char* name, F f, Make make,
                                             std::initializer_list<int64_t> sizes, int64_t dynamic_dims = 1) {
  LogCapture logs;
  set_logs("dynamic,recompiles,perf_hints,guards");
  int traces = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++traces;
        return f(x);
      },
      {.backend = backend, .name = name, .arg_names = {"x"}});
  for (int64_t n : sizes) {
    Tensor x = make(n);
    for (int64_t d = 0; d < dynamic_dims; ++d) mark_dynamic(x, d);
    const auto got = fn(x);
    const auto expected = f(x);
    const std::string what = std::string(backend) + " n " + std::to_string(n);
    [&]<size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            const Tensor& g = std::get<I>(got);
            const Tensor& e = std::get<I>(expected);
            EXPECT_EQ(g.dtype(), e.dtype()) << what << " output " << I;
            EXPECT_EQ(g.sizes().vec(), e.sizes().vec()) << what << " output " << I;
            EXPECT_EQ(g.strides().vec(), e.strides().vec()) << what << " output " << I;
            // Generated kernels may contract a * b + c into an FMA: values to rounding.
            expect_close(g, e, 1e-5, 1e-5, what + " output " + std::to_string(I));
          }(),
          ...);
    }(std::make_index_sequence<N>());
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one symbolic entry for every size\n" << logs.text();
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  return logs.text();
}

/// narrow, slice, select, split and arange at positions computed from the symbol.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor> sliced_by_symbol(const Tensor& x) {
  const SymInt n = sym_size(x, 0);
  Tensor head = x.narrow(0, 0, n - 1) * 2.0;                 // [n-1, 6]
  Tensor diff = x.slice(0, 1, n) - x.narrow(0, 0, n - 1);    // [n-1, 6], offset 6
  Tensor last = x.select(0, n - 1).relu();                   // [6], offset 6*(n-1)
  Tensor idx = arange(n, kFloat) * 3.0;                      // [n]
  const std::vector<Tensor> parts = split(x, n - 1);         // [n-1, 6] and [1, 6]
  return {head, diff, last, idx, parts.at(0) + 1.0, parts.at(1) * parts.at(1)};
}

TEST_P(SymIntArgsPerBackend, SliceNarrowSelectSplitAndArangeFromSymSizeCompileOnceAndMatchEager) {
  expect_one_compile_matches_eager<6>(GetParam(), "sliced", sliced_by_symbol,
                                      [](int64_t n) { return randn({n, 6}); }, {5, 9, 3, 33});
}

/// flatten of symbolic dims, unflatten by a symbolic size and view with -1.
std::tuple<Tensor, Tensor, Tensor> flattened(const Tensor& x) {  // x [n, m, 8]
  const SymInt m = sym_size(x, 1);
  Tensor flat = x.flatten(1) + 1.0;                     // [n, 8*m]
  Tensor back = flat.unflatten(1, {m, SymInt(8)}) * 2;  // [n, m, 8]
  Tensor rows = x.view({-1, 8}).relu();                 // [n*m, 8]
  return {flat, back, rows};
}

TEST_P(SymIntArgsPerBackend, FlattenUnflattenAndViewWithMinusOneOfSymbolicDimsCompileOnce) {
  expect_one_compile_matches_eager<3>(GetParam(), "flat", flattened, [](int64_t n) { return randn({n, n + 1, 8}); },
                                      {3, 6, 11}, /*dynamic_dims=*/2);
}

TEST_P(SymIntArgsPerBackend, AFloorDividedSliceEndStaysSymbolic) {
  // x[:, : x.size(1) // 2] as PyTorch spells it; `/` on SymInt is Python's //.
  auto f = [](const Tensor& x) { return std::make_tuple(x.slice(1, std::nullopt, sym_size(x, 1) / 2) * 3.0); };
  expect_one_compile_matches_eager<1>(GetParam(), "half", f, [](int64_t n) { return randn({3, n}); }, {4, 7, 10},
                                      /*dynamic_dims=*/2);
}

/// slice_scatter and select_scatter at positions computed from the symbol T = x.size(1)
/// (x [B, T, 4]), with self's and src's sizes along the dim symbolic. The sources are views
/// of x, so that every guard the trace records comes from the scatters.
std::tuple<Tensor, Tensor, Tensor, Tensor> scattered_by_symbol(const Tensor& x) {
  const SymInt T = sym_size(x, 1);
  // x[:, 1:] = x[:, :-1]: src [B, T - 1, 4] written into the last T - 1 rows.
  Tensor shifted = slice_scatter(x, x.slice(1, 0, T - 1), 1, 1);
  // x[:, T - 1] = x[:, 0].
  Tensor last = select_scatter(x, x.select(1, 0), 1, T - 1);
  // x[:, 0:T-1:2] = x[:, 1::2]: T // 2 rows each, every other one.
  Tensor strided = slice_scatter(x, x.slice(1, 1, std::nullopt, 2), 1, 0, T - 1, 2);
  // A transposed self [T, B, 4]: its first T - 1 rows from its last ones; the result keeps
  // self's layout.
  const Tensor xt = x.transpose(0, 1);
  Tensor transposed = slice_scatter(xt, xt.slice(0, 1), 0, 0, T - 1);
  return {shifted, last, strided, transposed};
}

TEST_P(SymIntArgsPerBackend, SliceAndSelectScatterAtSymbolicPositionsCompileOnceAndMatchEager) {
  const std::string logs = expect_one_compile_matches_eager<4>(
      GetParam(), "scattered", scattered_by_symbol, [](int64_t n) { return randn({n + 2, n, 4}); }, {5, 8, 13},
      /*dynamic_dims=*/2);
  // The ranges decide every clamp of the positions, src's sizes equal the slices' by their
  // expressions, and the view that spreads the step-2 source is of a contiguous tensor: no
  // guard beyond the symbols' ranges.
  EXPECT_EQ(logs.find("[guard added]"), std::string::npos) << logs;
}

/// arange with a symbolic start, end or step (T = x.size(0)).
std::tuple<Tensor, Tensor, Tensor, Tensor> aranges_by_symbol(const Tensor& x) {
  const SymInt T = sym_size(x, 0);
  return {arange(T, 2 * T),           // [T] int64: T..2T-1
          arange(0, T, 2, kFloat),    // [(T + 1)//2]
          arange(2 * T, T, -3),       // [(T + 2)//3]: 2T, 2T-3, …
          arange(1, 3 * T, T, kFloat)};  // [3]: a symbolic step
}

TEST_P(SymIntArgsPerBackend, ArangeWithSymbolicStartAndStepCompilesOnceAndMatchesEager) {
  const std::string logs = expect_one_compile_matches_eager<4>(
      GetParam(), "aranges", aranges_by_symbol, [](int64_t n) { return randn({n, 3}); }, {2, 5, 9, 16});
  EXPECT_EQ(logs.find("[guard added]"), std::string::npos) << "the ranges decide the step's sign and the order\n"
                                                           << logs;
}

INSTANTIATE_TEST_SUITE_P(Backends, SymIntArgsPerBackend, ::testing::Values("eager", "aot_eager", "inductor"));



TEST_F(SymIntArgs, GraphTextPrintsSymbolicArgumentsAndParsesBackToRunAtOtherSizes) {
  LogCapture logs;
  set_logs("graph_code");
  auto f = [](const Tensor& x) { return x.narrow(0, 1, sym_size(x, 0) - 1).select(1, sym_size(x, 1) - 2) + 1.0; };
  auto fn = compile(f, {.backend = "eager", .name = "nar", .arg_names = {"x"}});
  Tensor x = randn({6, 5});
  mark_dynamic(x, 0);
  mark_dynamic(x, 1);
  testing::expect_identical(fn(x), f(x));
  const std::string text = logs.text();
  const size_t start = text.find("graph nar {\n");
  ASSERT_NE(start, std::string::npos) << text;
  const std::string graph = text.substr(start, text.find("\n}\n", start) + 3 - start);
  EXPECT_NE(graph.find("= aten::slice.Tensor(%x, 0, 1, s0, 1)"), std::string::npos) << graph;
  EXPECT_NE(graph.find(", 1, s1 - 2)"), std::string::npos) << graph;
  std::unique_ptr<Graph> parsed = parse_graph(graph);
  EXPECT_EQ(to_string(*parsed), graph);
  for (int64_t n : {6, 11}) {
    Tensor y = randn({n, n + 2});
    testing::expect_identical(run_graph(*parsed, {y}).at(0), f(y), "n " + std::to_string(n));
  }
}

TEST_F(SymIntArgs, ARelationComparedByEveryOpIsGuardedOnce) {
  LogCapture logs;
  set_logs("guards");
  // Each op over [s0 - 1, 6] asks whether s0 - 1 is 1 (broadcasting): one guard for all.
  auto f = [](const Tensor& x) {
    const Tensor head = x.narrow(0, 0, sym_size(x, 0) - 1);
    return ((head * 2.0 + head) - head.relu()) * head;
  };
  auto fn = compile(f, {.backend = "eager", .name = "once", .arg_names = {"x"}, .dynamic = true});
  Tensor x = randn({7, 6});
  testing::expect_identical(fn(x), f(x));
  const std::string text = logs.text();
  const size_t first = text.find("x.size(0) - 1 != 1");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("x.size(0) - 1 != 1", first + 1), std::string::npos) << text;
}

TEST_F(SymIntArgs, GuardsOfASymbolicSplitPrintOverSources) {
  LogCapture logs;
  set_logs("guards");
  // Pieces of 4 along a symbolic dim: their number is guarded, the last piece's size is not.
  auto f = [](const Tensor& x) {
    const std::vector<Tensor> parts = split(x, 4);
    return parts.back() * 2.0;
  };
  auto fn = compile(f, {.backend = "eager", .name = "pieces", .arg_names = {"x"}});
  for (int64_t n : {10, 11, 12, 13}) {
    Tensor x = randn({n, 3});
    mark_dynamic(x, 0);
    testing::expect_identical(fn(x), f(x), "n " + std::to_string(n));
  }
  EXPECT_EQ(fn.cache_size(), 2u) << "10..12 make 3 pieces, 13 makes 4\n" << logs.text();
  EXPECT_NE(logs.text().find("(x.size(0) + 3)//4 == 3"), std::string::npos) << logs.text();
}

TEST_F(SymIntArgs, SliceScatterOfASecondInputGuardsItsSizeAndCompilesOnce) {
  // x[:, 1:] = y with y an input [B, S, C]: the slice's size T - 1 must equal S, one guard
  // that replaces S by T - 1, and every (T, T - 1) pair runs the one entry.
  LogCapture logs;
  set_logs("guards,dynamic");
  auto f = [](const Tensor& x, const Tensor& y) { return slice_scatter(x, y, 1, 1) * 2.0; };
  auto fn = compile(f, {.backend = "inductor", .name = "into_rows", .arg_names = {"x", "y"}, .dynamic = true});
  for (int64_t t : {5, 9, 17}) {
    const Tensor x = randn({3, t, 7}), y = randn({3, t - 1, 7});
    testing::expect_identical(fn(x, y), f(x, y), "T " + std::to_string(t));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_NE(logs.text().find("y.size(1) == x.size(1) - 1"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  // A y of another length breaks the guard: a new entry, and eager's error for a mismatch.
  const Tensor x = randn({3, 6, 7});
  EXPECT_THROW(fn(x, randn({3, 4, 7})), Error);
}

TEST_F(SymIntArgs, ArangeBetweenTwoSymbolsGuardsTheirOrder) {
  // arange(x.size(0), x.size(1)): PyTorch's check that end >= start for a positive step
  // is a guard over the two sources, and the length their difference.
  LogCapture logs;
  set_logs("guards");
  auto f = [](const Tensor& x) { return arange(sym_size(x, 0), sym_size(x, 1), 1, kFloat) * 2.0; };
  auto fn = compile(f, {.backend = "inductor", .name = "between", .arg_names = {"x"}, .dynamic = true});
  for (int64_t n : {3, 5, 8}) {
    const Tensor x = randn({n, 2 * n + 1});
    const Tensor got = fn(x);
    EXPECT_EQ(got.size(0), n + 1);
    testing::expect_identical(got, f(x), "n " + std::to_string(n));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_NE(logs.text().find("x.size(0) <= x.size(1)"), std::string::npos) << logs.text();
}

}  // namespace
}  // namespace ember
