// The log registry: TORCH_LOGS syntax, which lines each setting lets through, the line
// format, sinks, and lines written from several threads at once.
#include "support/logging.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <thread>

#include "support/log_capture.h"
#include "support/error_of.h"

namespace ember {
namespace {

using logging::Artifact;
using logging::Component;
using logging::Level;
using testing::error_of;
using testing::LogCapture;

class Logging : public testing::DiagnosticsTest {};

// One line per level on `dynamo`; returns the levels that came through, as letters.
std::string dynamo_levels_shown() {
  LogCapture cap;
  EMBER_LOG(dynamo, DEBUG) << "d";
  EMBER_LOG(dynamo, INFO) << "i";
  EMBER_LOG(dynamo, WARNING) << "w";
  EMBER_LOG(dynamo, ERROR) << "e";
  std::string out;
  for (const std::string& l : cap.lines) out += l[1];
  return out;
}

TEST_F(Logging, DefaultsShowWarningsAndErrorsOnly) {
  EXPECT_EQ(dynamo_levels_shown(), "WE");
  EXPECT_FALSE(logging::is_enabled(Component::aot, Level::kInfo));
  EXPECT_TRUE(logging::is_enabled(Component::inductor, Level::kWarning));
  for (const logging::ChannelInfo& c : logging::channels())
    if (c.artifact) {
      EXPECT_FALSE(logging::is_enabled(c.name)) << c.name;
    }
}

TEST_F(Logging, ComponentNameAloneMeansInfo) {
  set_logs("dynamo");
  EXPECT_EQ(dynamo_levels_shown(), "IWE");
  EXPECT_FALSE(logging::is_enabled(Component::aot, Level::kInfo));
}

TEST_F(Logging, PlusMeansDebugAndMinusMeansError) {
  set_logs("+dynamo");
  EXPECT_EQ(dynamo_levels_shown(), "DIWE");
  set_logs("-dynamo");
  EXPECT_EQ(dynamo_levels_shown(), "E");
}

TEST_F(Logging, LaterNamesOverrideEarlierOnes) {
  set_logs("+dynamo,-dynamo");
  EXPECT_EQ(dynamo_levels_shown(), "E");
}

TEST_F(Logging, ArtifactNameTurnsOnThatArtifactOnly) {
  set_logs("graph_code");
  EXPECT_TRUE(logging::is_enabled(Artifact::graph_code));
  EXPECT_FALSE(logging::is_enabled(Artifact::graph));
  EXPECT_FALSE(logging::is_enabled(Component::dynamo, Level::kInfo));
}

TEST_F(Logging, PrefixOnAnArtifactIsIgnoredAsInPyTorch) {
  set_logs("-guards,+recompiles");
  EXPECT_TRUE(logging::is_enabled(Artifact::guards));
  EXPECT_TRUE(logging::is_enabled(Artifact::recompiles));
}

TEST_F(Logging, DebugComponentShowsItsArtifactsExceptOffByDefaultOnes) {
  set_logs("+dynamo");
  EXPECT_TRUE(logging::is_enabled(Artifact::graph_code));
  EXPECT_TRUE(logging::is_enabled(Artifact::guards));
  EXPECT_FALSE(logging::is_enabled(Artifact::recompiles_verbose));  // off by default
  EXPECT_FALSE(logging::is_enabled(Artifact::aot_graphs));          // another component's
  set_logs("+inductor");
  EXPECT_TRUE(logging::is_enabled(Artifact::post_grad_graphs));
  EXPECT_FALSE(logging::is_enabled(Artifact::output_code));
  set_logs("+inductor,output_code");
  EXPECT_TRUE(logging::is_enabled(Artifact::output_code));
}

TEST_F(Logging, InfoComponentDoesNotShowItsArtifacts) {
  set_logs("dynamo");
  EXPECT_FALSE(logging::is_enabled(Artifact::graph_code));
}

TEST_F(Logging, AllSetsEveryComponentToInfoAndTurnsOnEveryArtifact) {
  set_logs("all");
  for (const logging::ChannelInfo& c : logging::channels()) {
    if (c.artifact) {
      EXPECT_TRUE(logging::is_enabled(c.name)) << c.name;
    } else {
      EXPECT_TRUE(logging::is_enabled(c.name, Level::kInfo)) << c.name;
      EXPECT_FALSE(logging::is_enabled(c.name, Level::kDebug)) << c.name;
    }
  }
  set_logs("+all");
  EXPECT_EQ(dynamo_levels_shown(), "DIWE");
  EXPECT_TRUE(logging::is_enabled(Component::inductor, Level::kDebug));
  set_logs("-all,+aot");
  EXPECT_EQ(dynamo_levels_shown(), "E");
  EXPECT_TRUE(logging::is_enabled(Component::aot, Level::kDebug));
  EXPECT_TRUE(logging::is_enabled(Artifact::output_code));
}

TEST_F(Logging, SpacesAroundNamesAreIgnored) {
  set_logs("  +dynamo , guards ");
  EXPECT_EQ(dynamo_levels_shown(), "DIWE");
  EXPECT_TRUE(logging::is_enabled(Artifact::guards));
}

TEST_F(Logging, EmptySpecRestoresTheDefaults) {
  set_logs("+all");
  set_logs();
  EXPECT_EQ(dynamo_levels_shown(), "WE");
  EXPECT_FALSE(logging::is_enabled(Artifact::graph));
  EXPECT_EQ(logging::current_spec(), "");
}

TEST_F(Logging, CurrentSpecIsWhatWasSet) {
  set_logs(" +dynamo,guards ");
  EXPECT_EQ(logging::current_spec(), "+dynamo,guards");
}

TEST_F(Logging, UnknownNameRaisesValueErrorListingValidSettings) {
  set_logs("aot");
  std::string msg = error_of([] { set_logs("+dynamo,bogus"); }, ErrorKind::ValueError);
  EXPECT_EQ(msg,
            "Invalid log settings: +dynamo,bogus, must be a comma separated list of registered log names or "
            "registered artifact names (unknown name 'bogus').\n"
            "For more info on various settings, try TORCH_LOGS=\"help\"\n"
            "Valid settings:\n"
            "all, dynamo, dynamic, aot, inductor, graph, graph_code, graph_sizes, graph_breaks, guards, recompiles, "
            "recompiles_verbose, aot_joint_graph, aot_graphs, post_grad_graphs, schedule, fusion, perf_hints, "
            "output_code, autotuning, cudagraphs");
  // The settings before the bad call stay.
  EXPECT_EQ(logging::current_spec(), "aot");
  EXPECT_TRUE(logging::is_enabled(Component::aot, Level::kInfo));
}

TEST_F(Logging, EveryRegisteredNameIsInTheErrorForAnUnknownOne) {
  std::string msg = error_of([] { set_logs("nope"); }, ErrorKind::ValueError);
  for (const logging::ChannelInfo& c : logging::channels()) EXPECT_NE(msg.find(c.name), std::string::npos) << c.name;
}

TEST_F(Logging, EmptyNameInTheListRaises) {
  std::string msg = error_of([] { set_logs("dynamo,,aot"); }, ErrorKind::ValueError);
  EXPECT_NE(msg.find("Invalid log settings: dynamo,,aot, must be"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(an empty name)"), std::string::npos) << msg;
  error_of([] { set_logs("+"); }, ErrorKind::ValueError);
  error_of([] { set_logs("dynamo,"); }, ErrorKind::ValueError);
}

TEST_F(Logging, HelpRaisesTheHelpText) {
  std::string msg = error_of([] { set_logs("help"); }, ErrorKind::ValueError);
  EXPECT_EQ(msg, logging::help_text());
  EXPECT_NE(msg.find("TORCH_LOGS=\"+dynamo,aot\""), std::string::npos);
  for (const logging::ChannelInfo& c : logging::channels()) {
    EXPECT_NE(msg.find(c.name), std::string::npos) << c.name;
    EXPECT_NE(msg.find(c.description), std::string::npos) << c.name;
  }
}

TEST_F(Logging, LineHasLevelTimeAndChannelPrefix) {
  set_logs("dynamo");
  LogCapture cap;
  EMBER_LOG(dynamo, INFO) << "Step 1: torchdynamo start tracing "
                          << "forward";
  ASSERT_EQ(cap.lines.size(), 1u);
  std::regex line(R"(\[I \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} dynamo\] Step 1: torchdynamo start tracing forward\n)");
  EXPECT_TRUE(std::regex_match(cap.lines[0], line)) << cap.lines[0];
}

TEST_F(Logging, EachLevelHasItsLetter) {
  set_logs("+aot");
  LogCapture cap;
  EMBER_LOG(aot, DEBUG) << "x";
  EMBER_LOG(aot, INFO) << "x";
  EMBER_LOG(aot, WARNING) << "x";
  EMBER_LOG(aot, ERROR) << "x";
  ASSERT_EQ(cap.lines.size(), 4u);
  EXPECT_EQ(cap.lines[0].substr(0, 3), "[D ");
  EXPECT_EQ(cap.lines[1].substr(0, 3), "[I ");
  EXPECT_EQ(cap.lines[2].substr(0, 3), "[W ");
  EXPECT_EQ(cap.lines[3].substr(0, 3), "[E ");
  EXPECT_NE(cap.lines[3].find(" aot] x\n"), std::string::npos);
}

TEST_F(Logging, ArtifactLineIsDebugAndNamesTheArtifact) {
  set_logs("graph_code");
  LogCapture cap;
  EMBER_LOG_ARTIFACT(graph_code) << "def forward(x):";
  EMBER_LOG_ARTIFACT(graph) << "not shown";
  ASSERT_EQ(cap.lines.size(), 1u);
  std::regex line(R"(\[D \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} graph_code\] def forward\(x\):\n)");
  EXPECT_TRUE(std::regex_match(cap.lines[0], line)) << cap.lines[0];
}

TEST_F(Logging, MultiLineMessageHasThePrefixOnItsFirstLineOnly) {
  set_logs("graph_code");
  LogCapture cap;
  EMBER_LOG_ARTIFACT(graph_code) << "TRACED GRAPH\n  %x = input\n  return %x\n";
  ASSERT_EQ(cap.lines.size(), 1u);
  const std::string& text = cap.lines[0];
  size_t first_end = text.find('\n');
  EXPECT_NE(text.substr(0, first_end).find("graph_code] TRACED GRAPH"), std::string::npos);
  // The rest is the message as written; its final newline is not doubled.
  EXPECT_EQ(text.substr(first_end + 1), "  %x = input\n  return %x\n");
}

TEST_F(Logging, DisabledLineIsNotFormatted) {
  int formatted = 0;
  auto touch = [&] {
    ++formatted;
    return "x";
  };
  EMBER_LOG(dynamo, DEBUG) << touch();
  EMBER_LOG_ARTIFACT(output_code) << touch();
  EXPECT_EQ(formatted, 0);
  set_logs("+dynamo");
  EMBER_LOG(dynamo, DEBUG) << touch();
  EXPECT_EQ(formatted, 1);
}

TEST_F(Logging, MacroIsOneStatementUnderIfElse) {
  set_logs("dynamo");
  LogCapture cap;
  bool taken = false;
  for (bool cond : {true, false})
    if (cond)
      EMBER_LOG(dynamo, INFO) << "then";
    else
      taken = true;
  EXPECT_TRUE(taken);
  ASSERT_EQ(cap.lines.size(), 1u);
  EXPECT_NE(cap.lines[0].find("] then\n"), std::string::npos);
}

TEST_F(Logging, LinesGoToStderrByDefault) {
  logging::set_stderr_enabled(true);
  ::testing::internal::CaptureStderr();
  EMBER_LOG(inductor, WARNING) << "to stderr";
  EMBER_LOG(inductor, INFO) << "filtered out";
  std::string err = ::testing::internal::GetCapturedStderr();
  logging::set_stderr_enabled(false);
  EXPECT_NE(err.find(" inductor] to stderr\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("filtered out"), std::string::npos) << err;
}

TEST_F(Logging, StderrCanBeTurnedOffWhileSinksStillGetLines) {
  ::testing::internal::CaptureStderr();
  LogCapture cap;
  EMBER_LOG(inductor, WARNING) << "only to the sink";
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cap.lines.size(), 1u);
}

TEST_F(Logging, SinkFollowsTheGlobalSettings) {
  LogCapture cap;
  EMBER_LOG(aot, INFO) << "hidden";
  set_logs("aot");
  EMBER_LOG(aot, INFO) << "shown";
  ASSERT_EQ(cap.lines.size(), 1u);
  EXPECT_NE(cap.lines[0].find("] shown"), std::string::npos);
}

TEST_F(Logging, SinkWithItsOwnSpecKeepsDebugLinesTheGlobalSettingsHide) {
  LogCapture global;
  LogCapture debug_log("+dynamo");
  EXPECT_TRUE(logging::is_enabled(Component::dynamo, Level::kDebug));  // someone wants it
  EMBER_LOG(dynamo, DEBUG) << "detail";
  EMBER_LOG_ARTIFACT(guards) << "guard";
  EMBER_LOG(aot, DEBUG) << "not for either";
  EXPECT_EQ(global.lines.size(), 0u);
  ASSERT_EQ(debug_log.lines.size(), 2u) << debug_log.text();
  EXPECT_NE(debug_log.lines[0].find("dynamo] detail"), std::string::npos);
  EXPECT_NE(debug_log.lines[1].find("guards] guard"), std::string::npos);
}

TEST_F(Logging, SinkSpecDoesNotChangeWhatStderrShows) {
  logging::set_stderr_enabled(true);
  ::testing::internal::CaptureStderr();
  {
    LogCapture debug_log("+dynamo");
    EMBER_LOG(dynamo, DEBUG) << "sink only";
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  logging::set_stderr_enabled(false);
  EXPECT_EQ(err, "");
}

TEST_F(Logging, RemovedSinkGetsNoMoreLines) {
  std::vector<std::string> got;
  logging::SinkId id = logging::add_sink([&](const logging::Record& r) { got.emplace_back(r.message); });
  EMBER_LOG(dynamo, WARNING) << "one";
  logging::remove_sink(id);
  EMBER_LOG(dynamo, WARNING) << "two";
  EXPECT_EQ(got, std::vector<std::string>{"one"});
  logging::remove_sink(id);  // a second removal is ignored
}

TEST_F(Logging, SinkWithBadSpecRaises) {
  error_of([] { logging::add_sink([](const logging::Record&) {}, "+dynamo,bogus"); }, ErrorKind::ValueError);
}

TEST_F(Logging, RecordCarriesLevelChannelAndMessage) {
  struct Seen {
    Level level;
    std::string channel;
    bool artifact;
    std::string message;
  };
  std::vector<Seen> got;
  logging::ScopedSink sink(
      [&](const logging::Record& r) {
        got.push_back({r.level, std::string(r.channel), r.artifact, std::string(r.message)});
      },
      "+aot,graph");
  EMBER_LOG(aot, DEBUG) << "m1";
  EMBER_LOG_ARTIFACT(graph) << "m2";
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].level, Level::kDebug);
  EXPECT_EQ(got[0].channel, "aot");
  EXPECT_FALSE(got[0].artifact);
  EXPECT_EQ(got[0].message, "m1");
  EXPECT_EQ(got[1].level, Level::kDebug);
  EXPECT_EQ(got[1].channel, "graph");
  EXPECT_TRUE(got[1].artifact);
  EXPECT_EQ(got[1].message, "m2");
}

TEST_F(Logging, LineLoggedFromInsideASinkIsDropped) {
  int calls = 0;
  logging::ScopedSink sink([&](const logging::Record&) {
    ++calls;
    EMBER_LOG(dynamo, ERROR) << "from the sink";
  });
  EMBER_LOG(dynamo, ERROR) << "outer";
  EXPECT_EQ(calls, 1);
}

TEST_F(Logging, ThrowingSinkDoesNotStopOtherSinks) {
  logging::ScopedSink bad([](const logging::Record&) { throw std::runtime_error("sink failed"); });
  LogCapture cap;
  EMBER_LOG(dynamo, ERROR) << "still delivered";
  EXPECT_EQ(cap.lines.size(), 1u);
}

TEST_F(Logging, LinesFromManyThreadsNeverInterleave) {
  set_logs("dynamo");
  logging::set_stderr_enabled(true);
  ::testing::internal::CaptureStderr();
  LogCapture cap;
  constexpr int kThreads = 8, kLines = 200;
  const std::string payload(300, 'x');
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kLines; ++i) EMBER_LOG(dynamo, INFO) << "thread " << t << " line " << i << " " << payload;
    });
  for (std::thread& th : threads) th.join();
  std::string err = ::testing::internal::GetCapturedStderr();
  logging::set_stderr_enabled(false);
  std::regex line(R"(\[I [0-9: .-]+ dynamo\] thread \d line \d+ x{300})");
  ASSERT_EQ(cap.lines.size(), size_t(kThreads * kLines));
  for (const std::string& l : cap.lines) ASSERT_TRUE(std::regex_match(l.substr(0, l.size() - 1), line)) << l;
  size_t count = 0, pos = 0;
  while (pos < err.size()) {
    size_t end = err.find('\n', pos);
    ASSERT_NE(end, std::string::npos);
    ASSERT_TRUE(std::regex_match(err.substr(pos, end - pos), line)) << err.substr(pos, end - pos);
    ++count;
    pos = end + 1;
  }
  EXPECT_EQ(count, size_t(kThreads * kLines));
}

TEST_F(Logging, IsEnabledByNameRejectsUnknownNames) {
  set_logs("aot,guards");
  EXPECT_TRUE(logging::is_enabled("aot", Level::kInfo));
  EXPECT_FALSE(logging::is_enabled("aot", Level::kDebug));
  EXPECT_TRUE(logging::is_enabled("guards"));
  std::string msg = error_of([] { logging::is_enabled("dynamos"); }, ErrorKind::ValueError);
  EXPECT_NE(msg.find("unknown log channel 'dynamos'; valid names: dynamo, dynamic, aot"), std::string::npos) << msg;
}

TEST_F(Logging, LogByNameWritesToTheChannel) {
  set_logs("guards");
  LogCapture cap;
  logging::log("guards", Level::kInfo, "by name");
  logging::log("dynamo", Level::kInfo, "filtered");
  ASSERT_EQ(cap.lines.size(), 1u);
  EXPECT_EQ(cap.lines[0].substr(0, 3), "[D ");
  EXPECT_NE(cap.lines[0].find(" guards] by name\n"), std::string::npos);
}

TEST_F(Logging, ConfigLogLevelSetsDynamoUnlessTorchLogsNamesIt) {
  config_set("dynamo.log_level", "INFO");
  EXPECT_EQ(dynamo_levels_shown(), "IWE");
  EXPECT_FALSE(logging::is_enabled(Component::aot, Level::kInfo));  // dynamo only
  set_logs("-dynamo");
  EXPECT_EQ(dynamo_levels_shown(), "E");
  set_logs("aot");
  EXPECT_EQ(dynamo_levels_shown(), "IWE");
  set_logs("-all");
  EXPECT_EQ(dynamo_levels_shown(), "E");
}

TEST_F(Logging, ConfigLogLevelAssignedDirectlyTakesEffectOnApplyConfig) {
  config().dynamo.log_level = "DEBUG";
  logging::apply_config();
  EXPECT_EQ(dynamo_levels_shown(), "DIWE");
  EXPECT_TRUE(logging::is_enabled(Artifact::graph_code));  // as `+dynamo` would
  config().dynamo.log_level = "verbose";
  LogCapture cap;
  EXPECT_NO_THROW(logging::apply_config());
  EXPECT_NE(cap.text().find("config.dynamo.log_level: expected one of DEBUG, INFO, WARNING, ERROR, got \"verbose\" "
                            "(using WARNING)"),
            std::string::npos)
      << cap.text();
  EXPECT_EQ(dynamo_levels_shown(), "WE");
}

TEST_F(Logging, ReloadFromEnvReadsTorchLogs) {
  setenv("TORCH_LOGS", "+inductor,fusion", 1);
  logging::reload_from_env();
  EXPECT_TRUE(logging::is_enabled(Component::inductor, Level::kDebug));
  EXPECT_TRUE(logging::is_enabled(Artifact::fusion));
  EXPECT_EQ(logging::current_spec(), "+inductor,fusion");
  unsetenv("TORCH_LOGS");
}

TEST_F(Logging, TorchLogsWithABadNameWarnsOnceAndAppliesTheOtherNames) {
  setenv("TORCH_LOGS", "+inductor,inductr, fusion", 1);
  LogCapture cap;
  EXPECT_NO_THROW(logging::reload_from_env());
  unsetenv("TORCH_LOGS");
  const std::string w = cap.text();
  EXPECT_NE(w.find("[W "), std::string::npos) << w;
  EXPECT_NE(w.find("TORCH_LOGS: Invalid log settings: +inductor,inductr, fusion, must be a comma separated list of "
                   "registered log names or registered artifact names (unknown name 'inductr'); the other names "
                   "apply"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("Valid settings:\nall, dynamo, dynamic, aot, inductor"), std::string::npos) << w;
  EXPECT_EQ(cap.lines.size(), 1u) << w;
  EXPECT_TRUE(logging::is_enabled(Component::inductor, Level::kDebug));
  EXPECT_TRUE(logging::is_enabled(Artifact::fusion));
  EXPECT_EQ(logging::current_spec(), "+inductor,fusion");
}

TEST_F(Logging, TorchLogsHelpPrintsTheListAndGoesOnWithTheDefaults) {
  setenv("TORCH_LOGS", "help", 1);
  LogCapture cap;
  EXPECT_NO_THROW(logging::reload_from_env());
  unsetenv("TORCH_LOGS");
  EXPECT_NE(cap.text().find(logging::help_text()), std::string::npos) << cap.text();
  EXPECT_EQ(logging::current_spec(), "");
  EXPECT_EQ(dynamo_levels_shown(), "WE");
}

TEST_F(Logging, RegistryListsComponentsFirstAndArtifactsUnderComponents) {
  auto channels = logging::channels();
  ASSERT_EQ(channels.size(), size_t(logging::kNumChannels));
  EXPECT_STREQ(channels[0].name, "dynamo");
  EXPECT_STREQ(channels[1].name, "dynamic");
  EXPECT_STREQ(channels[2].name, "aot");
  EXPECT_STREQ(channels[3].name, "inductor");
  for (size_t i = 0; i < channels.size(); ++i) {
    EXPECT_EQ(channels[i].artifact, int(i) >= logging::kNumComponents) << channels[i].name;
    EXPECT_NE(std::string(channels[i].description), "") << channels[i].name;
    if (channels[i].artifact) {
      EXPECT_NO_THROW(logging::is_enabled(channels[i].parent, Level::kDebug));
    }
  }
  for (const char* name : {"graph", "graph_code", "graph_sizes", "graph_breaks", "guards", "recompiles",
                           "recompiles_verbose", "output_code", "schedule", "fusion", "perf_hints"})
    EXPECT_NO_THROW(logging::is_enabled(name)) << name;
}

}  // namespace
}  // namespace ember
