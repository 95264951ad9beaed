// inductor/cpp_builder.cpp — builds generated C++ into a shared library with the system
// compiler and loads it, through an on-disk cache keyed by a hash of the source, the
// compiler and its flags (and the vec.h the source includes). Writes are atomic (a temp
// name, then rename); a checksum sidecar detects a corrupt or half-written library. The
// prelude every source starts with is compiled once, as a precompiled header, and each
// source's unit includes it instead of carrying its text. A graph's kernels may be split
// into several units compiled side by side (load_or_build_units). The compiler runs under
// posix_spawn and wait4, whose CPU time compile_times() adds to the "C++ compile" phase.
// See Note [inductor] (docs/notes/inductor.md), "The cache", "The precompiled prelude" and
// "Parallel compile".
#include <dlfcn.h>
#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "capture/events.h"
#include "ember/build_info.h"
#include "ember/config.h"
#include "ember/error.h"
#include "inductor/pipeline.h"
#include "support/disk_cache.h"
#include "support/logging.h"

namespace ember::inductor {

using support::hash_text;
using support::read_file;

/// The text of kernels/cpu/vec.h at build time (generated: cmake/embed_text.cmake).
extern const char* const kEmbeddedVecHeader;

namespace {

namespace fs = std::filesystem;

std::atomic<int64_t> g_compiles{0};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

fs::path cache_root() {
  std::string dir = config().inductor.cache_dir;
  if (dir.empty()) dir = (fs::temp_directory_path() / "torchinductor_ember").string();
  return dir;
}

/// The name generated units include the prelude by: the file in codegen_include_dir()
/// and, where the build made one, in the precompiled prelude's directory.
constexpr const char* kPreludeHeader = "ember_inductor_prelude.h";

/// Flags after build_info's that code generation depends on: the optimization level
/// (config inductor.cpp_opt_level; the last -O wins over build_info's), OpenMP,
/// position-independent, Sleef's headers. The build precompiles the prelude with these at
/// the default level (GCC takes a precompiled header made at -O2 under -O3 as well, and
/// parses the header instead where it refuses one, as at -O0); they and the compiler are
/// part of every library's cache key.
std::string codegen_flags() {
  return std::string(build_info::kCxxFlags) + " -O" + std::to_string(config().inductor.cpp_opt_level) +
         " -fopenmp -fPIC -isystem " +
         quote(EMBER_INDUCTOR_SLEEF_INCLUDE_DIR);
}

/// The directory holding the generated code's headers (kernels/cpu/vec.h and the
/// prelude): under the cache root, named by the hash of the texts this library was built
/// with, so code and headers always come from the same build, whatever is (or is not) on
/// disk elsewhere.
fs::path codegen_include_dir() {
  static const std::string text_hash = hash_text(std::string(kEmbeddedVecHeader) + "\n" + cpp_prelude_header());
  return cache_root() / "include" / text_hash;
}

/// Writes `text` to `path` unless an identical copy is there.
void ensure_text_file(const fs::path& path, const char* text) {
  if (fs::exists(path) && read_file(path) == text) return;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  EMBER_CHECK(!ec) << "inductor: cannot create " << path.parent_path().string() << ": " << ec.message();
  support::write_atomically(path, text, "inductor");
}

/// Writes the generated code's headers under codegen_include_dir() unless intact copies
/// are there.
void ensure_codegen_headers() {
  const fs::path dir = codegen_include_dir();
  ensure_text_file(dir / "kernels" / "cpu" / "vec.h", kEmbeddedVecHeader);
  ensure_text_file(dir / kPreludeHeader, cpp_prelude_header());
}

/// Per directory, whether its precompiled prelude is used: checked once per process (its
/// header holds this library's prelude, its .gch is there), and false after a unit failed
/// with it.
std::mutex g_pch_mu;
std::map<std::string, bool>& pch_dir_usable() {
  static std::map<std::string, bool> usable;
  return usable;
}

/// What the compiler reads for `source`: a source that starts with the prelude includes
/// the prelude's header in its place (first, so a precompiled form applies) and a #line
/// directive keeps the compiler's line numbers those of the source the logs and the trace
/// directory show (there, the banner is line 1, the header's text follows, then an empty
/// line and the namespace's opening).
std::string compile_unit(const std::string& source) {
  const std::string& prelude = cpp_prelude();
  if (!source.starts_with(prelude)) return source;
  const std::string_view header = cpp_prelude_header();
  const auto header_lines = std::count(header.begin(), header.end(), '\n');
  return std::string(cpp_prelude_banner()) + "#include \"" + kPreludeHeader + "\"\n#line " +
         std::to_string(header_lines + 3) + "\nnamespace ember::vec {\n" + source.substr(prelude.size());
}

/// Where one source's library lives in the cache, and the commands that build it: with
/// the precompiled prelude (when there is one) and without.
struct CacheEntry {
  fs::path dir, cpp, so, sum;
  std::string cmd, cmd_without_pch;
  std::optional<fs::path> pch_dir;
  fs::path tmp_so;
};

/// The compiler command for `e`'s unit, with `pch_dir` (the precompiled prelude's) ahead
/// of the generated code's headers when given.
std::string compiler_command(const CacheEntry& e, const std::optional<fs::path>& pch_dir) {
  std::string cmd = quote(build_info::kCxxCompiler) + " " + codegen_flags() + " -shared";
  if (pch_dir) cmd += " -Winvalid-pch -I" + quote(pch_dir->string());
  return cmd + " -I" + quote(codegen_include_dir().string()) + " " + quote(e.cpp.string()) + " -o " +
         quote(e.tmp_so.string()) + " " + quote(EMBER_INDUCTOR_SLEEF_LIBRARY) + " 2>&1";
}

CacheEntry cache_entry(const std::string& source) {
  const std::string compiler = build_info::kCxxCompiler;
  const std::string key = hash_text(source + "\n" + compiler + "\n" + codegen_flags() + "\n" + kEmbeddedVecHeader);
  CacheEntry e;
  e.dir = cache_root() / key.substr(0, 2);
  e.cpp = e.dir / ("c" + key + ".cpp");
  e.so = e.dir / ("c" + key + ".so");
  e.sum = e.dir / ("c" + key + ".so.fnv");
  e.tmp_so = support::temp_path_beside(e.so);
  e.cmd_without_pch = compiler_command(e, std::nullopt);
  e.pch_dir = precompiled_prelude_dir();
  e.cmd = e.pch_dir ? compiler_command(e, e.pch_dir) : e.cmd_without_pch;
  return e;
}

/// Whether the cache holds an intact library for `e` (its checksum matches).
bool cached_intact(const CacheEntry& e) {
  if (!fs::exists(e.so)) return false;
  const std::string expected = fs::exists(e.sum) ? read_file(e.sum) : "";
  return !expected.empty() && expected == hash_text(read_file(e.so));
}

/// What one run of the compiler left: its exit status and output (the library is in
/// place, with its checksum, when the status is 0), and what failed with the precompiled
/// prelude before a run without it succeeded.
struct BuildResult {
  int status = 0;
  std::string output;
  std::string pch_failure;
  /// CPU time (user and system) of the compiler processes, every run.
  double cpu_seconds = 0;
};

/// Runs `cmd` (a shell command line; its output on stdout) and waits for it: its wait
/// status, output, and the CPU time of the processes it ran (wait4's, which counts the
/// compiler driver's children too).
BuildResult run_shell(const std::string& cmd) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, "cannot run the C++ compiler: pipe failed", "", 0};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  const char* argv[] = {"sh", "-c", cmd.c_str(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  BuildResult r;
  if (spawned != 0) {
    close(fds[0]);
    return {-1, std::string("cannot run the C++ compiler: ") + std::strerror(spawned), "", 0};
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  rusage usage{};
  while (wait4(pid, &r.status, 0, &usage) < 0 && errno == EINTR) {
  }
  r.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  return r;
}

/// Runs `cmd`, which writes `e`'s library under its temp name.
BuildResult run_command(const CacheEntry& e, const std::string& cmd) {
  BuildResult r = run_shell(cmd);
  if (r.status != 0) {
    std::error_code ec;
    fs::remove(e.tmp_so, ec);
  }
  return r;
}

/// Runs the compiler into a temp name, and moves the library and its checksum into
/// place. A unit that fails with the precompiled prelude, the compiler naming it, is
/// compiled again without it, and the precompiled prelude is not used again in this process: it only saves time,
/// so a stale or damaged one must not cost a compile. Uses nothing but the filesystem and
/// the compiler process, so that it may run on a thread of its own (start_build).
BuildResult run_compiler(const CacheEntry& e) {
  BuildResult r = run_command(e, e.cmd);
  const bool about_pch =
      r.output.find("precompiled header") != std::string::npos || r.output.find(".gch") != std::string::npos;
  if (r.status != 0 && e.pch_dir && about_pch) {
    std::string failure = "command: " + e.cmd + "\n" + r.output;
    const double cpu_before = r.cpu_seconds;
    r = run_command(e, e.cmd_without_pch);
    r.cpu_seconds += cpu_before;
    if (r.status == 0) {
      std::lock_guard lock(g_pch_mu);
      pch_dir_usable()[e.pch_dir->string()] = false;
      r.pch_failure = std::move(failure);
    }
  }
  if (r.status != 0) return r;
  std::error_code ec;
  const std::string checksum = hash_text(read_file(e.tmp_so));
  fs::rename(e.tmp_so, e.so, ec);
  if (ec) return {-1, "cannot move " + e.tmp_so.string() + " into place: " + ec.message(), "", r.cpu_seconds};
  support::write_atomically(e.sum, checksum, "inductor");
  return r;
}

/// Builds started by start_build and not yet claimed by load_or_build, by library path.
/// A static: at exit its destructor waits for builds still running, so none is left
/// half-written.
std::mutex g_pending_mu;
std::map<std::string, std::future<BuildResult>>& pending_builds() {
  static std::map<std::string, std::future<BuildResult>> pending;
  return pending;
}

/// Writes the source, the header it includes and the cache directory for `e`.
void prepare_entry(const CacheEntry& e, const std::string& source) {
  std::error_code ec;
  fs::create_directories(e.dir, ec);
  EMBER_CHECK(!ec) << "inductor: cannot create the cache directory " << e.dir.string() << ": " << ec.message();
  ensure_codegen_headers();
  support::write_atomically(e.cpp, compile_unit(source), "inductor");
}

}  // namespace

/// A build moved elsewhere, another machine or another compiler: none, and each unit
/// parses the prelude's text instead. GCC looks for the .gch beside the header a unit
/// includes first.
std::optional<fs::path> precompiled_prelude_dir() {
  std::string dir = config().inductor.precompiled_prelude_dir;
#ifdef EMBER_INDUCTOR_PCH_DIR
  if (dir.empty()) dir = EMBER_INDUCTOR_PCH_DIR;
#endif
  if (dir.empty() || dir == "off") return std::nullopt;
  std::lock_guard lock(g_pch_mu);
  auto [it, fresh] = pch_dir_usable().try_emplace(dir, false);
  if (fresh) {
    std::error_code ec;
    const fs::path header = fs::path(dir) / kPreludeHeader;
    it->second = fs::exists(header.string() + ".gch", ec) && read_file(header) == cpp_prelude_header();
  }
  if (!it->second) return std::nullopt;
  return fs::path(dir);
}

int64_t compiler_invocations() { return g_compiles.load(); }

void start_build(const std::string& source) {
  const CacheEntry e = cache_entry(source);
  std::lock_guard lock(g_pending_mu);
  if (pending_builds().count(e.so.string()) || cached_intact(e)) return;
  prepare_entry(e, source);
  ++g_compiles;
  pending_builds()[e.so.string()] = std::async(std::launch::async, [e] { return run_compiler(e); });
}

namespace {

/// dlopens `out`'s library and looks up `symbols`: whether it loaded.
bool open_library(LoadedCode& out, const std::vector<std::string>& symbols) {
  out.handle = dlopen(out.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.handle) return false;
  out.handles = {out.handle};
  for (const std::string& name : symbols) out.symbols.push_back(dlsym(out.handle, name.c_str()));
  return true;
}

/// Builds `e`'s library from `source`, or waits for the build start_build began.
BuildResult build(const CacheEntry& e, const std::string& source) {
  capture::PhaseTimer timer("C++ compile");
  std::optional<std::future<BuildResult>> started;
  {
    std::lock_guard lock(g_pending_mu);
    if (auto it = pending_builds().find(e.so.string()); it != pending_builds().end()) {
      started = std::move(it->second);
      pending_builds().erase(it);
    }
  }
  BuildResult result;
  if (started) {
    // start_build began this library ahead (a backward graph, while its forward compiled).
    EMBER_LOG(inductor, INFO) << "waiting for the compiler started ahead: " << e.cmd;
    result = started->get();
  } else {
    prepare_entry(e, source);
    EMBER_LOG(inductor, INFO) << "compiling generated code: " << e.cmd;
    ++g_compiles;
    result = run_compiler(e);
  }
  capture::add_process_cpu_time(result.cpu_seconds);
  return result;
}

}  // namespace

LoadedCode load_or_build(const std::string& source, const std::vector<std::string>& symbols) {
  const CacheEntry e = cache_entry(source);
  LoadedCode out;
  out.so_path = e.so.string();
  bool pending;
  {
    std::lock_guard lock(g_pending_mu);
    pending = pending_builds().count(e.so.string()) > 0;
  }
  if (!pending && fs::exists(e.so)) {
    capture::PhaseTimer timer("load");
    if (cached_intact(e)) {
      if (open_library(out, symbols)) {
        out.cache_hit = true;
        EMBER_LOG(inductor, INFO) << "cache hit: " << e.so.string();
        return out;
      }
      EMBER_LOG(inductor, WARNING) << "cached kernel library " << e.so.string() << " does not load (" << dlerror()
                                   << "); rebuilding it";
    } else {
      EMBER_LOG(inductor, WARNING) << "cached kernel library " << e.so.string()
                                   << " does not match its checksum (corrupt or half-written); rebuilding it";
    }
  }
  const BuildResult result = build(e, source);
  if (!result.pch_failure.empty()) {
    EMBER_LOG(inductor, WARNING) << "a unit failed with the precompiled prelude and compiled without it; the "
                                    "prelude is parsed in every unit from now on. The failure:\n"
                                 << result.pch_failure;
  }
  if (result.status != 0) {
    EMBER_FAIL() << "inductor: the C++ compiler failed on " << e.cpp.string() << " (exit status " << result.status
                 << ")\ncommand: " << e.cmd_without_pch << "\n" << result.output;
  }
  if (!result.output.empty()) EMBER_LOG(inductor, INFO) << "the C++ compiler said:\n" << result.output;
  capture::PhaseTimer timer("load");
  EMBER_CHECK(open_library(out, symbols)) << "inductor: cannot load " << e.so.string() << ": " << dlerror();
  return out;
}

int64_t automatic_compile_units(int64_t cores) {
  return cores < kMinCoresToSplit ? 1 : std::min<int64_t>(cores, 32);
}

int64_t compile_units_allowed() {
  if (config().inductor.compile_threads > 0) return config().inductor.compile_threads;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int64_t cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return automatic_compile_units(cores);
}

namespace {

/// One translation unit of load_or_build_units: its source and its kernels' symbols.
struct Unit {
  std::string source;
  std::vector<std::string> symbols;
};

/// `parts` as units of whole kernels, in order, balanced by their text's length: as many
/// as compile_threads allows and kMinUnitBytes leaves.
std::vector<Unit> split_units(const CppParts& parts, const std::vector<std::string>& symbols) {
  EMBER_INTERNAL_ASSERT(symbols.empty() || symbols.size() == parts.kernels.size())
      << "load_or_build_units: " << symbols.size() << " symbols for " << parts.kernels.size() << " kernels";
  size_t bytes = 0;
  for (const std::string& k : parts.kernels) bytes += k.size();
  const int64_t threads = compile_units_allowed();
  const size_t n = std::max<size_t>(
      1, std::min({static_cast<size_t>(std::max<int64_t>(threads, 1)), parts.kernels.size(), bytes / kMinUnitBytes}));
  std::vector<Unit> units(n);
  size_t done = 0, u = 0;
  for (size_t k = 0; k < parts.kernels.size(); ++k) {
    // Unit u takes kernels while its share (u + 1) / n of the text is not reached.
    if (u + 1 < n && done * n >= (u + 1) * bytes && !units[u].source.empty()) ++u;
    units[u].source += parts.kernels[k];
    if (!symbols.empty()) units[u].symbols.push_back(symbols[k]);
    done += parts.kernels[k].size();
  }
  std::erase_if(units, [](const Unit& unit) { return unit.source.empty(); });  // after one long kernel
  for (Unit& unit : units) unit.source = parts.head + unit.source + parts.tail;
  if (units.empty()) units.push_back({parts.head + parts.tail, {}});
  return units;
}

}  // namespace

LoadedCode load_or_build_units(const CppParts& parts, const std::vector<std::string>& symbols) {
  std::vector<Unit> units = split_units(parts, symbols);
  if (units.size() == 1) return load_or_build(units[0].source, symbols);
  // The others' compilers run while this thread compiles the first.
  for (size_t u = 1; u < units.size(); ++u) start_build(units[u].source);
  LoadedCode out;
  out.cache_hit = true;
  for (const Unit& unit : units) {
    LoadedCode code = load_or_build(unit.source, unit.symbols);
    if (out.so_path.empty()) {
      out.so_path = code.so_path;
      out.handle = code.handle;
    }
    out.handles.push_back(code.handle);
    out.cache_hit = out.cache_hit && code.cache_hit;
    out.symbols.insert(out.symbols.end(), code.symbols.begin(), code.symbols.end());
  }
  return out;
}

void start_build_units(const CppParts& parts) {
  for (const Unit& unit : split_units(parts, {})) start_build(unit.source);
}

}  // namespace ember::inductor
