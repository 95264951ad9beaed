// tests/support/compile_helpers.h — what the compile, AOT and inductor tests share: a
// backend that records the graphs it is given, value comparison, and a fixture that gives
// each test a fresh directory (and inductor cache) of its own.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/graph_helpers.h"
#include "support/log_capture.h"

namespace ember::testing {

/// A backend that keeps each graph it is given (as text, after checking that the text
/// round-trips) and how many example inputs came with it, then runs it eagerly: the
/// guide's toy_compiler. Copies share the record.
struct RecordingBackend {
  std::shared_ptr<std::vector<std::string>> graphs = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::vector<size_t>> example_counts = std::make_shared<std::vector<size_t>>();
  Backend fn() const {
    return [g = graphs, e = example_counts](Graph& graph, const std::vector<Tensor>& examples) {
      expect_round_trip(graph);
      g->push_back(to_string(graph));
      e->push_back(examples.size());
      return eager_backend(graph);
    };
  }
};

/// Asserts equal sizes and dtypes and every element within atol + rtol * |expected|;
/// `what` names the case in the failure message.
inline void expect_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-5,
                         const std::string& what = {}) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], e[i], atol + rtol * std::abs(e[i])) << what << " at " << i;
}

/// Asserts the same sizes, strides and dtype and bitwise-equal values (NaN equal to NaN):
/// what a rule that promises eager's exact result must give.
inline void expect_identical(const Tensor& actual, const Tensor& expected, const std::string& what = {}) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what;
  ASSERT_EQ(actual.strides().vec(), expected.strides().vec()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    ASSERT_EQ(a[i], e[i]) << what << " at " << i;
  }
}

/// A whole file as a string ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// DiagnosticsTest (knobs and logs at their defaults, stderr off) plus a fresh directory
/// `root_` per test, removed afterwards, with the inductor's cache under it (so compiles
/// and cache hits count from a known state), and seed 0.
class CompileDirTest : public DiagnosticsTest {
 protected:
  void SetUp() override {
    DiagnosticsTest::SetUp();
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        "ember_" + std::string(info->test_suite_name()) + "_" + std::to_string(getpid()) + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized tests: "Instance/Suite", "Test/0"
    root_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    config().inductor.cache_dir = (root_ / "cache").string();
    manual_seed(0);
  }
  void TearDown() override {
    DiagnosticsTest::TearDown();
    std::filesystem::remove_all(root_);
  }
  std::filesystem::path root_;
};

}  // namespace ember::testing
