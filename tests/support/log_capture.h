// tests/support/log_capture.h — what the logging, config, capture and inductor tests share: a sink that
// keeps the lines it gets, and a fixture that starts each test from the defaults with the
// knobs' environment variables unset and stderr output off.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ember/config.h"
#include "ember/logging.h"

namespace ember::testing {

/// Keeps every line a sink receives, for its lifetime.
class LogCapture {
 public:
  explicit LogCapture(std::string_view spec = {})
      : sink_([this](const logging::Record& r) { lines.emplace_back(r.text); }, spec) {}
  std::vector<std::string> lines;

  /// The lines joined, for messages and substring checks.
  std::string text() const {
    std::string out;
    for (const std::string& l : lines) out += l;
    return out;
  }

 private:
  logging::ScopedSink sink_;
};

/// How many times `needle` occurs in `text` (a warning said once, a line not repeated).
inline size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// Unsets every knob's environment variables and resets config and logs to the defaults.
inline void reset_diagnostics() {
  for (const KnobInfo& k : config_knobs())
    for (const std::string& var : k.env) unsetenv(var.c_str());
  config_reload_from_env();
  set_logs();
}

class DiagnosticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_diagnostics();
    stderr_was_ = logging::set_stderr_enabled(false);
  }
  void TearDown() override {
    reset_diagnostics();
    logging::set_stderr_enabled(stderr_was_);
  }

 private:
  bool stderr_was_ = true;
};

}  // namespace ember::testing
