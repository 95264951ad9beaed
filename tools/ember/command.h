// tools/ember/command.h — a subcommand of the `ember` tool: one row of main.cpp's table.
// To add one (minify, repro, ...): write `int run_<name>(const Args&)` in <name>_command.cpp,
// add it to tools/CMakeLists.txt, and add a row to kCommands in main.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::tool {

/// The words after the subcommand's name.
using Args = std::vector<std::string_view>;

struct Command {
  const char* name;
  const char* summary;           // one line, for `ember help`
  const char* usage;             // shown by `ember help <name>` and `ember <name> --help`
  int (*run)(const Args& args);  // returns the exit status
};

/// True (and the flag removed) when `args` holds `flag`.
bool take_flag(Args& args, std::string_view flag);

/// Prints a command's usage to stdout.
void print_usage(const Command& command);

// Subcommands.
int run_bisect(const Args& args);
int run_config(const Args& args);
int run_minify(const Args& args);
int run_repro(const Args& args);

}  // namespace ember::tool
