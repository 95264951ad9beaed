#!/usr/bin/env python3
"""The workloads of shared/bench/WORKLOADS.md in PyTorch, for side-by-side runs with
Ember's bench programs: same shapes, dtype, and thread count (OMP_NUM_THREADS or
--threads). Prints eager ms and GB/s, and torch.compile ms where PyTorch >= 2."""
import argparse
import json
import os
import statistics
import time

import torch


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count())
    p.add_argument("--iters", type=int, default=21)
    p.add_argument("--compile", action="store_true", help="also time torch.compile (PyTorch >= 2)")
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
        ("W1", "pointwise chain, x[4096,4096]", lambda: w1(x1), 128 * mib),
        ("W2", "softmax(dim=-1), x[8192,1024]", lambda: torch.softmax(x2, -1), 64 * mib),
        ("W3", "layer_norm(1024), x[8192,1024]",
         lambda: torch.nn.functional.layer_norm(x3, (1024,), w3, b3, 1e-5), 64 * mib + 8 * 1024),
    ]
    print(f"PyTorch {torch.__version__} eager, {torch.get_num_threads()} threads")
    print(f"{'id':4} | {'workload':32} | {'eager ms':>10} | {'GB/s':>8}" + (" | compiled ms" if args.compile else ""))
    rows = []
    with torch.no_grad():
        for wid, what, f, nbytes in workloads:
            ms = median_ms(f, iters=args.iters)
            row = {"id": wid, "eager_ms": ms, "gbps": nbytes / (ms * 1e-3) / 1e9}
            line = f"{wid:4} | {what:32} | {ms:10.2f} | {row['gbps']:8.1f}"
            if args.compile:
                cf = torch.compile(f)
                row["compiled_ms"] = median_ms(cf, iters=args.iters)
                line += f" | {row['compiled_ms']:.2f}"
            rows.append(row)
            print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows}, fh)


if __name__ == "__main__":
    main()
