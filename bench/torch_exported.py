"""The exported-program benchmark's PyTorch side (bench/README.md, bench_exported_models).

    python bench/torch_exported.py OUT_DIR [--iters N]

Exports a small transformer block and a small CNN (eval mode, Core ATen) at benchmark
sizes with torch.export, saves OUT_DIR/<name>.pt2 and OUT_DIR/<name>_io.safetensors (the
input and PyTorch's output, for bench_exported_models to check against), then times, per
model, the exported program's module eagerly and under torch.compile (inductor): medians
of --iters calls after 3 warm-up calls, alternating, and the first compiled call (compile
included). Threads: OMP_NUM_THREADS / torch.get_num_threads()."""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "export"))
from safetensors_lite import save_file  # noqa: E402


class Block(nn.Module):
    """Pre-norm transformer block with causal attention, as bench_exported_models writes it."""

    def __init__(self, d=256, heads=8, t=128):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        h = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, h).transpose(1, 2)
        k = k.view(b, t, self.heads, h).transpose(1, 2)
        v = v.view(b, t, self.heads, h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / h**0.5)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def models():
    torch.manual_seed(0)
    cnn = SmallCNN()
    for bn in (cnn.bn1, cnn.bn2):  # non-trivial running statistics
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    return {"block": (Block(), torch.randn(8, 128, 256)), "cnn": (cnn, torch.randn(16, 3, 64, 64))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--iters", type=int, default=21)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"{'model':<8} {'eager ms':>10} {'compiled ms':>12} {'speedup':>8} {'first call s':>13}")
    for name, (model, x) in models().items():
        model.eval()
        ep = torch.export.export(model, (x,)).run_decompositions()
        path = os.path.join(args.out_dir, name + ".pt2")
        torch.export.save(ep, path)
        module = torch.export.load(path).module()
        with torch.no_grad():
            out = module(x)
            save_file({"input.x": x, "output.0": out}, os.path.join(args.out_dir, name + "_io.safetensors"))
            torch._dynamo.reset()
            compiled = torch.compile(module)
            t0 = time.perf_counter()
            compiled(x)
            first = time.perf_counter() - t0
            times = {"eager": [], "compiled": []}
            for i in range(-3, args.iters):
                for kind, fn in (("eager", module), ("compiled", compiled)):
                    t0 = time.perf_counter()
                    fn(x)
                    if i >= 0:
                        times[kind].append((time.perf_counter() - t0) * 1e3)
        e, c = (sorted(times[k])[len(times[k]) // 2] for k in ("eager", "compiled"))
        print(f"{name:<8} {e:>10.3f} {c:>12.3f} {e / c:>7.2f}x {first:>13.2f}")


if __name__ == "__main__":
    main()
