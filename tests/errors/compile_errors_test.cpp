// User errors inside compiled functions: an error eager raises too (wrong shapes into a
// compiled function) is raised at the user's line with eager's message, and is not
// reported as a capture failure ("WON'T CONVERT"); an error only capture meets is, with
// a message that says why capture met it.
#include <gtest/gtest.h>

#include <future>

#include "ember/ember.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using ember::testing::error_of;

class CompileErrors : public testing::DiagnosticsTest {};

std::string here(int line) { return "compile_errors_test.cpp:" + std::to_string(line); }

TEST_F(CompileErrors, WrongShapesRaiseTheEagerErrorAtTheUsersLineWithoutWontConvert) {
  testing::LogCapture logs;
  const int line = __LINE__ + 1;
  auto project = compile([](const Tensor& x, const Tensor& w) { return x.matmul(w).relu(); }, {.name = "project"});
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string msg = error_of([&] { project(ones({2, 3}), ones({4, 5})); });
    EXPECT_NE(msg.find("cannot be multiplied"), std::string::npos) << msg;
    EXPECT_NE(msg.find(here(line)), std::string::npos) << msg;
  }
  EXPECT_EQ(logs.text().find("WON'T CONVERT"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("reporting a bug"), std::string::npos) << logs.text();
  // Right shapes afterwards compile and run.
  EXPECT_EQ(project(ones({2, 3}), ones({3, 5})).sizes().vec(), (std::vector<int64_t>{2, 5}));
}

TEST_F(CompileErrors, AnErrorEagerRaisesKeepsItsKindAndMessage) {
  testing::LogCapture logs;
  const int line = __LINE__ + 1;
  auto pick = compile([](const Tensor& x) { return x.select(0, 5); });
  const std::string msg = error_of([&] { pick(ones({3})); }, ErrorKind::IndexError);
  EXPECT_NE(msg.find("index 5 out of range for tensor of size [3] at dimension 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(here(line)), std::string::npos) << msg;
  EXPECT_EQ(logs.text().find("WON'T CONVERT"), std::string::npos) << logs.text();
}

TEST_F(CompileErrors, WrongShapesWithTheInductorBackendAreTheEagerError) {
  testing::LogCapture logs;
  const int line = __LINE__ + 1;
  auto add = compile([](const Tensor& a, const Tensor& b) { return a + b; }, {.backend = "inductor"});
  const std::string msg = error_of([&] { add(ones({2}), ones({3})); });
  EXPECT_NE(msg.find("must match the size of tensor b"), std::string::npos) << msg;
  EXPECT_NE(msg.find(here(line)), std::string::npos) << msg;
  EXPECT_EQ(logs.text().find("WON'T CONVERT"), std::string::npos) << logs.text();
}

// ATen's embedding_bag checks the offsets' values; a compiled graph holds the check on its
// data path, so bad offsets raise eager's error at the user's line from every backend, for
// inference and training graphs and over symbolic sizes, and good ones give eager's values.
TEST_F(CompileErrors, EmbeddingBagWithBadOffsetsRaisesTheEagerErrorInEveryCompiledGraph) {
  testing::LogCapture logs;
  const Tensor idx = tensor<int64_t>({1, 2, 3, 4, 5, 6}), good = tensor<int64_t>({0, 2, 4});
  const int line = __LINE__ + 2;
  auto bag_sum = [](const Tensor& w, const Tensor& i, const Tensor& o) {
    return std::get<0>(_embedding_bag(w, i, o, false, 0, false, std::nullopt, false, -1)) * 2;
  };
  for (const char* backend : {"aot_eager", "inductor"}) {
    for (bool training : {false, true}) {
      for (bool dynamic : {false, true}) {
        SCOPED_TRACE(std::string(backend) + (training ? ", training" : ", inference") +
                     (dynamic ? ", dynamic" : ", static"));
        const Tensor w = randn({10, 3}).requires_grad_(training);
        auto f = compile(bag_sum, {.backend = backend, .dynamic = dynamic});
        const Tensor expected = bag_sum(w, idx, good);
        testing::expect_close(f(w, idx, good), expected);
        const std::string first = error_of([&] { f(w, idx, tensor<int64_t>({4, 2, 5})); });
        EXPECT_NE(first.find("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                             "position 0. However, got 4"),
                  std::string::npos)
            << first;
        EXPECT_NE(first.find(here(line)), std::string::npos) << first;
        const std::string last = error_of([&] { f(w, idx, tensor<int64_t>({0, 2, 9})); });
        EXPECT_NE(last.find("offsets[-1] can not be greater than input's length 6 but got offsets[-1] of 9"),
                  std::string::npos)
            << last;
        testing::expect_close(f(w, idx, good), expected);
      }
    }
  }
  EXPECT_EQ(logs.text().find("WON'T CONVERT"), std::string::npos) << logs.text();
}

TEST_F(CompileErrors, ACaptureOnlyFailureIsStillReportedAsWontConvert) {
  testing::LogCapture logs;
  auto f = compile(
      [](const Tensor& x) {
        EMBER_CHECK(!is_compiling()) << "capture cannot do this";
        return x + 1;
      },
      {.name = "capture_only"});
  EXPECT_EQ(f(zeros({1})).item<float>(), 1.f);
  EXPECT_NE(logs.text().find("WON'T CONVERT capture_only"), std::string::npos) << logs.text();
}

TEST_F(CompileErrors, AnOpOnAnotherThreadDuringCaptureSaysCaptureFollowsTheCallingThread) {
  testing::LogCapture logs;
  const int line = __LINE__ + 3;
  auto f = compile(
      [](const Tensor& x) {
        auto half = std::async(std::launch::async, [&] { return sin(x.narrow(0, 0, 2)); });
        return cat({half.get(), cos(x.narrow(0, 2, 2))});
      },
      {.name = "threaded"});
  const Tensor x = randn({4});
  testing::expect_close(f(x), cat({sin(x.narrow(0, 0, 2)), cos(x.narrow(0, 2, 2))}), 0, 0);
  const std::string t = logs.text();
  EXPECT_NE(t.find("WON'T CONVERT threaded"), std::string::npos) << t;
  EXPECT_NE(t.find("this thread is not the one tracing it: capture follows only the thread that called the compiled "
                   "function"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("compile_errors_test.cpp\", line " + std::to_string(line)), std::string::npos) << t;
  EXPECT_EQ(t.find("kept past the trace"), std::string::npos) << t;
}

TEST_F(CompileErrors, MarkDynamicOnADimTheTensorLacksNamesTheDimsItHasAndTheUsersLine) {
  const Tensor x = zeros({4, 3});
  const int line = __LINE__ + 1;
  const std::string msg = error_of([&] { mark_dynamic(x, 2); }, ErrorKind::IndexError);
  EXPECT_NE(msg.find("mark_dynamic: dim 2 is out of range for a tensor of 2 dimensions (sizes [4, 3]); expected a dim "
                     "in [-2, 1]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(here(line)), std::string::npos) << msg;
  const int static_line = __LINE__ + 1;
  const std::string static_msg = error_of([&] { mark_static(x, -3); }, ErrorKind::IndexError);
  EXPECT_NE(static_msg.find("mark_static: dim -3 is out of range"), std::string::npos) << static_msg;
  EXPECT_NE(static_msg.find(here(static_line)), std::string::npos) << static_msg;
}

TEST_F(CompileErrors, MarkDynamicWithMinAboveMaxOrASizeOutsideTheRangeSaysSo) {
  const Tensor x = zeros({4, 3});
  const int line = __LINE__ + 1;
  const std::string msg = error_of([&] { mark_dynamic(x, 0, 8, 2); }, ErrorKind::ValueError);
  EXPECT_NE(msg.find("mark_dynamic: min=8 is greater than max=2 for dim 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(here(line)), std::string::npos) << msg;
  const std::string outside = error_of([&] { mark_dynamic(x, 1, 5); }, ErrorKind::ValueError);
  EXPECT_NE(outside.find("mark_dynamic: dim 1 has size 3, outside the range [5, inf] given for it"),
            std::string::npos)
      << outside;
}

}  // namespace
}  // namespace ember
