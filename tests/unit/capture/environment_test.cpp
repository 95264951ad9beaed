// A bad environment variable never stops a program: a fresh process (this test program
// run again as a child) with a typo in TORCH_LOGS or a TORCHDYNAMO_* knob compiles and
// runs its function, after one message naming the variable, what it expected and what it
// got. The environment is read once per process, so only a fresh process tests this.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ember/ember.h"

namespace ember {
namespace {

struct ChildRun {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string output;
};

/// Runs this program's FreshProcessChild test with `env` (e.g. "TORCH_LOGS=bogus") added.
ChildRun run_child(const std::string& env) {
  const std::string cmd = "env " + env + " EMBER_FRESH_PROCESS_CHILD=1 OMP_NUM_THREADS=1 /proc/" +
                          std::to_string(getpid()) + "/exe --gtest_filter=FreshProcessChild.CompilesAndCalls 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {};
  ChildRun r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The child: what a user's program does first.
TEST(FreshProcessChild, CompilesAndCalls) {
  if (!std::getenv("EMBER_FRESH_PROCESS_CHILD")) GTEST_SKIP() << "run by FreshProcess tests only";
  auto f = compile([](const Tensor& x) { return x * 2 + 1; });
  std::printf("CHILD RESULT %g\n", f(full({1}, 3.0)).item<double>());
}

TEST(FreshProcess, ABadEnvironmentVariableIsReportedAndTheProgramGoesOn) {
  const struct {
    const char* env;
    std::vector<std::string> said;
  } cases[] = {
      {"TORCH_LOGS=bogus", {"unknown name 'bogus'", "TORCH_LOGS", "Valid settings"}},
      {"TORCH_LOGS=+dynamo,graph_breakz", {"unknown name 'graph_breakz'", "Step 1: torchdynamo start tracing"}},
      {"TORCH_LOGS=help", {"TORCH_LOGS Info", "graph_breaks"}},
      {"TORCHDYNAMO_REPRO_LEVEL=9",
       {"TORCHDYNAMO_REPRO_LEVEL: expected an integer from 1 to 4, got \"9\" (using the default, 2)"}},
      {"TORCHDYNAMO_REPRO_AFTER=Dynamo",
       {"TORCHDYNAMO_REPRO_AFTER: expected one of \"\", \"dynamo\", \"aot\", got \"Dynamo\"",
        "did you mean \"dynamo\""}},
      {"TORCHDYNAMO_VERBOSE=maybe", {"TORCHDYNAMO_VERBOSE: expected a boolean", "got \"maybe\""}},
      {"TORCHDYNAMO_CACHE_SIZE_LIMIT=-1", {"TORCHDYNAMO_CACHE_SIZE_LIMIT: expected an integer >= 0, got \"-1\""}},
  };
  for (const auto& c : cases) {
    const ChildRun r = run_child(c.env);
    EXPECT_EQ(r.status, 0) << c.env << ":\n" << r.output;
    EXPECT_NE(r.output.find("CHILD RESULT 7"), std::string::npos) << c.env << ":\n" << r.output;
    for (const std::string& s : c.said)
      EXPECT_NE(r.output.find(s), std::string::npos) << c.env << ": " << s << "\n" << r.output;
    const std::string first = c.said.front();
    EXPECT_EQ(r.output.find(first), r.output.rfind(first)) << c.env << ": said once\n" << r.output;
  }
}

TEST(FreshProcess, AGoodEnvironmentSaysNothing) {
  const ChildRun r = run_child("TORCHDYNAMO_CACHE_SIZE_LIMIT=4 TORCH_LOGS=graph_breaks");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CHILD RESULT 7"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("expected"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ember
