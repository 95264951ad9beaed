// tools/ember/repro_args.cpp — the arguments and the repro loading that `ember minify`,
// `ember repro` and `ember bisect` share (command.h).
#include "command.h"

namespace ember::tool {

std::optional<std::string> take_value(Args& args, std::string_view name, bool& bad) {
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (*it != name) continue;
    if (it + 1 == args.end()) {
      bad = true;
      return std::nullopt;
    }
    std::string value(*(it + 1));
    args.erase(it, it + 2);
    return value;
  }
  return std::nullopt;
}

bool take_repro_args(Args& args, ReproArgs& out) {
  bool bad = false;
  out.backend = take_value(args, "--backend", bad);
  out.accuracy = take_flag(args, "--accuracy");
  if (bad || args.size() != 1 || args[0].starts_with("-")) return false;
  out.path = std::string(args[0]);
  return true;
}

debug::Repro load_repro(const ReproArgs& a) {
  debug::Repro r = debug::read_repro(a.path);
  if (a.backend) r.backend = *a.backend;
  for (const auto& [name, value] : debug::config_to_record()) {
    bool named = false;
    for (const auto& kv : r.config) named = named || kv.first == name;
    if (!named) r.config.emplace_back(name, value);
  }
  if (a.accuracy && !r.accuracy) {
    r.accuracy = true;
    if (r.failure && r.failure->stage != debug::Failure::Stage::Accuracy) r.failure.reset();
  }
  return r;
}

}  // namespace ember::tool
