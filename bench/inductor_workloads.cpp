// bench/inductor_workloads.cpp — W1–W9 of docs/workloads.md in Ember eager and compiled
// with the inductor backend, one row each: eager and compiled ms (median of --iters calls
// of each, alternating, after 3 warm-up calls), speedup, cold and warm compile time, and
// for the memory-bound W1–W3 the compiled run's GB/s beside a STREAM-style triad measured
// in the same run. Every row also checks the compiled result against eager (max
// |difference|, and whether it is within the tolerance of
// tests/e2e/workloads_compiled_test.cpp), so the table cannot time a wrong result: a row
// outside it is marked MISMATCH and the exit status is 1. W7 compares the output and every
// gradient; W8 and W9 (whole steps with an optimizer, on an eager and a compiled copy of
// the model) the loss, the gradients, the parameters after the step and the buffers.
//
// Cold compile: the first call of a newly created compiled function with
// config().inductor.cache_dir pointed at a fresh empty directory (trace, lowering, code
// generation, the C++ compiler, loading, and one execution). Warm compile: the first call
// after reset() of that function, with the disk cache filled by two calls (trace and code
// generation again, every library found on disk, one execution; the notes say when the
// compiler ran). Two calls, because a training step's later graphs differ from its first:
// SGD's first step makes each momentum buffer as a copy of the gradient, later steps
// update it (Note [outside state]).
//
// After the rows, a second table for the training rows W7–W9: the memory their forward
// leaves alive for backward (eager: the tensors the grad_fn nodes save; compiled: those
// CompiledFunctionBackward saves), read from the CPU allocator's live bytes (Note
// [allocator]), and the cold compile time of the training graphs (forward and backward,
// one step without the optimizer) against that of the same forward alone under
// NoGradGuard, each with a fresh cache directory.
//
// `--json FILE` writes the rows as JSON (with each row's cold compile by phase);
// `--only W4,W5` runs the rows whose id starts with one of the prefixes; `--iters N` sets
// the timed calls; `--phases` prints, under each row, its cold compile by phase
// (ember::compile_times(): capture, AOT, lowering, scheduling, codegen, C++ compile with the
// compiler's CPU time, load, the first run and the autotuner's timing runs in it); `--freezing` compiles
// with inductor.freezing on (Note [freezing]: parameters as constants, GEMM weights packed once with
// their epilogue inside). With W4 or W5 selected, two last tables give their GEMMs' GFLOP/s: inside
// the compiled workload (the kernel profile of a new compile: each extern mm/addmm, or frozen linear
// with its epilogue, mean ms over the calls), and alone at the workload's shapes, unpacked (the eager mm the compiled graph calls, epilogue not
// counted) and packed with its epilogue (what freezing calls), beside the machine's FMA peak
// measured by a loop of independent vector FMAs on 1 and on OMP_NUM_THREADS threads. Threads: OMP_NUM_THREADS (run
// bench/torch_workloads.py --compile with the same number; bench/run_side_by_side.sh
// runs both).
#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "compare.h"
#include "core/allocator.h"
#include "ember/compile.h"
#include "inductor/inductor.h"
#include "kernels/cpu/packed_linear.h"
#include "training_workloads.h"

namespace {

using namespace ember;
namespace fs = std::filesystem;
using bench::compare_groups;
using bench::Diff;
using bench::kAtol;
using bench::kRtol;
using bench::results_of;

/// What the inductor logs said during a call: graphs compiled, kernels generated, and
/// graphs run by the interpreter because an input requires grad.
struct CallLog {
  int graphs = 0;
  int kernels = 0;
  int interpreted = 0;
};

template <typename F>
CallLog logged(F&& f) {
  CallLog log;
  logging::ScopedSink sink(
      [&log](const logging::Record& r) {
        const std::string_view m = r.message;
        if (auto p = m.find("done compiling graph"); p != std::string_view::npos) {
          ++log.graphs;
          if (auto k = m.find(" (", p); k != std::string_view::npos)
            log.kernels += std::atoi(std::string(m.substr(k + 2)).c_str());
        }
        if (m.find("running it eagerly") != std::string_view::npos) ++log.interpreted;
      },
      "inductor");
  f();
  return log;
}

/// Medians in ms of `iters` calls each of `a` and `b`, alternating, after 3 warm-up calls
/// each. Alternating puts both in the same process state: whether a call's 32 MiB output
/// page-faults (8,193 faults, ~160 ms on the development VM) or reuses freed heap memory
/// depends on glibc's heap state, which the compile in between changes; timed in separate
/// phases, W2 once measured 6 ms eager against 175 ms compiled, and ~170 ms each alternated.
std::pair<double, double> interleaved_median_ms(const std::function<Tensor()>& a, const std::function<Tensor()>& b,
                                                int iters) {
  for (int i = 0; i < 3; ++i) (void)a(), (void)b();
  std::vector<double> ta, tb;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    (void)a();
    auto t1 = std::chrono::steady_clock::now();
    (void)b();
    auto t2 = std::chrono::steady_clock::now();
    ta.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    tb.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string json_number(double v) { return std::isfinite(v) ? std::to_string(v) : "null"; }

/// Bytes a forward leaves alive (live bytes after it minus before it, its own result left
/// out): what the autograd graph holds for backward. peak: the most live during it, above
/// where it started.
struct HeldBytes {
  double held = NAN, peak = NAN;
};

HeldBytes held_by(const std::function<Tensor()>& forward) {
  core::cpu_reset_peak_memory();
  const double before = static_cast<double>(core::cpu_memory_stats().live_bytes);
  Tensor out = forward();
  const core::CpuMemoryStats after = core::cpu_memory_stats();
  const double out_bytes = static_cast<double>(out.numel()) * static_cast<double>(out.element_size());
  return {static_cast<double>(after.live_bytes) - before - out_bytes,
          static_cast<double>(after.peak_live_bytes) - before};
}

/// The second table's figures for a training row.
struct TrainingFigures {
  HeldBytes eager, compiled;
  bool compiled_is_aot = false;    // the compiled forward's result hangs on CompiledFunctionBackward
  double held_without_grad = NAN;  // the eager forward under NoGradGuard: 0 unless something caches tensors
  double train_cold_s = NAN, forward_cold_s = NAN;
  int64_t train_compiles = 0, forward_compiles = 0;
};

/// Cold compiles, each with a fresh cache directory under `cache`: the forward alone under
/// NoGradGuard (the inference graph), then the training graphs (the forward recording the
/// graph, then backward, which compiles the backward graph on its first call). The
/// compiled training forward, warm by then, and the eager one are measured for held bytes,
/// and the eager one again without grad, which should leave nothing (else the held bytes
/// count more than saved tensors, and the row's notes say so).
TrainingFigures measure_training(const bench::TrainingParts& parts, const fs::path& cache) {
  TrainingFigures f;
  auto cold = [&cache](const std::string& dir, const std::function<void()>& call, double* s, int64_t* compiles) {
    fs::create_directories(cache / dir);
    config().inductor.cache_dir = (cache / dir).string();
    const int64_t before = inductor::compiler_invocations();
    *s = seconds_of(call);
    *compiles = inductor::compiler_invocations() - before;
  };
  const bench::CompiledCall forward_only = parts.compile_forward("inductor");
  cold(
      "forward_only",
      [&] {
        NoGradGuard no_grad;
        (void)forward_only.call();
      },
      &f.forward_cold_s, &f.forward_compiles);
  const bench::CompiledCall train = parts.compile_forward("inductor");
  cold(
      "train", [&] { parts.backward(train.call()); }, &f.train_cold_s, &f.train_compiles);
  f.eager = held_by(parts.forward);
  {
    NoGradGuard no_grad;
    f.held_without_grad = held_by(parts.forward).held;
  }
  f.compiled = held_by([&] {
    Tensor out = train.call();
    f.compiled_is_aot = out.grad_fn() && out.grad_fn()->name() == "CompiledFunctionBackward";
    return out;
  });
  return f;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

std::string training_notes(const TrainingFigures& t) {
  std::string notes = std::to_string(t.train_compiles) + " / " + std::to_string(t.forward_compiles) + " compiler runs";
  if (!t.compiled_is_aot) notes += "; INTERPRETED: not a CompiledFunctionBackward";
  if (t.held_without_grad != 0) {
    char line[128];
    std::snprintf(line, sizeof line, "; the eager forward leaves %.1f MB alive without grad too (saved MB counts it)",
                  mib(t.held_without_grad));
    notes += line;
  }
  return notes;
}

}  // namespace

/// The rows of compile_times() as a JSON array.
std::string phases_json(const std::vector<CompileTimeRow>& rows) {
  std::string out = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const CompileTimeRow& r = rows[i];
    out += std::string(i ? ", " : "") + "{\"phase\": \"" + r.phase + "\", \"part_of\": \"" + r.parent +
           "\", \"count\": " + std::to_string(r.count) + ", \"seconds\": " + json_number(r.total_seconds) +
           ", \"cpu_seconds\": " + json_number(r.cpu_seconds) + "}";
  }
  return out + "]";
}

/// GFLOP/s of `threads` threads each running independent chains of vector FMAs (the
/// machine's multiply-add peak: 12 accumulators hide the FMA latency on current cores).
double fma_peak_gflops(int threads) {
  constexpr int kChains = 12;
  constexpr int64_t kIters = 20'000'000;
#if defined(__AVX512F__)
  using V = __m512;
  constexpr int kLanes = 16;
#define EMBER_BENCH_SET1 _mm512_set1_ps
#define EMBER_BENCH_FMA _mm512_fmadd_ps
#define EMBER_BENCH_ADD _mm512_add_ps
#define EMBER_BENCH_STORE _mm512_storeu_ps
#else
  using V = __m256;
  constexpr int kLanes = 8;
#define EMBER_BENCH_SET1 _mm256_set1_ps
#define EMBER_BENCH_FMA _mm256_fmadd_ps
#define EMBER_BENCH_ADD _mm256_add_ps
#define EMBER_BENCH_STORE _mm256_storeu_ps
#endif
  auto run = [&](int64_t iters) {
    volatile float sink = 0;
#pragma omp parallel num_threads(threads)
    {
      V acc[kChains];
      for (int c = 0; c < kChains; ++c) acc[c] = EMBER_BENCH_SET1(static_cast<float>(c) * 1e-3f);
      const V a = EMBER_BENCH_SET1(0.999999f), b = EMBER_BENCH_SET1(1e-7f);
      for (int64_t i = 0; i < iters; ++i)
        for (int c = 0; c < kChains; ++c) acc[c] = EMBER_BENCH_FMA(acc[c], a, b);
      V total = acc[0];
      for (int c = 1; c < kChains; ++c) total = EMBER_BENCH_ADD(total, acc[c]);
      float lanes[kLanes];
      EMBER_BENCH_STORE(lanes, total);
      const float t = lanes[0];
#pragma omp critical
      sink = sink + t;
    }
    (void)sink;
  };
#undef EMBER_BENCH_SET1
#undef EMBER_BENCH_FMA
#undef EMBER_BENCH_ADD
#undef EMBER_BENCH_STORE
  run(kIters / 20);  // wake the team
  double best = INFINITY;
  for (int r = 0; r < 3; ++r) best = std::min(best, seconds_of([&] { run(kIters); }));
  return static_cast<double>(threads) * kIters * kChains * kLanes * 2 / best / 1e9;
}

/// The GEMM steps of a compiled row's kernel profile (Note [inductor], "The trace
/// directory"): `iters` calls of a new compile with the profile on, then each `extern
/// aten::mm`/`aten::addmm` or `frozen linear` step's mean ms and m x k x n, as table lines
/// with GFLOP/s and the share of `peak`.
std::string profiled_gemms(const bench::Workload& w, const fs::path& dir, int iters, double peak) {
  config().inductor.trace.enabled = true;
  config().inductor.trace.kernel_profile = true;
  config().inductor.trace.debug_dir = dir.string();
  {
    bench::CompiledCall c = w.compile("inductor");
    for (int i = 0; i < std::max(iters, 3) + 1; ++i) (void)c.call();  // the profile is written when c goes
  }
  config().inductor.trace.enabled = false;
  config().inductor.trace.kernel_profile = false;
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() != "kernel_profile.txt") continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      const bool gemm = line.find("extern aten::mm ") != std::string::npos ||
                        line.find("extern aten::addmm ") != std::string::npos ||
                        line.find("frozen linear ") != std::string::npos;
      long m = 0, k = 0, n = 0;
      // The shape: the first "<m>x<k>x<n>" after the step's name.
      for (size_t p = line.find('x'); gemm && p != std::string::npos; p = line.find('x', p + 1)) {
        size_t b = p;
        while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
        if (b < p && std::sscanf(line.c_str() + b, "%ldx%ldx%ld", &m, &k, &n) == 3) break;
        m = k = n = 0;
      }
      if (!gemm || !m) continue;
      // The columns after the name: total ms, mean ms, share, GB/s.
      std::istringstream cols(line);
      std::vector<std::string> tokens;
      for (std::string t; cols >> t;) tokens.push_back(t);
      if (tokens.size() < 4) continue;
      const double mean_ms = std::atof(tokens[tokens.size() - 3].c_str());
      const double gflops = 2.0 * m * k * n / (mean_ms * 1e-3) / 1e9;
      const size_t name_from = line.find(line.find("frozen") != std::string::npos ? "frozen" : "extern");
      const size_t name_to = line.find(',', name_from);
      std::string name = line.substr(name_from, std::min(name_to, line.find("  ", name_from)) - name_from);
      char row[256];
      std::snprintf(row, sizeof row, "%-8s | %-62.62s | %9.3f | %8.1f | %8.1f%%\n", w.id.c_str(), name.c_str(), mean_ms,
                    gflops, 100 * gflops / peak);
      out += row;
    }
  }
  return out;
}

/// One GEMM of W4/W5: [m, k] @ [k, n] with the epilogue freezing runs inside it.
struct WorkloadGemm {
  std::string row, name;
  int64_t m, k, n;
  std::vector<kernels::cpu::LinearPostOp> post_ops;
};

/// The GEMMs of the selected W4/W5 rows (docs/workloads.md's shapes).
std::vector<WorkloadGemm> workload_gemms(const std::vector<std::string>& only) {
  using Op = kernels::cpu::LinearPostOp;
  const Op gelu_erf{Op::Kind::GeluErf, false}, gelu_tanh{Op::Kind::GeluTanh, false}, add{Op::Kind::Add, false};
  std::vector<WorkloadGemm> out;
  if (bench::selected("W4", only)) {
    out.push_back({"W4", "fc1 +bias +gelu_erf", 256, 1024, 4096, {gelu_erf}});
    out.push_back({"W4", "fc2 +bias +residual", 256, 4096, 1024, {add}});
  }
  for (const auto& [b, t] : std::vector<std::pair<int64_t, int64_t>>{{8, 128}, {1, 512}}) {
    const std::string row = "W5-" + std::to_string(b) + "x" + std::to_string(t);
    if (!bench::selected(row, only)) continue;
    out.push_back({row, "c_attn +bias", b * t, 768, 2304, {}});
    out.push_back({row, "attn c_proj +bias +residual", b * t, 768, 768, {add}});
    out.push_back({row, "c_fc +bias +gelu_tanh", b * t, 768, 3072, {gelu_tanh}});
    out.push_back({row, "mlp c_proj +bias +residual", b * t, 3072, 768, {add}});
  }
  return out;
}

/// Each GEMM of `gemms` timed alone (median of `iters` calls, unpacked and packed
/// alternating), its GFLOP/s beside the FMA peak.
void print_gemm_table(const std::vector<WorkloadGemm>& gemms, int iters, double peak1, double peak,
                      const std::string& profiled) {
  const int threads = omp_get_max_threads();
  if (!profiled.empty()) {
    std::printf("\nGEMMs of W4/W5 inside the compiled workload (kernel profile of a new compile, %d calls: each extern "
                "mm/addmm, or frozen linear with its epilogue, mean ms), %d threads; FMA peak %.1f GFLOP/s\n",
                std::max(iters, 3) + 1, threads, peak);
    std::printf("%-8s | %-62s | %9s | %8s | %s\n", "id", "step", "mean ms", "GFLOP/s", "% of peak");
    std::printf("%s", profiled.c_str());
  }
  std::printf("\nGEMMs of W4/W5 alone at the workload's shapes, %d threads. FMA peak (vector FMA loop): %.1f GFLOP/s on 1 "
              "thread, %.1f on %d.\nunpacked: the eager mm an unfrozen compiled graph calls (autotuned, Note [sgemm "
              "autotuning]; its epilogue is a generated kernel, not counted); packed: freezing's oneDNN matmul on the "
              "weight packed once, bias and epilogue inside. GFLOP/s = 2mkn / median time.\n",
              threads, peak1, peak, threads);
  std::printf("%-8s | %-28s | %16s | %10s | %8s | %9s | %8s | %9s | %s\n", "id", "GEMM", "m x k x n", "unpacked ms",
              "GFLOP/s", "% of peak", "packed ms", "GFLOP/s", "% of peak");
  manual_seed(0);
  for (const WorkloadGemm& g : gemms) {
    NoGradGuard no_grad;
    const Tensor x = randn({g.m, g.k}), w = randn({g.n, g.k}) * 0.02, bias = randn({g.n}), res = randn({g.m, g.n});
    const Tensor wt = w.t();
    const kernels::cpu::PackedLinear packed(g.m, g.k, g.n, g.k, 1, wt, bias, g.post_ops);
    Tensor out = empty({g.m, g.n});
    std::vector<const float*> operands;
    for (const auto& op : g.post_ops)
      if (op.kind == kernels::cpu::LinearPostOp::Kind::Add) operands.push_back(static_cast<const float*>(res.raw_data_ptr()));
    const auto [unpacked_ms, packed_ms] = interleaved_median_ms([&] { return mm(x, wt); },
                                                                [&] {
                                                                  packed.run(static_cast<const float*>(x.raw_data_ptr()),
                                                                             operands,
                                                                             static_cast<float*>(out.raw_data_ptr()));
                                                                  return out;
                                                                },
                                                                iters);
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.k) * static_cast<double>(g.n);
    const double gu = flops / (unpacked_ms * 1e-3) / 1e9, gp = flops / (packed_ms * 1e-3) / 1e9;
    char shape[48];
    std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", static_cast<long>(g.m), static_cast<long>(g.k),
                  static_cast<long>(g.n));
    std::printf("%-8s | %-28s | %16s | %10.3f | %8.1f | %8.1f%% | %9.3f | %8.1f | %8.1f%%\n", g.row.c_str(),
                g.name.c_str(), shape, unpacked_ms, gu, 100 * gu / peak, packed_ms, gp, 100 * gp / peak);
    std::fflush(stdout);
  }
}

int main(int argc, char** argv) {
  // --phases is this program's own; the other options are every workload program's.
  std::vector<char*> args(argv, argv + argc);
  const bool print_phases = bench::take_flag(args, "--phases");
  const bool freezing = bench::take_flag(args, "--freezing");
  const auto options = bench::parse_options(static_cast<int>(args.size()), args.data());
  if (!options) return 2;
  const auto& [json_path, iters, only] = *options;
  const fs::path cache_root = fs::temp_directory_path() / ("ember_bench_inductor_" + std::to_string(getpid()));
  fs::remove_all(cache_root);

  const double triad = bench::triad_gbps();
  const int threads = omp_get_max_threads();
  std::printf("Ember eager vs inductor%s, %d threads; STREAM triad: %.1f GB/s\n",
              freezing ? " (inductor.freezing on)" : "", threads, triad);
  std::printf(
      "ms: median of %d calls each, eager and compiled alternating, after 3 warm-up calls.\n"
      "cold/warm compile s: first call of a new compiled function with an empty cache dir / first call\n"
      "after reset() with the cache filled by two calls; both include one execution (notes: the warm one's\n"
      "excess over the median compiled call). GB/s: the compiled\n"
      "run over the minimum bytes of docs/workloads.md. max |diff|: compiled against eager; tolerance %.0e + %.0e * |eager|;\n"
      "W8, W9 (loss, gradients, parameters after the step, buffers of a compiled and an eager copy of the model,\n"
      "after the first step): each tensor's tolerance also adds %.0e * its largest |eager|, and W8's parameters\n"
      "get atol 2 * lr + 1e-4 (AdamW's first update is about +-lr whatever the gradient's size).\n",
      iters, kAtol, kRtol, bench::detail::kOfMax);
  std::printf("%-8s | %10s | %11s | %7s | %14s | %14s | %6s | %10s | %9s | %s\n", "id", "eager ms", "compiled ms",
              "speedup", "cold compile s", "warm compile s", "GB/s", "% of triad", "max |diff|", "notes");
  std::string json = "{\"threads\": " + std::to_string(threads) + ", \"freezing\": " + (freezing ? "true" : "false") + ", \"triad_gbps\": " + json_number(triad) +
                     ", \"iters\": " + std::to_string(iters) + ", \"rows\": [";
  bool first = true, all_close = true;
  // W4/W5: their GEMMs against the FMA peak (print_gemm_table), measured first, on a quiet pool.
  const std::vector<WorkloadGemm> gemms = workload_gemms(only);
  const double peak1 = gemms.empty() ? NAN : fma_peak_gflops(1);
  const double peak = gemms.empty() || threads == 1 ? peak1 : fma_peak_gflops(threads);
  std::string profiled;
  std::string training_table;
  auto workloads = bench::memory_bound_workloads();
  for (auto& w : bench::block_workloads()) workloads.push_back(std::move(w));
  for (auto& w : bench::training_workloads()) workloads.push_back(std::move(w));
  for (const auto& w : workloads) {
    if (!bench::selected(w.id, only)) continue;
    const std::vector<bench::CheckedTensors> expected = results_of(w, w.run(), w.state);

    const fs::path cache = cache_root / w.id;
    fs::create_directories(cache);
    config().inductor.cache_dir = cache.string();
    config().inductor.freezing = freezing;
    bench::CompiledCall compiled = w.compile("inductor");
    Tensor out;
    CallLog cold_log;
    reset_compile_times();
    const double cold_s = seconds_of([&] { cold_log = logged([&] { out = compiled.call(); }); });
    const std::vector<CompileTimeRow> cold_phases = compile_times_rows();
    const std::string cold_table = compile_times();
    std::string failed;
    const Diff diff = compare_groups(results_of(w, out, compiled.state), expected, &failed);
    all_close = all_close && diff.close;

    // A second call before reset(): a training step's graphs after its first differ from
    // the first's (SGD's first step creates each momentum buffer as a copy of the gradient,
    // later steps update it), so the cache holds every graph a later call traces.
    (void)compiled.call();
    compiled.reset();
    const int64_t compiles_before = inductor::compiler_invocations();
    const double warm_s = seconds_of([&] { (void)compiled.call(); });
    const int64_t warm_compiles = inductor::compiler_invocations() - compiles_before;

    const auto [eager_ms, compiled_ms] = interleaved_median_ms(w.run, compiled.call, iters);

    // The warm compile's own cost: the warm call less one compiled call's median (both run
    // the function once), what a cache hit adds to a first call.
    const double warm_overhead_ms = warm_s * 1e3 - compiled_ms;
    char overhead[64];
    std::snprintf(overhead, sizeof overhead, "; warm compile %.1f ms above a call", warm_overhead_ms);
    std::string notes = std::to_string(cold_log.graphs) + (cold_log.graphs == 1 ? " graph, " : " graphs, ") +
                        std::to_string(cold_log.kernels) + " kernels" + overhead;
    if (cold_log.interpreted > 0)
      notes += "; INTERPRETED: an input requires grad and AOT autograd could not compile the graph; it ran eagerly";
    if (warm_compiles > 0) notes += "; warm call ran the C++ compiler " + std::to_string(warm_compiles) + "x";
    if (!diff.close) notes += "; MISMATCH: compiled differs from eager beyond the tolerance (" + failed + ")";

    char gb_col[32] = "-", pct_col[32] = "-";
    double gbps = NAN;
    if (w.min_bytes > 0) {
      gbps = w.min_bytes / (compiled_ms * 1e-3) / 1e9;
      std::snprintf(gb_col, sizeof gb_col, "%.1f", gbps);
      std::snprintf(pct_col, sizeof pct_col, "%.1f%%", 100 * gbps / triad);
    }
    std::printf("%-8s | %10.2f | %11.2f | %6.2fx | %14.2f | %14.2f | %6s | %10s | %9.2e | %s\n", w.id.c_str(), eager_ms,
                compiled_ms, eager_ms / compiled_ms, cold_s, warm_s, gb_col, pct_col, diff.max_abs, notes.c_str());
    if (print_phases) std::printf("%s cold compile by phase. %s\n", w.id.c_str(), cold_table.c_str());
    if (w.id == "W4" || w.id.rfind("W5-", 0) == 0) profiled += profiled_gemms(w, cache / "profile", iters, peak);
    std::fflush(stdout);

    json += std::string(first ? "" : ", ") + "{\"id\": \"" + w.id + "\", \"workload\": \"" + w.what +
            "\", \"eager_ms\": " + json_number(eager_ms) + ", \"compiled_ms\": " + json_number(compiled_ms) +
            ", \"speedup\": " + json_number(eager_ms / compiled_ms) + ", \"cold_compile_s\": " + json_number(cold_s) +
            ", \"warm_compile_s\": " + json_number(warm_s) + ", \"warm_overhead_ms\": " + json_number(warm_overhead_ms) +
            ", \"warm_compiler_runs\": " + std::to_string(warm_compiles) + ", \"gbps\": " + json_number(gbps) +
            ", \"pct_of_triad\": " + json_number(w.min_bytes > 0 ? 100 * gbps / triad : NAN) +
            ", \"max_abs_diff\": " + json_number(diff.max_abs) +
            ", \"within_tolerance\": " + (diff.close ? "true" : "false") +
            ", \"graphs\": " + std::to_string(cold_log.graphs) + ", \"kernels\": " + std::to_string(cold_log.kernels) +
            ", \"interpreted\": " + (cold_log.interpreted > 0 ? "true" : "false") +
            ", \"cold_compile_phases\": " + phases_json(cold_phases);
    if (w.training) {
      const TrainingFigures t = measure_training(*w.training, cache);
      char line[320];
      std::snprintf(line, sizeof line, "%-8s | %14.1f | %17.1f | %17.1f | %20.1f | %15.2f | %18.2f | %5.2fx | %s\n",
                    w.id.c_str(), mib(t.eager.held), mib(t.compiled.held), mib(t.eager.peak), mib(t.compiled.peak),
                    t.train_cold_s, t.forward_cold_s, t.train_cold_s / t.forward_cold_s, training_notes(t).c_str());
      training_table += line;
      json += ", \"saved_bytes_eager\": " + json_number(t.eager.held) +
              ", \"held_bytes_eager_without_grad\": " + json_number(t.held_without_grad) +
              ", \"saved_bytes_compiled\": " + json_number(t.compiled.held) +
              ", \"forward_peak_bytes_eager\": " + json_number(t.eager.peak) +
              ", \"forward_peak_bytes_compiled\": " + json_number(t.compiled.peak) +
              ", \"train_graphs_cold_compile_s\": " + json_number(t.train_cold_s) +
              ", \"forward_only_cold_compile_s\": " + json_number(t.forward_cold_s) +
              ", \"train_graphs_compiler_runs\": " + std::to_string(t.train_compiles) +
              ", \"forward_only_compiler_runs\": " + std::to_string(t.forward_compiles);
    }
    json += "}";
    first = false;
  }
  if (!training_table.empty()) {
    std::printf(
        "\nTraining rows. saved MB: live CPU tensor bytes after the forward and loss minus before, the result\n"
        "left out: what the autograd graph holds for backward (eager: the grad_fn nodes' saved tensors; compiled:\n"
        "CompiledFunctionBackward's). fwd peak MB: the most live during that forward, above where it began.\n"
        "train compile s: cold (fresh cache dir) compile of the forward+loss recording the graph, then backward:\n"
        "the AOT forward and backward graphs, one execution of each. fwd-only compile s: cold compile of the same\n"
        "forward+loss under NoGradGuard (the inference graph), one execution. W8, W9 compiled step: forward+loss\n"
        "compiled (backward runs the compiled backward graph), optimizer step compiled as a function of its own;\n"
        "zero_grad and the call of backward() eager.\n");
    std::printf("%-8s | %14s | %17s | %17s | %20s | %15s | %18s | %6s | %s\n", "id", "saved MB eager",
                "saved MB compiled", "fwd peak MB eager", "fwd peak MB compiled", "train compile s",
                "fwd-only compile s", "ratio", "notes (compiler runs: train / fwd-only)");
    std::printf("%s", training_table.c_str());
  }
  json += "]}\n";
  if (json_path) std::ofstream(json_path) << json;
  if (!gemms.empty()) print_gemm_table(gemms, iters, peak1, peak, profiled);
  fs::remove_all(cache_root);
  return all_close ? 0 : 1;
}
