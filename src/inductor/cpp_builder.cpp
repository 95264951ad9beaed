// inductor/cpp_builder.cpp — builds generated C++ into a shared library with the system
// compiler and loads it, through an on-disk cache keyed by a hash of the source, the
// compiler and its flags (and the vec.h the source includes). Writes are atomic (a temp
// name, then rename); a checksum sidecar detects a corrupt or half-written library.
// See Note [inductor] (docs/notes/inductor.md), "The cache".
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
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

}  // namespace

int64_t compiler_invocations() { return g_compiles.load(); }

LoadedCode load_or_build(const std::string& source) {
  const std::string compiler = build_info::kCxxCompiler;
  const std::string flags = compile_flags();
  const std::string key = hash_text(source + "\n" + compiler + "\n" + flags + "\n" + kEmbeddedVecHeader);
  const fs::path dir = cache_root() / key.substr(0, 2);
  const fs::path cpp = dir / ("c" + key + ".cpp");
  const fs::path so = dir / ("c" + key + ".so");
  const fs::path sum = dir / ("c" + key + ".so.fnv");
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec) << "inductor: cannot create the cache directory " << dir.string() << ": " << ec.message();

  LoadedCode out;
  out.so_path = so.string();
  if (fs::exists(so)) {
    const std::string expected = fs::exists(sum) ? read_file(sum) : "";
    if (!expected.empty() && expected == hash_text(read_file(so))) {
      out.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (out.handle) {
        out.cache_hit = true;
        EMBER_LOG(inductor, INFO) << "cache hit: " << so.string();
        return out;
      }
      EMBER_LOG(inductor, WARNING) << "cached kernel library " << so.string() << " does not load (" << dlerror()
                                   << "); rebuilding it";
    } else {
      EMBER_LOG(inductor, WARNING) << "cached kernel library " << so.string()
                                   << " does not match its checksum (corrupt or half-written); rebuilding it";
    }
  }

  support::write_atomically(cpp, source, "inductor");
  ensure_codegen_header();
  const fs::path tmp_so = support::temp_path_beside(so);
  const std::string cmd =
      quote(compiler) + " " + flags + " " + quote(cpp.string()) + " -o " + quote(tmp_so.string()) + " " +
      quote(EMBER_INDUCTOR_SLEEF_LIBRARY) + " 2>&1";
  EMBER_LOG(inductor, INFO) << "compiling generated code: " << cmd;
  ++g_compiles;
  std::string output;
  FILE* pipe = popen(cmd.c_str(), "r");
  EMBER_CHECK(pipe) << "inductor: cannot run the C++ compiler: " << cmd;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  const int status = pclose(pipe);
  if (status != 0) {
    fs::remove(tmp_so, ec);
    EMBER_FAIL() << "inductor: the C++ compiler failed on " << cpp.string() << " (exit status " << status
                 << ")\ncommand: " << cmd << "\n" << output;
  }
  const std::string checksum = hash_text(read_file(tmp_so));
  fs::rename(tmp_so, so);
  support::write_atomically(sum, checksum, "inductor");
  out.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  EMBER_CHECK(out.handle) << "inductor: cannot load " << so.string() << ": " << dlerror();
  return out;
}

}  // namespace ember::inductor
