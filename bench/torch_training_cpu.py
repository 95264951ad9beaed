"""The twin of bench_training_step_cpu (bench/training_step_cpu.cpp) in PyTorch: the
training rows W7-W9 timed in the process's CPU time (time.process_time), eager and
torch.compile steps alternating after 3 warm-up calls each; min and median over --iters
steps, and minor page faults per step. For one thread on a shared machine:

    OMP_NUM_THREADS=1 taskset -c 0 python bench/torch_training_cpu.py [--iters N] [--only W8,W9] [--phases]
"""
import argparse
import resource
import time

import torch

from torch_training import PHASES
from torch_workloads import block_workloads


def time_side(f, ms, faults):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.process_time()
    f()
    ms.append((time.process_time() - t0) * 1e3)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=21)
    ap.add_argument("--only", default="")
    ap.add_argument("--phases", action="store_true",
                    help="under W8 and W9, the wall-clock median of each part of the step, eager and compiled")
    args = ap.parse_args()
    only = [p for p in args.only.split(",") if p]
    print(f"PyTorch {torch.__version__} training steps in process CPU time, {torch.get_num_threads()} thread(s); "
          f"{args.iters} steps each, eager and torch.compile alternating,\nafter 3 warm-up calls each. "
          "faults: minor page faults per step.")
    print(f"{'id':<4} | {'eager min ms':>13} | {'eager med ms':>12} | {'eager faults':>12} | {'compiled min ms':>16} | "
          f"{'compiled med ms':>15} | {'compiled faults':>15}")
    for row in block_workloads():
        if row.training is None or (only and not any(row.id.startswith(p) for p in only)):
            continue
        wid, eager_step, compiled_step = row.id, row.run, row.make_compiled()
        for _ in range(3):
            eager_step()
            compiled_step()
        e_ms, e_f, c_ms, c_f = [], [], [], []
        for _ in range(args.iters):
            time_side(eager_step, e_ms, e_f)
            time_side(compiled_step, c_ms, c_f)
        med = lambda v: sorted(v)[len(v) // 2]
        print(f"{wid:<4} | {min(e_ms):13.2f} | {med(e_ms):12.2f} | {sum(e_f) / len(e_f):12.0f} | {min(c_ms):16.2f} | "
              f"{med(c_ms):15.2f} | {sum(c_f) / len(c_f):15.0f}")
        if args.phases and row.training.eager_phases:
            for side, steps in (("eager:   ", row.training.eager_phases), ("compiled:", row.training.compiled_phases)):
                cols = zip(*steps[-args.iters:])
                print(f"     wall-clock median ms, {side} " +
                      ", ".join(f"{name} {med(list(c)):.2f}" for name, c in zip(PHASES, cols)))


if __name__ == "__main__":
    main()
