// Tests of data-dependent sizes in ember::compile (Note [dynamic shapes], "Data-dependent
// sizes"): with config().dynamo.capture_dynamic_output_shape_ops off, nonzero and a
// bool-mask index break the graph with PyTorch's reason; with it on they stay in the graph,
// their size an unbacked symbol u0, u1, …, the ops after them compute over it, and every
// backend gives eager's values, sizes and strides for counts from 0 up from one compile. A
// comparison that needs the size's value raises naming the symbol and the user's line;
// reading the size as an integer breaks the graph there.
#include <gtest/gtest.h>

#include "core/shape_env.h"
#include "ember/ember.h"
#include "graph/text.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::count_of;
using testing::error_of;
using testing::expect_identical;
using testing::LogCapture;

class UnbackedSizes : public testing::CompileDirTest {
 protected:
  void SetUp() override {
    CompileDirTest::SetUp();
    config().dynamo.capture_dynamic_output_shape_ops = true;
  }
};
class UnbackedSizesPerBackend : public UnbackedSizes, public ::testing::WithParamInterface<const char*> {};

/// x of 12 values whose signs give `positives` positive entries (0..12).
Tensor with_positives(int64_t positives) {
  std::vector<float> v(12);
  for (int64_t i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = (i * 5) % 12 < positives ? 1.5f + i : -0.5f - i;
  return tensor(v).view({4, 3});
}

/// nonzero, a bool-mask index of the leading dim and masked_select, each followed by ops
/// over its data-dependent size: pointwise, a reduction, views (view with -1, transpose).
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> uses_data_dependent_sizes(const Tensor& x) {
  Tensor coords = nonzero(x > 0);                                  // [u0, 2] int64
  Tensor scaled = coords * 2 + 1;                                  // pointwise over [u0, 2]
  Tensor rows = index(x, {x.sum({1}) > 0});                        // [u1, 3]
  Tensor moved = (rows.relu() * 3.0).transpose(0, 1);              // [3, u1], a transposed view
  Tensor flat = rows.view({-1});                                   // [3*u1]
  Tensor picked = masked_select(x, x > 1.0);                       // [u2]
  Tensor total = picked.exp().sum({0}) + flat.sum({0});            // reductions over u2 and 3*u1
  return {scaled, moved, flat, picked, total};
}

TEST_P(UnbackedSizesPerBackend, DataDependentSizesStayInOneGraphAndMatchEagerForEveryCount) {
  int traces = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++traces;
        return uses_data_dependent_sizes(x);
      },
      {.backend = GetParam(), .fullgraph = true, .name = "data_dependent"});
  for (int64_t positives : {5, 0, 12, 1, 7}) {
    Tensor x = with_positives(positives);
    const auto got = fn(x);
    const auto want = uses_data_dependent_sizes(x);
    const std::string what = std::to_string(positives) + " positives";
    expect_identical(std::get<0>(got), std::get<0>(want), what);
    expect_identical(std::get<1>(got), std::get<1>(want), what);
    expect_identical(std::get<2>(got), std::get<2>(want), what);
    expect_identical(std::get<3>(got), std::get<3>(want), what);
    testing::expect_close(std::get<4>(got), std::get<4>(want), 1e-6, 1e-6, what);
  }
  EXPECT_EQ(traces, 1) << "one trace serves every count (fullgraph: no break either)";
  EXPECT_EQ(fn.cache_size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, UnbackedSizesPerBackend, ::testing::Values("eager", "aot_eager", "inductor"),
                         [](const auto& info) { return std::string(info.param); });

TEST_F(UnbackedSizes, OffTheKnobNonzeroAndAMaskIndexBreakTheGraphWithPyTorchsReason) {
  config().dynamo.capture_dynamic_output_shape_ops = false;
  auto f = [](const Tensor& x) {
    Tensor count = nonzero(x > 0).sum();
    return count + index(x, {x > 0}).sum();
  };
  Tensor x = with_positives(5);
  const ExplainOutput out = explain(f)(x);
  ASSERT_EQ(out.break_reasons.size(), 2u) << out.str();
  EXPECT_NE(out.break_reasons[0].reason.find(
                "GB0006: an op whose output shape depends on the input's data (dynamic shape operator: aten::nonzero; "
                "to enable, set ember::config().dynamo.capture_dynamic_output_shape_ops = true"),
            std::string::npos)
      << out.break_reasons[0].reason;
  EXPECT_NE(out.break_reasons[1].reason.find("dynamic shape operator: aten::index.Tensor; to enable"),
            std::string::npos)
      << out.break_reasons[1].reason;
  auto fn = compile(f, {.backend = "eager"});
  expect_identical(fn(x), f(x));
  EXPECT_NE(error_of([&] { compile(f, {.backend = "eager", .fullgraph = true})(x); }, ErrorKind::Unsupported)
                .find("dynamic shape operator: aten::nonzero"),
            std::string::npos);
}

// ember::sym_size of a data-dependent size is its unbacked symbol in user code, as PyTorch's
// `nz.size(0)` is u0: view, zeros and expand take it in their size lists without a break,
// and each call's lists hold the count that call's nonzero computed.
TEST_P(UnbackedSizesPerBackend, UserCodeSizesListsWithADataDependentSizeWithoutABreak) {
  const auto f = [](const Tensor& x) {
    const Tensor nz = nonzero(x > 0);  // [u0, 2]
    const SymInt count = sym_size(nz, 0);
    const Tensor flat = nz.view({count * SymInt(2)}) + 1;
    const Tensor rows = zeros({count}, TensorOptions(kLong)) + nz.select(1, 0);
    const Tensor wide = nz.select(1, 1).unsqueeze(1).expand({count, SymInt(3)}) * 2;
    return std::make_tuple(flat, rows, wide);
  };
  int traces = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++traces;
        return f(x);
      },
      {.backend = GetParam(), .fullgraph = true, .name = "sized_by_data"});
  for (int64_t positives : {5, 0, 12, 1}) {
    const Tensor x = with_positives(positives);
    const auto got = fn(x), want = f(x);
    const std::string what = std::to_string(positives) + " positives";
    expect_identical(std::get<0>(got), std::get<0>(want), what);
    expect_identical(std::get<1>(got), std::get<1>(want), what);
    testing::expect_close(std::get<2>(got), std::get<2>(want), 0, 0, what);
  }
  EXPECT_EQ(traces, 1);
}

// x[mask] = v: the result is x's geometry whatever the mask holds, so index_put with a bool
// mask is traced without the knob and without a graph break; the values' fit to the mask's
// count is checked when the op runs, with eager's error at the user's line.
TEST_P(UnbackedSizesPerBackend, IndexPutWithABoolMaskStaysInTheGraphForEveryCountWithoutTheKnob) {
  config().dynamo.capture_dynamic_output_shape_ops = false;
  const int line = __LINE__ + 3;
  const auto put = [](const Tensor& x, const Tensor& v) {
    Tensor y = x * 2;
    index_put_(y, {x > 0}, v);                                 // in place, as x[mask] = v
    return index_put(y, {y.sum({1}) < 0}, v.sum() * 0.5) + 1;  // functional, a row mask
  };
  auto fn = compile(put, {.backend = GetParam(), .fullgraph = true, .name = "masked_put"});
  for (int64_t positives : {5, 0, 12, 7}) {
    const Tensor x = with_positives(positives);
    for (const Tensor& v : {scalar_tensor(-3.0), tensor({positives * 1.0f}).expand({positives})}) {
      const std::string what = std::to_string(positives) + " positives, values " + std::to_string(v.dim()) + "-dim";
      expect_identical(fn(x, v), put(x, v), what);
    }
  }
  const std::string msg = error_of([&] { fn(with_positives(5), ones({4})); });
  EXPECT_NE(msg.find("shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result of shape [5]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("unbacked_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST_F(UnbackedSizes, TheKnobIsSetByItsPyTorchNameAndEnvironmentName) {
  config().dynamo.capture_dynamic_output_shape_ops = false;
  config_set("TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS", "1");
  EXPECT_TRUE(config().dynamo.capture_dynamic_output_shape_ops);
  config_set("dynamo.capture_dynamic_output_shape_ops", "0");
  EXPECT_FALSE(config().dynamo.capture_dynamic_output_shape_ops);
}

TEST_F(UnbackedSizes, DynamicLogNamesEachUnbackedSymbolAndTheUserLine) {
  LogCapture logs;
  set_logs("dynamic");
  const int line = __LINE__ + 1;
  auto fn = compile([](const Tensor& x) { return nonzero(x).to(kFloat) * 2.0; }, {.backend = "eager"});
  fn(with_positives(3));
  EXPECT_NE(logs.text().find("create_unbacked_symint u0 [0, inf] for aten::nonzero at "), std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("unbacked_test.cpp:" + std::to_string(line)), std::string::npos) << logs.text();
}

TEST_F(UnbackedSizes, GraphTextPrintsUnbackedSymbolsAndParsesBack) {
  testing::RecordingBackend backend;
  auto f = [](const Tensor& x) { return (index(x, {x.sum({1}) > 0}) * 2.0).transpose(0, 1); };
  auto fn = compile(f, {.custom_backend = backend.fn(), .name = "masked"});
  Tensor x = with_positives(6);
  expect_identical(fn(x), f(x));
  ASSERT_EQ(backend.graphs->size(), 1u);
  const std::string& text = backend.graphs->at(0);
  EXPECT_NE(text.find("  symbol u0 for aten::index.Tensor (a bool mask) [0, inf]\n"), std::string::npos) << text;
  EXPECT_NE(text.find(": f32[u0, 3] = aten::index.Tensor("), std::string::npos) << text;
  EXPECT_NE(text.find(": f32[3, u0] strides=[1, 3] = aten::transpose.int("), std::string::npos) << text;
  std::unique_ptr<Graph> parsed = parse_graph(text);
  EXPECT_EQ(to_string(*parsed), text);
  const core::ShapeEnv* env = graph_text::shape_env_of(*parsed);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->num_unbacked(), 1u);
  for (int64_t positives : {0, 6, 12}) {
    Tensor y = with_positives(positives);
    expect_identical(run_graph(*parsed, {y}).at(0), f(y), std::to_string(positives) + " positives");
  }
}

TEST_F(UnbackedSizes, AGraphKeptPastItsFunctionKeepsItsShapeEnvironment) {
  // A custom backend that keeps the graphs it is given (as PyTorch users keep `gm`): a
  // graph whose only symbols are data-dependent sizes must keep the environment its
  // expressions refer to, after the trace, the cache entry and the function are gone.
  std::vector<std::shared_ptr<Graph>> kept;
  Backend keeping = [&](Graph& g, const std::vector<Tensor>&) -> CompiledGraph {
    kept.push_back(std::shared_ptr<Graph>(g.clone()));
    return [graph = kept.back()](const std::vector<Tensor>& inputs) { return run_graph(*graph, inputs); };
  };
  auto f = [](const Tensor& x) { return masked_select(x, x > 0) * 2.0; };
  {
    auto fn = compile(f, {.custom_backend = keeping, .name = "kept"});
    Tensor x = with_positives(6);
    expect_identical(fn(x), f(x));
    fn.reset();
  }
  ASSERT_EQ(kept.size(), 1u);
  const core::ShapeEnv* env = graph_text::shape_env_of(*kept[0]);
  ASSERT_TRUE(env);
  std::weak_ptr<const core::ShapeEnv> alive = env->weak_from_this();
  EXPECT_FALSE(alive.expired()) << "the kept graph's values do not hold their shape environment";
  const std::string text = to_string(*kept[0]);
  EXPECT_NE(text.find("  symbol u0 for aten::index.Tensor (a bool mask) [0, inf]\n"), std::string::npos) << text;
  EXPECT_NE(text.find(": f32[u0] = aten::mul.Scalar("), std::string::npos) << text;
  // Nothing else holds it: it goes with the last graph (no cycle).
  kept.clear();
  EXPECT_TRUE(alive.expired());
}

TEST_F(UnbackedSizes, AComparisonThatNeedsTheSizeRaisesNamingTheSymbolAndTheLines) {
  Tensor bias = randn({5});
  const int made = __LINE__ + 2;
  auto f = [&](const Tensor& x) {
    Tensor picked = masked_select(x, x > 0);
    return picked + bias;  // broadcasting [u0] with [5] needs u0 == 5
  };
  const int compared = made + 1;
  const std::string msg = error_of([&] { compile(f, {.backend = "eager", .fullgraph = true})(with_positives(5)); });
  EXPECT_NE(msg.find("Could not guard on data-dependent expression u0 == 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("u0 is the size aten::index.Tensor (a bool mask) computes from data at"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("unbacked_test.cpp:" + std::to_string(made)), std::string::npos) << msg;
  EXPECT_NE(msg.find("unbacked_test.cpp:" + std::to_string(compared)), std::string::npos) << msg;
  // Without fullgraph, as any error capture meets: the function runs eagerly and the
  // warning says why.
  LogCapture logs;
  auto fn = compile(f, {.backend = "eager"});
  Tensor x = with_positives(5);
  expect_identical(fn(x), f(x));
  EXPECT_NE(logs.text().find("Could not guard on data-dependent expression u0 == 5"), std::string::npos)
      << logs.text();
}

TEST_F(UnbackedSizes, ReadingTheSizeAsAnIntegerBreaksTheGraphThere) {
  auto f = [](const Tensor& x) {
    Tensor coords = nonzero(x > 0);
    const int64_t count = coords.size(0);
    return x * static_cast<double>(count) + coords.sum();
  };
  Tensor x = with_positives(4);
  const ExplainOutput out = explain(f)(x);
  ASSERT_EQ(out.break_reasons.size(), 1u) << out.str();
  EXPECT_NE(out.break_reasons[0].reason.find("the data-dependent size u0 (aten::nonzero) read as an integer"),
            std::string::npos)
      << out.break_reasons[0].reason;
  auto fn = compile(f, {.backend = "eager"});
  for (int64_t positives : {4, 0, 9}) {
    Tensor y = with_positives(positives);
    expect_identical(fn(y), f(y), std::to_string(positives) + " positives");
  }
}

TEST_F(UnbackedSizes, SymbolicInputSizesAndUnbackedSizesShareOneCompile) {
  auto f = [](const Tensor& x) { return index(x, {x.select(1, 0) > 0}).relu().sum({0}); };
  int traces = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++traces;
        return f(x);
      },
      {.backend = "aot_eager", .dynamic = true});
  for (int64_t n : {5, 9, 2, 30}) {
    Tensor x = randn({n, 4});
    expect_identical(fn(x), f(x), "batch " + std::to_string(n));
  }
  EXPECT_EQ(traces, 1);
}

// On the CPU the inductor compiles a graph with data-dependent sizes once: the wrapper reads
// each size from the output of the extern call that computes it, and the kernels after it
// (a pointwise kernel and reductions over the rows a mask kept) take it as a size symbol.
TEST_F(UnbackedSizes, InductorCompilesAGraphWithDataDependentSizesOnceForEveryCount) {
  LogCapture logs;
  set_logs("perf_hints,schedule");
  auto f = [](const Tensor& x) {
    const Tensor rows = index(x, {x.sum({1}) > 0});  // [u0, 3]
    return std::make_tuple(nonzero(x > 0).sum({0}), (rows.exp() * 2).sum({0}), rows.relu() + 1);
  };
  auto fn = compile(f, {.backend = "inductor", .fullgraph = true, .name = "counts"});
  for (int64_t positives : {3, 0, 12, 7}) {
    const Tensor x = with_positives(positives);
    const auto got = fn(x), want = f(x);
    const std::string what = std::to_string(positives) + " positives";
    expect_identical(std::get<0>(got), std::get<0>(want), what);
    testing::expect_close(std::get<1>(got), std::get<1>(want), 1e-6, 1e-6, what);
    expect_identical(std::get<2>(got), std::get<2>(want), what);
  }
  EXPECT_EQ(fn.cache_size(), 1u);
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("data-dependent size"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("kernel cpp_fused"), std::string::npos) << "generated kernels: " << logs.text();
}

TEST_P(UnbackedSizesPerBackend, TrainingThroughDataDependentSizesCompilesOnceAndMatchesEagerGradients) {
  // A mask index, masked_select and an index by nonzero's coordinates, with a GEMM, a view
  // over 3 * u0 and reductions after them: AOT autograd traces the joint graph over the
  // data-dependent sizes, the forward and backward graphs compile (the backward reads each
  // size from a saved value's), and the gradients are eager's for every count.
  testing::LogCapture logs("perf_hints");
  auto f = [](const Tensor& x, const Tensor& w) {
    const Tensor rows = index(x, {x.sum({1}) > 0});                          // [u0, 3]
    const Tensor picked = masked_select(x, x > 1.0);                         // [u1]
    const Tensor coords = nonzero(x < -1.0);                                 // [u2, 2], no gradient
    const Tensor at = index(x, {coords.select(1, 0), coords.select(1, 1)});  // [u2]
    return relu(matmul(rows, w)).sum() + (exp(picked) * 0.5).sum() + rows.view({-1}).pow(2).sum() +
           (at * at * 3.0).sum();
  };
  auto fn = compile(f, {.backend = GetParam(), .fullgraph = true, .name = "train_data_dependent"});
  const Tensor w0 = tensor(std::vector<float>{0.5f, -1.f, 2.f, 0.25f, 1.5f, -0.75f}).view({3, 2});
  for (int64_t positives : {4, 0, 12, 7}) {
    Tensor x = with_positives(positives).requires_grad_(), w = w0.clone().requires_grad_();
    const Tensor loss = fn(x, w);
    loss.backward();
    const Tensor gx = x.grad().clone(), gw = w.grad().clone();
    Tensor xe = with_positives(positives).requires_grad_(), we = w0.clone().requires_grad_();
    const Tensor expected = f(xe, we);
    expected.backward();
    const std::string what = std::to_string(positives) + " positives";
    testing::expect_close(loss, expected, 1e-5, 1e-5, what);
    testing::expect_close(gx, xe.grad(), 1e-5, 1e-5, what);
    testing::expect_close(gw, we.grad(), 1e-5, 1e-5, what);
  }
  EXPECT_EQ(fn.cache_size(), 1u);
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_F(UnbackedSizes, AnOpThatReadsSizesAsIntegersBreaksTheGraphAtItsCall) {
  // _pdist_forward computes its pair indices from the row count through arange's size list
  // (ember::sym_size), where a data-dependent size cannot go (no input holds it): the read
  // is an integer read, so the graph breaks there and it runs for real.
  auto f = [](const Tensor& x) { return _pdist_forward(index(x, {x > 0}).unsqueeze(1) * 2.0); };
  Tensor x = with_positives(7);
  const ExplainOutput out = explain(f)(x);
  ASSERT_EQ(out.break_reasons.size(), 1u) << out.str();
  EXPECT_NE(out.break_reasons[0].reason.find("read as an integer"), std::string::npos) << out.break_reasons[0].reason;
  auto fn = compile(f, {.backend = "eager"});
  for (int64_t positives : {7, 0, 2}) {
    Tensor y = with_positives(positives);
    expect_identical(fn(y), f(y), std::to_string(positives) + " positives");
  }
}

TEST_F(UnbackedSizes, ShapeEnvDecidesComparisonsWithZeroOrOneAsIfTheSizeWereAtLeastTwo) {
  core::ShapeEnv env;
  const core::SymInt u = env.create_unbacked("aten::nonzero");
  EXPECT_EQ(u.str(), "u0");
  EXPECT_EQ(env.num_unbacked(), 1u);
  EXPECT_EQ(env.num_symbols(), 0u) << "an unbacked symbol is not read from an input";
  EXPECT_TRUE(u >= 0) << "decided by the range [0, inf]";
  EXPECT_FALSE(u == 1) << "size-oblivious";
  EXPECT_TRUE(u * 3 > 1) << "size-oblivious";
  EXPECT_TRUE(u - u == 0);
  EXPECT_TRUE(env.guards().empty()) << "nothing about an unbacked symbol is a guard";
  const std::string msg = error_of([&] { (void)(u == 5); });
  EXPECT_NE(msg.find("Could not guard on data-dependent expression u0 == 5 (u0 is the size aten::nonzero computes "
                     "from data"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of([&] { (void)u.guard_int(); })
                .find("Could not extract specialized integer from data-dependent expression u0"),
            std::string::npos);
  EXPECT_EQ(core::sym::to_string(core::sym::parse("u0*2 + s1")), "s1 + 2*u0");
}

TEST_F(UnbackedSizes, GraphTextRejectsAGuardOnADataDependentSizeAndANegativeRange) {
  const std::string head = "graph g {\n  symbol u0 for aten::nonzero [0, inf]\n";
  const std::string body = "  %x : f32[4] = placeholder[x]\n  return (%x)\n}\n";
  EXPECT_NE(error_of([&] { parse_graph(head + "  guard u0 == 3\n" + body); }).find("names a data-dependent size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_graph("graph g {\n  symbol u0 for aten::nonzero [-1, inf]\n" + body); })
                .find("a range of sizes (from 0 up)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_graph("graph g {\n  symbol u1 for aten::nonzero [0, inf]\n" + body); })
                .find("symbol u0 (symbols are numbered in order)"),
            std::string::npos);
}

TEST_F(UnbackedSizes, MaskedSelectBroadcastsTheMaskAsPyTorchDoes) {
  Tensor x = arange(12).to(kFloat).view({4, 3});
  Tensor mask = tensor({1.0f, 0.0f, 1.0f}) > 0.5;
  Tensor picked = masked_select(x, mask);
  EXPECT_EQ(picked.sizes().vec(), std::vector<int64_t>{8});
  EXPECT_EQ(picked.to_vector<float>(), (std::vector<float>{0, 2, 3, 5, 6, 8, 9, 11}));
  EXPECT_EQ(masked_select(scalar_tensor(2.0), scalar_tensor(1.0) > 0.5).sizes().vec(), std::vector<int64_t>{1});
  EXPECT_NE(error_of([&] { masked_select(x, x.to(kInt64)); }).find("masked_select: expected BoolTensor for mask"),
            std::string::npos);
}

}  // namespace
}  // namespace ember
