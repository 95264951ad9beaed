// Tests of the inductor backend's general reductions: sum/mean/amax/amin/var/prod over any
// dims (first, middle, last, several, all; keepdim both ways) of contiguous, permuted,
// sliced and broadcast inputs, f32 and f64, each fused with a pointwise prologue and
// epilogue into one generated kernel, equal to eager; row and column kernels; what stays
// an extern call; and the ir dumps' reduction ranges.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

using testing::expect_close;
using testing::read_text;
using ReductionTest = testing::CompileDirTest;

enum class Layout { Contiguous, Permuted, Sliced, Broadcast };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Permuted: return "permuted";
    case Layout::Sliced: return "sliced";
    case Layout::Broadcast: return "broadcast";
  }
  return "";
}

/// The graph's argument for each layout; view() makes of it a [7, 13, 5] input.
Tensor raw_input(Layout l, ScalarType dtype) {
  switch (l) {
    case Layout::Contiguous: return randn({7, 13, 5}, dtype);
    case Layout::Permuted: return randn({13, 5, 7}, dtype);
    case Layout::Sliced: return randn({9, 15, 10}, dtype);
    case Layout::Broadcast: return randn({7, 1, 5}, dtype);
  }
  return {};
}

Tensor view(Layout l, const Tensor& raw) {
  switch (l) {
    case Layout::Contiguous: return raw;
    case Layout::Permuted: return raw.permute({2, 0, 1});
    case Layout::Sliced: return raw.slice(0, 1, 8).slice(1, 2, 15).slice(2, 0, 10, 2);
    case Layout::Broadcast: return raw.expand({7, 13, 5});
  }
  return {};
}

enum class Op { Sum, Mean, Amax, Amin, Var, Prod };
constexpr Op kOps[] = {Op::Sum, Op::Mean, Op::Amax, Op::Amin, Op::Var, Op::Prod};

/// dim 0, the middle dim, the last dim, two dims apart, the two innermost, every dim.
const std::vector<std::vector<int64_t>> kDimSets = {{0}, {1}, {-1}, {0, 2}, {1, 2}, {}};

/// op(prologue(x), dims, keepdim) * 3 - 1: a pointwise producer and consumer per reduction.
Tensor reduce(Op op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  switch (op) {
    case Op::Sum: return sum(x * 2 - 1, dims, keepdim) * 3 - 1;
    case Op::Mean: return mean(exp(x) - 1, dims, keepdim) * 3 - 1;
    case Op::Amax: return amax(x * 2 - 1, dims, keepdim) * 3 - 1;
    case Op::Amin: return amin(tanh(x) + 1, dims, keepdim) * 3 - 1;
    case Op::Var: return var(x * 2 + 1, dims, Scalar(1), keepdim) * 3 - 1;
    case Op::Prod: {
      // prod.dim_int takes one dim; several dims and all dims chain over the full prod.
      Tensor p = x * 0.05 + 1;
      if (dims.size() == 1) return prod(p, dims[0], keepdim) * 3 - 1;
      return prod(p) * 3 - 1;
    }
  }
  return {};
}

struct Case {
  Layout layout;
  ScalarType dtype;
};

class ReductionGrid : public ReductionTest, public ::testing::WithParamInterface<Case> {};

// Every op x dim set x keepdim in one graph per layout and dtype (one C++ compile each).
TEST_P(ReductionGrid, EveryReductionIsOneFusedKernelAndEqualsEager) {
  const Case c = GetParam();
  testing::LogCapture logs("fusion,inductor");
  auto fn = [c](const Tensor& raw) {
    const Tensor x = view(c.layout, raw);
    std::vector<Tensor> outs;
    for (Op op : kOps)
      for (const auto& dims : kDimSets) {
        if (op == Op::Prod && dims.size() == 2) continue;  // prod reduces one dim or all
        for (bool keepdim : {false, true}) {
          if (op == Op::Prod && dims.empty() && keepdim) continue;
          outs.push_back(reduce(op, x, dims, keepdim));
        }
      }
    return outs;
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  const Tensor raw = raw_input(c.layout, c.dtype);
  const std::vector<Tensor> got = compiled(raw), want = fn(raw);
  ASSERT_EQ(got.size(), want.size());
  const double rtol = c.dtype == kFloat ? 2e-5 : 1e-11, atol = c.dtype == kFloat ? 2e-5 : 1e-11;
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got[i], want[i], rtol, atol, std::string(layout_name(c.layout)) + " output " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty()) << logs.text();
  EXPECT_EQ(logs.text().find("extern fallback"), std::string::npos) << logs.text();
  ASSERT_EQ(r.kernels.size(), got.size()) << "one kernel per reduction\n" << logs.text();
  for (const auto& [name, nodes] : r.kernels)
    EXPECT_GE(nodes.size(), 5u) << name << ": the prologue's two nodes, the reduction, the epilogue's two";
  if (c.layout == Layout::Contiguous) {
    // dim 0 keeps the contiguous inner dims (column kernels); dims [0, 2] leave dim 0 as
    // segments of rows along dim 2.
    for (const char* marker : {"col_sum<V, CB>", "col_minmax<V, CB, 1>", "col_minmax<V, CB, 0>", "col_prod<V, CB>",
                               "for (int64_t s = 0; s < 7; ++s)"})
      EXPECT_NE(r.source.find(marker), std::string::npos) << marker;
  }
}

INSTANTIATE_TEST_SUITE_P(LayoutsAndDtypes, ReductionGrid,
                         ::testing::Values(Case{Layout::Contiguous, kFloat}, Case{Layout::Permuted, kFloat},
                                           Case{Layout::Sliced, kFloat}, Case{Layout::Broadcast, kFloat},
                                           Case{Layout::Contiguous, kDouble}, Case{Layout::Permuted, kDouble},
                                           Case{Layout::Sliced, kDouble}, Case{Layout::Broadcast, kDouble}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(layout_name(i.param.layout)) + (i.param.dtype == kFloat ? "F32" : "F64");
                         });

TEST_F(ReductionTest, DegenerateShapesAndFullReductionsEqualEager) {
  // 1 x n and n x 1 (size-1 dims drop out of the loops), full sum/mean (aten::sum,
  // aten::mean) and std (var then sqrt).
  auto fn = [](const Tensor& a, const Tensor& b) {
    return std::vector<Tensor>{sum(a, {0}),      sum(a, {1}, true), amax(a, {}),          mean(b, {0}, true),
                               amin(b, {1}),     sum(b),            mean(a * 2),          ember::std(b),
                               var(a, std::vector<int64_t>{1}, Scalar(0), true)};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor a = randn({1, 37}), b = randn({37, 1});
  const auto got = compiled(a, b), want = fn(a, b);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 2e-6, 2e-6, "output " + std::to_string(i));
  EXPECT_TRUE(inductor::last_compile_report().extern_calls.empty());
}

TEST_F(ReductionTest, LargeFullReductionsSplitAcrossThreadsAndEqualEager) {
  // 300 x 257 = 77,100 elements to one value: the range splits across threads, as one
  // contiguous row (x, and x.t(), whose dims merge back into one) or as segments (a slice
  // of x: 300 rows of 256 that do not merge).
  auto fn = [](const Tensor& x) {
    std::vector<Tensor> outs;
    for (const Tensor& v : {x, x.t(), x.slice(1, 0, 256)}) {
      outs.push_back(sum(v * 2 - 1) + 1);
      outs.push_back(mean(v, {0, 1}, true));
      outs.push_back(amax(v));
      outs.push_back(amin(v, {}, true));
      outs.push_back(var(v));
      outs.push_back(prod(v * 0.01 + 1));
    }
    return outs;
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({300, 257});
  const auto got = compiled(x), want = fn(x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 2e-5, 2e-5, "output " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty());
  EXPECT_EQ(r.kernels.size(), got.size());
  EXPECT_NE(r.source.find("const int64_t x0 = 77100 * t / nth"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("for (int64_t s = 300 * t / nth; s < 300 * (t + 1) / nth; ++s)"), std::string::npos)
      << r.source;
}

TEST_F(ReductionTest, ParallelColumnAndSegmentedRowKernelsOfLargeInputsEqualEager) {
  // Sizes past the parallel threshold: column kernels with an outer kept dim, row kernels
  // with segments, on contiguous, permuted and sliced inputs, each with an epilogue.
  auto fn = [](const Tensor& x, const Tensor& y) {
    return std::vector<Tensor>{sum(x, {1}) * 2,                          // [8, 40] columns, 8 outer indices
                               amax(x, {0, 2}, true) + 1,                // rows of 40, 8 segments each
                               var(y.permute({2, 0, 1}), std::vector<int64_t>{1}) - 1,  // permuted: y's dim 0
                               mean(x.slice(2, 1, 39), {1}, true) * 3,   // sliced columns
                               amin(y, {1, 2}) * 2,                      // one row of 40 * 50 per index
                               prod(x * 0.001 + 1, 1) - 1};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({8, 512, 40}), y = randn({60, 40, 50});
  const auto got = compiled(x, y), want = fn(x, y);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 2e-5, 2e-5, "output " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_TRUE(r.extern_calls.empty());
  EXPECT_EQ(r.kernels.size(), got.size());
  EXPECT_NE(r.source.find("for (int64_t u = 0; u < 8 * NB; ++u)"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("for (int64_t s = 0; s < 8; ++s)"), std::string::npos) << r.source;
}

TEST_F(ReductionTest, NarrowColumnKernelsSplitTheirReducedRangeAcrossThreads) {
  // 16 columns are one block: its 8192 reduced rows split in parts (when there are
  // several threads), combined in order before the epilogue.
  auto fn = [](const Tensor& x) {
    return std::vector<Tensor>{sum(x, {0}) * 2, mean(x, {0}, true) - 1, amax(x, {0}), amin(x * 3, {0}, true),
                               prod(x * 0.001 + 1, 0), var(x, std::vector<int64_t>{0})};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({8192, 16});
  const auto got = compiled(x), want = fn(x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 2e-5, 2e-5, "output " + std::to_string(i));
  const std::string src = inductor::last_compile_report().source;
  EXPECT_NE(src.find("const int64_t KS = std::max<int64_t>(1, std::min<int64_t>(8, "), std::string::npos) << src;
  EXPECT_NE(src.find("std::copy(res, res + cn, part.data() + w * cbw);"), std::string::npos) << src;
}

TEST_F(ReductionTest, SumOverDim0IsAVectorizedColumnKernelAndOverTheLastDimARowKernel) {
  testing::LogCapture logs("schedule");
  // The bias-gradient shape: 600 rows of 77 columns (vector lanes and a scalar tail).
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{sum(x, {0}), sum(x, {-1})}; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({600, 77}) + 3;
  const auto got = compiled(x), want = fn(x);
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1.3e-6, 1e-5, "output " + std::to_string(i));
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 2u) << logs.text();
  EXPECT_NE(r.source.find("sum columns of Float[600, 77] over dims [0]"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("const int64_t kb = 0, ke = 600;"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("col_sum<V, CB>(kb, ke, c0, cn, in_v, in_s, res)"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("omp_get_max_threads()"), std::string::npos) << "column blocks sized per thread";
  EXPECT_NE(r.source.find("row_sum<V>(77, in_v, in_s)"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("#pragma omp parallel for"), std::string::npos) << "46,200 elements: more than one thread's worth";
}

TEST_F(ReductionTest, ReducingTheInnermostContiguousDimsIsOneRowOverTheirProduct) {
  // [A, B, C] contiguous, dims [1, 2]: one row of B * C = 65 per index of A.
  auto fn = [](const Tensor& x) { return sum(x, {1, 2}); };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({7, 13, 5});
  expect_close(compiled(x), fn(x), 1.3e-6, 1e-5, "sum");
  const std::string src = inductor::last_compile_report().source;
  EXPECT_NE(src.find("row_sum<V>(65, in_v, in_s)"), std::string::npos) << src;
  EXPECT_EQ(src.find("for (int64_t s = 0;"), std::string::npos) << "no segment loop: the dims merged\n" << src;
}

TEST_F(ReductionTest, ExplicitDtypeStaysAnExternCallWithItsReasonLogged) {
  testing::LogCapture logs("inductor");
  auto fn = [](const Tensor& x) { return sum(x * 2, {0}, false, kFloat) + 1; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({6, 9});
  expect_close(compiled(x), fn(x), 1.3e-6, 1e-5, "sum");
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.extern_calls, std::vector<std::string>{"aten::sum.dim_IntList"});
  EXPECT_NE(logs.text().find("extern fallback: aten::sum.dim_IntList (%sum): its argument dtype=torch.float32 is not "
                             "lowered"),
            std::string::npos)
      << logs.text();
}

TEST_F(ReductionTest, IrDumpsShowTheReductionRanges) {
  config().inductor.trace.enabled = true;
  config().inductor.trace.debug_dir = (root_ / "debug").string();
  auto fn = [](const Tensor& x) { return amax(x * 2, {0, 2}, true) + 1; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({4, 6, 3});
  expect_close(compiled(x), fn(x), 0, 0, "amax");
  std::string pre, post;
  for (const auto& e : fs::recursive_directory_iterator(root_ / "debug")) {
    if (e.path().filename() == "ir_pre_fusion.txt") pre = read_text(e.path());
    if (e.path().filename() == "ir_post_fusion.txt") post = read_text(e.path());
  }
  for (const std::string* text : {&pre, &post}) {
    EXPECT_NE(text->find("aten::amax (max over dims [0, 2])"), std::string::npos) << *text;
    EXPECT_NE(text->find(".group.iteration = ((6,), (4, 3))"), std::string::npos) << *text;
    EXPECT_NE(text->find("Float[4, 6, 3] -> [1, 6, 1] over dims [0, 2]"), std::string::npos) << *text;
  }
  EXPECT_NE(post.find("# kernel cpp_fused"), std::string::npos) << post;
}

}  // namespace
}  // namespace ember
