// inductor/cpp_builder.cpp — builds generated C++ into a shared library with the system
// compiler and loads it, through an on-disk cache keyed by a hash of the source, the
// compiler and its flags (and the vec.h the source includes). Writes are atomic (a temp
// name, then rename); a checksum sidecar detects a corrupt or half-written library.
// See Note [inductor] (docs/notes/inductor.md), "The cache".
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

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

/// The directory holding kernels/cpu/vec.h for the generated code: under the cache root,
/// named by the hash of the text this library was built with, so code and header always
/// come from the same build, whatever is (or is not) on disk elsewhere.
fs::path codegen_include_dir() {
  static const std::string text_hash = hash_text(kEmbeddedVecHeader);
  return cache_root() / "include" / text_hash;
}

/// Writes the embedded vec.h under codegen_include_dir() unless an intact copy is there.
void ensure_codegen_header() {
  const fs::path header = codegen_include_dir() / "kernels" / "cpu" / "vec.h";
  if (fs::exists(header) && read_file(header) == kEmbeddedVecHeader) return;
  std::error_code ec;
  fs::create_directories(header.parent_path(), ec);
  EMBER_CHECK(!ec) << "inductor: cannot create " << header.parent_path().string() << ": " << ec.message();
  support::write_atomically(header, kEmbeddedVecHeader, "inductor");
}

/// Flags after build_info's: optimized, OpenMP, a loadable library.
std::string compile_flags() {
  return std::string(build_info::kCxxFlags) + " -O3 -fopenmp -shared -fPIC -I" +
         quote(codegen_include_dir().string()) + " -isystem " + quote(EMBER_INDUCTOR_SLEEF_INCLUDE_DIR);
}

/// Where one source's library lives in the cache, and the command that builds it.
struct CacheEntry {
  fs::path dir, cpp, so, sum;
  std::string cmd;
  fs::path tmp_so;
};

CacheEntry cache_entry(const std::string& source) {
  const std::string compiler = build_info::kCxxCompiler;
  const std::string flags = compile_flags();
  const std::string key = hash_text(source + "\n" + compiler + "\n" + flags + "\n" + kEmbeddedVecHeader);
  CacheEntry e;
  e.dir = cache_root() / key.substr(0, 2);
  e.cpp = e.dir / ("c" + key + ".cpp");
  e.so = e.dir / ("c" + key + ".so");
  e.sum = e.dir / ("c" + key + ".so.fnv");
  e.tmp_so = support::temp_path_beside(e.so);
  e.cmd = quote(compiler) + " " + flags + " " + quote(e.cpp.string()) + " -o " + quote(e.tmp_so.string()) + " " +
          quote(EMBER_INDUCTOR_SLEEF_LIBRARY) + " 2>&1";
  return e;
}

/// Whether the cache holds an intact library for `e` (its checksum matches).
bool cached_intact(const CacheEntry& e) {
  if (!fs::exists(e.so)) return false;
  const std::string expected = fs::exists(e.sum) ? read_file(e.sum) : "";
  return !expected.empty() && expected == hash_text(read_file(e.so));
}

/// What one run of the compiler left: its exit status and output (the library is in
/// place, with its checksum, when the status is 0).
struct BuildResult {
  int status = 0;
  std::string output;
};

/// Writes the source, runs the compiler into a temp name, and moves the library and its
/// checksum into place. Uses nothing but the filesystem and the compiler process, so that
/// it may run on a thread of its own (start_build).
BuildResult run_compiler(const CacheEntry& e) {
  BuildResult r;
  FILE* pipe = popen(e.cmd.c_str(), "r");
  if (!pipe) return {-1, "cannot run the C++ compiler"};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  r.status = pclose(pipe);
  std::error_code ec;
  if (r.status != 0) {
    fs::remove(e.tmp_so, ec);
    return r;
  }
  const std::string checksum = hash_text(read_file(e.tmp_so));
  fs::rename(e.tmp_so, e.so, ec);
  if (ec) return {-1, "cannot move " + e.tmp_so.string() + " into place: " + ec.message()};
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
  support::write_atomically(e.cpp, source, "inductor");
  ensure_codegen_header();
}

}  // namespace

int64_t compiler_invocations() { return g_compiles.load(); }

void start_build(const std::string& source) {
  const CacheEntry e = cache_entry(source);
  std::lock_guard lock(g_pending_mu);
  if (pending_builds().count(e.so.string()) || cached_intact(e)) return;
  prepare_entry(e, source);
  ++g_compiles;
  pending_builds()[e.so.string()] = std::async(std::launch::async, [e] { return run_compiler(e); });
}

LoadedCode load_or_build(const std::string& source) {
  const CacheEntry e = cache_entry(source);
  LoadedCode out;
  out.so_path = e.so.string();
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
    if (fs::exists(e.so)) {
      if (cached_intact(e)) {
        out.handle = dlopen(e.so.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (out.handle) {
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
    prepare_entry(e, source);
    EMBER_LOG(inductor, INFO) << "compiling generated code: " << e.cmd;
    ++g_compiles;
    result = run_compiler(e);
  }
  if (result.status != 0) {
    EMBER_FAIL() << "inductor: the C++ compiler failed on " << e.cpp.string() << " (exit status " << result.status
                 << ")\ncommand: " << e.cmd << "\n" << result.output;
  }
  out.handle = dlopen(e.so.c_str(), RTLD_NOW | RTLD_LOCAL);
  EMBER_CHECK(out.handle) << "inductor: cannot load " << e.so.string() << ": " << dlerror();
  return out;
}

}  // namespace ember::inductor
