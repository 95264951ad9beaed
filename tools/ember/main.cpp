// tools/ember/main.cpp — the `ember` command-line tool: a table of subcommands, each a
// function in its own file (command.h). Errors are reported as `ember <cmd>: <message>`
// with exit status 1; usage mistakes, and a bad environment variable, exit with 2.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>

#include "command.h"
#include "ember/config.h"
#include "ember/error.h"
#include "ember/logging.h"

namespace ember::tool {
namespace {

const Command kCommands[] = {
    {"bisect", "find the first backend, inductor subsystem and decision where a graph's failure appears",
     "usage: ember bisect FILE [--backend NAME] [--backend-lib LIB]... [--accuracy]\n"
     "  FILE            a minifier launcher, a repro, or a graph's text\n"
     "  --backend NAME  the backend whose failure to chase (default: the one FILE names, else inductor);\n"
     "                  the backends before it in eager, aot_eager, inductor are tried first\n"
     "  --backend-lib LIB\n"
     "                  load a shared library that registers backends (ember::register_backend) first;\n"
     "                  repeatable; a FILE compiled with an unnamed custom backend uses the one it registers\n"
     "  --accuracy      chase an accuracy failure (compiled vs eager against a float64 run)\n"
     "Then, in the inductor: graph passes, fusions and lowerings, each disabled whole; the first whose\n"
     "disabling removes the failure is bisected by count (inductor.bisect_max_*) to the decision that\n"
     "brings it in. One line per run; the last line names the culprit.\n"
     "Exit status: 0 when nothing fails, 1 when a failure was located (or FILE is bad), 2 on usage errors.\n",
     run_bisect},
    {"config", "list every knob: environment name, C++ name, type, default, current value, meaning",
     "usage: ember config [--markdown] [NAME]\n"
     "  (no argument)  the knobs as an aligned table\n"
     "  --markdown     the same as a Markdown table (for docs/diagnostics.md)\n"
     "  NAME           the current value of one knob (C++ name, alias or environment name)\n",
     run_config},
    {"inspect", "show what Ember makes of a program exported by PyTorch (.pt2): ops it lacks, signature, graph",
     "usage: ember inspect MODEL.pt2\n"
     "  MODEL.pt2  an archive written by torch.export.save (PyTorch 2.11)\n"
     "Prints the targets the program calls and those Ember lacks (then exits 1), the schema and PyTorch\n"
     "versions, the signature (parameters, buffers, constants, user inputs and outputs, buffer mutations)\n"
     "and the graph as Ember's graph text. Exit status: 0, or 1 when the program cannot be imported.\n",
     run_inspect},
    {"minify", "shrink a failing graph (a minifier launcher, a repro or a graph text file) to the smallest that fails",
     "usage: ember minify FILE [--backend NAME] [--backend-lib LIB]... [--accuracy] [--out DIR] [--max-compiles N]\n"
     "                   [--no-shrink]\n"
     "  FILE              a minifier launcher (TORCHDYNAMO_REPRO_LEVEL=2..4), a repro, or a graph's text\n"
     "  --backend NAME    the backend to chase the failure with (default: the one FILE names)\n"
     "  --backend-lib LIB load a shared library that registers backends (ember::register_backend) first;\n"
     "                    repeatable; a FILE compiled with an unnamed custom backend uses the one it registers\n"
     "  --accuracy        chase an accuracy failure (compiled vs eager against a float64 run)\n"
     "  --out DIR         where the minified repro goes (default: DIR = FILE's directory/minified)\n"
     "  --max-compiles N  stop after N compiles, keeping the best repro so far (so does Ctrl-C)\n"
     "  --no-shrink       do not try smaller input sizes\n"
     "Writes DIR/repro.txt, DIR/repro.safetensors and DIR/repro.cpp after every step that shrank the graph.\n",
     run_minify},
    {"repro", "run a repro or minifier launcher once and say whether its failure occurs",
     "usage: ember repro FILE [--backend NAME] [--backend-lib LIB]... [--accuracy]\n"
     "  FILE            a repro or launcher (or a graph's text, with --backend)\n"
     "  --backend NAME  run it with this backend instead of the one FILE names\n"
     "  --backend-lib LIB\n"
     "                  load a shared library that registers backends (ember::register_backend) first;\n"
     "                  repeatable; a FILE compiled with an unnamed custom backend uses the one it registers\n"
     "  --accuracy      also compare with eager against a float64 run\n"
     "Exit status: 0 when it compiles and runs (and matches), 1 when it fails (or FILE is bad), 2 on usage errors.\n",
     run_repro},
    {"replay", "re-run the frame an execution record holds, in the program that wrote it, and say what it raises",
     "usage: ember replay FILE\n"
     "  FILE  an execution record, <base_dir>/replay/<fn>_pid<P>_<k>.record.safetensors, written when the\n"
     "        capture of a frame failed with TORCH_COMPILE_REPLAY_RECORD=1\n"
     "Runs the program that wrote FILE again (same path, arguments and working directory) with\n"
     "EMBER_REPLAY=FILE: its first call of the recorded function re-runs the recorded frame with the\n"
     "recorded inputs and knobs instead, prints what it raises and whether that is the recorded error,\n"
     "and ends the program. Module arguments come from that call (a record cannot hold them).\n"
     "Exit status: 1 when the frame raises an error (the bug is still there), 0 when it runs without\n"
     "one (fixed), 2 when FILE is missing or not a record, or the program cannot run or ends without\n"
     "calling the function.\n",
     run_replay},
    {"run-exported", "run a program exported by PyTorch (.pt2) on inputs from a safetensors file",
     "usage: ember run-exported MODEL.pt2 --inputs IN.safetensors [--backend NAME] [--out OUT.safetensors]\n"
     "                          [--check EXPECTED.safetensors]\n"
     "  MODEL.pt2       an archive written by torch.export.save (PyTorch 2.11)\n"
     "  --inputs IN     the user inputs, each under its name in the program's signature (or input.<name>)\n"
     "  --backend NAME  compile with this backend (inductor, aot_eager, eager, ...); default: the interpreter\n"
     "  --out OUT       write the outputs as output.<k> and the buffers the program updates as state.<name>\n"
     "  --check EXP     compare with EXP's output.<k> and state.<name> by torch.testing.assert_close's rule\n"
     "                  (default tolerances of each dtype); prints each one's max abs error and PASS/FAIL\n"
     "Prints each output's dtype and sizes. Exit status: 0, or 1 when a check fails or the program cannot\n"
     "run on the inputs; 2 on usage errors.\n",
     run_run_exported},
};

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

void print_help() {
  std::cout << "usage: ember <command> [args]\n\ncommands:\n";
  size_t width = 0;
  for (const Command& c : kCommands) width = std::max(width, std::string_view(c.name).size());
  for (const Command& c : kCommands)
    std::cout << "  " << c.name << std::string(width + 2 - std::string_view(c.name).size(), ' ') << c.summary << "\n";
  std::cout << "\n`ember help <command>` shows a command's arguments.\n";
}

}  // namespace

bool take_flag(Args& args, std::string_view flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end()) return false;
  args.erase(it);
  return true;
}

void print_usage(const Command& command) { std::cout << command.usage; }

}  // namespace ember::tool

int main(int argc, char** argv) {
  using namespace ember::tool;
  Args words(argv + 1, argv + argc);
  if (words.empty() || words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
    if (words.size() >= 2 && words[0] == "help") {
      const Command* c = find_command(words[1]);
      if (!c) {
        std::cerr << "ember: unknown command '" << words[1] << "'\n";
        return 2;
      }
      print_usage(*c);
      return 0;
    }
    print_help();
    return words.empty() ? 2 : 0;
  }
  const Command* command = find_command(words[0]);
  if (!command) {
    std::cerr << "ember: unknown command '" << words[0] << "'; `ember help` lists the commands\n";
    return 2;
  }
  Args args(words.begin() + 1, words.end());
  if (take_flag(args, "--help") || take_flag(args, "-h")) {
    print_usage(*command);
    return 0;
  }
  // A bad environment variable: `ember config` (where one looks to find it) warns and
  // shows the defaults in force; every other command stops before doing anything.
  const bool was_on = ember::logging::set_stderr_enabled(false);  // said below, once
  const std::vector<std::string> problems = ember::config_environment_problems();
  ember::logging::set_stderr_enabled(was_on);
  if (!problems.empty()) {
    const bool warn_only = std::string_view(command->name) == "config";
    for (const std::string& p : problems) std::cerr << (warn_only ? "warning: " : "ember: ") << p << "\n";
    if (!warn_only) return 2;
  }
  try {
    return command->run(args);
  } catch (const ember::Error& e) {
    std::cerr << "ember " << command->name << ": " << ember::error_kind_name(e.kind()) << ": " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "ember " << command->name << ": " << e.what() << "\n";
  }
  return 1;
}
