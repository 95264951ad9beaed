// support/config.cpp — the process's Config: applying the environment on first use,
// setting and reading knobs by name, and the table `ember config` prints. The knobs
// themselves are rows of config_knobs.cpp.
#include "ember/config.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "ember/error.h"
#include "ember/logging.h"
#include "support/config_knobs.h"
#include "support/logging.h"

namespace ember {

namespace {

using support::FieldRef;
using support::Knob;

struct ConfigState {
  std::mutex mu;
  std::atomic<bool> ready{false};
  Config config;
  std::vector<std::string> env_problems;  // what the last read of the environment found
};

// Never destroyed: code running during static destruction may still read knobs.
ConfigState& config_state() {
  static ConfigState* s = new ConfigState;
  return *s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string choices_text(const Knob& k) {
  std::string out;
  for (const char* c : k.choices) {
    if (!out.empty()) out += " | ";
    out += *c ? c : "''";
  }
  return out;
}

std::string type_text(const Knob& k, const FieldRef* field) {
  if (!field) return "spec";
  if (!k.choices.empty()) return choices_text(k);
  switch (field->index()) {
    case 0:
      return "bool";
    case 1:
      if (k.min != std::numeric_limits<int64_t>::min() && k.max != std::numeric_limits<int64_t>::max())
        return "int " + std::to_string(k.min) + ".." + std::to_string(k.max);
      if (k.min != std::numeric_limits<int64_t>::min()) return "int >= " + std::to_string(k.min);
      return "int";
    case 2:
      return "float";
    default:
      return "str";
  }
}

// What a knob accepts, for error messages: "an integer >= 0", "a boolean (1, 0, true, false)".
std::string expected_text(const Knob& k, const FieldRef& field) {
  if (!k.choices.empty()) {
    std::string out = "one of ";
    for (size_t i = 0; i < k.choices.size(); ++i) out += (i ? ", " : "") + quoted(k.choices[i]);
    return out;
  }
  switch (field.index()) {
    case 0:
      return "a boolean (1, 0, true, false, on, off, yes, no)";
    case 1:
      if (k.min != std::numeric_limits<int64_t>::min() && k.max != std::numeric_limits<int64_t>::max())
        return "an integer from " + std::to_string(k.min) + " to " + std::to_string(k.max);
      if (k.min != std::numeric_limits<int64_t>::min()) return "an integer >= " + std::to_string(k.min);
      return "an integer";
    case 2:
      return "a finite number";
    default:
      return "a string";
  }
}

// Parses `text` into the knob's field; false (and the field untouched) when it does not fit.
bool parse_into(const Knob& k, const FieldRef& field, std::string_view text) {
  if (auto* b = std::get_if<bool*>(&field)) {
    std::string t = lower(text);
    if (t == "1" || t == "true" || t == "on" || t == "yes") return **b = true, true;
    if (t == "0" || t == "false" || t == "off" || t == "no") return **b = false, true;
    return false;
  }
  if (auto* i = std::get_if<int64_t*>(&field)) {
    int64_t v = 0;
    const char* first = text.data();
    if (!text.empty() && text[0] == '+') ++first;
    auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < k.min || v > k.max) return false;
    **i = v;
    return true;
  }
  if (auto* d = std::get_if<double*>(&field)) {
    std::string t(text);
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) return false;
    **d = v;
    return true;
  }
  std::string* s = std::get<std::string*>(field);
  if (!k.choices.empty() && std::none_of(k.choices.begin(), k.choices.end(), [&](const char* c) { return text == c; }))
    return false;
  *s = std::string(text);
  return true;
}

std::string field_text(const FieldRef& field) {
  if (auto* b = std::get_if<bool*>(&field)) return **b ? "true" : "false";
  if (auto* i = std::get_if<int64_t*>(&field)) return std::to_string(**i);
  if (auto* d = std::get_if<double*>(&field)) return format_double(**d);
  return *std::get<std::string*>(field);
}

const Knob& find_knob(std::string_view name) {
  for (const Knob& k : support::knob_table()) {
    if (name == k.name) return k;
    for (const char* a : k.aliases)
      if (name == a) return k;
    for (const char* e : k.env)
      if (name == e) return k;
  }
  std::string names;
  for (const Knob& k : support::knob_table()) names += std::string(names.empty() ? "" : ", ") + k.name;
  EMBER_FAIL_KIND(ErrorKind::ValueError) << "unknown config knob '" << name << "'; valid names: " << names;
}

// What a bad environment value falls back to, and a choice it may have meant: `(using the
// default, 2)`, `(using the default, ""; did you mean "aot"?)`.
std::string fallback_text(const Knob& k, const FieldRef& default_field, std::string_view value) {
  std::string out = "(using the default, ";
  out += std::holds_alternative<std::string*>(default_field) ? quoted(field_text(default_field))
                                                             : field_text(default_field);
  for (const char* c : k.choices)
    if (*c && lower(value) == lower(c)) out += std::string("; did you mean ") + quoted(c) + "?";
  return out + ")";
}

// Applies the environment to `c`, knob by knob; returns one line per bad value, each
// naming the variable, what it expects, what it got and the default it keeps. TORCH_LOGS
// is left to the log registry.
std::vector<std::string> apply_env(Config& c) {
  std::vector<std::string> problems;
  Config defaults = support::default_config();
  for (const Knob& k : support::knob_table()) {
    if (!k.field) continue;
    for (const char* var : k.env) {
      const char* value = std::getenv(var);
      if (!value || !*value) continue;  // an empty variable counts as unset
      FieldRef field = k.field(c);
      if (!parse_into(k, field, value)) {
        problems.push_back("invalid environment: " + std::string(var) + ": expected " + expected_text(k, field) +
                           ", got " + quoted(value) + " " + fallback_text(k, k.field(defaults), value));
      }
      break;  // the first variable that is set wins (PyTorch's name comes first)
    }
  }
  return problems;
}

// A typo in the environment must not stop a program (a long training run): each bad value
// is said once, at WARNING, and its knob keeps its default.
void report_env(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) EMBER_LOG(dynamo, WARNING) << p;
}

void initialize_config() {
  ConfigState& s = config_state();
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.ready.load(std::memory_order_acquire)) return;
  Config c = support::default_config();
  std::vector<std::string> problems = apply_env(c);
  s.config = std::move(c);
  s.env_problems = problems;
  s.ready.store(true, std::memory_order_release);
  lock.unlock();
  report_env(problems);  // after the config is ready: logging reads it
}

}  // namespace

Config& config() {
  ConfigState& s = config_state();
  if (!s.ready.load(std::memory_order_acquire)) initialize_config();
  return s.config;
}

void config_set(std::string_view name, std::string_view value) {
  const Knob& k = find_knob(name);
  if (!k.field) {
    set_logs(value);
    return;
  }
  FieldRef field = k.field(config());
  EMBER_CHECK_VALUE(parse_into(k, field, value))
      << "config." << k.name << ": expected " << expected_text(k, field) << ", got " << quoted(value);
  if (k.after_set) k.after_set();
}

std::string config_get(std::string_view name) {
  const Knob& k = find_knob(name);
  if (!k.field) return logging::current_spec();
  return field_text(k.field(config()));
}

void config_reload_from_env() {
  Config c = support::default_config();
  std::vector<std::string> problems = apply_env(c);
  ConfigState& s = config_state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.config = std::move(c);
    s.env_problems = problems;
    s.ready.store(true, std::memory_order_release);
  }
  report_env(problems);
  logging::reload_from_env();
}

std::vector<std::string> config_environment_problems() {
  ConfigState& s = config_state();
  config();
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    out = s.env_problems;
  }
  if (std::string logs = logging::environment_problem(); !logs.empty()) out.push_back(std::move(logs));
  return out;
}

std::vector<KnobInfo> config_knobs() {
  Config defaults = support::default_config();
  std::vector<KnobInfo> out;
  for (const Knob& k : support::knob_table()) {
    KnobInfo info;
    info.name = k.name;
    info.aliases.assign(k.aliases.begin(), k.aliases.end());
    info.env.assign(k.env.begin(), k.env.end());
    FieldRef field{};
    if (k.field) field = k.field(defaults);
    info.type = type_text(k, k.field ? &field : nullptr);
    info.default_value = k.default_note ? k.default_note : (k.field ? field_text(field) : "");
    info.default_depends_on_machine = k.default_note != nullptr;
    info.meaning = k.meaning;
    if (!k.aliases.empty()) {
      info.meaning += " (alias:";
      for (const char* a : k.aliases) info.meaning += std::string(" ") + a;
      info.meaning += ")";
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string config_table(bool markdown) {
  const std::vector<std::string> header = {"ENVIRONMENT", "C++ NAME", "TYPE", "DEFAULT", "CURRENT", "MEANING"};
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> described;  // the default says how it is found
  auto shown = [](const std::string& v) { return v.empty() ? std::string("\"\"") : v; };
  for (const KnobInfo& k : config_knobs()) {
    described.push_back(k.default_depends_on_machine);
    std::string env;
    for (const std::string& e : k.env) env += (env.empty() ? "" : ", ") + e;
    rows.push_back(
        {env.empty() ? "-" : env, k.name, k.type, shown(k.default_value), shown(config_get(k.name)), k.meaning});
  }
  std::string out;
  if (markdown) {
    auto line = [&](const std::vector<std::string>& cells) {
      out += "|";
      for (const std::string& c : cells) {
        out += " ";
        for (char ch : c) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
        out += " |";
      }
      out += "\n";
    };
    line({"environment", "C++ name", "type", "default", "meaning"});
    out += "| --- | --- | --- | --- | --- |\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      line({r[0] == "-" ? "(config only)" : "`" + r[0] + "`", "`" + r[1] + "`", r[2],
            described[i] ? r[3] : "`" + r[3] + "`", r[5]});
    }
    return out;
  }
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      out += cells[i];
      if (i + 1 < cells.size()) out.append(width[i] - cells[i].size() + 2, ' ');
    }
    out += "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

}  // namespace ember
