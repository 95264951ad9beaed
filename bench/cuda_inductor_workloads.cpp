// bench/cuda_inductor_workloads.cpp — W1–W9 of docs/workloads.md on cuda:0, eager against
// compiled with the "inductor" backend (graphs on CUDA: generated NVRTC kernels, GEMMs and
// convolutions as the eager CUDA ops). Each row: eager ms and compiled ms (device time,
// CUDA events, the median of --iters calls after warm-up, as bench_cuda_eager_workloads
// times them: bench/cuda_timing.h), the compiled call's host ms (the time to return from
// it: launch work and the wrapper's overhead), the kernels and extern calls of its last
// compiled graph, and max |compiled - eager| with MISMATCH past atol 1e-2 + rtol 1e-2 (GEMMs
// of hundreds of terms and float kernels summing in another order). Last, L1: `x + 1` on a
// one-element tensor, whose compiled host ms is the per-call overhead of a compiled graph
// of one kernel (the goal: at most 5 µs, cuLaunchKernel included). "cold s" is the
// wall time of a row's first compiled call with an empty cache directory of its own
// (tracing, lowering, NVRTC, launch tuning and the run, synchronized), the compile time
// PyTorch's program reports after torch._dynamo.reset(). `--only W1,L1` selects
// rows. The "ro" columns compile the same function with CUDA graphs (what compile mode
// "reduce-overhead" does, here through its knob inductor.cudagraphs, since the workloads
// compile by backend name): device ms and host ms of a replayed call, timed the same way,
// and its max rel diff against eager after the capture — L1's "ro host ms" is the per-call
// host cost of a graph replay. `--tuning off|default|max` sets the launch tuning of the
// generated kernels (Note [inductor], "Launch tuning"): off (the heuristic's launches),
// default (row kernels lightly, as compile mode "default"), max (every kernel's candidates,
// as "max-autotune"); the first call of each compiled function tunes, before any timing.
// The training rows W8 and W9 (whole steps: forward and loss compiled, backward through the
// compiled backward graph, the optimizer's step compiled as a function of its own, as on
// the CPU: bench/training_workloads.h) compare the compiled copy's loss, gradients,
// parameters and buffers after its first step with the eager copy's after its first, at
// bench_inductor_workloads' tolerances (bench/compare.h), before any timing; their "ro"
// columns compile the step's two functions with CUDA graphs, and their diff is the loss
// of a replayed step against the eager copy's step of the same index (both copies step
// equally often in between).
// Built with EMBER_CUDA=OFF it says that CUDA is not compiled in.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "compare.h"
#include "cuda_timing.h"
#include "ember/compile.h"
#include "ember/config.h"
#include "ember/cuda.h"
#include "inductor/inductor.h"
#include "training_workloads.h"
#ifdef EMBER_CUDA
#include "core/cuda.h"
#include "kernels/cuda/nvrtc.h"
#endif

namespace {

using namespace ember;

#ifdef EMBER_CUDA
constexpr bool kCudaCompiledIn = true;
#else
constexpr bool kCudaCompiledIn = false;
#endif

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(kDouble).cpu().to_vector<double>(), y = b.to(kDouble).cpu().to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
    if (!std::isnan(x[i])) m = std::max(m, std::fabs(x[i] - y[i]) / (1 + std::fabs(y[i])));
  }
  return x.size() == y.size() ? m : INFINITY;
}

}  // namespace

#ifdef EMBER_CUDA
/// What L1's compiled host ms stands on, timed as the rows are (host ms, bench/cuda_timing.h):
/// cuLaunchKernel of an empty NVRTC kernel on the current stream, the caching allocator's
/// malloc and free of a one-element buffer, and eager `x + 1` (an op's dispatch, its
/// output's allocation and its launch).
void print_launch_floor(const Tensor& one, int iters) {
  const int device = 0;
  void* empty_kernel = kernels::cuda::get_kernel(
      "extern \"C\" __global__ void ember_bench_empty_kernel() {}", "ember_bench_empty_kernel", device);
  void* no_args[1] = {nullptr};
  const bench::Timing launch = bench::cuda_median_ms(
      [&] { kernels::cuda::launch_kernel(empty_kernel, 1, 32, no_args, core::cuda::current_stream_handle(device)); },
      3, iters);
  const bench::Timing alloc = bench::cuda_median_ms(
      [&] { core::cuda::device_free(core::cuda::device_alloc(4, device)); }, 3, iters);
  const bench::Timing eager = bench::cuda_median_ms([&] { (void)(one + 1); }, 3, iters);
  std::printf("L1 floor, host us: cuLaunchKernel of an empty kernel %.2f, allocator malloc+free %.2f, eager x + 1 %.2f\n",
              launch.host_ms * 1e3, alloc.host_ms * 1e3, eager.host_ms * 1e3);
}
#endif

int main(int argc, char** argv) {
  // --tuning is this program's own option; the rest are bench_util's.
  std::string tuning = "default";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && !std::strcmp(argv[i], "--tuning") && i + 1 < argc) {
      tuning = argv[++i];
      continue;
    }
    args.push_back(argv[i]);
  }
  if (tuning == "off") {
    config().inductor.autotune_launches = false;
  } else if (tuning == "max") {
    config().inductor.max_autotune = true;
  } else if (tuning != "default") {
    std::fprintf(stderr, "--tuning: expected off, default or max, got '%s'\n", tuning.c_str());
    return 2;
  }
  const auto options = bench::parse_options(static_cast<int>(args.size()), args.data());
  if (!options) return 2;
  const auto& [json_path, iters, only] = *options;
  (void)json_path;
  if (!kCudaCompiledIn) {
    std::printf("bench_cuda_inductor_workloads: CUDA is not compiled into this build of Ember (EMBER_CUDA=OFF)\n");
    return 1;
  }
  if (!cuda::is_available()) {
    std::printf("bench_cuda_inductor_workloads: no CUDA device: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  register_builtin_backends();
  std::printf("Ember on cuda:0, %s: eager against inductor-compiled; ms: median of %d calls (CUDA events); launch "
              "tuning: %s\n",
              cuda::get_device_name(0).c_str(), iters, tuning.c_str());
  std::printf("%-6s | %-36s | %9s | %9s | %8s | %9s | %10s | %7s | %7s | %6s | %s\n", "id", "workload", "eager ms",
              "comp ms", "host ms", "ro ms", "ro host ms", "kernels", "externs", "cold s", "max rel diff (ro)");
  namespace fs = std::filesystem;
  const fs::path cache_root = fs::temp_directory_path() / ("ember_bench_cuda_inductor_" + std::to_string(getpid()));
  auto workloads = bench::memory_bound_workloads({}, kCUDA);
  for (auto& w : bench::block_workloads({}, kCUDA)) workloads.push_back(std::move(w));
  for (auto& w : bench::training_workloads({}, kCUDA)) workloads.push_back(std::move(w));
  const Tensor one = zeros({1}, TensorOptions(kFloat).device(kCUDA));
  auto l1 = [](const Tensor& x) { return x + 1; };
  workloads.push_back({"L1", "x + 1, x[1] (one tiny op)", [one, l1] { return l1(one); }, 0,
                       [one, l1](const std::string& backend) {
                         auto f = std::make_shared<decltype(compile(l1, {.backend = backend}))>(
                             compile(l1, {.backend = backend}));
                         return bench::CompiledCall{[f, one] { return (*f)(one); }, [f] { f->reset(); }};
                       }});
  bool failed = false;
  for (const auto& w : workloads) {
    if (!bench::selected(w.id, only) || !w.compile) continue;
    try {
      fs::create_directories(cache_root / w.id);
      config().inductor.cache_dir = (cache_root / w.id).string();
      // A training row's first eager step, before its compiled copy's first: both start
      // from the same parameters, and their states after it are compared.
      const std::vector<bench::CheckedTensors> expected_step =
          w.state ? bench::results_of(w, w.run(), w.state) : std::vector<bench::CheckedTensors>{};
      const bench::CompiledCall compiled = w.compile("inductor");
      const auto t0 = std::chrono::steady_clock::now();
      const Tensor got = compiled.call();
      cuda::synchronize();
      const double cold_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // diff: max |compiled - eager| / (1 + |eager|) of the output; a training row's: the
      // largest absolute difference over its state, each group held to its own tolerance.
      std::string failed_groups;
      double diff = 0;
      bool close = true;
      if (w.state) {
        const bench::Diff d =
            bench::compare_groups(bench::results_of(w, got, compiled.state), expected_step, &failed_groups);
        diff = d.max_abs;
        close = d.close;
      }
      // A training row steps its eager copy only as often as its compiled copy (each timing
      // below runs both the same number of times), so that its replayed step is compared
      // with the eager step of the same index.
      const Tensor want = w.state ? Tensor() : w.run();
      if (!w.state) {
        diff = max_abs_diff(got, want);
        close = diff <= 1e-2;
      }
      const inductor::CompileReport report = inductor::last_compile_report();
      const bench::Timing e = bench::cuda_median_ms([&] { (void)w.run(); }, 3, iters);
      const bench::Timing c = bench::cuda_median_ms([&] { (void)compiled.call(); }, 3, iters);
      // The same function with CUDA graphs: compiled and warmed up by the first call, captured
      // by the second; the result compared is a replay's.
      config().inductor.cudagraphs = true;
      bench::CompiledCall graphed;
      try {
        graphed = w.compile("inductor");
        (void)graphed.call();
      } catch (...) {
        config().inductor.cudagraphs = false;
        throw;
      }
      config().inductor.cudagraphs = false;
      (void)graphed.call();
      // A training row: the eager copy takes the two steps the compiled copy took in the
      // graphed function's warm-up and capture, then the replayed step's loss is compared
      // with the eager step of the same index.
      if (w.state) {
        (void)w.run();
        (void)w.run();
      }
      const Tensor ro_got = graphed.call();
      const double ro_diff = max_abs_diff(ro_got, w.state ? w.run() : want);
      const bench::Timing r = bench::cuda_median_ms([&] { (void)graphed.call(); }, 3, iters);
      const bool mismatch = !close || !(ro_diff <= 1e-2);
      failed = failed || mismatch;
      std::printf("%-6s | %-36s | %9.4f | %9.4f | %8.4f | %9.4f | %10.4f | %7zu | %7zu | %6.2f | %.2e (%.2e)%s%s\n",
                  w.id.c_str(), w.what.c_str(), e.device_ms, c.device_ms, c.host_ms, r.device_ms, r.host_ms,
                  report.kernels.size(), report.extern_calls.size(), cold_s, diff, ro_diff, mismatch ? " MISMATCH" : "",
                  failed_groups.empty() ? "" : (" (" + failed_groups + ")").c_str());
    } catch (const Error& e) {
      failed = true;
      std::printf("%-6s | %-36s | error: %s\n", w.id.c_str(), w.what.c_str(), e.what());
    }
    std::fflush(stdout);
  }
#ifdef EMBER_CUDA
  if (bench::selected("L1", only)) print_launch_floor(one, iters);
#endif
  std::error_code ec;
  fs::remove_all(cache_root, ec);
  return failed ? 1 : 0;
}
