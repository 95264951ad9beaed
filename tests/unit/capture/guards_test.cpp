// Tests of what a cache entry guards and how recompilations are reported: storage offsets
// are not guarded (minibatches narrowed out of one tensor replay one entry) unless the
// function reads them, doubles are guarded by value with a recompile log that names the
// argument, the cache_size_limit warning comes once per function, and the recompile logs
// say each failure once.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::count_of;
using testing::expect_close;
using testing::RecordingBackend;

class GuardsTest : public testing::CompileDirTest {};

Tensor minibatch_step(const Tensor& xb, const Tensor& w) { return (xb.matmul(w) * 0.5).relu().sum(); }

TEST_F(GuardsTest, NarrowedMinibatchesReplayOneEntryWhateverTheirOffset) {
  RecordingBackend backend;
  int runs = 0;
  auto step = compile(
      [&runs](const Tensor& xb, const Tensor& w) {
        ++runs;
        return minibatch_step(xb, w);
      },
      {.custom_backend = backend.fn(), .name = "step", .arg_names = {"xb", "w"}});
  const int64_t batch = 4, batches = 12;  // more batches than cache_size_limit (8)
  Tensor X = randn({batch * batches, 3}), w = randn({3, 2});
  testing::LogCapture logs;
  for (int64_t b = 0; b < batches; ++b) {
    Tensor xb = X.narrow(0, b * batch, batch);
    ASSERT_EQ(xb.storage_offset(), b * batch * 3);
    expect_close(step(xb, w), minibatch_step(xb, w), 1e-5, 1e-5, "batch " + std::to_string(b));
  }
  EXPECT_EQ(step.cache_size(), 1u);
  EXPECT_EQ(backend.graphs->size(), 1u);
  EXPECT_EQ(runs, 1) << "every batch after the first replays";
  EXPECT_EQ(logs.text().find("cache_size_limit"), std::string::npos) << logs.text();
}

TEST_F(GuardsTest, SegmentsOfAFunctionWithABreakAreKeyedWithoutTheInputsOffset) {
  RecordingBackend backend;
  auto fn = [](const Tensor& xb) {
    Tensor y = xb.narrow(0, 1, 2).exp();
    graph_break();  // segment mode: the function runs on every call, each segment found by its text
    return y * 2;
  };
  auto compiled = compile(fn, {.custom_backend = backend.fn(), .name = "segmented"});
  Tensor X = randn({40});
  for (int64_t b = 0; b < 10; ++b) {
    Tensor xb = X.narrow(0, b * 4, 4);
    expect_close(compiled(xb), fn(xb));
  }
  EXPECT_EQ(backend.graphs->size(), 2u) << "one graph before the break, one after, whatever the offset";
}

TEST_F(GuardsTest, InductorCodeIsRightAtAnyOffsetIncludingMisalignedOnes) {
  int compiles = 0;
  register_builtin_backends();
  const Backend inductor = lookup_backend("inductor");
  Backend counting = [&](Graph& g, const std::vector<Tensor>& examples) {
    ++compiles;
    return inductor(g, examples);
  };
  auto fn = [](const Tensor& a, const Tensor& b) { return (a * b + a.exp()).sum(std::vector<int64_t>{1}); };
  auto compiled = compile(fn, {.custom_backend = counting, .name = "misaligned"});
  // 37 columns: rows start at every residue modulo the vector width.
  Tensor A = randn({64, 37}), B = randn({64, 37});
  for (int64_t start : {0, 1, 3, 5, 17, 30}) {
    Tensor a = A.narrow(0, start, 16), b = B.narrow(0, start + 2, 16);
    expect_close(compiled(a, b), fn(a, b), 1e-5, 1e-5, "rows from " + std::to_string(start));
    Tensor cols = A.narrow(1, start % 7, 30).narrow(0, 0, 16), other = B.narrow(1, 1, 30).narrow(0, 0, 16);
    expect_close(compiled(cols, other), fn(cols, other), 1e-5, 1e-5, "columns from " + std::to_string(start));
  }
  EXPECT_EQ(compiles, 2) << "one compile per layout (contiguous rows, a column slice), none per offset";
}

TEST_F(GuardsTest, ReadingTheStorageOffsetWhileTracingGuardsIt) {
  int runs = 0;
  auto fn = [](const Tensor& x) { return x * static_cast<double>(x.storage_offset()); };
  auto compiled = compile(
      [&runs, fn](const Tensor& x) {
        ++runs;
        return fn(x);
      },
      {.name = "reads_offset", .arg_names = {"x"}});
  Tensor X = ones({16});
  expect_close(compiled(X.narrow(0, 4, 4)), full({4}, 4.0));
  expect_close(compiled(X.narrow(0, 8, 4)), full({4}, 8.0));
  expect_close(compiled(X.narrow(0, 8, 4)), full({4}, 8.0));
  EXPECT_EQ(runs, 2);
  set_logs("guards");
  testing::LogCapture logs;
  compiled.reset();
  compiled(X.narrow(0, 12, 4));
  EXPECT_NE(logs.text().find("tensor 'x': storage offset == 12 (read while tracing)"), std::string::npos)
      << logs.text();
}

TEST_F(GuardsTest, ADoubleArgumentIsGuardedByValueAndTheRecompileLogNamesIt) {
  set_logs("recompiles");
  testing::LogCapture logs;
  int runs = 0;
  auto sample = compile(
      [&runs](const Tensor& logits, double temperature) {
        ++runs;
        return ember::softmax(logits / temperature, -1);
      },
      {.name = "sample"});
  Tensor logits = randn({2, 5});
  expect_close(sample(logits, 0.7), ember::softmax(logits / 0.7, -1));
  expect_close(sample(logits, 0.9), ember::softmax(logits / 0.9, -1));
  EXPECT_EQ(runs, 2) << "floats are specialized: a new value recompiles";
  const std::string t = logs.text();
  EXPECT_NE(t.find("Recompiling function sample"), std::string::npos) << t;
  EXPECT_NE(t.find("'arg1' == 0.7 (actual 0.9)"), std::string::npos) << t;
  EXPECT_NE(t.find("argument 1 (arg1), a double, changed: doubles are specialized into the graph by value"),
            std::string::npos)
      << t;
}

TEST_F(GuardsTest, CacheSizeLimitWarningComesOncePerFunction) {
  // Static sizes throughout (dynamic = false): each new size is an entry.
  config().dynamo.cache_size_limit = 2;
  testing::LogCapture logs;
  auto grows = compile([](const Tensor& x) { return x + 1; }, {.name = "grows_once", .arg_names = {"x"}, .dynamic = false});
  for (int64_t n = 1; n <= 6; ++n) expect_close(grows(ones({n})), full({n}, 2.0));
  EXPECT_EQ(count_of(logs.text(), "hit config.cache_size_limit"), 1u) << logs.text();
  auto other = compile([](const Tensor& x) { return x - 1; }, {.name = "grows_too", .arg_names = {"x"}, .dynamic = false});
  for (int64_t n = 1; n <= 4; ++n) other(ones({n}));
  EXPECT_EQ(count_of(logs.text(), "hit config.cache_size_limit"), 2u) << "another function warns once too";
}

TEST_F(GuardsTest, RecompileLogSaysAFailureSharedByEveryEntryOnce) {
  set_logs("recompiles");
  auto f = compile([](const Tensor& x) { return x * 2; }, {.name = "modes", .arg_names = {"x"}, .dynamic = false});
  f(ones({1}));
  f(ones({2}));
  f(ones({3}));
  testing::LogCapture logs;
  {
    NoGradGuard no_grad;
    f(ones({1}));
  }
  const std::string t = logs.text();
  EXPECT_EQ(count_of(t, "grad mode mismatch. expected enabled"), 1u) << t;
  EXPECT_NE(t.find("- grad mode mismatch. expected enabled (each of the 3 cache entries)"), std::string::npos) << t;
}

TEST_F(GuardsTest, RecompilesVerboseListsEveryFailingGuardOfEachEntry) {
  set_logs("recompiles_verbose");
  testing::LogCapture logs;
  auto f = compile([](const Tensor& x, int64_t k) { return x * static_cast<double>(k); },
                   {.name = "verbose", .arg_names = {"x", "k"}});
  f(ones({2}), 1);
  f(ones({3}, kDouble), 2);
  const std::string t = logs.text();
  EXPECT_NE(t.find("Recompiling function verbose"), std::string::npos) << t;
  EXPECT_NE(t.find("guard 0 failures:\n"), std::string::npos) << t;
  EXPECT_NE(t.find("- tensor 'x' dtype mismatch. expected Float, actual Double"), std::string::npos) << t;
  EXPECT_NE(t.find("- 'k' == 1 (actual 2)"), std::string::npos) << t;
}

}  // namespace
}  // namespace ember
