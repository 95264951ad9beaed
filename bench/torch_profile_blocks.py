"""Per-op breakdown of PyTorch's compiled W6 (BasicBlock eval, x[8,64,56,56]) and W9 (its
training step with SGD momentum), or with --only W5 of the GPT-2 block's inference at
x[8,128,768] and x[1,512,768], the twin of Ember's kernel profile (EMBER_KERNEL_PROFILE=1):
torch.profiler over --iters calls after four warm-up calls, ops by self CPU time per call.

  OMP_NUM_THREADS=2 python bench/torch_profile_blocks.py [--setting default|freezing|max-autotune] [--iters 10]
      [--only W5]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import torch_settings  # noqa: E402
from torch_blocks import BasicBlock, Block  # noqa: E402


def table(name, run, iters):
    for _ in range(4):  # W9: SGD's second step compiles again (its momentum buffers exist then)
        run()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(iters):
            run()
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in rows) / iters / 1e3
    print(f"== {name}: {total:.2f} ms self CPU per call (all ops), {torch.get_num_threads()} threads")
    for e in rows[:14]:
        print(f"  {e.key[:60]:60s} {e.self_cpu_time_total / iters / 1e3:8.3f} ms  x{e.count / iters:.0f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--setting", default="default")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--only", default="", help="W5: the GPT-2 block's two inference rows instead of W6 and W9")
    args = p.parse_args()
    torch_settings.use(args.setting)
    torch.manual_seed(0)
    if args.only == "W5":
        gpt = Block().eval()
        with torch.no_grad():
            for b, t in ((8, 128), (1, 512)):
                x5 = torch.randn(b, t, 768)
                compiled = torch_settings.compile(gpt)
                table(f"W5-{b}x{t} torch.compile ({args.setting})", lambda: compiled(x5), args.iters)
        return
    x = torch.randn(8, 64, 56, 56)
    block = BasicBlock().eval()
    with torch.no_grad():
        compiled = torch_settings.compile(block)
        table(f"W6 torch.compile ({args.setting})", lambda: compiled(x), args.iters)
    train = BasicBlock().train()
    opt = torch.optim.SGD(train.parameters(), lr=0.01, momentum=0.9)
    fwd = torch_settings.compile(lambda t: train(t).sum())
    step_fn = torch_settings.compile(opt.step)

    def step():
        opt.zero_grad(set_to_none=True)
        fwd(x).backward()
        step_fn()

    table(f"W9 torch.compile ({args.setting}; training graphs compile as in the default)", step, args.iters)


if __name__ == "__main__":
    main()
