// A backend may throw anything (a custom one, std::runtime_error): it becomes
// BackendCompilerFailed with the original message, which config().dynamo.suppress_errors
// turns into eager execution, and which TORCHDYNAMO_REPRO_AFTER's machinery sees (a
// launcher, the minifier). An exception from the callable a backend returned becomes an
// ember::Error too.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

class BackendErrors : public testing::CompileDirTest {};

Tensor user_fn(const Tensor& x) { return (x * 2).relu() + 1; }

/// Throws std::runtime_error for a graph with a relu; runs the others eagerly.
CompiledGraph relu_hating_backend(Graph& g, const std::vector<Tensor>&) {
  for (const auto& n : g.nodes())
    if (n->target() == "aten::relu") throw std::runtime_error("my backend cannot compile relu");
  return eager_backend(g);
}

TEST_F(BackendErrors, AStdExceptionFromABackendIsBackendCompilerFailedWithItsMessage) {
  auto f = compile(user_fn, {.custom_backend = relu_hating_backend, .name = "f"});
  try {
    f(ones({3}));
    FAIL() << "expected BackendCompilerFailed";
  } catch (const BackendCompilerFailed& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.backend(), "custom");
    EXPECT_NE(what.find("backend='custom' raised:"), std::string::npos) << what;
    EXPECT_NE(what.find("std::runtime_error: my backend cannot compile relu"), std::string::npos) << what;
  }
}

TEST_F(BackendErrors, ANonStdExceptionFromABackendIsBackendCompilerFailed) {
  auto f = compile(user_fn, {.custom_backend = [](Graph&, const std::vector<Tensor>&) -> CompiledGraph { throw 42; }});
  try {
    f(ones({3}));
    FAIL() << "expected BackendCompilerFailed";
  } catch (const BackendCompilerFailed& e) {
    EXPECT_NE(std::string(e.what()).find("an exception that is not a std::exception"), std::string::npos) << e.what();
  }
}

TEST_F(BackendErrors, SuppressErrorsRunsEagerlyAfterAStdException) {
  config().dynamo.suppress_errors = true;
  testing::LogCapture logs;
  auto f = compile(user_fn, {.custom_backend = relu_hating_backend, .name = "g"});
  const int line = __LINE__ - 1;
  const Tensor x = randn({3});
  testing::expect_close(f(x), user_fn(x), 0, 0);
  testing::expect_close(f(x), user_fn(x), 0, 0);
  EXPECT_NE(logs.text().find("WON'T CONVERT g"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("std::runtime_error: my backend cannot compile relu"), std::string::npos) << logs.text();
  // The report says the verbose hint once, and names the compiled function's line (no op
  // names one: the backend failed on the whole graph).
  const std::string text = logs.text();
  const size_t hint = text.find("Set TORCHDYNAMO_VERBOSE=1");
  ASSERT_NE(hint, std::string::npos) << text;
  EXPECT_EQ(text.find("Set TORCHDYNAMO_VERBOSE=1", hint + 1), std::string::npos) << text;
  EXPECT_NE(text.find("backend_errors_test.cpp\", line " + std::to_string(line) + ", in g"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("no user line is known"), std::string::npos) << text;
}

TEST_F(BackendErrors, ReproAfterDynamoWritesALauncherAndMinifiesAStdException) {
  config().dynamo.base_dir = root_.string();
  config().dynamo.repro_after = "dynamo";
  config().dynamo.repro_level = 2;
  testing::LogCapture logs;
  auto f = compile(user_fn, {.custom_backend = relu_hating_backend, .name = "f"});
  std::string error;
  try {
    f(randn({3}));
  } catch (const BackendCompilerFailed& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("std::runtime_error: my backend cannot compile relu"), std::string::npos) << error;
  EXPECT_NE(error.find("wrote a minifier launcher"), std::string::npos) << error;
  ASSERT_TRUE(fs::exists(root_ / "minifier")) << logs.text();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root_ / "minifier")) dirs.push_back(e.path());
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_TRUE(fs::exists(dirs[0] / "minifier_launcher.txt"));
  const std::string minified = testing::read_text(dirs[0] / "minified" / "repro.txt");
  EXPECT_NE(minified.find("aten::relu"), std::string::npos) << "the minifier kept the relu:\n" << minified;
  EXPECT_EQ(minified.find("aten::mul"), std::string::npos) << "and dropped the rest:\n" << minified;
}

TEST_F(BackendErrors, AStdExceptionFromTheCompiledCallableIsAnEmberError) {
  auto f = compile(user_fn, {.custom_backend = [](Graph&, const std::vector<Tensor>&) -> CompiledGraph {
                     return [](const std::vector<Tensor>&) -> std::vector<Tensor> {
                       throw std::out_of_range("bad index in my kernel");
                     };
                   }});
  try {
    f(ones({3}));
    FAIL() << "expected an ember::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("std::out_of_range: bad index in my kernel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
