// kernels/cuda/nvrtc.cpp — see nvrtc.h. Built only with EMBER_CUDA.
#include "kernels/cuda/nvrtc.h"

#include <cuda.h>
#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_map>
#include <sstream>

#include "core/cuda_runtime.h"
#include "ember/config.h"
#include "ember/cuda.h"
#include "ember/error.h"
#include "kernels/cuda/dynlib.h"
#include "support/disk_cache.h"

namespace ember::kernels::cuda {
namespace fs = std::filesystem;
namespace {

/// The NVRTC functions Ember uses, from the library opened at run time.
struct Nvrtc {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  std::string error;  // why it could not be opened
};

const Nvrtc& nvrtc() {
  static const Nvrtc lib = [] {
    Nvrtc n;
    SymbolLoader load({.what = "NVRTC, which compiles Ember's CUDA kernels",
                       .env = "EMBER_NVRTC_LIBRARY",
                       .soname = EMBER_NVRTC_SONAME,
                       .dirs = {EMBER_NVRTC_LIBRARY_DIR, "/usr/local/cuda/lib64"}},  // the usual toolkit place
                      "NVRTC");
    load.get(n.version, "nvrtcVersion");
    load.get(n.create, "nvrtcCreateProgram");
    load.get(n.compile, "nvrtcCompileProgram");
    load.get(n.log_size, "nvrtcGetProgramLogSize");
    load.get(n.log, "nvrtcGetProgramLog");
    load.get(n.cubin_size, "nvrtcGetCUBINSize");
    load.get(n.cubin, "nvrtcGetCUBIN");
    load.get(n.destroy, "nvrtcDestroyProgram");
    load.get(n.error_string, "nvrtcGetErrorString");
    n.error = load.error();
    return n;
  }();
  EMBER_CHECK(lib.error.empty()) << lib.error;
  return lib;
}

void check_nvrtc(nvrtcResult r, const char* what) {
  EMBER_CHECK(r == NVRTC_SUCCESS) << "NVRTC error in " << what << ": " << nvrtc().error_string(r);
}

/// The driver API through the runtime's entry points (libcuda is never linked).
struct Driver {
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                     void**) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    r.module_load_data = reinterpret_cast<decltype(r.module_load_data)>(core::cuda_rt::driver_entry_point("cuModuleLoadData"));
    r.module_get_function =
        reinterpret_cast<decltype(r.module_get_function)>(core::cuda_rt::driver_entry_point("cuModuleGetFunction"));
    r.launch = reinterpret_cast<decltype(r.launch)>(core::cuda_rt::driver_entry_point("cuLaunchKernel"));
    r.error_string = reinterpret_cast<decltype(r.error_string)>(core::cuda_rt::driver_entry_point("cuGetErrorString"));
    return r;
  }();
  return d;
}

void check_driver(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = "unknown error";
  driver().error_string(r, &msg);
  EMBER_FAIL() << "CUDA driver error in " << what << ": " << msg;
}

}  // namespace

bool nvrtc_available(std::string* reason) {
  return library_available([] { nvrtc(); }, reason);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtc().version(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtc_flags(const std::string& arch) {
  // IEEE semantics as the CPU kernels have them (no fast math), C++17 for `if constexpr`.
  return {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", "--fmad=false"};
}

std::string cubin_cache_dir() {
  std::string dir = config().inductor.cache_dir;
  if (dir.empty()) dir = (fs::temp_directory_path() / "torchinductor_ember").string();
  return (fs::path(dir) / "cuda").string();
}

CubinResult compile_cubin(const std::string& source, const std::string& arch) {
  const std::vector<std::string> flags = nvrtc_flags(arch);
  std::string key_text = source + "\nnvrtc " + nvrtc_version() + "\n" + arch + "\n";
  for (const auto& f : flags) key_text += f + " ";
  CubinResult result;
  const fs::path dir = cubin_cache_dir();
  const fs::path file = dir / (support::hash_text(key_text) + ".cubin");
  result.path = file.string();
  std::error_code ec;
  if (fs::exists(file, ec)) {
    result.cubin = support::read_file(file);
    if (!result.cubin.empty()) {
      result.from_cache = true;
      return result;
    }
  }
  const Nvrtc& n = nvrtc();
  nvrtcProgram prog = nullptr;
  check_nvrtc(n.create(&prog, source.c_str(), "ember_kernel.cu", 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::vector<const char*> opts;
  for (const auto& f : flags) opts.push_back(f.c_str());
  const nvrtcResult compiled = n.compile(prog, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;
  n.log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) n.log(prog, log.data());
  if (compiled != NVRTC_SUCCESS) {
    n.destroy(&prog);
    EMBER_INTERNAL_ASSERT(false) << "NVRTC could not compile a generated CUDA kernel for " << arch << ": "
                                 << n.error_string(compiled) << "\n" << log << "\n--- source ---\n" << source;
  }
  size_t size = 0;
  check_nvrtc(n.cubin_size(prog, &size), "nvrtcGetCUBINSize");
  result.cubin.resize(size);
  check_nvrtc(n.cubin(prog, result.cubin.data()), "nvrtcGetCUBIN");
  n.destroy(&prog);
  fs::create_directories(dir, ec);
  // A cache that cannot be written only costs a recompile next time.
  if (!ec) {
    try {
      support::write_atomically(file, result.cubin, "cuda: the kernel cache");
    } catch (const Error&) {
    }
  }
  return result;
}

void* get_kernel(const std::string& source, const std::string& symbol, int device) {
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, CUfunction> loaded;
  const auto key = std::make_pair(device, source);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = loaded.find(key);
    if (it != loaded.end()) return it->second;
  }
  const auto [major, minor] = ember::cuda::get_device_capability(device);
  const CubinResult cubin = compile_cubin(source, "sm_" + std::to_string(major) + std::to_string(minor));
  ember::cuda::DeviceGuard guard(device);
  core::cuda_rt::set_device(device);  // makes the primary context current on this thread
  CUmodule module = nullptr;
  check_driver(driver().module_load_data(&module, cubin.cubin.data()), "cuModuleLoadData");
  CUfunction fn = nullptr;
  check_driver(driver().module_get_function(&fn, module, symbol.c_str()), "cuModuleGetFunction");
  std::lock_guard<std::mutex> lock(mu);
  return loaded.emplace(key, fn).first->second;
}

void* get_kernel(const std::string& symbol, int device, const std::function<std::string()>& render) {
  static std::mutex mu;
  static std::unordered_map<std::string, void*> by_symbol;
  std::string key = std::to_string(device) + ' ' + symbol;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = by_symbol.find(key);
    if (it != by_symbol.end()) return it->second;
  }
  void* fn = get_kernel(render(), symbol, device);
  std::lock_guard<std::mutex> lock(mu);
  return by_symbol.emplace(std::move(key), fn).first->second;
}

std::vector<void*> get_kernels(const std::string& source, const std::vector<std::string>& symbols, int device) {
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, std::vector<CUfunction>> loaded;
  const auto key = std::make_pair(device, source);
  std::vector<void*> out;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = loaded.find(key); it != loaded.end() && it->second.size() == symbols.size()) {
      for (CUfunction f : it->second) out.push_back(f);
      return out;
    }
  }
  const auto [major, minor] = ember::cuda::get_device_capability(device);
  const CubinResult cubin = compile_cubin(source, "sm_" + std::to_string(major) + std::to_string(minor));
  ember::cuda::DeviceGuard guard(device);
  core::cuda_rt::set_device(device);
  CUmodule module = nullptr;
  check_driver(driver().module_load_data(&module, cubin.cubin.data()), "cuModuleLoadData");
  std::vector<CUfunction> fns;
  for (const std::string& symbol : symbols) {
    CUfunction fn = nullptr;
    check_driver(driver().module_get_function(&fn, module, symbol.c_str()), "cuModuleGetFunction");
    fns.push_back(fn);
    out.push_back(fn);
  }
  std::lock_guard<std::mutex> lock(mu);
  loaded[key] = std::move(fns);
  return out;
}

void launch_kernel(void* function, unsigned grid, unsigned block, void** args, void* stream) {
  check_driver(driver().launch(static_cast<CUfunction>(function), grid, 1, 1, block, 1, 1, 0,
                               static_cast<CUstream>(stream), args, nullptr),
               "cuLaunchKernel");
}

}  // namespace ember::kernels::cuda
