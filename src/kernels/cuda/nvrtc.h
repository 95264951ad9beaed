// kernels/cuda/nvrtc.h — run-time compilation of CUDA kernels: NVRTC (opened with dlopen
// on first use) compiles rendered source to a cubin for one GPU architecture, an on-disk
// cache keyed by the source, NVRTC's version, the architecture and the flags keeps
// cubins across processes, and the driver API (reached through the runtime, so libcuda is
// never linked) loads and launches them. A build without CUDA links nvrtc_off.cpp, which
// raises. See Note [cuda] (docs/notes/cuda.md), "Why NVRTC".
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ember::kernels::cuda {

/// Whether NVRTC can be loaded; `reason` says why not.
bool nvrtc_available(std::string* reason);
/// NVRTC's version, "13.0".
std::string nvrtc_version();
/// The options every kernel is compiled with for `arch` ("sm_90").
std::vector<std::string> nvrtc_flags(const std::string& arch);
/// Where cubins are cached: <inductor.cache_dir>/cuda.
std::string cubin_cache_dir();

struct CubinResult {
  std::string cubin;      ///< the ELF image
  std::string path;       ///< its file in the cache
  bool from_cache = false;
};
/// `source` compiled for `arch`, from the disk cache when there (written to a temporary
/// name and renamed into place, so concurrent processes never read half a file). Raises
/// with NVRTC's log when the source does not compile.
CubinResult compile_cubin(const std::string& source, const std::string& arch);

/// The function `symbol` of `source` compiled for and loaded on `device` (cached per
/// process); a CUfunction.
void* get_kernel(const std::string& source, const std::string& symbol, int device);
/// The same, for a symbol that names its source: every kernel family's symbol spells out
/// all that its renderer takes (dtypes, variant), so `render` runs only on the first call
/// for (device, symbol), and later calls cost one hash lookup, not a rendering.
void* get_kernel(const std::string& symbol, int device, const std::function<std::string()>& render);
/// The functions `symbols` of one translation unit `source` (several kernels compiled
/// together, as the inductor's CUDA code generator emits them), loaded on `device` as one
/// module; cached per process by (device, source).
std::vector<void*> get_kernels(const std::string& source, const std::vector<std::string>& symbols, int device);
/// Launches a 1-D grid on `stream` (a cudaStream_t) with the kernel's argument pointers.
void launch_kernel(void* function, unsigned grid, unsigned block, void** args, void* stream);

}  // namespace ember::kernels::cuda
