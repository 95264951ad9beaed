// Tests of the inductor backend's multi-output kernels: sibling (horizontal) fusion of
// kernels over the same sizes that read a common input, a pointwise node that is also a
// graph output stored by its users' kernel, the cases that must stay apart (a dependency
// through an extern call, a reader that runs before the kernel), the fusion log and the
// ir_post_fusion dump.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

using testing::expect_close;
using testing::read_text;

void expect_all_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1.3e-6, 1e-5);
}

using SiblingFusionTest = testing::CompileDirTest;

TEST_F(SiblingFusionTest, SinAndCosOfOneInputAreOneKernelWithTwoOutputs) {
  testing::LogCapture logs("fusion,schedule");
  config().inductor.trace.enabled = true;
  config().inductor.trace.debug_dir = (root_ / "debug").string();
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{sin(x), cos(x)}; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({300, 257});
  expect_all_close(compiled(x), fn(x));
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_EQ(r.kernels[0].second, (std::vector<std::string>{"sin", "cos"}));
  EXPECT_NE(logs.text().find("fused %cos's kernel into sibling %sin's (both read %arg0"), std::string::npos)
      << logs.text();
  EXPECT_NE(logs.text().find("writes %sin %cos"), std::string::npos) << logs.text();
  EXPECT_NE(r.source.find("stores %sin %cos"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("T* __restrict out1"), std::string::npos) << r.source;
  std::string post;
  for (const auto& e : fs::recursive_directory_iterator(root_ / "debug"))
    if (e.path().filename() == "ir_post_fusion.txt") post = read_text(e.path());
  EXPECT_NE(post.find("FusedSchedulerNode(NoneType)  # kernel " + r.kernels[0].first + " (2 outputs)"),
            std::string::npos)
      << post;
  EXPECT_NE(post.find(".writes = [MemoryDep('buf0', 257*c0 + c1, {c0: 300, c1: 257}), MemoryDep('buf1', "),
            std::string::npos)
      << post;
  EXPECT_NE(post.find(".snodes = [buf0, buf1]"), std::string::npos) << post;
}

TEST_F(SiblingFusionTest, APointwiseGraphOutputReadByAPointwiseUserIsStoredByTheUsersKernel) {
  testing::LogCapture logs("fusion");
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    return std::vector<Tensor>{y, y + 1};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({64, 33});
  const auto got = compiled(x);
  expect_all_close(got, fn(x));
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_EQ(r.kernels[0].second, (std::vector<std::string>{"mul", "add"}));
  EXPECT_NE(logs.text().find("fused %mul into its users' kernel (root %add), stored there as an extra output: it is "
                             "a graph output"),
            std::string::npos)
      << logs.text();
  EXPECT_NE(got[0].storage(), got[1].storage());
}

TEST_F(SiblingFusionTest, SiblingsWithADependencyThroughAnExternMatmulStayApart) {
  testing::LogCapture logs("fusion");
  // cos(x) * m reads m = mm(sin(x), w): a path from sin's kernel through the extern mm.
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor a = sin(x);
    Tensor m = mm(a, w);
    return std::vector<Tensor>{a, cos(x) * m};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({24, 24}), w = randn({24, 24});
  expect_all_close(compiled(x, w), fn(x, w));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.extern_calls, std::vector<std::string>{"aten::mm"});
  ASSERT_EQ(r.kernels.size(), 2u) << logs.text();
  EXPECT_NE(logs.text().find("kept %mul's kernel apart from sibling %sin's (both read %arg0): it reads %mm, which is "
                             "not computed before %sin's kernel runs"),
            std::string::npos)
      << logs.text();
}

TEST_F(SiblingFusionTest, KernelsReadingViewsOfOneBufferAreSiblings) {
  testing::LogCapture logs("fusion");
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{exp(x), tanh(x.t())}; };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({33, 33});
  expect_all_close(compiled(x), fn(x));
  ASSERT_EQ(inductor::last_compile_report().kernels.size(), 1u) << logs.text();
  EXPECT_NE(logs.text().find("fused %tanh's kernel into sibling %exp's (both read %arg0"), std::string::npos)
      << logs.text();
}

TEST_F(SiblingFusionTest, AnIndependentExternBetweenSiblingsDelaysTheEarlierOne) {
  testing::LogCapture logs("fusion");
  // cos(x) * m reads m = mm(w, w), computed after sin's kernel but independent of it, and
  // nothing reads sin(x) before the product: one kernel at the product's position.
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor a = sin(x);
    Tensor m = mm(w, w);
    return std::vector<Tensor>{a, cos(x) * m};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({24, 24}), w = randn({24, 24});
  expect_all_close(compiled(x, w), fn(x, w));
  const inductor::CompileReport r = inductor::last_compile_report();
  EXPECT_EQ(r.extern_calls, std::vector<std::string>{"aten::mm"});
  ASSERT_EQ(r.kernels.size(), 1u) << logs.text();
  EXPECT_NE(logs.text().find("fused %mul's kernel into sibling %sin's (both read %arg0, over Float[24, 24]; no path "
                             "between them): one kernel, several outputs, run at %mul's position"),
            std::string::npos)
      << logs.text();
}

TEST_F(SiblingFusionTest, AnOutputReadByAnExternBeforeItsUsersKernelIsMaterialized) {
  testing::LogCapture logs("fusion");
  // y feeds mm, which runs before y + z's kernel: y must exist by then, in its own kernel.
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor y = x * 2;
    Tensor z = mm(y, w);
    return y + z;
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({16, 16}), w = randn({16, 16});
  expect_close(compiled(x, w), fn(x, w), 1.3e-6, 1e-5);
  EXPECT_EQ(inductor::last_compile_report().kernels.size(), 2u) << logs.text();
  EXPECT_NE(logs.text().find("materialized %mul: %mm is not pointwise (and %mm reads it before its users' kernel "
                             "runs)"),
            std::string::npos)
      << logs.text();
}

TEST_F(SiblingFusionTest, SiblingsAndExtraOutputsCombineWithVerticalChainsAndBroadcasts) {
  // Three consumers of x over one index space (one a chain, one reading a broadcast row
  // vector), one of them also feeding a further pointwise node; and a sum row kernel that
  // stays apart (a row kernel is no sibling).
  auto fn = [](const Tensor& x, const Tensor& b) {
    Tensor t = tanh(x * 0.5 + b);
    Tensor e = exp(x - 1);
    Tensor r = relu(x) * b;
    return std::vector<Tensor>{t, e, r + e, sum(x, {-1})};
  };
  auto compiled = compile(fn, {.backend = "inductor"});
  Tensor x = randn({130, 70}), b = randn({70});
  expect_all_close(compiled(x, b), fn(x, b));
  const inductor::CompileReport r = inductor::last_compile_report();
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].second.size(), 8u) << "mul, add, tanh, sub, exp, relu, mul, add";
}

/// One step of a random program over [16, 16] values: a unary or binary pointwise op, an
/// extern mm, or a column sum broadcast back; `a`/`b` index earlier values.
struct Step {
  int kind, a, b;
};

std::vector<Tensor> run_program(const std::vector<Step>& steps, const std::vector<int>& outputs, const Tensor& x,
                                const Tensor& w) {
  std::vector<Tensor> v{x, w};
  for (const Step& s : steps) {
    const Tensor& a = v[s.a];
    const Tensor& b = v[s.b];
    switch (s.kind) {
      case 0: v.push_back(sin(a)); break;
      case 1: v.push_back(tanh(a) * 0.5); break;
      case 2: v.push_back(a + b); break;
      case 3: v.push_back(a * b); break;
      case 4: v.push_back(tanh(mm(a, b))); break;
      case 5: v.push_back(a - sum(b, {0}, true)); break;
      default: v.push_back(sigmoid(a)); break;
    }
  }
  std::vector<Tensor> out;
  for (int o : outputs) out.push_back(v[o]);
  return out;
}

TEST_F(SiblingFusionTest, RandomProgramsWithExternsBetweenSiblingsEqualEager) {
  // Several consumers of shared values with mm calls between them: every combination of
  // extra outputs, sibling merges and dependencies through externs the scheduler meets
  // must still run in a valid order and equal eager, call after call.
  testing::LogCapture logs("fusion");
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<Step> steps;
    for (int i = 0; i < 12; ++i) {
      const int n = 2 + i;
      std::uniform_int_distribution<int> pick(0, n - 1), kind(0, 6);
      steps.push_back({kind(rng), pick(rng), pick(rng)});
    }
    std::vector<int> outputs;
    for (int i = 2; i < 14; ++i)
      if (rng() % 3 == 0) outputs.push_back(i);
    outputs.push_back(13);
    auto fn = [steps, outputs](const Tensor& x, const Tensor& w) { return run_program(steps, outputs, x, w); };
    auto compiled = compile(fn, {.backend = "inductor"});
    for (int call = 0; call < 2; ++call) {
      Tensor x = randn({16, 16}), w = randn({16, 16});
      const auto got = compiled(x, w), want = fn(x, w);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        SCOPED_TRACE("trial " + std::to_string(trial) + " call " + std::to_string(call) + " output " +
                     std::to_string(i));
        expect_close(got[i], want[i], 1e-5, 1e-5);
      }
    }
  }
  // The programs do reach the new decisions.
  for (const char* decision : {"one kernel, several outputs", "stored there as an extra output", "kept %"})
    EXPECT_NE(logs.text().find(decision), std::string::npos) << decision << "\n" << logs.text();
}

}  // namespace
}  // namespace ember
