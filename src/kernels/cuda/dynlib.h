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

}  // namespace ember::kernels::cuda
