// tools/ember/repro_args.cpp — the arguments and the repro loading that `ember minify`,
// `ember repro` and `ember bisect` share (command.h).
#include <dlfcn.h>

#include <algorithm>

#include "command.h"
#include "ember/compile.h"
#include "ember/error.h"

namespace ember::tool {
namespace {

/// Loads each --backend-lib library into this process (its static initializers register
/// its backends with ember::register_backend) and returns the names it added.
std::vector<std::string> load_backend_libraries(const std::vector<std::string>& paths) {
  std::vector<std::string> before = list_backends();
  for (const std::string& path : paths) {
    // RTLD_GLOBAL: a library that registers several backends from several files, or
    // that another --backend-lib uses, resolves against the ones loaded before it.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    EMBER_CHECK(handle) << "--backend-lib: cannot load " << path << ": " << dlerror()
                        << " (build it with -shared -fPIC against Ember's headers, without linking Ember: "
                           "it uses the ember tool's own copy)";
  }
  std::vector<std::string> added;
  for (const std::string& name : list_backends())
    if (std::find(before.begin(), before.end(), name) == before.end()) added.push_back(name);
  return added;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

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

bool take_repro_args(Args& args, ReproArgs& out) {
  bool bad = false;
  out.backend = take_value(args, "--backend", bad);
  while (std::optional<std::string> lib = take_value(args, "--backend-lib", bad)) out.backend_libs.push_back(*lib);
  out.accuracy = take_flag(args, "--accuracy");
  if (bad || args.size() != 1 || args[0].starts_with("-")) return false;
  out.path = std::string(args[0]);
  return true;
}

debug::Repro load_repro(const ReproArgs& a) {
  register_builtin_backends();
  const std::vector<std::string> added = load_backend_libraries(a.backend_libs);
  debug::Repro r = debug::read_repro(a.path);
  if (a.backend) {
    r.backend = *a.backend;
  } else if (r.backend == "custom") {
    // Compiled with CompileOptions::custom_backend, which has no name: the backend
    // libraries must provide exactly one.
    EMBER_CHECK(added.size() == 1) << a.path << " was compiled with a custom backend (CompileOptions::custom_backend); "
                                   << "expected --backend-lib LIB registering one backend, or --backend NAME, got "
                                   << (a.backend_libs.empty() ? std::string("no --backend-lib")
                                                              : "libraries registering: " + joined(added));
    r.backend = added.front();
  }
  for (const auto& [name, value] : debug::config_to_record()) {
    bool named = false;
    for (const auto& kv : r.config) named = named || kv.first == name;
    if (!named) r.config.emplace_back(name, value);
  }
  if (a.accuracy && !r.accuracy) {
    r.accuracy = true;
    if (r.failure && r.failure->stage != debug::Failure::Stage::Accuracy) r.failure.reset();
  }
  return r;
}

}  // namespace ember::tool
