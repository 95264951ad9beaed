// tools/ember/repro_command.cpp — `ember repro FILE`: runs a repro or launcher once with its
// backend (or another) and says whether the failure occurs (Note [minifier]).
#include <iostream>

#include "command.h"
#include "debug/repro.h"
#include "ember/compile.h"

namespace ember::tool {

int run_repro(const Args& given) {
  Args args = given;
  ReproArgs ra;
  if (!take_repro_args(args, ra)) {
    std::cerr << "ember repro: expected FILE [--backend NAME] [--backend-lib LIB]... [--accuracy]\n";
    return 2;
  }
  const std::string& path = ra.path;
  debug::Repro r = load_repro(ra);
  if (r.backend.empty()) {
    std::cerr << "ember repro: " << path << " names no backend; pass --backend NAME\n";
    return 2;
  }
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
