// The knob registry: defaults, the environment, setting and reading knobs by name, and
// the errors for bad values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "support/log_capture.h"
#include "support/config_knobs.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::error_of;

class ConfigKnobs : public testing::DiagnosticsTest {};

TEST_F(ConfigKnobs, DefaultsAreThoseOfTheGuide) {
  const Config& c = config();
  EXPECT_EQ(c.dynamo.cache_size_limit, 8);
  EXPECT_FALSE(c.dynamo.verbose);
  EXPECT_EQ(c.dynamo.log_level, "WARNING");
  EXPECT_FALSE(c.dynamo.replay_record_enabled);
  EXPECT_EQ(c.dynamo.debug_function, "");
  EXPECT_EQ(c.dynamo.repro_after, "");
  EXPECT_EQ(c.dynamo.repro_level, 2);
  EXPECT_DOUBLE_EQ(c.dynamo.repro_tolerance, 1e-3);
  EXPECT_FALSE(c.dynamo.suppress_errors);
  EXPECT_FALSE(c.inductor.debug);
  EXPECT_FALSE(c.inductor.fallback_random);
  EXPECT_EQ(c.inductor.inject_relu_bug_TESTING_ONLY, "");
  EXPECT_FALSE(c.inductor.trace.enabled);
  EXPECT_TRUE(c.inductor.trace.debug_log && c.inductor.trace.fx_graph && c.inductor.trace.fx_graph_transformed &&
              c.inductor.trace.ir_pre_fusion && c.inductor.trace.ir_post_fusion && c.inductor.trace.output_code);
  EXPECT_FALSE(c.inductor.trace.graph_diagram);
  EXPECT_FALSE(c.inductor.trace.compile_profile);
}

TEST_F(ConfigKnobs, DirectoriesDefaultToTheCurrentDirectory) {
  std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(config().dynamo.base_dir, cwd);
  EXPECT_EQ(config().inductor.trace.debug_dir, cwd);
}

TEST_F(ConfigKnobs, CacheDirDefaultsToTorchinductorUserInTheTempDir) {
  setenv("TMPDIR", "/scratch/tmp", 1);
  setenv("LOGNAME", "alice", 1);
  config_reload_from_env();
  EXPECT_EQ(config().inductor.cache_dir, "/scratch/tmp/torchinductor_alice");
  unsetenv("TMPDIR");
  unsetenv("LOGNAME");
  setenv("TORCHINDUCTOR_CACHE_DIR", "/var/cache/ember", 1);
  config_reload_from_env();
  EXPECT_EQ(config().inductor.cache_dir, "/var/cache/ember");
}

TEST_F(ConfigKnobs, FreezingIsOffByDefaultAndTorchinductorFreezingOrItsNameTurnsItOn) {
  // PyTorch's torch._inductor.config.freezing: off unless asked for (Note [freezing]).
  EXPECT_FALSE(config().inductor.freezing);
  EXPECT_EQ(config_get("inductor.freezing"), "false");
  setenv("TORCHINDUCTOR_FREEZING", "1", 1);
  config_reload_from_env();
  EXPECT_TRUE(config().inductor.freezing);
  unsetenv("TORCHINDUCTOR_FREEZING");
  config_reload_from_env();
  EXPECT_FALSE(config().inductor.freezing);
  config_set("inductor.freezing", "true");
  EXPECT_TRUE(config().inductor.freezing);
  const std::vector<KnobInfo> knobs = config_knobs();  // a copy: keep it while `knob` points into it
  const KnobInfo* knob = nullptr;
  for (const KnobInfo& k : knobs)
    if (k.name == "inductor.freezing") knob = &k;
  ASSERT_NE(knob, nullptr);
  EXPECT_NE(knob->meaning.find("assumes parameters do not change"), std::string::npos) << knob->meaning;
}

TEST_F(ConfigKnobs, EnvironmentSetsEachKindOfKnob) {
  setenv("TORCHDYNAMO_CACHE_SIZE_LIMIT", "4", 1);
  setenv("TORCHDYNAMO_VERBOSE", "1", 1);
  setenv("TORCHDYNAMO_SUPPRESS_ERRORS", "true", 1);
  setenv("TORCHDYNAMO_DEBUG_FUNCTION", "forward", 1);
  setenv("TORCHDYNAMO_REPRO_AFTER", "aot", 1);
  setenv("TORCHDYNAMO_REPRO_LEVEL", "4", 1);
  setenv("TORCH_COMPILE_DEBUG", "1", 1);
  setenv("TORCH_COMPILE_DEBUG_DIR", "/tmp/traces", 1);
  setenv("INDUCTOR_POST_FUSION_SVG", "1", 1);
  setenv("EMBER_INJECT_RELU_BUG", "accuracy", 1);
  config_reload_from_env();
  const Config& c = config();
  EXPECT_EQ(c.dynamo.cache_size_limit, 4);
  EXPECT_TRUE(c.dynamo.verbose);
  EXPECT_TRUE(c.dynamo.suppress_errors);
  EXPECT_EQ(c.dynamo.debug_function, "forward");
  EXPECT_EQ(c.dynamo.repro_after, "aot");
  EXPECT_EQ(c.dynamo.repro_level, 4);
  EXPECT_TRUE(c.inductor.trace.enabled);
  EXPECT_EQ(c.inductor.trace.debug_dir, "/tmp/traces");
  EXPECT_TRUE(c.inductor.trace.graph_diagram);
  EXPECT_EQ(c.inductor.inject_relu_bug_TESTING_ONLY, "accuracy");
}

TEST_F(ConfigKnobs, ReloadResetsKnobsTheEnvironmentNoLongerSets) {
  config().dynamo.cache_size_limit = 100;
  setenv("TORCHDYNAMO_VERBOSE", "1", 1);
  config_reload_from_env();
  EXPECT_EQ(config().dynamo.cache_size_limit, 8);
  EXPECT_TRUE(config().dynamo.verbose);
  unsetenv("TORCHDYNAMO_VERBOSE");
  config_reload_from_env();
  EXPECT_FALSE(config().dynamo.verbose);
}

TEST_F(ConfigKnobs, EmptyVariableCountsAsUnset) {
  setenv("TORCHDYNAMO_CACHE_SIZE_LIMIT", "", 1);
  config_reload_from_env();
  EXPECT_EQ(config().dynamo.cache_size_limit, 8);
}

/// The warnings config_reload_from_env() wrote for a bad environment, one line each.
std::string reload_warnings() {
  testing::LogCapture logs;
  EXPECT_NO_THROW(config_reload_from_env());
  return logs.text();
}

TEST_F(ConfigKnobs, BadEnvironmentValueNamesTheVariableWhatItExpectsWhatCameAndTheDefault) {
  setenv("TORCHDYNAMO_CACHE_SIZE_LIMIT", "eight", 1);
  EXPECT_NE(reload_warnings().find("invalid environment: TORCHDYNAMO_CACHE_SIZE_LIMIT: expected an integer >= 0, got "
                                   "\"eight\" (using the default, 8)"),
            std::string::npos);
  unsetenv("TORCHDYNAMO_CACHE_SIZE_LIMIT");
  setenv("TORCHDYNAMO_VERBOSE", "maybe", 1);
  EXPECT_NE(reload_warnings().find("TORCHDYNAMO_VERBOSE: expected a boolean (1, 0, true, false, on, off, yes, no), "
                                   "got \"maybe\" (using the default, false)"),
            std::string::npos);
  unsetenv("TORCHDYNAMO_VERBOSE");
  setenv("TORCHDYNAMO_REPRO_AFTER", "inductor", 1);
  EXPECT_NE(reload_warnings().find("TORCHDYNAMO_REPRO_AFTER: expected one of \"\", \"dynamo\", \"aot\", got "
                                   "\"inductor\" (using the default, \"\")"),
            std::string::npos);
  unsetenv("TORCHDYNAMO_REPRO_AFTER");
}

TEST_F(ConfigKnobs, AChoiceInTheWrongCaseSuggestsTheRightOne) {
  setenv("TORCHDYNAMO_REPRO_AFTER", "AOT", 1);
  const std::string w = reload_warnings();
  EXPECT_NE(w.find("got \"AOT\" (using the default, \"\"; did you mean \"aot\"?)"), std::string::npos) << w;
  EXPECT_EQ(config().dynamo.repro_after, "");
}

TEST_F(ConfigKnobs, OutOfRangeAndTrailingTextAreBadValues) {
  for (const char* bad : {"0", "5", "2x", " 2", "2.0", "-1"}) {
    setenv("TORCHDYNAMO_REPRO_LEVEL", bad, 1);
    const std::string w = reload_warnings();
    EXPECT_NE(w.find(std::string("TORCHDYNAMO_REPRO_LEVEL: expected an integer from 1 to 4, got \"") + bad + "\""),
              std::string::npos)
        << w;
    EXPECT_EQ(config().dynamo.repro_level, 2);
  }
}

TEST_F(ConfigKnobs, TheGeneratedCodesOptimizationLevelIsAnIntegerFromZeroToThree) {
  EXPECT_EQ(config().inductor.cpp_opt_level, 2);
  setenv("EMBER_INDUCTOR_CPP_OPT_LEVEL", "4", 1);
  const std::string w = reload_warnings();
  EXPECT_NE(w.find("EMBER_INDUCTOR_CPP_OPT_LEVEL: expected an integer from 0 to 3, got \"4\""), std::string::npos) << w;
  EXPECT_EQ(config().inductor.cpp_opt_level, 2);
  setenv("EMBER_INDUCTOR_CPP_OPT_LEVEL", "3", 1);
  EXPECT_EQ(reload_warnings().find("EMBER_INDUCTOR_CPP_OPT_LEVEL"), std::string::npos);
  EXPECT_EQ(config().inductor.cpp_opt_level, 3);
  unsetenv("EMBER_INDUCTOR_CPP_OPT_LEVEL");
  (void)reload_warnings();
}

TEST_F(ConfigKnobs, EveryBadVariableIsReportedOnceEach) {
  setenv("TORCHDYNAMO_CACHE_SIZE_LIMIT", "-3", 1);
  setenv("TORCH_COMPILE_DEBUG", "yes please", 1);
  const std::string w = reload_warnings();
  EXPECT_NE(w.find("TORCHDYNAMO_CACHE_SIZE_LIMIT: expected an integer >= 0, got \"-3\""), std::string::npos) << w;
  EXPECT_NE(w.find("TORCH_COMPILE_DEBUG: expected a boolean (1, 0, true, false, on, off, yes, no), got \"yes please\""),
            std::string::npos)
      << w;
  EXPECT_EQ(config_environment_problems().size(), 2u);
}

TEST_F(ConfigKnobs, ABadVariableKeepsItsDefaultAndTheGoodOnesApply) {
  config().dynamo.cache_size_limit = 3;
  setenv("TORCHDYNAMO_VERBOSE", "1", 1);
  setenv("TORCHDYNAMO_REPRO_LEVEL", "9", 1);
  reload_warnings();
  EXPECT_EQ(config().dynamo.cache_size_limit, 8);
  EXPECT_TRUE(config().dynamo.verbose);
  EXPECT_EQ(config().dynamo.repro_level, 2);
}

/// A value `knob` cannot take, or "" when every text is a valid value (free-form strings).
std::string bad_value_for(const KnobInfo& k) {
  if (k.type == "bool") return "maybe";
  if (k.type.rfind("int", 0) == 0) return "nine";
  if (k.type == "float") return "tight";
  if (k.type == "spec") return "graph_breakz";
  if (k.type.find(" | ") != std::string::npos) return "Nonsense";
  return "";
}

TEST_F(ConfigKnobs, EveryEnvironmentVariableWithABadValueWarnsOnceAndKeepsItsDefault) {
  size_t tried = 0;
  for (const KnobInfo& k : config_knobs()) {
    const std::string bad = bad_value_for(k);
    if (bad.empty()) {
      EXPECT_EQ(k.type, "str") << k.name << ": give it a bad value in bad_value_for";
      continue;
    }
    for (const std::string& var : k.env) {
      ++tried;
      testing::reset_diagnostics();
      setenv(var.c_str(), bad.c_str(), 1);
      const std::string w = reload_warnings();
      unsetenv(var.c_str());
      EXPECT_NE(w.find(var + ":"), std::string::npos) << var << ": the warning names the variable\n" << w;
      EXPECT_NE(w.find(bad), std::string::npos) << var << ": and what came\n" << w;
      EXPECT_TRUE(w.find("expected") != std::string::npos || w.find("Valid settings") != std::string::npos)
          << var << ": and what it expects\n"
          << w;
      EXPECT_EQ(w.find(var + ":"), w.rfind(var + ":")) << var << ": once\n" << w;
      EXPECT_EQ(config_get(k.name), k.default_value) << var << ": keeps its default";
      EXPECT_FALSE(config_environment_problems().empty()) << var;
    }
  }
  EXPECT_GE(tried, 10u);
}

TEST_F(ConfigKnobs, SetByCppNameAliasOrEnvironmentName) {
  config_set("dynamo.cache_size_limit", "4");
  EXPECT_EQ(config().dynamo.cache_size_limit, 4);
  config_set("dynamo.recompile_limit", "5");
  EXPECT_EQ(config().dynamo.cache_size_limit, 5);
  config_set("TORCHDYNAMO_CACHE_SIZE_LIMIT", "6");
  EXPECT_EQ(config().dynamo.cache_size_limit, 6);
  config_set("dynamo.repro_tolerance", "1e-5");
  EXPECT_DOUBLE_EQ(config().dynamo.repro_tolerance, 1e-5);
  config_set("inductor.trace.output_code", "false");
  EXPECT_FALSE(config().inductor.trace.output_code);
}

TEST_F(ConfigKnobs, GetPrintsEachType) {
  EXPECT_EQ(config_get("dynamo.cache_size_limit"), "8");
  EXPECT_EQ(config_get("dynamo.recompile_limit"), "8");
  EXPECT_EQ(config_get("dynamo.verbose"), "false");
  EXPECT_EQ(config_get("dynamo.repro_tolerance"), "0.001");
  EXPECT_EQ(config_get("dynamo.log_level"), "WARNING");
  config().dynamo.debug_function = "f";
  EXPECT_EQ(config_get("TORCHDYNAMO_DEBUG_FUNCTION"), "f");
}

TEST_F(ConfigKnobs, SetWithBadValueNamesTheKnob) {
  EXPECT_EQ(error_of([] { config_set("dynamo.repro_level", "0"); }, ErrorKind::ValueError),
            "config.dynamo.repro_level: expected an integer from 1 to 4, got \"0\"");
  EXPECT_EQ(error_of([] { config_set("dynamo.repro_tolerance", "tight"); }, ErrorKind::ValueError),
            "config.dynamo.repro_tolerance: expected a finite number, got \"tight\"");
  EXPECT_EQ(error_of([] { config_set("dynamo.log_level", "verbose"); }, ErrorKind::ValueError),
            "config.dynamo.log_level: expected one of \"DEBUG\", \"INFO\", \"WARNING\", \"ERROR\", got \"verbose\"");
  EXPECT_EQ(config().dynamo.repro_level, 2);
  EXPECT_EQ(config().dynamo.log_level, "WARNING");
}

TEST_F(ConfigKnobs, UnknownKnobNameListsTheValidOnes) {
  std::string msg = error_of([] { config_set("dynamo.cache_limit", "1"); }, ErrorKind::ValueError);
  EXPECT_NE(msg.find("unknown config knob 'dynamo.cache_limit'; valid names: logs, dynamo.cache_size_limit,"),
            std::string::npos)
      << msg;
  error_of([] { config_get("nope"); }, ErrorKind::ValueError);
}

TEST_F(ConfigKnobs, TorchLogsIsAKnob) {
  config_set("TORCH_LOGS", "+dynamo,guards");
  EXPECT_EQ(config_get("logs"), "+dynamo,guards");
  EXPECT_TRUE(logging::is_enabled("guards"));
  setenv("TORCH_LOGS", "aot", 1);
  config_reload_from_env();
  EXPECT_EQ(config_get("TORCH_LOGS"), "aot");
  setenv("TORCH_LOGS", "aot,bogus", 1);
  const std::string w = reload_warnings();
  EXPECT_NE(w.find("unknown name 'bogus'"), std::string::npos) << w;
  EXPECT_EQ(config_get("TORCH_LOGS"), "aot") << "the names that are right still apply";
  unsetenv("TORCH_LOGS");
}

TEST_F(ConfigKnobs, LogLevelKnobTakesEffectWhenSet) {
  config_set("dynamo.log_level", "DEBUG");
  EXPECT_TRUE(logging::is_enabled("dynamo", logging::Level::kDebug));
}

TEST_F(ConfigKnobs, KnobNamesAreUniqueAcrossCppNamesAliasesAndEnvironment) {
  std::set<std::string> seen;
  for (const KnobInfo& k : config_knobs()) {
    EXPECT_TRUE(seen.insert(k.name).second) << k.name;
    for (const std::string& a : k.aliases) EXPECT_TRUE(seen.insert(a).second) << a;
    for (const std::string& e : k.env) EXPECT_TRUE(seen.insert(e).second) << e;
    EXPECT_FALSE(k.meaning.empty()) << k.name;
    EXPECT_FALSE(k.type.empty()) << k.name;
  }
}

TEST_F(ConfigKnobs, EveryKnobSetsItsOwnField) {
  Config c;
  std::set<const void*> fields;
  size_t with_field = 0;
  for (const support::Knob& k : support::knob_table()) {
    if (!k.field) continue;
    ++with_field;
    fields.insert(std::visit([](auto* p) -> const void* { return p; }, k.field(c)));
  }
  EXPECT_EQ(fields.size(), with_field);
}

TEST_F(ConfigKnobs, EveryKnobReadsBackWhatItWasSetTo) {
  for (const KnobInfo& k : config_knobs()) {
    std::string value = config_get(k.name);
    EXPECT_NO_THROW(config_set(k.name, value)) << k.name;
    EXPECT_EQ(config_get(k.name), value) << k.name;
  }
}

TEST_F(ConfigKnobs, DefaultColumnIsTheValueOfAFreshConfig) {
  std::set<std::string> described;
  for (const KnobInfo& k : config_knobs()) {
    if (k.default_depends_on_machine) {
      described.insert(k.name);
      EXPECT_NE(k.default_value, config_get(k.name)) << "says how it is found: " << k.name;
    } else {
      EXPECT_EQ(k.default_value, config_get(k.name)) << k.name;
    }
  }
  EXPECT_EQ(described, (std::set<std::string>{"dynamo.base_dir", "inductor.trace.debug_dir", "inductor.cache_dir",
                                              "inductor.precompiled_prelude_dir"}));
}

}  // namespace
}  // namespace ember
