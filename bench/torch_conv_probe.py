"""The twin of bench_conv_probe (bench/conv_probe.cpp) in PyTorch: W9's convolution
(x[8,64,56,56], 3x3 64->64, padding 1) as aten::convolution and aten::convolution_backward
(data + weights, weights only) on contiguous (NCHW) tensors and on channels_last ones, the
layout torch.compile's layout optimization keeps between the convolutions of a graph. Each
time: the minimum over --iters calls of the process's CPU time and the median wall time.

    OMP_NUM_THREADS=1 taskset -c 0 python bench/torch_conv_probe.py [--iters N]
"""
import argparse
import time

import torch


def timing(f, iters):
    f()
    f()
    cpu, wall = [], []
    for _ in range(iters):
        c0, w0 = time.process_time(), time.perf_counter()
        f()
        wall.append((time.perf_counter() - w0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return f"{min(cpu):8.2f} / {sorted(wall)[len(wall) // 2]:8.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=15)
    args = ap.parse_args()
    print(f"W9's convolution in PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s); ms: min process CPU / median wall over {args.iters} calls")
    print(f"{'PyTorch op':<22} {'layout':<14} {'cpu / wall':>19}")
    conv_args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    torch.manual_seed(0)
    for name, fmt in (("NCHW", torch.contiguous_format), ("channels_last", torch.channels_last)):
        x = torch.randn(8, 64, 56, 56).to(memory_format=fmt)
        w = torch.randn(64, 64, 3, 3).to(memory_format=fmt)
        g = torch.randn(8, 64, 56, 56).to(memory_format=fmt)
        with torch.no_grad():
            rows = (
                ("convolution", lambda: torch.ops.aten.convolution(x, w, None, *conv_args)),
                ("backward data+weights",
                 lambda: torch.ops.aten.convolution_backward(g, x, w, None, *conv_args, [True, True, False])),
                ("backward weights",
                 lambda: torch.ops.aten.convolution_backward(g, x, w, None, *conv_args, [False, True, False])),
            )
            for op, f in rows:
                print(f"{op:<22} {name:<14} {timing(f, args.iters)}")


if __name__ == "__main__":
    main()
