// tools/ember/minify_command.cpp — `ember minify FILE`: the minifier on a launcher, a repro
// or any saved graph text (Note [minifier]). Ctrl-C stops it, keeping the best repro so far
// (it is rewritten after every step that shrank the graph).
#include <csignal>
#include <filesystem>
#include <iostream>

#include "command.h"
#include "debug/repro.h"
#include "ember/compile.h"
#include "ember/config.h"

namespace ember::tool {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

/// Takes `--name VALUE` from `args`; nullopt when absent. Sets `bad` when the value is missing.
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

}  // namespace

int run_minify(const Args& given) {
  Args args = given;
  bool bad = false;
  const std::optional<std::string> backend = take_value(args, "--backend", bad);
  const std::optional<std::string> out = take_value(args, "--out", bad);
  const std::optional<std::string> max_compiles = take_value(args, "--max-compiles", bad);
  const bool accuracy = take_flag(args, "--accuracy");
  const bool no_shrink = take_flag(args, "--no-shrink");
  if (bad || args.size() != 1 || args[0].starts_with("-")) {
    std::cerr << "ember minify: expected FILE [--backend NAME] [--accuracy] [--out DIR] [--max-compiles N] "
                 "[--no-shrink]; `ember help minify` says more\n";
    return 2;
  }
  const std::string path(args[0]);
  register_builtin_backends();
  debug::Repro r = debug::read_repro(path);
  if (backend) r.backend = *backend;
  // Knobs set in this process's environment (EMBER_INJECT_RELU_BUG, …) go into the repro too.
  for (const auto& [name, value] : debug::config_to_record()) {
    bool named = false;
    for (const auto& kv : r.config) named = named || kv.first == name;
    if (!named) r.config.emplace_back(name, value);
  }
  if (accuracy && !r.accuracy) {
    r.accuracy = true;
    if (r.failure && r.failure->stage != debug::Failure::Stage::Accuracy) r.failure.reset();
  }
  if (r.backend.empty()) {
    std::cerr << "ember minify: " << path << " names no backend; pass --backend NAME\n";
    return 2;
  }
  debug::MinifyOptions options;
  if (max_compiles) options.max_compiles = std::stoull(*max_compiles);
  options.shrink_inputs = !no_shrink;
  options.interrupt = &g_interrupted;
  std::signal(SIGINT, on_interrupt);
  const std::string out_dir =
      out ? *out : (std::filesystem::path(path).parent_path() / "minified").lexically_normal().string();
  std::cout << "ember minify: " << path << ": graph " << r.graph->name() << " (" << r.graph->op_count()
            << " ops), backend " << r.backend << ", inputs " << r.inputs_source << "; writing the best repro to "
            << out_dir << "/repro.txt" << std::endl;
  const debug::MinifyResult m = debug::minify_repro(r, lookup_backend(r.backend), out_dir, options);
  std::cout << "ember minify: " << (m.interrupted ? "interrupted; best so far: " : "") << m.graph->op_count() << " of "
            << m.original_calls << " ops left after " << m.compiles << " compiles\n"
            << "  repro:   " << out_dir << "/repro.txt\n"
            << "  inputs:  " << out_dir << "/repro.safetensors\n"
            << "  program: " << out_dir << "/repro.cpp\n"
            << "Run it again with `ember repro " << out_dir << "/repro.txt`.\n";
  return 0;
}

}  // namespace ember::tool
