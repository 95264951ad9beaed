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
  ReproArgs ra;
  if (!take_repro_args(args, ra)) {
    std::cerr << "ember bisect: expected FILE [--backend NAME] [--backend-lib LIB]... [--accuracy]; `ember help bisect` says more\n";
    return 2;
  }
  const std::string& path = ra.path;
  debug::Repro r = load_repro(ra);
  if (r.backend.empty()) r.backend = "inductor";
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
