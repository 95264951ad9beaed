// tools/ember/minify_command.cpp — `ember minify FILE`: the minifier on a launcher, a repro
// or any saved graph text (Note [minifier]). Ctrl-C stops it, keeping the best repro so far
// (it is rewritten after every step that shrank the graph).
#include <charconv>
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

}  // namespace

int run_minify(const Args& given) {
  Args args = given;
  bool bad = false;
  const std::optional<std::string> out = take_value(args, "--out", bad);
  const std::optional<std::string> max_compiles = take_value(args, "--max-compiles", bad);
  const bool no_shrink = take_flag(args, "--no-shrink");
  ReproArgs ra;
  if (bad || !take_repro_args(args, ra)) {
    std::cerr << "ember minify: expected FILE [--backend NAME] [--backend-lib LIB]... [--accuracy] [--out DIR] [--max-compiles N] "
                 "[--no-shrink]; `ember help minify` says more\n";
    return 2;
  }
  const std::string& path = ra.path;
  debug::Repro r = load_repro(ra);
  if (r.backend.empty()) {
    std::cerr << "ember minify: " << path << " names no backend; pass --backend NAME\n";
    return 2;
  }
  debug::MinifyOptions options;
  if (max_compiles) {
    auto [end, ec] =
        std::from_chars(max_compiles->data(), max_compiles->data() + max_compiles->size(), options.max_compiles);
    if (max_compiles->empty() || ec != std::errc() || end != max_compiles->data() + max_compiles->size()) {
      std::cerr << "ember minify: expected --max-compiles N (a count of compiles, 0 for no limit), got '"
                << *max_compiles << "'\n";
      return 2;
    }
  }
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
