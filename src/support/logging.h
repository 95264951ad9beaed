// support/logging.h — how Ember's code writes log lines: EMBER_LOG(component, LEVEL) and
// EMBER_LOG_ARTIFACT(artifact), over the channels of log_registry.def. A disabled line
// costs one relaxed atomic load: its message is never formatted. The settings, sinks
// and line format are in logging.cpp; the public side is ember/logging.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <sstream>

#include "ember/logging.h"

namespace ember::logging {

/// Components, one per EMBER_COMPONENT row.
enum class Component : uint8_t {
#define EMBER_COMPONENT(name, description) name,
#include "support/log_registry.def"
};

/// Artifacts, one per EMBER_ARTIFACT row.
enum class Artifact : uint8_t {
#define EMBER_ARTIFACT(name, parent, off_by_default, description) name,
#include "support/log_registry.def"
};

inline constexpr int kNumComponents = 0
#define EMBER_COMPONENT(name, description) +1
#include "support/log_registry.def"
    ;
inline constexpr int kNumArtifacts = 0
#define EMBER_ARTIFACT(name, parent, off_by_default, description) +1
#include "support/log_registry.def"
    ;
inline constexpr int kNumChannels = kNumComponents + kNumArtifacts;

namespace detail {

// Channel ids index channels(): components first, then artifacts.
constexpr int channel_id(Component c) { return static_cast<int>(c); }
constexpr int channel_id(Artifact a) { return kNumComponents + static_cast<int>(a); }

// The lowest level any consumer (stderr or a sink) takes per channel; 4 = none.
// Zero before the settings are first read, so the first line of each channel takes
// the slow path, which reads them.
extern std::atomic<uint8_t> g_min_level[kNumChannels];

bool should_log_slow(int channel, Level level);

inline bool should_log(int channel, Level level) {
  return static_cast<uint8_t>(level) >= g_min_level[channel].load(std::memory_order_relaxed) &&
         should_log_slow(channel, level);
}

// One line being written; the destructor hands it to the consumers.
class LogLine {
 public:
  LogLine(int channel, Level level) : channel_(channel), level_(level), time_(std::chrono::system_clock::now()) {}
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  int channel_;
  Level level_;
  std::chrono::system_clock::time_point time_;
  std::ostringstream stream_;
};

// Gives `cond ? (void)0 : voidify & stream << ...` a void type on both branches.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

// EMBER_LOG's LEVEL argument, spelled as in Python (INFO), pasted onto `k`.
inline constexpr Level kDEBUG = Level::kDebug;
inline constexpr Level kINFO = Level::kInfo;
inline constexpr Level kWARNING = Level::kWarning;
inline constexpr Level kERROR = Level::kError;

}  // namespace detail

/// Whether a line of `level` on the component would reach stderr or a sink.
inline bool is_enabled(Component component, Level level) {
  return detail::should_log(detail::channel_id(component), level);
}
/// Whether the artifact is on for stderr or a sink.
inline bool is_enabled(Artifact artifact) { return detail::should_log(detail::channel_id(artifact), Level::kDebug); }

/// Drops every line this thread logs while it lives, for stderr and sinks alike: for work
/// done ahead whose lines come when it is done for real (inductor's compile_fx_ahead).
class MuteScope {
 public:
  MuteScope();
  ~MuteScope();
  MuteScope(const MuteScope&) = delete;
  MuteScope& operator=(const MuteScope&) = delete;

 private:
  bool saved_;
};

/// What the last read of TORCH_LOGS found wrong ("invalid environment: TORCH_LOGS: …"),
/// or "" (config_environment_problems() reports it with the knobs').
std::string environment_problem();

}  // namespace ember::logging

/// `EMBER_LOG(dynamo, INFO) << "Step 1: torchdynamo start tracing " << name;`
/// LEVEL is DEBUG, INFO, WARNING or ERROR. The message is only formatted when the line
/// is enabled; it becomes one line (or block, for multi-line text) with the prefix
/// `[I 2026-11-22 03:12:45.123 dynamo] `.
#define EMBER_LOG(component, LEVEL)                                                                                   \
  !::ember::logging::detail::should_log(::ember::logging::detail::channel_id(::ember::logging::Component::component), \
                                        ::ember::logging::detail::k##LEVEL)                                           \
      ? (void)0                                                                                                       \
      : ::ember::logging::detail::LogVoidify() &                                                                      \
            ::ember::logging::detail::LogLine(                                                                        \
                ::ember::logging::detail::channel_id(::ember::logging::Component::component),                         \
                ::ember::logging::detail::k##LEVEL)                                                                   \
                .stream()

/// `EMBER_LOG_ARTIFACT(graph_code) << graph.print();` — written at DEBUG level when the
/// artifact is on (TORCH_LOGS="graph_code"), with the prefix `[D ... graph_code] `.
#define EMBER_LOG_ARTIFACT(artifact)                                                                                \
  !::ember::logging::detail::should_log(::ember::logging::detail::channel_id(::ember::logging::Artifact::artifact), \
                                        ::ember::logging::Level::kDebug)                                            \
      ? (void)0                                                                                                     \
      : ::ember::logging::detail::LogVoidify() &                                                                    \
            ::ember::logging::detail::LogLine(                                                                      \
                ::ember::logging::detail::channel_id(::ember::logging::Artifact::artifact),                         \
                ::ember::logging::Level::kDebug)                                                                    \
                .stream()
