// `ember config`, run as a separate process with a clean environment: it lists every knob
// of the registry, and a fresh process reads the environment (TORCH_LOGS included) on
// first use.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <sstream>
#include <string>

#include "ember/config.h"

namespace ember {
namespace {

struct ToolRun {
  int status;
  std::string output;  // stdout and stderr together
};

// Runs the ember tool with only `env` (e.g. "TORCH_LOGS=+dynamo") in its environment.
ToolRun run_ember(const std::string& env, const std::string& args) {
  std::string cmd = "env -i PATH=/usr/bin:/bin " + env + " '" EMBER_CLI_PATH "' " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string line_of(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

TEST(EmberConfigCommand, ListsEveryRegisteredKnobWithItsEnvironmentNameDefaultAndMeaning) {
  ToolRun r = run_ember("", "config");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ENVIRONMENT"), std::string::npos);
  for (const KnobInfo& k : config_knobs()) {
    std::string line = line_of(r.output, "  " + k.name + "  ");
    ASSERT_FALSE(line.empty()) << k.name << " is not listed:\n" << r.output;
    for (const std::string& e : k.env) EXPECT_EQ(line.rfind(e, 0), 0u) << line;
    if (k.env.empty()) {
      EXPECT_EQ(line.rfind("- ", 0), 0u) << line;
    }
    EXPECT_NE(line.find(k.meaning), std::string::npos) << line;
    EXPECT_NE(line.find(k.default_value.empty() ? "\"\"" : k.default_value), std::string::npos) << line;
  }
}

TEST(EmberConfigCommand, ColumnsAreAligned) {
  ToolRun r = run_ember("", "config");
  std::string header = line_of(r.output, "ENVIRONMENT");
  size_t cpp = header.find("C++ NAME"), meaning = header.find("MEANING");
  ASSERT_NE(cpp, std::string::npos);
  for (const KnobInfo& k : config_knobs()) {
    std::string line = line_of(r.output, "  " + k.name + "  ");
    EXPECT_EQ(line.find(k.name), cpp) << line;
    EXPECT_EQ(line.find(k.meaning), meaning) << line;
  }
}

TEST(EmberConfigCommand, MarkdownTableListsEveryKnob) {
  ToolRun r = run_ember("", "config --markdown");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("| environment | C++ name |", 0), 0u) << r.output;
  for (const KnobInfo& k : config_knobs())
    EXPECT_NE(r.output.find("| `" + k.name + "` |"), std::string::npos) << k.name;
}

TEST(EmberConfigCommand, FreshProcessReadsTheEnvironment) {
  EXPECT_EQ(run_ember("TORCHDYNAMO_CACHE_SIZE_LIMIT=4", "config dynamo.recompile_limit").output, "4\n");
  EXPECT_EQ(run_ember("TORCH_LOGS=+dynamo,guards", "config logs").output, "+dynamo,guards\n");
  std::string line = line_of(run_ember("TORCHDYNAMO_VERBOSE=1", "config").output, "  dynamo.verbose  ");
  EXPECT_TRUE(std::regex_search(line, std::regex(R"( false +true +errors show)"))) << line;  // default, current
}

TEST(EmberConfigCommand, BadEnvironmentValuesAreWarnedAboutAndDefaultsShown) {
  ToolRun r = run_ember("TORCHDYNAMO_REPRO_LEVEL=9 TORCH_LOGS=dynamo,nope", "config dynamo.repro_level");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning: invalid environment: TORCHDYNAMO_REPRO_LEVEL: expected an integer from 1 to 4, "
                          "got \"9\""),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("warning: invalid environment: TORCH_LOGS: Invalid log settings: dynamo,nope"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\n2\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[W "), std::string::npos) << "said once, as the tool's own warning: " << r.output;
}

TEST(EmberTool, OtherCommandsExitWithStatus2OnABadEnvironment) {
  ToolRun r = run_ember("TORCHDYNAMO_VERBOSE=maybe", "repro /nonexistent/repro.txt");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("ember: invalid environment: TORCHDYNAMO_VERBOSE: expected a boolean", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find("nonexistent"), std::string::npos) << "stops before the command runs: " << r.output;
}

TEST(EmberConfigCommand, UnknownKnobIsAnError) {
  ToolRun r = run_ember("", "config dynamo.nope");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output.rfind("ember config: ValueError: unknown config knob 'dynamo.nope'", 0), 0u) << r.output;
}

TEST(EmberTool, UnknownCommandExitsWithUsageError) {
  ToolRun r = run_ember("", "frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("ember: unknown command 'frobnicate'"), std::string::npos) << r.output;
}

TEST(EmberTool, HelpListsTheCommands) {
  ToolRun r = run_ember("", "help");
  EXPECT_EQ(r.status, 0);
  // One line per command, summaries aligned after the longest name (run-exported).
  EXPECT_NE(r.output.find("  config        list every knob"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  run-exported  run a program exported by PyTorch"), std::string::npos) << r.output;
  ToolRun usage = run_ember("", "config --help");
  EXPECT_EQ(usage.status, 0);
  EXPECT_EQ(usage.output.rfind("usage: ember config", 0), 0u) << usage.output;
}

}  // namespace
}  // namespace ember
