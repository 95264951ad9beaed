// bench/exported_models.cpp — programs exported by PyTorch against the same models written
// with Ember's API: a small transformer block and a small CNN, each imported from
// DIR/<name>.pt2 (written by bench/torch_exported.py) and compiled with the inductor, and
// written here as C++ functions of Ember ops over the imported program's weights and
// compiled with ember::compile; both also run eagerly (the imported one with the
// interpreter). One row per model:
//
//   model | imported eager ms | imported inductor ms | API eager ms | API inductor ms |
//   imported/API (inductor) | first call s imported, API | max |diff| vs PyTorch
//
// ms: medians of --iters calls (default 21) after 3 warm-up rounds, the four functions
// called in turn, under NoGradGuard. first call: the compiled function's first call, with
// a fresh empty kernel cache (trace, code generation, C++ compiler, one run). max |diff|:
// each of the four results against PyTorch's output from DIR/<name>_io.safetensors; outside
// atol 1e-4 + rtol 1e-4 the row says MISMATCH and the exit status is 1.
//
//   python bench/torch_exported.py /tmp/exported          # PyTorch's side; writes the archives
//   build/bench/bench_exported_models /tmp/exported       # Ember's side
//
// Threads: OMP_NUM_THREADS (run both at the same count).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ember/compile.h"
#include "ember/config.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"

namespace {

using namespace ember;
using State = std::map<std::string, Tensor>;

/// bench/torch_exported.py's Block: pre-norm, causal attention written out, tanh GELU MLP.
Tensor block_api(const State& s, const Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2), heads = 8, h = d / heads;
  Tensor ln1 = layer_norm(x, {d}, s.at("ln1.weight"), s.at("ln1.bias"));
  std::vector<Tensor> qkv = split(linear(ln1, s.at("qkv.weight"), s.at("qkv.bias")), d, 2);
  auto heads_of = [&](const Tensor& z) { return z.view({b, t, heads, h}).transpose(1, 2); };
  Tensor q = heads_of(qkv[0]), k = heads_of(qkv[1]), v = heads_of(qkv[2]);
  Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(h)));
  att = masked_fill(att, s.at("mask").logical_not(), Scalar(-INFINITY));
  Tensor y = matmul(softmax(att, -1), v).transpose(1, 2).contiguous().view({b, t, d});
  Tensor r = x + linear(y, s.at("proj.weight"), s.at("proj.bias"));
  Tensor ln2 = layer_norm(r, {d}, s.at("ln2.weight"), s.at("ln2.bias"));
  return r + linear(gelu(linear(ln2, s.at("fc1.weight"), s.at("fc1.bias")), "tanh"), s.at("fc2.weight"),
                    s.at("fc2.bias"));
}

/// bench/torch_exported.py's SmallCNN in eval mode.
Tensor cnn_api(const State& s, const Tensor& x) {
  auto bn = [&](const Tensor& z, const std::string& p) {
    return batch_norm(z, s.at(p + ".weight"), s.at(p + ".bias"), s.at(p + ".running_mean"), s.at(p + ".running_var"),
                      false, 0.1, 1e-5);
  };
  Tensor y = bn(conv2d(x, s.at("conv1.weight"), s.at("conv1.bias"), {1, 1}, {1, 1}), "bn1").relu();
  y = max_pool2d(y, {2, 2});
  y = bn(conv2d(y, s.at("conv2.weight"), s.at("conv2.bias"), {2, 2}, {1, 1}), "bn2").relu();
  return linear(mean(y, {2, 3}), s.at("fc.weight"), s.at("fc.bias"));
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Max |got - want|, and whether every element is within atol 1e-4 + rtol 1e-4.
std::pair<double, bool> compare(const Tensor& got, const Tensor& want) {
  if (got.sizes() != want.sizes()) return {INFINITY, false};
  const Tensor diff = (got - want).abs();
  const bool ok = max(diff - (want.abs() * 1e-4 + 1e-4)).item<double>() <= 0;
  return {max(diff).item<double>(), ok};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--iters N]   (DIR from: python bench/torch_exported.py DIR)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int iters = 21;
  if (argc >= 4 && !std::strcmp(argv[2], "--iters")) iters = std::max(1, std::atoi(argv[3]));
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("ember_bench_exported_" + std::to_string(getpid()));
  config().inductor.cache_dir = cache.string();

  struct Model {
    std::string name;
    Tensor (*api)(const State&, const Tensor&);
  };
  const Model models[] = {{"block", block_api}, {"cnn", cnn_api}};
  std::printf("%-6s %12s %14s %10s %12s %10s %20s %12s\n", "model", "imported ms", "imported ind", "API ms",
              "API ind ms", "imp/API", "first call s imp/API", "max |diff|");
  int status = 0;
  for (const Model& m : models) {
    ExportedProgram program = load_exported(dir + "/" + m.name + ".pt2");
    const auto io = load_safetensors(dir + "/" + m.name + "_io.safetensors");
    const Tensor x = io.at("input.x"), want = io.at("output.0");
    const State& state = program.state();
    auto imported = program.compile("inductor");
    auto api = compile([&state, &m](const Tensor& in) { return m.api(state, in); },
                       {.backend = "inductor", .fullgraph = true, .name = m.name + "_api"});
    NoGradGuard no_grad;
    std::vector<Tensor> results(4);
    const double first_imported = seconds_of([&] { results[1] = imported({x})[0]; });
    const double first_api = seconds_of([&] { results[3] = api(x); });
    const std::vector<std::function<void()>> fns = {[&] { results[0] = program({x})[0]; },
                                                    [&] { results[1] = imported({x})[0]; },
                                                    [&] { results[2] = m.api(state, x); },
                                                    [&] { results[3] = api(x); }};
    std::vector<std::vector<double>> times(fns.size());
    for (int i = -3; i < iters; ++i)
      for (size_t f = 0; f < fns.size(); ++f) {
        const double s = seconds_of(fns[f]);
        if (i >= 0) times[f].push_back(s * 1e3);
      }
    std::vector<double> ms;
    for (auto& t : times) {
      std::sort(t.begin(), t.end());
      ms.push_back(t[t.size() / 2]);
    }
    double worst = 0;
    bool ok = true;
    for (const Tensor& r : results) {
      const auto [d, good] = compare(r, want);
      worst = std::max(worst, d);
      ok = ok && good;
    }
    char first[64];
    std::snprintf(first, sizeof first, "%.2f / %.2f", first_imported, first_api);
    std::printf("%-6s %12.3f %14.3f %10.3f %12.3f %9.2fx %20s %12.2e%s\n", m.name.c_str(), ms[0], ms[1], ms[2], ms[3],
                ms[1] / ms[3], first, worst, ok ? "" : "  MISMATCH");
    if (!ok) status = 1;
  }
  std::filesystem::remove_all(cache);
  return status;
}
