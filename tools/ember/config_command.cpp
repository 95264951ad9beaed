// tools/ember/config_command.cpp — `ember config`: the knob registry as a table (or one
// knob's value). Bad environment values are warned about before the table (main.cpp),
// which then shows the defaults those knobs fell back to.
#include <iostream>

#include "command.h"
#include "ember/config.h"
#include "ember/error.h"
#include "ember/logging.h"

namespace ember::tool {

int run_config(const Args& given) {
  Args args = given;
  bool markdown = take_flag(args, "--markdown");
  if (args.size() > 1 || (markdown && !args.empty()) || (!args.empty() && args[0].starts_with("-"))) {
    std::cerr << "ember config: unexpected arguments\n";
    return 2;
  }
  // Bad environment values: main() has said each as a warning; the table shows the
  // defaults those knobs kept.
  if (args.size() == 1) {
    std::cout << config_get(args[0]) << "\n";
    return 0;
  }
  std::cout << config_table(markdown);
  if (!markdown)
    std::cout << "\nSet a knob with its environment variable, or in C++: ember::config().<C++ name> = value, or "
                 "ember::config_set(\"<C++ name>\", \"value\").\n";
  return 0;
}

}  // namespace ember::tool
