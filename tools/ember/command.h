// tools/ember/command.h — a subcommand of the `ember` tool: one row of main.cpp's table.
// To add one (minify, repro, ...): write `int run_<name>(const Args&)` in <name>_command.cpp,
// add it to tools/CMakeLists.txt, and add a row to kCommands in main.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "debug/repro.h"

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

/// Takes `NAME VALUE` from `args`: the value, or nullopt when NAME is absent; sets `bad`
/// when NAME comes without a value.
std::optional<std::string> take_value(Args& args, std::string_view name, bool& bad);

/// What minify, repro and bisect share: FILE [--backend NAME] [--backend-lib LIB]... [--accuracy].
struct ReproArgs {
  std::string path;
  std::optional<std::string> backend;
  std::vector<std::string> backend_libs;  // shared libraries that register backends
  bool accuracy = false;
};

/// Takes --backend NAME, every --backend-lib LIB and --accuracy from `args` (a command's own flags taken before),
/// then FILE, which must be all that is left; false when the words do not fit.
bool take_repro_args(Args& args, ReproArgs& out);

/// Loads the --backend-lib libraries, then reads the repro, launcher or graph text at
/// a.path (ember::Error naming the file and line when it is malformed), with --backend
/// applied (a file compiled with an unnamed custom backend takes the one backend the
/// libraries registered), --accuracy (chasing an accuracy
/// failure: a recorded failure of another kind is dropped) and the knobs set in this
/// process's environment (EMBER_INJECT_RELU_BUG, ...) added where the file names none.
debug::Repro load_repro(const ReproArgs& a);

/// Prints a command's usage to stdout.
void print_usage(const Command& command);

// Subcommands.
int run_bisect(const Args& args);
int run_config(const Args& args);
int run_inspect(const Args& args);
int run_minify(const Args& args);
int run_replay(const Args& args);
int run_run_exported(const Args& args);
int run_repro(const Args& args);

}  // namespace ember::tool
