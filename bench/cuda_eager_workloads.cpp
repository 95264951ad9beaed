// bench/cuda_eager_workloads.cpp — times W1–W7 of docs/workloads.md in Ember eager on
// cuda:0: the CPU rows' shapes and values (bench/workloads.h draws them on the CPU and
// moves inputs and parameters to the device). Each row: the median of --iters calls,
// each timed by CUDA events recorded on the current stream before and after the call,
// after 3 warm-up calls (which also compile the row's kernels) and with the L2 cache
// flushed before each call (cuda_median_ms), and the host's time to
// return from the call (its launch overhead); for the memory-bound
// W1–W3 also GB/s of the bytes their kernels move and its share of the device-to-device
// copy bandwidth, measured in the same run by a copy_ between two 1 GiB tensors and by a copy_ moving the row's
// own bytes (bytes read plus bytes written, as the rows count theirs).
// Last, L1: `x + 1` on a one-element tensor: its host ms is the launch work of one op,
// its device ms one tiny kernel's time.
// A row that reaches an op without a CUDA kernel in this build prints
// "skipped: <op> has no CUDA kernel". `--json FILE` also writes the rows as JSON;
// `--only W4,W5` runs the rows whose id starts with one of the given prefixes.
// bench/run_cuda_side_by_side.sh runs it beside bench/torch_workloads.py --device cuda.
// Built with EMBER_CUDA=OFF it says that CUDA is not compiled in.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cuda_timing.h"
#include "ember/cuda.h"

namespace {

using namespace ember;
using bench::cuda_median_ms;
using bench::Timing;

#ifdef EMBER_CUDA
constexpr bool kCudaCompiledIn = true;
#else
constexpr bool kCudaCompiledIn = false;
#endif

/// GB/s of dst.copy_(src) between two float32 tensors that move `bytes` in all (read plus
/// written): two 1 GiB tensors for the device's bandwidth, a row's own bytes for what one kernel moving
/// that much reaches (launch latency and the L2 cache count at tens of MiB).
double copy_gbps(double bytes) {
  const int64_t n = static_cast<int64_t>(bytes / (2 * sizeof(float)));
  Tensor src = zeros({n}, TensorOptions(kFloat).device(kCUDA));
  Tensor dst = empty({n}, TensorOptions(kFloat).device(kCUDA));
  const double ms = cuda_median_ms([&] { dst.copy_(src); }, 2, 9).device_ms;
  return 2.0 * static_cast<double>(n) * sizeof(float) / (ms * 1e-3) / 1e9;
}

/// The op an error says has no CUDA kernel ("Could not run 'aten::mm' with arguments from
/// the 'CUDA' backend", ops/dispatch.cpp); empty for any other error.
std::string op_without_cuda_kernel(const Error& e) {
  const std::string msg = e.what();
  const std::string head = "Could not run '";
  const size_t at = msg.find(head);
  if (e.kind() != ErrorKind::NotImplementedError || at == std::string::npos ||
      msg.find("with arguments from the 'CUDA' backend", at) == std::string::npos)
    return "";
  const size_t start = at + head.size();
  return msg.substr(start, msg.find('\'', start) - start);
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = bench::parse_options(argc, argv);
  if (!options) return 2;
  const auto& [json_path, iters, only] = *options;
  if (!kCudaCompiledIn) {
    std::printf("bench_cuda_eager_workloads: CUDA is not compiled into this build of Ember (EMBER_CUDA=OFF); "
                "configure with -DEMBER_CUDA=ON and the CUDA toolkit\n");
    return 1;
  }
  if (!cuda::is_available()) {
    std::printf("bench_cuda_eager_workloads: no CUDA device: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  const std::string device = cuda::get_device_name(0);
  const auto [major, minor] = cuda::get_device_capability(0);
  const double copy = copy_gbps(2.0 * (int64_t{1} << 30));
  std::printf("Ember eager on cuda:0, %s (sm_%d%d); device-to-device copy_: %.1f GB/s (read + written)\n",
              device.c_str(), major, minor, copy);
  std::printf("ms: median of %d calls, CUDA events around each call, each after a 256 MiB zeroing that flushes the L2 "
              "cache and keeps the queue busy, after 3 warm-up calls\n",
              iters);
  std::printf("GB/s: the bytes the row's kernels read and write (W1's eager chain moves %d times x's bytes); "
              "%% of copy: of the copy_ above; %% of same: of a copy_ moving the row's own bytes\n",
              bench::kW1EagerPasses);
  std::printf("%-8s | %-36s | %10s | %8s | %8s | %9s | %s\n", "id", "workload", "eager ms", "host ms", "GB/s",
              "% of copy", "% of same");
  nlohmann::json json = {{"device", device},
                         {"capability", std::to_string(major) + "." + std::to_string(minor)},
                         {"copy_gbps", copy},
                         {"iters", iters},
                         {"rows", nlohmann::json::array()}};
  bool failed = false;
  auto workloads = bench::memory_bound_workloads({}, kCUDA);
  for (auto& w : bench::block_workloads({}, kCUDA)) workloads.push_back(std::move(w));
  // L1: one tiny kernel; its host ms is one op's launch work (torch_workloads.py's L1).
  const Tensor one = zeros({1}, TensorOptions(kFloat).device(kCUDA));
  workloads.push_back({"L1", "x + 1, x[1] (one tiny op)", [one] { return one + 1; }, 0, {}, {}});
  for (const auto& w : workloads) {
    if (!bench::selected(w.id, only)) continue;
    nlohmann::json row = {{"id", w.id}, {"workload", w.what}};
    try {
      const Tensor out = w.run();
      EMBER_CHECK(out.is_cuda()) << w.id << " returned a tensor on " << out.device().str() << ", not on cuda";
      const Timing t = cuda_median_ms([&] { (void)w.run(); }, 3, iters);
      const double ms = t.device_ms;
      row["eager_ms"] = ms;
      row["host_ms"] = t.host_ms;
      if (w.min_bytes > 0) {
        const double bytes = w.eager_bytes > 0 ? w.eager_bytes : w.min_bytes;
        const double gbps = bytes / (ms * 1e-3) / 1e9;
        const double same = copy_gbps(w.min_bytes);
        std::printf("%-8s | %-36s | %10.3f | %8.3f | %8.1f | %8.1f%% | %8.1f%%\n", w.id.c_str(), w.what.c_str(), ms,
                    t.host_ms, gbps, 100 * gbps / copy, 100 * gbps / same);
        row["gbps"] = gbps;
        row["min_gbps"] = w.min_bytes / (ms * 1e-3) / 1e9;
        row["copy_same_gbps"] = same;
      } else {
        std::printf("%-8s | %-36s | %10.3f | %8.3f | %8s | %9s | %s\n", w.id.c_str(), w.what.c_str(), ms, t.host_ms, "-",
                    "-", "-");
      }
    } catch (const Error& e) {
      const std::string op = op_without_cuda_kernel(e);
      if (!op.empty()) {
        std::printf("%-8s | %-36s | skipped: %s has no CUDA kernel\n", w.id.c_str(), w.what.c_str(), op.c_str());
        row["skipped"] = op + " has no CUDA kernel";
      } else {
        failed = true;
        std::printf("%-8s | %-36s | error: %s\n", w.id.c_str(), w.what.c_str(), e.what());
        row["error"] = e.what();
      }
    }
    std::fflush(stdout);
    json["rows"].push_back(std::move(row));
  }
  if (json_path) std::ofstream(json_path) << json.dump() << "\n";
  return failed ? 1 : 0;
}
