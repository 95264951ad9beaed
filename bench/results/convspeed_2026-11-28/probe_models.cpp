// min wall ms and process CPU ms per call of the exported CNN (DIR /tmp/cs/exp from bench/torch_exported.py) compiled by
// the inductor, and W6 compiled; linked against a build tree (main or this branch) by hand.
#include <sys/resource.h>
#include <chrono>
#include <cstdio>
#include <functional>
#include <algorithm>
#include "ember/compile.h"
#include "ember/config.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "workloads.h"
using namespace ember;
static double cpu_s() { rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6*(r.ru_utime.tv_usec + r.ru_stime.tv_usec); }
static void time_it(const char* name, const std::function<void()>& f, int n) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> w;
  const double c0 = cpu_s();
  for (int i = 0; i < n; ++i) { auto t0 = std::chrono::steady_clock::now(); f(); w.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()); }
  const double c = (cpu_s() - c0) * 1e3 / n;
  std::sort(w.begin(), w.end());
  std::printf("%-10s min %8.3f  p25 %8.3f  med %8.3f ms  cpu %8.3f ms/call\n", name, w[0], w[n/4], w[n/2], c);
}
int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 40;
  NoGradGuard ng;
  ExportedProgram program = load_exported("/tmp/cs/exp/cnn.pt2");
  const auto io = load_safetensors("/tmp/cs/exp/cnn_io.safetensors");
  const Tensor x = io.at("input.x");
  auto imported = program.compile("inductor");
  time_it("cnn_eager", [&]{ program({x}); }, n);
  time_it("cnn_ind", [&]{ imported({x}); }, n);
  auto ws = bench::block_workloads();
  for (auto& w : ws) if (w.id == "W6") {
    auto c = w.compile("inductor");
    time_it("W6_eager", [&]{ w.run(); }, n/2);
    time_it("W6_ind", [&]{ c.call(); }, n/2);
  }
}
