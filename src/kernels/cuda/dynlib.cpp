// kernels/cuda/dynlib.cpp — see dynlib.h.
#include "kernels/cuda/dynlib.h"

#include <dlfcn.h>

#include <cstdlib>

#include "ember/error.h"

namespace ember::kernels::cuda {

std::vector<std::string> library_candidates(const LibrarySearch& s) {
  std::vector<std::string> names;
  if (!s.env.empty()) {
    const char* env = std::getenv(s.env.c_str());
    if (env && *env) names.emplace_back(env);
  }
  names.push_back(s.soname);
  for (const std::string& dir : s.dirs)
    if (!dir.empty()) names.push_back(dir + "/" + s.soname);
  return names;
}

void* open_library(const LibrarySearch& s) {
  std::string tried;
  for (const std::string& name : library_candidates(s)) {
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* why = dlerror();
    tried += "\n  " + name + ": " + (why ? why : "not found");
  }
  EMBER_FAIL() << "cannot open " << s.what << " (set " << s.env << " to the path of " << s.soname
               << "); tried:" << tried;
}

void* library_symbol(void* handle, const char* name) { return dlsym(handle, name); }

SymbolLoader::SymbolLoader(const LibrarySearch& s, std::string short_name) : short_name_(std::move(short_name)) {
  try {
    handle_ = open_library(s);
  } catch (const Error& e) {
    error_ = e.what();
  }
}

bool library_available(void (*load)(), std::string* reason) {
  try {
    load();
    return true;
  } catch (const Error& e) {
    if (reason) *reason = e.what();
    return false;
  }
}

}  // namespace ember::kernels::cuda
