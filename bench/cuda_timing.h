// bench/cuda_timing.h — how the CUDA benchmarks time a call: CUDA events around it on the
// current stream, after an L2-flushing zeroing that keeps the queue busy, and the host's
// time to return from it. Shared by bench_cuda_eager_workloads and
// bench_cuda_inductor_workloads.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <vector>

#include "ember/cuda.h"
#include "ember/ember.h"

namespace ember::bench {

/// Medians over `iters` calls of `f` after `warmup` calls: the device time between two CUDA
/// events on the current stream around each call, and the host's time to return from the
/// call (its launch overhead: when it is near the device time, the row is bound by the
/// host). Before each timed call the stream zeroes a 256 MiB buffer, which evicts the
/// inputs from the L2 cache and keeps the device busy while the host launches the call,
/// so the events time the call's kernels from a queue that is not empty (the way Triton's
/// do_bench times kernels); where the host's launch work outlasts the zeroing, the
/// device waits for it and the time counts it. One synchronization at the end.
struct Timing {
  double device_ms = 0, host_ms = 0;
};
inline Timing cuda_median_ms(const std::function<void()>& f, int warmup, int iters) {
  Tensor flush = empty({int64_t{64} << 20}, TensorOptions(kInt32).device(kCUDA));
  for (int i = 0; i < warmup; ++i) f();
  cuda::synchronize();
  std::deque<cuda::Event> starts, ends;  // events neither copy nor move
  std::vector<double> device, host;
  for (int i = 0; i < iters; ++i) {
    flush.zero_();
    starts.emplace_back(/*enable_timing=*/true).record();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    host.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ends.emplace_back(/*enable_timing=*/true).record();
  }
  cuda::synchronize();
  for (int i = 0; i < iters; ++i) device.push_back(starts[i].elapsed_time(ends[i]));
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(device), median(host)};
}

}  // namespace ember::bench
