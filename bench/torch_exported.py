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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "export"))
from make_programs import Block, SmallCNN  # noqa: E402  (the test programs' models, at other sizes)
from safetensors_lite import save_file  # noqa: E402


def models():
    torch.manual_seed(0)
    cnn = SmallCNN(32, 64)
    for bn in (cnn.bn1, cnn.bn2):  # non-trivial running statistics
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    return {"block": (Block(d=256, heads=8, t=128), torch.randn(8, 128, 256)), "cnn": (cnn, torch.randn(16, 3, 64, 64))}


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
