// support/logging.cpp — the log settings (TORCH_LOGS parsing, config.dynamo.log_level),
// the consumers of lines (stderr and sinks, each with its own levels), and the line
// format `[I 2026-11-22 03:12:45.123 dynamo] message`.
#include "support/logging.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "ember/config.h"
#include "ember/error.h"

namespace ember::logging {

namespace detail {
std::atomic<uint8_t> g_min_level[kNumChannels] = {};
}  // namespace detail

namespace {
thread_local bool t_muted = false;
}  // namespace

MuteScope::MuteScope() : saved_(t_muted) { t_muted = true; }
MuteScope::~MuteScope() { t_muted = saved_; }

namespace {

// A channel's lowest accepted level when nothing is accepted.
constexpr uint8_t kOff = 4;

constexpr ChannelInfo kChannels[] = {
#define EMBER_COMPONENT(name, description) {#name, description, false, nullptr, false},
#include "support/log_registry.def"
#define EMBER_ARTIFACT(name, parent, off_by_default, description) {#name, description, true, #parent, off_by_default},
#include "support/log_registry.def"
};
static_assert(std::size(kChannels) == kNumChannels);

// An artifact's parent must be a component: a typo here fails to compile.
constexpr int kArtifactParent[] = {
#define EMBER_ARTIFACT(name, parent, off_by_default, description) detail::channel_id(Component::parent),
#include "support/log_registry.def"
};

// What a TORCH_LOGS spec asks for. Components it does not name stay unset (-1).
struct Spec {
  std::array<int8_t, kNumComponents> level;
  std::array<bool, kNumArtifacts> artifact;
  std::string text;
  Spec() {
    level.fill(-1);
    artifact.fill(false);
  }
};

// The lowest level each channel accepts (kOff: none).
using Levels = std::array<uint8_t, kNumChannels>;

std::string_view trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

int find_channel(std::string_view name) {
  for (int i = 0; i < kNumChannels; ++i)
    if (name == kChannels[i].name) return i;
  return -1;
}

std::string valid_settings() {
  std::string out = "all";
  for (const ChannelInfo& c : kChannels) {
    out += ", ";
    out += c.name;
  }
  return out;
}

[[noreturn]] void invalid_settings(std::string_view text, std::string_view bad) {
  EMBER_FAIL_KIND(ErrorKind::ValueError)
      << "Invalid log settings: " << text
      << ", must be a comma separated list of registered log names or registered artifact names"
      << (bad.empty() ? std::string(" (an empty name)") : " (unknown name '" + std::string(bad) + "')")
      << ".\nFor more info on various settings, try TORCH_LOGS=\"help\"\nValid settings:\n"
      << valid_settings();
}

// Parses `raw` into `spec`; each unknown or empty name goes to `bad` (and is skipped), a
// `help` item sets `help`.
void parse_items(std::string_view raw, Spec& spec, std::vector<std::string>& bad, bool& help) {
  std::string_view text = trim(raw);
  spec.text = std::string(text);
  if (text.empty()) return;
  std::string kept;  // the names that apply, as the spec's text
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    const std::string_view raw_item = trim(text.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
    std::string_view item = raw_item;
    int8_t level = static_cast<int8_t>(Level::kInfo);
    if (!item.empty() && (item[0] == '+' || item[0] == '-')) {
      level = static_cast<int8_t>(item[0] == '+' ? Level::kDebug : Level::kError);
      item.remove_prefix(1);
    }
    const int channel = item == "all" ? kNumChannels : find_channel(item);
    if (item == "help") {
      help = true;
    } else if (item.empty() || channel < 0) {
      bad.emplace_back(item);
    } else {
      if (channel == kNumChannels) {
        spec.level.fill(level);
        spec.artifact.fill(true);
      } else if (kChannels[channel].artifact) {
        // As in PyTorch, a +/- prefix on an artifact is accepted and means nothing.
        spec.artifact[channel - kNumComponents] = true;
      } else {
        spec.level[channel] = level;
      }
      kept += std::string(kept.empty() ? "" : ",") + std::string(raw_item);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (!bad.empty() || help) spec.text = kept;
}

// The settings a spec given in C++ asks for (set_logs, add_sink): a bad name raises.
Spec parse_spec(std::string_view raw) {
  Spec spec;
  std::vector<std::string> bad;
  bool help = false;
  parse_items(raw, spec, bad, help);
  EMBER_CHECK_VALUE(!help) << help_text();
  if (!bad.empty()) invalid_settings(trim(raw), bad.front());
  return spec;
}

// TORCH_LOGS as the environment gives it: a typo must not stop a program, so bad names
// are reported and skipped, and `help` prints the list; the rest applies.
struct EnvSpec {
  Spec spec;
  std::string problem;  // "invalid environment: TORCH_LOGS: …", or ""
  bool help = false;
};

EnvSpec parse_env_spec(std::string_view raw) {
  EnvSpec out;
  std::vector<std::string> bad;
  parse_items(raw, out.spec, bad, out.help);
  if (!bad.empty()) {
    std::string names;
    for (const std::string& b : bad) names += std::string(names.empty() ? "" : ", ") + "'" + b + "'";
    const bool one = bad.size() == 1;
    out.problem = "invalid environment: TORCH_LOGS: Invalid log settings: " + std::string(trim(raw)) +
                  ", must be a comma separated list of registered log names or registered artifact names (" +
                  (bad.front().empty() && one ? std::string("an empty name")
                                              : "unknown name" + std::string(one ? " " : "s ") + names) +
                  ")" + (out.spec.text.empty() ? "; using the defaults" : "; the other names apply") +
                  ".\nFor more info on various settings, try TORCH_LOGS=\"help\"\nValid settings:\n" + valid_settings();
  }
  return out;
}

std::optional<Level> parse_level_name(std::string_view name) {
  std::string upper(trim(name));
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarning, Level::kError})
    if (upper == level_name(l)) return l;
  if (upper == "WARN") return Level::kWarning;
  return std::nullopt;
}

// Components the spec leaves unset take WARNING, dynamo config.dynamo.log_level; an
// artifact is on when named, or when its parent is at DEBUG and it is not off by default.
Levels resolve(const Spec& spec, Level dynamo_default) {
  Levels out{};
  for (int c = 0; c < kNumComponents; ++c) {
    Level fallback = c == detail::channel_id(Component::dynamo) ? dynamo_default : Level::kWarning;
    out[c] = spec.level[c] >= 0 ? static_cast<uint8_t>(spec.level[c]) : static_cast<uint8_t>(fallback);
  }
  for (int a = 0; a < kNumArtifacts; ++a) {
    const ChannelInfo& info = kChannels[kNumComponents + a];
    bool on = spec.artifact[a] || (!info.off_by_default && out[kArtifactParent[a]] == uint8_t(Level::kDebug));
    out[kNumComponents + a] = on ? static_cast<uint8_t>(Level::kDebug) : kOff;
  }
  return out;
}

struct SinkEntry {
  SinkId id;
  Sink fn;
  bool own_spec;  // false: follows the global settings
  Spec spec;
  Levels levels;
};

struct State {
  std::mutex mu;
  std::atomic<bool> initialized{false};
  Spec spec;
  Levels levels{};
  bool stderr_enabled = true;
  std::vector<SinkEntry> sinks;
  SinkId next_id = 1;
  std::string env_problem;  // what the last read of TORCH_LOGS found wrong
};

// Never destroyed, so lines written during static destruction still find it.
State& state() {
  static State* s = new State;
  return *s;
}

// config().dynamo.log_level, or WARNING when it names no level (said once per value: a
// typo assigned in C++ must not stop the compile that applies it).
Level dynamo_default() {
  const std::string name = config().dynamo.log_level;
  if (std::optional<Level> l = parse_level_name(name)) return *l;
  static std::mutex mu;
  static std::set<std::string>* said = new std::set<std::string>;
  bool first;
  {
    std::lock_guard lock(mu);
    first = said->insert(name).second;  // before logging, which reads the level again
  }
  if (first) {
    EMBER_LOG(dynamo, WARNING) << "config.dynamo.log_level: expected one of DEBUG, INFO, WARNING, ERROR, got \"" << name
                               << "\" (using WARNING)";
  }
  return Level::kWarning;
}

// Stores each channel's lowest level over all consumers, for the macros' fast check.
void publish(State& s) {
  for (int ch = 0; ch < kNumChannels; ++ch) {
    uint8_t m = s.levels[ch];
    for (const SinkEntry& e : s.sinks)
      if (e.own_spec) m = std::min(m, e.levels[ch]);
    detail::g_min_level[ch].store(m, std::memory_order_relaxed);
  }
}

// Installs `spec` as the global settings; the caller holds s.mu.
void install(State& s, Spec spec, Level dyn) {
  s.levels = resolve(spec, dyn);
  s.spec = std::move(spec);
  for (SinkEntry& e : s.sinks)
    if (e.own_spec) e.levels = resolve(e.spec, dyn);
  s.initialized.store(true, std::memory_order_release);
  publish(s);
}

std::string env_spec() {
  const char* v = std::getenv("TORCH_LOGS");
  return v ? std::string(v) : std::string();
}

// Says what reading TORCH_LOGS found (after the settings are installed and the lock is
// released: the lines go through the same settings).
void report_env(const EnvSpec& env) {
  if (env.help) {
    EMBER_LOG(dynamo, WARNING) << "TORCH_LOGS=\"help\" ("
                               << (env.spec.text.empty() ? "logging keeps its defaults" : "the other names apply")
                               << "):\n"
                               << help_text();
  }
  if (!env.problem.empty()) EMBER_LOG(dynamo, WARNING) << env.problem;
}

// First use: read TORCH_LOGS. A bad name is reported once, and skipped: a typo in the
// environment never stops a program (PyTorch raises at import instead).
void initialize() {
  const Level dyn = dynamo_default();  // before the lock: reading the config may log
  State& s = state();
  EnvSpec env;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.initialized.load(std::memory_order_acquire)) return;
    env = parse_env_spec(env_spec());
    s.env_problem = env.problem;
    install(s, env.spec, dyn);
  }
  report_env(env);
}

void ensure_initialized() {
  if (!state().initialized.load(std::memory_order_acquire)) initialize();
}

// A sink that logs from inside a sink would deadlock on s.mu; such lines are dropped.
thread_local bool t_emitting = false;

void format_prefix(std::string& out, Level level, std::string_view channel, std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  if (ms < 0) ms += 1000;
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%c %04d-%02d-%02d %02d:%02d:%02d.%03d ", level_name(level)[0], tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  out += buf;
  out += channel;
  out += "] ";
}

void emit(int channel, Level level, std::chrono::system_clock::time_point time, std::string_view message) {
  if (t_emitting) return;
  t_emitting = true;
  struct Reset {
    ~Reset() { t_emitting = false; }
  } reset;
  const ChannelInfo& info = kChannels[channel];
  std::string text;
  text.reserve(message.size() + 48);
  format_prefix(text, level, info.name, time);
  // One final newline: text that already ends in one (a printed graph) gets no blank line.
  if (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  text += message;
  text += '\n';
  std::string_view body(text);
  Record record{level, info.name, info.artifact, time, message, body};
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint8_t lv = static_cast<uint8_t>(level);
  if (s.stderr_enabled && lv >= s.levels[channel]) std::fwrite(text.data(), 1, text.size(), stderr);
  for (const SinkEntry& e : s.sinks) {
    if (lv < (e.own_spec ? e.levels[channel] : s.levels[channel])) continue;
    try {
      e.fn(record);
    } catch (...) {
      // A sink must not stop the program it observes.
    }
  }
}

int channel_or_throw(std::string_view name) {
  int ch = find_channel(name);
  EMBER_CHECK_VALUE(ch >= 0) << "unknown log channel '" << name << "'; valid names: " << valid_settings().substr(5);
  return ch;
}

}  // namespace

const char* level_name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARNING";
    case Level::kError:
      return "ERROR";
  }
  return "INFO";
}

std::span<const ChannelInfo> channels() { return kChannels; }

namespace detail {

bool should_log_slow(int channel, Level level) {
  if (t_muted) return false;
  if (state().initialized.load(std::memory_order_acquire)) return true;
  initialize();
  return static_cast<uint8_t>(level) >= g_min_level[channel].load(std::memory_order_relaxed);
}

LogLine::~LogLine() {
  try {
    emit(channel_, level_, time_, stream_.str());
  } catch (...) {
    // Logging never throws out of a destructor.
  }
}

}  // namespace detail

SinkId add_sink(Sink sink, std::string_view spec) {
  ensure_initialized();
  SinkEntry entry{0, std::move(sink), !trim(spec).empty(), {}, {}};
  if (entry.own_spec) {
    entry.spec = parse_spec(spec);
    entry.levels = resolve(entry.spec, dynamo_default());
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  entry.id = s.next_id++;
  s.sinks.push_back(std::move(entry));
  publish(s);
  return s.sinks.back().id;
}

void remove_sink(SinkId id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  std::erase_if(s.sinks, [id](const SinkEntry& e) { return e.id == id; });
  publish(s);
}

bool set_stderr_enabled(bool enabled) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return std::exchange(s.stderr_enabled, enabled);
}

bool is_enabled(std::string_view name, Level level) {
  int ch = channel_or_throw(name);
  return detail::should_log(ch, kChannels[ch].artifact ? Level::kDebug : level);
}

void log(std::string_view name, Level level, std::string_view message) {
  int ch = channel_or_throw(name);
  if (kChannels[ch].artifact) level = Level::kDebug;
  if (detail::should_log(ch, level)) emit(ch, level, std::chrono::system_clock::now(), message);
}

std::string current_spec() {
  ensure_initialized();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.spec.text;
}

void reload_from_env() {
  EnvSpec env = parse_env_spec(env_spec());
  const Level dyn = dynamo_default();
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.env_problem = env.problem;
    install(s, env.spec, dyn);
  }
  report_env(env);
}

std::string environment_problem() {
  ensure_initialized();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.env_problem;
}

void apply_config() {
  ensure_initialized();
  Level dyn = dynamo_default();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  install(s, s.spec, dyn);
}

std::string help_text() {
  std::string out =
      "TORCH_LOGS Info\n"
      "Examples:\n"
      "  TORCH_LOGS=\"+dynamo,aot\" will set the log level of dynamo to DEBUG and aot to INFO\n"
      "  TORCH_LOGS=\"-dynamo,+inductor\" will set the log level of dynamo to ERROR and inductor to DEBUG\n"
      "  TORCH_LOGS=\"aot_graphs\" will enable the aot_graphs artifact\n"
      "  TORCH_LOGS=\"+dynamo,schedule\" will set the log level of dynamo to DEBUG and enable the schedule artifact\n"
      "\n"
      "Components start at WARNING and artifacts off. A component named alone logs at INFO, +name at DEBUG,\n"
      "-name at ERROR. An artifact is on when named, and also when its component is at DEBUG unless it is\n"
      "marked (off by default).\n"
      "\n"
      "Valid settings:\n";
  size_t width = 3;
  for (const ChannelInfo& c : kChannels) width = std::max(width, std::strlen(c.name));
  auto row = [&](std::string_view name, std::string_view what) {
    out += "  ";
    out += name;
    out.append(width + 2 - name.size(), ' ');
    out += what;
    out += '\n';
  };
  row("all", "every component at INFO (+all: DEBUG, -all: ERROR) and every artifact on");
  for (const ChannelInfo& c : kChannels) {
    std::string what = c.description;
    if (c.artifact) {
      what += c.off_by_default ? " [artifact of " + std::string(c.parent) + ", off by default]"
                               : " [artifact of " + std::string(c.parent) + "]";
    } else {
      what += " [component]";
    }
    row(c.name, what);
  }
  return out;
}

}  // namespace ember::logging

namespace ember {

void set_logs(std::string_view spec) {
  logging::Spec parsed = logging::parse_spec(spec);
  logging::Level dyn = logging::dynamo_default();
  logging::State& s = logging::state();
  std::lock_guard<std::mutex> lock(s.mu);
  logging::install(s, std::move(parsed), dyn);
}

}  // namespace ember
