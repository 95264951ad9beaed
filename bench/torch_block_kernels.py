"""bench/torch_block_kernels.py — PyTorch's rows of bench_block_kernels (bench/block_kernels.cpp):
the GPT-2 block's four linear layers as addmm(bias, x, w^T) at M = 128 and 1024 rows, and
scaled_dot_product_attention at [B, 12, T, 64], causal (is_causal) and with the additive
causal mask, in eval mode under no_grad. Median ms of `iters` calls after 3 warm-up calls.
Then the block (torch_blocks.Block) under torch.compile: W10 once with dynamic=True over
x[1, T, 768], T in 32 … 512, and W5's x[8, 128, 768] statically, with
torch._inductor.config.freezing off and on.
Usage: python torch_block_kernels.py [iters=31] (threads: OMP_NUM_THREADS)."""
import sys
import time

import torch
import torch.nn.functional as F

from torch_blocks import Block


def min_median_ms(f, iters):
    for _ in range(3):
        f()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[0], t[len(t) // 2]


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 31
    torch.manual_seed(0)
    print(f"{'kernel':<34} {'min ms':>10} {'median ms':>10} {'GFLOP/s':>10}   (torch {torch.__version__}, {torch.get_num_threads()} threads)")
    with torch.no_grad():
        for M in (128, 1024):
            for K, N in ((768, 2304), (768, 768), (768, 3072), (3072, 768)):
                x, w, b = torch.randn(M, K), torch.randn(N, K), torch.randn(N)
                ms, med = min_median_ms(lambda: torch.addmm(b, x, w.t()), iters)
                print(f"{f'linear M={M} {K}x{N}':<34} {ms:10.3f} {med:10.3f} {2.0 * M * N * K / ms / 1e6:10.1f}")
        for B, T in ((1, 128), (1, 512), (8, 128)):
            q, k, v = (torch.randn(B, 12, T, 64) for _ in range(3))
            mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            flops = 2.0 * 2.0 * B * 12 * (T * T + T) / 2.0 * 64
            for causal in (True, False):
                if causal:
                    f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                else:
                    f = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                ms, med = min_median_ms(f, iters)
                name = f"attention [{B},12,{T},64] {'causal' if causal else 'mask'}"
                print(f"{name:<34} {ms:10.3f} {med:10.3f} {flops / ms / 1e6:10.1f}")
        block = Block().eval()
        torch._dynamo.config.recompile_limit = 64
        dyn = torch.compile(block, dynamic=True)
        for T in (32, 77, 128, 200, 384, 512):
            x = torch.randn(1, T, 768)
            ms, med = min_median_ms(lambda: dyn(x), iters)
            print(f"{f'W10 dynamic T={T}':<34} {ms:10.3f} {med:10.3f}")
        x5 = torch.randn(8, 128, 768)
        for freezing in (False, True):
            torch._dynamo.reset()
            torch._inductor.config.freezing = freezing
            fixed = torch.compile(block, dynamic=False)
            ms, med = min_median_ms(lambda: fixed(x5), iters)
            print(f"{'W5 x[8,128,768]' + (' freezing' if freezing else ''):<34} {ms:10.3f} {med:10.3f}")


if __name__ == "__main__":
    main()
