// tools/ember/bisect_command.cpp — `ember bisect FILE`: the compiler bisector on a launcher,
// a repro or any saved graph text (Note [minifier], "The compiler bisector"): the first
// backend that fails, then the inductor subsystem and the decision that brings the failure in.
#include <iostream>

#include "command.h"
#include "debug/bisect.h"
#include "ember/compile.h"

namespace ember::tool {

int run_bisect(const Args& given) {
  Args args = given;
  std::optional<std::string> backend;
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (*it != "--backend") continue;
    if (it + 1 == args.end()) {
      std::cerr << "ember bisect: --backend needs a NAME\n";
      return 2;
    }
    backend = std::string(*(it + 1));
    args.erase(it, it + 2);
    break;
  }
  const bool accuracy = take_flag(args, "--accuracy");
  if (args.size() != 1 || args[0].starts_with("-")) {
    std::cerr << "ember bisect: expected FILE [--backend NAME] [--accuracy]; `ember help bisect` says more\n";
    return 2;
  }
  const std::string path(args[0]);
  register_builtin_backends();
  debug::Repro r = debug::read_repro(path);
  if (backend) r.backend = *backend;
  if (r.backend.empty()) r.backend = "inductor";
  // Knobs set in this process's environment (EMBER_INJECT_RELU_BUG, …) count too.
  for (const auto& [name, value] : debug::config_to_record()) {
    bool named = false;
    for (const auto& kv : r.config) named = named || kv.first == name;
    if (!named) r.config.emplace_back(name, value);
  }
  if (accuracy && !r.accuracy) {
    r.accuracy = true;
    if (r.failure && r.failure->stage != debug::Failure::Stage::Accuracy) r.failure.reset();
  }
  debug::ScopedConfig scoped(r.config);
  debug::BisectOptions options;
  options.backend = r.backend;
  options.accuracy = r.accuracy;
  options.tolerance = r.tolerance;
  options.target = r.failure;
  options.progress = [](const std::string& line) { std::cout << "ember bisect: " << line << std::endl; };
  std::cout << "ember bisect: " << path << ": graph " << r.graph->name() << " (" << r.graph->op_count()
            << " ops), backend " << r.backend << ", inputs " << r.inputs_source << std::endl;
  const debug::BisectResult result = debug::bisect(*r.graph, r.inputs, options);
  std::cout << (result.failed ? "FOUND: " : "") << result.summary() << "\n";
  return result.failed ? 1 : 0;
}

}  // namespace ember::tool
