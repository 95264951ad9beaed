// ember/logging.h — TORCH_LOGS for C++: which log channels print, and where lines go.
//
// Log channels are *components* (dynamo, aot, inductor), each with a level, and
// *artifacts* (graph_code, guards, output_code, ...), each on or off; the list is
// `ember::logging::channels()` and docs/diagnostics.md. Settings come from the
// TORCH_LOGS environment variable on first use, or from `ember::set_logs("+dynamo,guards")`.
// Ember's own code writes lines with EMBER_LOG / EMBER_LOG_ARTIFACT (support/logging.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace ember {

/// Sets log levels from a TORCH_LOGS spec, replacing the current settings (the
/// environment variable is not read again). Syntax: comma-separated names; a component
/// alone is INFO, `+name` DEBUG, `-name` ERROR; an artifact's name turns it on; `all`
/// sets every component to INFO (`+all` DEBUG, `-all` ERROR) and turns every artifact on.
/// An empty spec restores the defaults: components at WARNING (dynamo at
/// config().dynamo.log_level), artifacts off. Raises ember::Error (ValueError) naming the
/// valid settings on an unknown name; the settings are then unchanged.
void set_logs(std::string_view spec = {});

namespace logging {

/// A line's severity, in increasing order (Python's logging levels).
enum class Level : uint8_t { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

/// "DEBUG", "INFO", "WARNING", "ERROR".
const char* level_name(Level level);

/// One registered channel, in registration order (components first).
struct ChannelInfo {
  const char* name;
  const char* description;
  bool artifact;
  const char* parent;   // an artifact's component; nullptr for a component
  bool off_by_default;  // artifact not shown by `+parent`, only when named
};
std::span<const ChannelInfo> channels();

/// One emitted line as sinks see it. `text` is what stderr gets: the prefix
/// `[I 2026-11-22 03:12:45.123 dynamo] `, the message, and a final newline.
struct Record {
  Level level;
  std::string_view channel;
  bool artifact;
  std::chrono::system_clock::time_point time;
  std::string_view message;
  std::string_view text;
};

/// Receives lines. Sinks are called one line at a time, never concurrently, so they need
/// no locking of their own; a sink must not throw (exceptions are dropped) and lines it
/// logs itself are dropped rather than recursing.
using Sink = std::function<void(const Record&)>;
using SinkId = uint64_t;

/// Adds a sink. With an empty `spec` it receives the lines the current settings emit
/// (what stderr shows). With a spec in TORCH_LOGS syntax it has settings of its own,
/// independent of set_logs, e.g. "+dynamo,+aot,+inductor" for a debug.log that keeps
/// DEBUG lines while stderr shows warnings only. Raises like set_logs on a bad spec.
SinkId add_sink(Sink sink, std::string_view spec = {});
/// After it returns, the sink is never called again. Unknown ids are ignored.
void remove_sink(SinkId id);

/// Adds a sink for its lifetime.
class ScopedSink {
 public:
  explicit ScopedSink(Sink sink, std::string_view spec = {}) : id_(add_sink(std::move(sink), spec)) {}
  ~ScopedSink() { remove_sink(id_); }
  ScopedSink(const ScopedSink&) = delete;
  ScopedSink& operator=(const ScopedSink&) = delete;

 private:
  SinkId id_;
};

/// Turns the default stderr output on or off (sinks are unaffected); returns the previous state.
bool set_stderr_enabled(bool enabled);

/// Whether a line of `level` on the channel called `name` would reach stderr or a sink;
/// artifacts ignore `level`. Raises ember::Error (ValueError) for an unknown name.
bool is_enabled(std::string_view name, Level level = Level::kDebug);

/// Writes a line to the channel called `name` (for tools and programs; Ember's own code
/// uses EMBER_LOG). Raises ember::Error (ValueError) for an unknown name.
void log(std::string_view name, Level level, std::string_view message);

/// The spec in effect, as set_logs or TORCH_LOGS gave it ("" for the defaults).
std::string current_spec();

/// Reads TORCH_LOGS again, replacing the settings (as at first use): unknown names are
/// said at WARNING and skipped, the others apply; `help` prints the list.
void reload_from_env();

/// Applies config().dynamo.log_level to the dynamo component, unless the TORCH_LOGS
/// settings name dynamo (or `all`). config_set("dynamo.log_level", ...) calls it; code
/// that assigns the field directly calls it afterwards; the compile entry point calls it
/// at the start of each compile.
void apply_config();

/// The text TORCH_LOGS="help" shows: syntax, examples, and every channel with its meaning.
std::string help_text();

}  // namespace logging
}  // namespace ember
