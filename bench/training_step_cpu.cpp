// bench/training_step_cpu.cpp — the training rows W7–W9 of docs/workloads.md timed in the
// process's CPU time, for a machine that other programs share: there the wall-clock medians
// of bench_inductor_workloads move by 2–5x with the other programs' load (each OpenMP
// barrier waits for a thread that is not running), while the CPU time the process spends in
// a step, on one thread, moves by a few percent. For each row: the eager step and the
// compiled step (`backend="inductor"`), alternating, after 3 warm-up calls each; the
// minimum and the median over --iters steps of each, and the minor page faults per step
// (fresh memory touched: a kernel's temporaries not reused from a cache show here).
// Meant for OMP_NUM_THREADS=1 (with more threads, threads waiting at a barrier spin and their
// spinning counts as CPU time); bench/torch_training_cpu.py measures PyTorch the same way.
// `--phases` adds, under W8 and W9, the wall-clock median of each part of the step (zero_grad,
// forward and loss, backward, optimizer step), eager and compiled: on a quiet machine, at any
// thread count, the parts of a step whose whole is slower than PyTorch's.
//
//   OMP_NUM_THREADS=1 taskset -c 0 build/bench/bench_training_step_cpu [--iters N] [--only W8,W9] [--phases]
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <vector>

#include "bench_util.h"
#include "training_workloads.h"

namespace {

using namespace ember;

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

long minor_faults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

/// CPU ms of each call and the minor faults of all calls of one side.
struct Side {
  std::vector<double> ms;
  long faults = 0;
  void time(const std::function<Tensor()>& f) {
    const long f0 = minor_faults();
    const double t0 = cpu_ms();
    (void)f();
    ms.push_back(cpu_ms() - t0);
    faults += minor_faults() - f0;
  }
  double min() const { return *std::min_element(ms.begin(), ms.end()); }
  double median() const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double faults_per_call() const { return static_cast<double>(faults) / static_cast<double>(ms.size()); }
};

/// The median of each part of `steps` (the last `n` of them), as "name ms" pairs.
std::string phase_medians(const std::vector<bench::StepPhases::Step>& steps, size_t n) {
  std::string out;
  for (size_t p = 0; p < 4; ++p) {
    std::vector<double> v;
    for (size_t i = steps.size() - std::min(n, steps.size()); i < steps.size(); ++i) v.push_back(steps[i][p]);
    std::sort(v.begin(), v.end());
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.2f", p ? ", " : "", bench::StepPhases::kNames[p], v.empty() ? 0.0 : v[v.size() / 2]);
    out += buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // --phases is this program's own; the other options are every workload program's.
  std::vector<char*> args(argv, argv + argc);
  const bool print_phases = bench::take_flag(args, "--phases");
  const std::optional<bench::Options> options = bench::parse_options(static_cast<int>(args.size()), args.data());
  if (!options) return 2;
  std::vector<bench::Workload> rows;
  for (bench::Workload& w : bench::block_workloads())
    if (w.id == "W7") rows.push_back(std::move(w));
  for (bench::Workload& w : bench::training_workloads()) rows.push_back(std::move(w));
  std::printf("Ember training steps in process CPU time, %d thread(s); %d steps each, eager and compiled alternating,\n"
              "after 3 warm-up calls each. faults: minor page faults per step.\n",
              omp_get_max_threads(), options->iters);
  std::printf("%-4s | %13s | %12s | %12s | %16s | %15s | %15s\n", "id", "eager min ms", "eager med ms", "eager faults",
              "compiled min ms", "compiled med ms", "compiled faults");
  for (const bench::Workload& w : rows) {
    if (!bench::selected(w.id, options->only)) continue;
    const bench::CompiledCall compiled = w.compile("inductor");
    for (int i = 0; i < 3; ++i) (void)w.run(), (void)compiled.call();
    Side eager, comp;
    for (int i = 0; i < options->iters; ++i) {
      eager.time(w.run);
      comp.time(compiled.call);
    }
    std::printf("%-4s | %13.2f | %12.2f | %12.0f | %16.2f | %15.2f | %15.0f\n", w.id.c_str(), eager.min(),
                eager.median(), eager.faults_per_call(), comp.min(), comp.median(), comp.faults_per_call());
    if (print_phases && w.training && w.training->phases) {
      const auto n = static_cast<size_t>(options->iters);
      std::printf("     wall-clock median ms, eager:    %s\n", phase_medians(w.training->phases->eager, n).c_str());
      std::printf("     wall-clock median ms, compiled: %s\n", phase_medians(w.training->phases->compiled, n).c_str());
    }
  }
  return 0;
}
