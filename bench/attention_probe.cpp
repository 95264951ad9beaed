// bench/attention_probe.cpp — the fused flash attention op against the unfused eager
// attention (matmul, scale, causal masked_fill, softmax, matmul) at W5's head shapes:
// [8, 12, 128, 64] and [1, 12, 512, 64], float32, causal. The two run alternately, `reps`
// rounds of `iters` calls each; prints each round's ms per call and the medians. Then the
// backward alone, in process CPU time: autograd::grad of q, k and v through a retained
// graph of each form (the unfused ops' derivatives against the fused op's backward op).
// Usage: bench_attention_probe [reps=7] [iters=20] [q_block kv_block] (threads: OMP_NUM_THREADS).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <vector>

#include "ember/ember.h"
#include "kernels/cpu/attention.h"

using namespace ember;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double ms_per_call(F&& f, int iters) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

/// Process CPU time per call of f, in ms.
template <typename F>
double cpu_ms_per_call(F&& f, int iters) {
  auto now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
  };
  const double t0 = now();
  for (int i = 0; i < iters; ++i) f();
  return (now() - t0) / iters;
}

/// The backward rounds of one shape: the math form's graph and the fused op's, each kept
/// (retain_graph), differentiated alternately.
void backward_rounds(int64_t B, int64_t T, int reps, int iters) {
  manual_seed(2);
  const Tensor q = randn({B, 12, T, 64}).requires_grad_(), k = randn({B, 12, T, 64}).requires_grad_(),
               v = randn({B, 12, T, 64}).requires_grad_(), g = randn({B, 12, T, 64});
  const Tensor mask = triu(ones({T, T}, kBool), 1);
  Tensor att = matmul(q, k.transpose(-2, -1)) * 0.125;
  const Tensor unfused = matmul(softmax(masked_fill(att, mask, -std::numeric_limits<double>::infinity()), -1), v);
  const Tensor fused = std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true));
  auto grads = [&](const Tensor& out) { return autograd::grad({out}, {q, k, v}, {g}, /*retain_graph=*/true); };
  double err = 0;
  {
    const auto a = grads(unfused), b = grads(fused);
    for (int i = 0; i < 3; ++i) err = std::max(err, max((a[i] - b[i]).abs()).item().to_double());
  }
  std::vector<double> a, b;
  for (int r = 0; r < reps; ++r) {
    a.push_back(cpu_ms_per_call([&] { grads(unfused); }, iters));
    b.push_back(cpu_ms_per_call([&] { grads(fused); }, iters));
    std::printf("[%lld,12,%lld,64] backward round %d: unfused %.3f ms, flash %.3f ms (CPU time)\n",
                static_cast<long long>(B), static_cast<long long>(T), r, a.back(), b.back());
  }
  std::printf("[%lld,12,%lld,64] backward median unfused %.3f ms, flash %.3f ms (%.2fx), max |grad diff| %.2e\n",
              static_cast<long long>(B), static_cast<long long>(T), median(a), median(b), median(a) / median(b), err);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7, iters = argc > 2 ? std::atoi(argv[2]) : 20;
  if (argc > 4) kernels::cpu::set_flash_blocks({.q = std::atoll(argv[3]), .kv = std::atoll(argv[4])});
  std::printf("flash blocks: %lld query rows x %lld key rows\n", static_cast<long long>(kernels::cpu::flash_blocks().q),
              static_cast<long long>(kernels::cpu::flash_blocks().kv));
  for (auto [B, T] : {std::pair<int64_t, int64_t>{8, 128}, {1, 512}}) backward_rounds(B, T, reps, iters);
  NoGradGuard no_grad;
  for (auto [B, T] : {std::pair<int64_t, int64_t>{8, 128}, {1, 512}}) {
    manual_seed(1);
    const Tensor q = randn({B, 12, T, 64}), k = randn({B, 12, T, 64}), v = randn({B, 12, T, 64});
    const Tensor mask = triu(ones({T, T}, kBool), 1);
    auto unfused = [&] {
      Tensor att = matmul(q, k.transpose(-2, -1)) * 0.125;
      return matmul(softmax(masked_fill(att, mask, -std::numeric_limits<double>::infinity()), -1), v);
    };
    auto fused = [&] { return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true)); };
    const double err = max((unfused() - fused()).abs()).item().to_double();
    std::vector<double> a, b;
    for (int r = 0; r < reps; ++r) {
      a.push_back(ms_per_call(unfused, iters));
      b.push_back(ms_per_call(fused, iters));
      std::printf("[%lld,12,%lld,64] round %d: unfused %.3f ms, flash %.3f ms\n", static_cast<long long>(B),
                  static_cast<long long>(T), r, a.back(), b.back());
    }
    std::printf("[%lld,12,%lld,64] median unfused %.3f ms, flash %.3f ms (%.2fx), max |diff| %.2e\n",
                static_cast<long long>(B), static_cast<long long>(T), median(a), median(b), median(a) / median(b), err);
  }
  return 0;
}
