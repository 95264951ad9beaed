// bench/inductor_dynamic.cpp — W10 and W11 of docs/workloads.md: a block compiled once
// with dynamic=true (one symbolic entry for every size) against a function compiled
// statically for each size and against eager, one row per size:
//
//   id | size | eager ms | dynamic ms | static ms | dynamic/static | dynamic compiles | static compiles | max |diff|
//
// ms: medians of --iters calls of each (eager, dynamic, static in turn, each round in the
// next of their six orders, after 3 warm-up rounds), in eval mode under NoGradGuard.
// dynamic compiles: C++ compiler runs of the dynamic function up to and including this
// size (then its cache entries); static compiles: those of this size's static function
// (one per size by construction). Every result is checked against eager (atol 1e-4 + rtol
// 1e-4, as bench_inductor_workloads): a row outside it is marked MISMATCH and the exit
// status is 1. The kernel cache starts as a fresh empty directory, so every compile is
// counted. A row whose calls found the process with different thread counts (an OpenMP
// region smaller than the pool ended threads that the next call re-created) is followed by
// a `^ fewest threads before a call` line.
//
// W10: the GPT-2 block (W5) at batch 1 over sequence lengths 32, 77, 128, 200, 384, 512.
// W11: the MLP block (W4) over batch sizes 1, 7, 64, 100, 256 (batch 1 is its own static
// entry under dynamic=true: sizes 0 and 1 are specialized).
// Then `x + 1` over x[n, 16] with n symbolic: the compiled call's overhead above eager's,
// in µs (medians of 2001 calls), for the dynamic and a static function.
//
// `--only W10` runs one workload; `--iters N` sets the timed calls. Threads:
// OMP_NUM_THREADS (bench/torch_workloads.py --dynamic runs PyTorch's side).
//
// `--cuda`: the same rows on cuda:0 (the CUDA code generator over size symbols against its
// static kernels): ms are device times (CUDA events, bench/cuda_timing.h: medians of --iters
// calls of each function after warm-up, the three timed one after another), compiles are
// not counted (NVRTC, not the C++ compiler: the entries column still says how many graphs
// serve the sizes), a `^ host ms` line under each row gives the host's time to return from
// each function's call, and the overhead line is the host time of a call (launch work and
// the wrapper, the dynamic one evaluating its sizes), calls back to back.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cuda_timing.h"
#include "inductor/inductor.h"
#include "support/process_threads.h"

namespace {

using namespace ember;
namespace fs = std::filesystem;

constexpr double kAtol = 1e-4, kRtol = 1e-4;

struct DynamicWorkload {
  std::string id, what, size_name;
  std::vector<int64_t> sizes;
  std::shared_ptr<nn::UnaryModule> module;
  std::function<Tensor(int64_t)> input;
};

/// Medians of `iters` calls of each function, called in turn, after 3 warm-up rounds. The
/// rounds go through the n! orders of the functions (std::next_permutation), so that each
/// one runs right after each other one about equally often: one call can leave a cost to
/// the next (an eager kernel's smaller OpenMP team ended pool threads that the next call
/// re-created, Note [full OpenMP teams]), and the fixed order charged it to the dynamic
/// function, always called right after eager. (Rotating the first function of a fixed
/// cycle would not: the sequence of calls stays the same cycle.)
/// With `fewest_threads`, also the fewest threads of the process seen right before each
/// function's timed calls (/proc/self/task, read outside the timed region).
std::vector<double> interleaved_medians(const std::vector<std::function<void()>>& fns, int iters,
                                        std::vector<int>* fewest_threads = nullptr) {
  std::vector<std::vector<double>> times(fns.size());
  if (fewest_threads) fewest_threads->assign(fns.size(), INT32_MAX);
  std::vector<size_t> order(fns.size());
  for (size_t f = 0; f < order.size(); ++f) order[f] = f;
  for (int i = -3; i < iters; ++i, std::next_permutation(order.begin(), order.end()))
    for (const size_t f : order) {
      if (fewest_threads && i >= 0) (*fewest_threads)[f] = std::min((*fewest_threads)[f], support::process_threads());
      const auto t0 = std::chrono::steady_clock::now();
      fns[f]();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (i >= 0) times[f].push_back(ms);
    }
  std::vector<double> out;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    out.push_back(t[t.size() / 2]);
  }
  return out;
}

/// The largest |a - e| and whether every element is within kAtol + kRtol * |e|.
std::pair<double, bool> compare(const Tensor& a, const Tensor& e) {
  NoGradGuard no_grad;
  if (a.sizes().vec() != e.sizes().vec() || a.strides().vec() != e.strides().vec()) return {INFINITY, false};
  const Tensor err = (a - e).abs();
  const double excess = max(err - (e.abs() * kRtol + kAtol)).item<double>();
  return {max(err).item<double>(), excess <= 0};
}

std::vector<DynamicWorkload> workloads(Device device) {
  manual_seed(0);
  auto gpt = std::make_shared<nn::GPT2Block>();
  auto mlp = std::make_shared<nn::MLPBlock>();
  gpt->eval();
  mlp->eval();
  gpt->to(device);
  mlp->to(device);
  return {
      {"W10",
       "GPT-2 block, x[1, T, 768]",
       "T",
       {32, 77, 128, 200, 384, 512},
       gpt,
       [device](int64_t t) {
         return randn({1, t, 768}).to(device);
       }},
      {"W11",
       "MLP block, x[B, 1024]",
       "B",
       {1, 7, 64, 100, 256},
       mlp,
       [device](int64_t b) {
         return randn({b, 1024}).to(device);
       }},
  };
}

/// The device ms of each function in turn (bench::cuda_median_ms); `host`: the host's ms
/// to return from each call, timed alongside.
std::vector<double> cuda_medians(const std::vector<std::function<void()>>& fns, int iters, std::vector<double>* host) {
  std::vector<double> out;
  host->clear();
  for (const auto& f : fns) {
    const bench::Timing t = bench::cuda_median_ms(f, 3, iters);
    out.push_back(t.device_ms);
    host->push_back(t.host_ms);
  }
  return out;
}

/// The host ms of a call of each function: medians of `iters` calls back to back (no
/// flush or events between them: the launch work and the wrapper alone), the functions
/// interleaved as interleaved_medians does, synchronized once at the end.
std::vector<double> cuda_host_medians(const std::vector<std::function<void()>>& fns, int iters) {
  const std::vector<double> ms = interleaved_medians(fns, iters);
  cuda::synchronize();
  return ms;
}

Tensor forward(nn::UnaryModule& m, const Tensor& x) { return m.forward(x); }

/// `x + 1` compiled, dynamic and static, against eager: µs above eager per call (on CUDA
/// the host's time to return from the call).
void call_overhead(Device device) {
  auto add_one = [](const Tensor& x) { return x + 1.0; };
  auto dyn = compile(add_one, {.backend = "inductor", .name = "add_one_dynamic", .dynamic = true});
  auto fixed = compile(add_one, {.backend = "inductor", .name = "add_one_static", .dynamic = false});
  Tensor x = randn({8, 16}).to(device);
  (void)dyn(randn({5, 16}).to(device));  // the symbolic entry, traced at another size
  NoGradGuard no_grad;
  const std::vector<std::function<void()>> fns = {[&] { (void)add_one(x); }, [&] { (void)dyn(x); },
                                                  [&] { (void)fixed(x); }};
  const std::vector<double> ms = device.is_cuda() ? cuda_host_medians(fns, 2001) : interleaved_medians(fns, 2001);
  std::printf("\nx + 1, x[8, 16] (n symbolic): eager %.2f us, dynamic %.2f us (+%.2f), static %.2f us (+%.2f); "
              "dynamic entries %zu\n",
              ms[0] * 1e3, ms[1] * 1e3, (ms[1] - ms[0]) * 1e3, ms[2] * 1e3, (ms[2] - ms[0]) * 1e3, dyn.cache_size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const bool on_cuda = bench::take_flag(args, "--cuda");
  const std::optional<bench::Options> options = bench::parse_options(static_cast<int>(args.size()), args.data());
  if (!options) return 2;
  if (on_cuda && !cuda::is_available()) {
    std::fprintf(stderr, "--cuda: no CUDA device (%s)\n", cuda::unavailable_reason().c_str());
    return 2;
  }
  const Device device = on_cuda ? Device("cuda:0") : Device(kCPU);
  const fs::path cache = fs::temp_directory_path() / ("ember_bench_dynamic_" + std::to_string(getpid()));
  fs::remove_all(cache);
  fs::create_directories(cache);
  config().inductor.cache_dir = cache.string();
  if (on_cuda)
    std::printf("cuda:0; ms: device times (CUDA events), medians of %d calls of each function after 3 warm-up calls\n",
                options->iters);
  else
    std::printf(
        "threads %d; ms: medians of %d calls each (eager, dynamic, static in turn, each round in the next "
        "of their six orders, after 3 warm-up rounds)\n",
        omp_get_max_threads(), options->iters);
  std::printf("%-4s | %-7s | %9s | %10s | %9s | %14s | %16s | %15s | %10s\n", "id", "size", "eager ms", "dynamic ms",
              "static ms", "dynamic/static", "dynamic compiles", "static compiles", "max |diff|");
  bool all_close = true;
  for (const DynamicWorkload& w : workloads(device)) {
    if (!bench::selected(w.id, options->only)) continue;
    std::printf("%s: %s\n", w.id.c_str(), w.what.c_str());
    auto dyn = compile(forward, {.backend = "inductor", .name = w.id + "_dynamic", .dynamic = true});
    int64_t dynamic_compiles = 0;
    for (int64_t size : w.sizes) {
      NoGradGuard no_grad;
      const Tensor x = w.input(size);
      nn::UnaryModule& m = *w.module;
      const Tensor expected = m.forward(x);
      int64_t before = inductor::compiler_invocations();
      const Tensor got_dynamic = dyn(m, x);
      dynamic_compiles += inductor::compiler_invocations() - before;
      auto fixed = compile(forward, {.backend = "inductor", .name = w.id + "_static_" + std::to_string(size),
                                     .dynamic = false});
      before = inductor::compiler_invocations();
      const Tensor got_static = fixed(m, x);
      const int64_t static_compiles = inductor::compiler_invocations() - before;
      const auto [diff_dynamic, close_dynamic] = compare(got_dynamic, expected);
      const auto [diff_static, close_static] = compare(got_static, expected);
      const bool close = close_dynamic && close_static;
      all_close = all_close && close;
      std::vector<int> fewest;
      std::vector<double> host_ms;
      const std::vector<std::function<void()>> fns = {[&] { (void)m.forward(x); }, [&] { (void)dyn(m, x); },
                                                      [&] { (void)fixed(m, x); }};
      const std::vector<double> ms =
          on_cuda ? cuda_medians(fns, options->iters, &host_ms) : interleaved_medians(fns, options->iters, &fewest);
      const std::string size_text = w.size_name + "=" + std::to_string(size);
      std::printf("%-4s | %-7s | %9.3f | %10.3f | %9.3f | %14.2f | %5lld (%zu entries) | %15lld | %10.2e%s\n",
                  w.id.c_str(), size_text.c_str(), ms[0], ms[1], ms[2], ms[1] / ms[2],
                  static_cast<long long>(dynamic_compiles), dyn.cache_size(), static_cast<long long>(static_compiles),
                  std::max(diff_dynamic, diff_static), close ? "" : " MISMATCH");
      // On CUDA, the host's time to return from a call: a row whose host ms reach its
      // device ms is bound by the launches, not the kernels.
      if (on_cuda)
        std::printf("     ^ host ms: eager %.3f, dynamic %.3f, static %.3f\n", host_ms[0], host_ms[1], host_ms[2]);
      // A call that found OpenMP's pool short paid for re-creating its threads.
      if (!on_cuda && *std::min_element(fewest.begin(), fewest.end()) < *std::max_element(fewest.begin(), fewest.end()))
        std::printf("     ^ fewest threads before a call: eager %d, dynamic %d, static %d (Note [full OpenMP teams])\n",
                    fewest[0], fewest[1], fewest[2]);
    }
  }
  if (bench::selected("overhead", options->only) || options->only.empty()) call_overhead(device);
  fs::remove_all(cache);
  return all_close ? 0 : 1;
}
