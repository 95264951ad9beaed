// tools/ember/repro_command.cpp — `ember repro FILE`: runs a repro or launcher once with its
// backend (or another) and says whether the failure occurs (Note [minifier]).
#include <iostream>

#include "command.h"
#include "debug/repro.h"
#include "ember/compile.h"

namespace ember::tool {

int run_repro(const Args& given) {
  Args args = given;
  std::optional<std::string> backend;
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (*it != "--backend") continue;
    if (it + 1 == args.end()) {
      std::cerr << "ember repro: --backend needs a NAME\n";
      return 2;
    }
    backend = std::string(*(it + 1));
    args.erase(it, it + 2);
    break;
  }
  const bool accuracy = take_flag(args, "--accuracy");
  if (args.size() != 1 || args[0].starts_with("-")) {
    std::cerr << "ember repro: expected FILE [--backend NAME] [--accuracy]\n";
    return 2;
  }
  const std::string path(args[0]);
  register_builtin_backends();
  debug::Repro r = debug::read_repro(path);
  if (backend) r.backend = *backend;
  if (r.backend.empty()) {
    std::cerr << "ember repro: " << path << " names no backend; pass --backend NAME\n";
    return 2;
  }
  r.accuracy = r.accuracy || accuracy;
  debug::ScopedConfig scoped(r.config);
  debug::Checker check{lookup_backend(r.backend), r.accuracy, r.tolerance};
  const std::optional<debug::Failure> f = check(*r.graph, r.inputs);
  std::cout << "ember repro: " << path << ": graph " << r.graph->name() << " (" << r.graph->op_count()
            << " ops), backend " << r.backend << ", inputs " << r.inputs_source << "\n";
  if (!f) {
    std::cout << "no failure: the graph compiles and runs" << (r.accuracy ? " and matches eager" : "")
              << (r.failure ? " (recorded: " + r.failure->str() + ")" : std::string()) << "\n";
    return 0;
  }
  std::cout << "FAILS: " << f->str() << "\n";
  if (r.failure)
    std::cout << (f->same_as(*r.failure) ? "the same failure as recorded\n"
                                         : "a different failure from the recorded one: " + r.failure->str() + "\n");
  return 1;
}

}  // namespace ember::tool
