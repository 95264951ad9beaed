#!/usr/bin/env python3
"""The workloads of shared/bench/WORKLOADS.md in PyTorch, for side-by-side runs with
Ember's bench programs: same shapes, dtype, and thread count (OMP_NUM_THREADS or
--threads), W4-W7 on the blocks of torch_blocks.py (Ember's ember/nn/blocks.h). Prints
eager ms (and GB/s for W1-W3), and torch.compile ms where PyTorch >= 2.
`--only W4,W5` runs the rows whose id starts with one of the given prefixes."""
import argparse
import json
import os
import statistics
import time

import torch

from torch_blocks import BasicBlock, Block, MLPBlock


def median_ms(f, warmup=3, iters=21):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def w1(x):
    return torch.sigmoid(torch.relu(x * 2 + 1) * x - 0.5) * torch.tanh(x) + torch.clamp(torch.exp(x), max=10)


def infer(block, x):
    """An inference row (eval mode, under no_grad like every row but W7), on `block` or on
    the compiled block handed in."""
    return lambda m=block: m(x)


def train_step(block, x, g):
    """W7: W4's training step; grads set to None before each step, as zero_grad() does in
    PyTorch 2 (PyTorch 1.13 zeroes by default, hence set_to_none=True)."""

    def step(m=block):
        with torch.enable_grad():
            block.zero_grad(set_to_none=True)
            x.grad = None
            y = m(x)
            y.backward(g)
        return y

    return step


def block_workloads():
    torch.manual_seed(0)
    mlp, gpt, basic, mlp_train = MLPBlock(), Block(), BasicBlock(), MLPBlock()
    for m in (mlp, gpt, basic):
        m.eval()
    x4 = torch.randn(256, 1024)
    x5a = torch.randn(8, 128, 768)
    x5b = torch.randn(1, 512, 768)
    x6 = torch.randn(8, 64, 56, 56)
    x7 = torch.randn(256, 1024).requires_grad_()
    g7 = torch.randn(256, 1024)
    return [
        ("W4", "MLP block, x[256,1024]", infer(mlp, x4), 0, mlp),
        ("W5-8x128", "GPT-2 block, x[8,128,768]", infer(gpt, x5a), 0, gpt),
        ("W5-1x512", "GPT-2 block, x[1,512,768]", infer(gpt, x5b), 0, gpt),
        ("W6", "BasicBlock eval, x[8,64,56,56]", infer(basic, x6), 0, basic),
        ("W7", "W4 train step (fwd+bwd), x[256,1024]", train_step(mlp_train, x7, g7), 0, mlp_train),
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count())
    p.add_argument("--iters", type=int, default=21)
    p.add_argument("--compile", action="store_true", help="also time torch.compile (PyTorch >= 2)")
    p.add_argument("--only", default="", help="comma-separated id prefixes (default: every row)")
    p.add_argument("--json")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    mib = 1024 * 1024
    x1 = torch.randn(4096, 4096)
    x2 = torch.randn(8192, 1024)
    x3 = torch.randn(8192, 1024)
    w3, b3 = torch.randn(1024), torch.randn(1024)
    workloads = [
        ("W1", "pointwise chain, x[4096,4096]", lambda: w1(x1), 128 * mib, None),
        ("W2", "softmax(dim=-1), x[8192,1024]", lambda: torch.softmax(x2, -1), 64 * mib, None),
        ("W3", "layer_norm(1024), x[8192,1024]",
         lambda: torch.nn.functional.layer_norm(x3, (1024,), w3, b3, 1e-5), 64 * mib + 8 * 1024, None),
    ] + block_workloads()
    only = [o for o in args.only.split(",") if o]
    print(f"PyTorch {torch.__version__} eager, {torch.get_num_threads()} threads")
    print(f"{'id':8} | {'workload':36} | {'eager ms':>10} | {'GB/s':>8}" + (" | compiled ms" if args.compile else ""))
    rows = []
    with torch.no_grad():
        for wid, what, f, nbytes, module in workloads:
            if only and not any(wid.startswith(o) for o in only):
                continue
            ms = median_ms(f, iters=args.iters)
            row = {"id": wid, "eager_ms": ms}
            if nbytes:
                row["gbps"] = nbytes / (ms * 1e-3) / 1e9
                line = f"{wid:8} | {what:36} | {ms:10.2f} | {row['gbps']:8.1f}"
            else:
                line = f"{wid:8} | {what:36} | {ms:10.2f} | {'-':>8}"
            if args.compile:
                cf = torch.compile(f) if module is None else (lambda f=f, cm=torch.compile(module): f(cm))
                row["compiled_ms"] = median_ms(cf, iters=args.iters)
                line += f" | {row['compiled_ms']:.2f}"
            rows.append(row)
            print(line, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows}, fh)


if __name__ == "__main__":
    main()
