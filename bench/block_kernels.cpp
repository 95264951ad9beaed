// bench/block_kernels.cpp — the GPT-2 block's kernels one at a time, as its graph calls
// them (W5, W10 of docs/workloads.md): the four linear layers' addmm(bias, x, w^T) at
// M = T rows (K x N = 768x2304, 768x768, 768x3072, 3072x768) for M in 128 and 1024, and
// the fused flash attention op at [B, 12, T, 64], causal (is_causal) and with the additive
// causal mask the inductor's fuse_attention pass passes. One row per kernel: median ms of
// `iters` calls after 3 warm-up calls, GFLOP/s (attention: the causal half of the scores'
// and the output's multiply-adds). bench/torch_block_kernels.py prints PyTorch's rows at
// the same shapes. Then the block itself, compiled (backend "inductor", eval, no grad): W10
// once with dynamic=true over x[1, T, 768] for T in 32, 77, 128, 200, 384, 512, and W5's
// x[8, 128, 768] statically, with inductor.freezing off and on; same columns, GFLOP/s
// left out. Usage: bench_block_kernels [iters=31] (threads: OMP_NUM_THREADS).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "ember/ember.h"
#include "kernels/cpu/packed_linear.h"

using namespace ember;

namespace {

/// The fastest and the median wall-clock ms of `iters` calls of f, after 3 warm-up calls.
template <typename F>
std::pair<double, double> min_median_ms(F&& f, int iters) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 31;
  NoGradGuard no_grad;
  manual_seed(0);
  std::printf("%-34s %10s %10s %10s\n", "kernel", "min ms", "median ms", "GFLOP/s");
  for (int64_t M : {128, 1024}) {
    for (auto [K, N] : {std::pair<int64_t, int64_t>{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}}) {
      const Tensor x = randn({M, K}), w = randn({N, K}), b = randn({N});
      const auto [ms, med] = min_median_ms([&] { addmm(b, x, w.t()); }, iters);
      char name[64];
      std::snprintf(name, sizeof name, "linear M=%lld %lldx%lld", static_cast<long long>(M),
                    static_cast<long long>(K), static_cast<long long>(N));
      std::printf("%-34s %10.3f %10.3f %10.1f\n", name, ms, med, 2.0 * M * N * K / ms / 1e6);
      // Freezing's product: the weight packed once, the bias in the primitive.
      const kernels::cpu::PackedLinear packed(M, K, N, K, 1, w.t(), b, {});
      Tensor out = empty({M, N});
      const auto [pms, pmed] =
          min_median_ms([&] { packed.run(x.data_ptr<float>(), {}, out.data_ptr<float>()); }, iters);
      std::printf("%-34s %10.3f %10.3f %10.1f\n", "  packed weight (freezing)", pms, pmed, 2.0 * M * N * K / pms / 1e6);
    }
  }
  for (auto [B, T] : {std::pair<int64_t, int64_t>{1, 128}, {1, 512}, {8, 128}}) {
    const Tensor q = randn({B, 12, T, 64}), k = randn({B, 12, T, 64}), v = randn({B, 12, T, 64});
    const Tensor mask = masked_fill(zeros({T, T}), triu(ones({T, T}, kBool), 1),
                                    Scalar(-std::numeric_limits<double>::infinity()));
    // Multiply-adds of the causal half: scores and output, (T^2 + T) / 2 * 64 each.
    const double flops = 2.0 * 2.0 * B * 12 * (T * T + T) / 2.0 * 64;
    for (bool causal : {true, false}) {
      const auto [ms, med] = min_median_ms(
          [&] {
            if (causal)
              _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true);
            else
              _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, mask);
          },
          iters);
      char name[64];
      std::snprintf(name, sizeof name, "attention [%lld,12,%lld,64] %s", static_cast<long long>(B),
                    static_cast<long long>(T), causal ? "causal" : "mask");
      std::printf("%-34s %10.3f %10.3f %10.1f\n", name, ms, med, flops / ms / 1e6);
    }
  }
  // The block end to end.
  auto gpt = std::make_shared<nn::GPT2Block>();
  gpt->eval();
  auto run = [&](const Tensor& x) { return gpt->forward(x); };
  auto dyn = compile(run, {.backend = "inductor", .name = "w10_dynamic", .dynamic = true});
  for (int64_t T : {32, 77, 128, 200, 384, 512}) {
    const Tensor x = randn({1, T, 768});
    const auto [ms, med] = min_median_ms([&] { (void)dyn(x); }, iters);
    char name[64];
    std::snprintf(name, sizeof name, "W10 dynamic T=%lld", static_cast<long long>(T));
    std::printf("%-34s %10.3f %10.3f\n", name, ms, med);
  }
  const Tensor x5 = randn({8, 128, 768});
  for (bool freezing : {false, true}) {
    config().inductor.freezing = freezing;
    auto fixed = compile(run, {.backend = "inductor", .name = freezing ? "w5_frozen" : "w5", .dynamic = false});
    const auto [ms, med] = min_median_ms([&] { (void)fixed(x5); }, iters);
    std::printf("%-34s %10.3f %10.3f\n", freezing ? "W5 x[8,128,768] freezing" : "W5 x[8,128,768]", ms, med);
  }
  config().inductor.freezing = false;
  return 0;
}
