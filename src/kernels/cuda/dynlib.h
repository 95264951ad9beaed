// kernels/cuda/dynlib.h — opening a CUDA library (NVRTC, cuBLASLt, cuDNN) with dlopen at
// run time, so that a program links none of them and loads on a machine without them:
// the path in an environment variable first, then the soname on the loader's path, then
// the toolkit's library directories. What could not be opened is said once, as an
// ember::Error naming the library, what it is for, every path tried and the variable
// that overrides them. See Note [cuda] (docs/notes/cuda.md), "How the libraries are found".
#pragma once

#include <string>
#include <vector>

namespace ember::kernels::cuda {

/// Where to look for one library.
struct LibrarySearch {
  std::string what;                ///< "cuBLASLt, which runs Ember's CUDA matrix products"
  std::string env;                 ///< "EMBER_CUBLASLT_LIBRARY": a path tried first when set
  std::string soname;              ///< "libcublasLt.so.13", as the loader finds it
  std::vector<std::string> dirs;   ///< directories tried with the soname after the loader's path
};

/// The paths tried, in order: $env (when set and not empty), the soname, each dir/soname.
std::vector<std::string> library_candidates(const LibrarySearch& s);

/// The handle of the first candidate that opens; raises ember::Error with every path tried
/// and why each failed otherwise.
void* open_library(const LibrarySearch& s);

/// The address of `name` in `handle`, or nullptr.
void* library_symbol(void* handle, const char* name);

/// Fills a table of function pointers from a library: `open` never raises; what went
/// wrong (the library not opening, the first function missing) is kept in `error`, which
/// the table's users raise on each call, so a program without the library runs on.
class SymbolLoader {
 public:
  /// `short_name` names the library in "cuDNN has no function X".
  SymbolLoader(const LibrarySearch& s, std::string short_name);
  template <typename Fn>
  void get(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(handle_ ? library_symbol(handle_, name) : nullptr);
    if (!fn && error_.empty()) error_ = short_name_ + " has no function " + name;
  }
  const std::string& error() const { return error_; }

 private:
  void* handle_ = nullptr;
  std::string short_name_;
  std::string error_;
};

/// Whether `load` (which raises what a SymbolLoader kept) succeeds; `reason` says why not.
bool library_available(void (*load)(), std::string* reason);

}  // namespace ember::kernels::cuda
