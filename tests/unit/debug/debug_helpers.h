// tests/unit/debug/debug_helpers.h — what the repro and minifier tests share: a fixture
// starting from the default knobs with base_dir in a fresh temporary directory, a
// ten-op graph with one relu, and running the `ember` tool.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "debug/repro.h"
#include "ember/ember.h"
#include "support/graph_helpers.h"
#include "support/log_capture.h"

namespace ember::testing {

class ReproTest : public DiagnosticsTest {
 protected:
  void SetUp() override {
    DiagnosticsTest::SetUp();
    register_builtin_backends();
    std::string tmpl = (std::filesystem::temp_directory_path() / "ember_repro_XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    config().dynamo.base_dir = dir.string();
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir);
    DiagnosticsTest::TearDown();
  }
  std::filesystem::path dir;
};

/// x, y: f32[8, 16]; ten ops, the fifth a relu; one output.
inline std::unique_ptr<Graph> ten_op_graph() {
  auto g = std::make_unique<Graph>("fn");
  Node* x = g->add_placeholder("x", meta_of({8, 16}));
  Node* y = g->add_placeholder("y", meta_of({8, 16}));
  Node* mul = add_op(*g, "aten::mul.Tensor", {x, y});
  Node* add = add_op(*g, "aten::add.Tensor", {mul, x, Scalar(int64_t{1})});
  Node* sin = add_op(*g, "aten::sin", {add});
  Node* cos = add_op(*g, "aten::cos", {y});
  Node* relu = add_op(*g, "aten::relu", {sin});
  Node* mul1 = add_op(*g, "aten::mul.Tensor", {relu, cos});
  Node* exp = add_op(*g, "aten::exp", {mul1});
  Node* sub = add_op(*g, "aten::sub.Tensor", {exp, y, Scalar(int64_t{1})});
  Node* tanh = add_op(*g, "aten::tanh", {sub});
  Node* neg = add_op(*g, "aten::neg", {tanh});
  g->set_output({neg->out()});
  return g;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/// The directories under <base_dir>/minifier.
inline std::vector<std::filesystem::path> repro_dirs(const std::filesystem::path& base) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(base / "minifier")) return out;
  for (const auto& e : std::filesystem::directory_iterator(base / "minifier")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// The ember tool with only `env` in its environment (plus PATH and a private cache dir).
inline CommandResult run_ember(const std::string& env, const std::string& args) {
  return run_command("env -i PATH=/usr/bin:/bin HOME=/tmp OMP_NUM_THREADS=2 " + env + " '" EMBER_CLI_PATH "' " + args);
}

}  // namespace ember::testing
