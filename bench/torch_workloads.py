#!/usr/bin/env python3
"""The workloads of docs/workloads.md in PyTorch, for side-by-side runs with
Ember's bench programs: same shapes, dtype, and thread count (OMP_NUM_THREADS or
--threads), W4-W9 on the blocks of torch_blocks.py (Ember's ember/nn/blocks.h); the
training steps W8 and W9 (with their optimizers) and the training table are in
torch_training.py.

Without --compile it prints bench_eager_workloads' columns: eager ms, GB/s for W1-W3 and
their % of a STREAM-style triad (torch.add(b, c, alpha=3, out=a) over 3 x 128 MiB) measured
in the same run. With --compile (PyTorch >= 2) it prints bench_inductor_workloads' columns:

  id | eager ms | compiled ms | speedup | cold compile s | warm compile s | GB/s | % of triad | max |diff| | notes

eager and compiled ms alternate call by call (medians of --iters calls each after 3
warm-up calls), as bench_inductor_workloads times them. cold compile s: the first call
after torch._dynamo.reset() of a newly torch.compile'd function, with
TORCHINDUCTOR_CACHE_DIR a fresh empty directory (--cache-dir, set before torch is
imported; default a new temp directory, removed at exit). warm compile s: the first call
after another torch._dynamo.reset(), with that cache filled by two calls (a training
step's later graphs differ from its first: SGD's first step creates the momentum buffers). Both include one execution. Before the first row one tiny function is compiled, so that importing and
starting inductor is not counted in W1's cold time. GB/s: the compiled run. max |diff|:
compiled against eager (W7: output and every gradient; W8, W9: loss, gradients,
parameters after the step and buffers, see torch_training.py), tolerance atol 1e-4 + rtol
1e-4 as Ember's; a row outside it is marked MISMATCH and the exit status is 1. After the
rows, --compile prints the training table of W7-W9 (saved bytes, training against
forward-only cold compile), as bench_inductor_workloads does.
Under PyTorch 1.13 (no torch.compile) --compile prints a message and the eager columns.
`--only W4,W5` runs the rows whose id starts with one of the given prefixes; --json FILE
writes the rows as JSON. `--setting max-autotune` or `--setting freezing` compiles under
PyTorch's other CPU settings (torch_settings.py) instead of the default mode.

--dynamic runs W10 and W11 (torch_dynamic.py): torch.compile(dynamic=True), one compile for
every size, against a static compile per size, bench_inductor_dynamic's columns.

--device cuda runs W1-W7 eagerly on cuda:0 (bench_cuda_eager_workloads' columns): the
same values, drawn on the CPU and moved there with the blocks' parameters; each row the
median of --iters calls, each timed by torch.cuda.Event records before and after the
call, after 3 warm-up calls; GB/s of W1-W3 against the device-to-device copy bandwidth of
a 1 GiB copy_ measured in the same run (bytes read + written). TF32 is off (full float32
GEMMs and convolutions, like the rows' dtype says). With --compile as well, W1-W7 and L1 are
compiled with torch.compile in the default mode and in mode="reduce-overhead" (CUDA graphs),
torch_cuda_compiled.py's columns."""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types

ATOL = RTOL = 1e-4


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count())
    p.add_argument("--iters", type=int, default=21)
    p.add_argument("--compile", action="store_true", help="also time torch.compile (PyTorch >= 2)")
    p.add_argument("--cache-dir", help="TORCHINDUCTOR_CACHE_DIR for --compile (default: a fresh temp dir)")
    p.add_argument("--only", default="", help="comma-separated id prefixes (default: every row)")
    p.add_argument("--json")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda: W1-W7 eagerly on cuda:0")
    p.add_argument("--setting", default="default",
                   help="with --compile: default, max-autotune or freezing (torch_settings.py)")
    p.add_argument("--dynamic", action="store_true",
                   help="W10/W11: torch.compile(dynamic=True) against a static compile per size (torch_dynamic.py)")
    p.add_argument("--no-static", action="store_true",
                   help="with --dynamic: no static compile per size (its column reads '-'), for rounds that "
                        "compare the dynamic functions alone")
    args = p.parse_args()
    if args.iters < 1:
        p.error(f"--iters: expected a positive number, got {args.iters}")
    if args.setting not in ("default", "max-autotune", "freezing"):
        p.error(f"--setting: expected default, max-autotune or freezing, got {args.setting!r}")
    if args.device not in ("cpu", "cuda"):
        p.error(f"--device: expected cpu or cuda, got {args.device!r}")
    return args


# TORCHINDUCTOR_CACHE_DIR is read when inductor is imported: set it before importing torch.
ARGS = parse_args() if __name__ == "__main__" else None
CACHE_DIR = None
REMOVE_CACHE_DIR = False
if ARGS is not None and (ARGS.compile or ARGS.dynamic):
    if ARGS.cache_dir:
        CACHE_DIR = os.path.abspath(ARGS.cache_dir)
        os.makedirs(CACHE_DIR, exist_ok=True)
    else:
        CACHE_DIR = tempfile.mkdtemp(prefix="torchinductor_bench_")
        REMOVE_CACHE_DIR = True
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE_DIR

import torch  # noqa: E402

import torch_settings  # noqa: E402
from torch_blocks import BasicBlock, Block, MLPBlock  # noqa: E402
from torch_training import (OF_MAX, TrainingParts, measure_training, print_training_table,  # noqa: E402
                            training_workloads)


def median_ms(f, warmup=3, iters=21):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def interleaved_median_ms(a, b, iters):
    """Medians in ms of `iters` calls each of a and b, alternating, after 3 warm-up calls
    each (as bench_inductor_workloads times eager and compiled: in the same process state)."""
    for _ in range(3):
        a()
        b()
    ta, tb = [], []
    for _ in range(iters):
        t0 = time.perf_counter()
        a()
        t1 = time.perf_counter()
        b()
        t2 = time.perf_counter()
        ta.append((t1 - t0) * 1e3)
        tb.append((t2 - t1) * 1e3)
    return statistics.median(ta), statistics.median(tb)


def seconds(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def triad_gbps():
    """GB/s of a = b + 3 * c over arrays far larger than the caches (bench_util.h's triad)."""
    n = 1 << 25
    a, b, c = torch.empty(n), torch.ones(n), torch.full((n,), 2.0)
    ms = median_ms(lambda: torch.add(b, c, alpha=3.0, out=a), warmup=2, iters=9)
    return 3.0 * n * 4 / (ms * 1e-3) / 1e9


def w1(x):
    return torch.sigmoid(torch.relu(x * 2 + 1) * x - 0.5) * torch.tanh(x) + torch.clamp(torch.exp(x), max=10)


class Row:
    """One workload: `run` (the eager call), `make_compiled` (a new compiled callable of the
    same work, made after torch._dynamo.reset()), `results(out, compiled)` (the groups a
    compiled result is compared by: (what, tensors, atol, of_max); an element's tolerance is
    atol + of_max * the largest |eager| of its tensor + RTOL * its own), and for W7-W9
    `training` (torch_training.TrainingParts)."""

    def __init__(self, wid, what, run, nbytes=0, make_compiled=None, results=None, training=None):
        self.id, self.what, self.run, self.nbytes, self.training = wid, what, run, nbytes, training
        self.make_compiled = make_compiled or (lambda: torch_settings.compile(run))
        self.results = results or (lambda out, compiled: [("output", [out.detach()], ATOL, 0)])


def infer(wid, what, block, x):
    """An inference row (eval mode, under no_grad like every row but W7-W9); the compiled
    form compiles the block."""
    return Row(wid, what, lambda m=block: m(x),
               make_compiled=lambda: (lambda cm=torch_settings.compile(block): cm(x)))


def w7_row(block, x, g):
    """W7: W4's training step; grads set to None before each step, as zero_grad() does in
    PyTorch 2 (PyTorch 1.13 zeroes by default, hence set_to_none=True). The compiled form
    compiles the block's forward (AOT autograd compiles its backward)."""

    def step(m=block):
        with torch.enable_grad():
            block.zero_grad(set_to_none=True)
            x.grad = None
            y = m(x)
            y.backward(g)
        return y

    def results(out, compiled):
        grads = [t.detach() if t is not None else None for t in [x.grad] + [p.grad for p in block.parameters()]]
        return [("output", [out.detach()], ATOL, 0), ("gradients", grads, ATOL, 0)]

    parts = TrainingParts(forward=lambda: block(x),
                          compile_forward=lambda: (lambda cm=torch_settings.compile(block): cm(x)),
                          backward=lambda y: y.backward(g), exclude=[x] + list(block.parameters()))
    return Row("W7", "W4 train step (fwd+bwd), x[256,1024]", step,
               make_compiled=lambda: (lambda cm=torch_settings.compile(block): step(cm)), results=results, training=parts)


def memory_bound_rows(device="cpu"):
    """The rows W1-W3, inputs drawn on the CPU and moved to `device`."""
    torch.manual_seed(0)
    mib = 1024 * 1024
    x1 = torch.randn(4096, 4096).to(device)
    x2 = torch.randn(8192, 1024).to(device)
    x3 = torch.randn(8192, 1024).to(device)
    w3, b3 = torch.randn(1024).to(device), torch.randn(1024).to(device)
    return [
        Row("W1", "pointwise chain, x[4096,4096]", lambda: w1(x1), 128 * mib),
        Row("W2", "softmax(dim=-1), x[8192,1024]", lambda: torch.softmax(x2, -1), 64 * mib),
        Row("W3", "layer_norm(1024), x[8192,1024]",
            lambda: torch.nn.functional.layer_norm(x3, (1024,), w3, b3, 1e-5), 64 * mib + 8 * 1024),
    ]


def block_workloads(device="cpu"):
    """The rows W4-W9, parameters and inputs made on the CPU and moved to `device`."""
    torch.manual_seed(0)
    mlp, gpt, basic, mlp_train = MLPBlock(), Block(), BasicBlock(), MLPBlock()
    for m in (mlp, gpt, basic):
        m.eval()
    for m in (mlp, gpt, basic, mlp_train):
        m.to(device)
    x4 = torch.randn(256, 1024).to(device)
    x5a = torch.randn(8, 128, 768).to(device)
    x5b = torch.randn(1, 512, 768).to(device)
    x6 = torch.randn(8, 64, 56, 56).to(device)
    x7 = torch.randn(256, 1024).to(device).requires_grad_()
    g7 = torch.randn(256, 1024).to(device)
    rows = [
        infer("W4", "MLP block, x[256,1024]", mlp, x4),
        infer("W5-8x128", "GPT-2 block, x[8,128,768]", gpt, x5a),
        infer("W5-1x512", "GPT-2 block, x[1,512,768]", gpt, x5b),
        infer("W6", "BasicBlock eval, x[8,64,56,56]", basic, x6),
        w7_row(mlp_train, x7, g7),
    ]
    for t in training_workloads(device):
        row = Row(t.id, t.what, t.eager_step, make_compiled=t.make_compiled_step, results=t.results,
                  training=t.parts)
        row.compile_mode = t.make_compiled_step  # torch_cuda_compiled: the step compiled in a mode
        rows.append(row)
    return rows


def compare(actual, expected, atol=ATOL, of_max=0):
    """(max |a - e|, every element within atol + of_max * max |e| + RTOL * |e|) over lists
    of tensors."""
    worst, close = 0.0, True
    for a, e in zip(actual, expected):
        if (a is None) != (e is None):
            return float("inf"), False
        if a is None:
            continue
        if a.shape != e.shape:
            return float("inf"), False
        worst = max(worst, (a.double() - e.double()).abs().max().item())
        tol = atol + (of_max * e.abs().max().item() if of_max and e.numel() else 0)
        close = close and torch.allclose(a.double(), e.double(), rtol=RTOL, atol=tol)
    return worst, close and len(actual) == len(expected)


def compare_groups(actual, expected):
    """(max |diff|, all close, names of the groups that are not) over results() groups."""
    worst, close, failed = 0.0, len(actual) == len(expected), []
    for (_, a, _, _), (what, e, atol, of_max) in zip(actual, expected):
        d, c = compare(a, e, atol, of_max)
        worst = max(worst, d)
        if not c:
            close = False
            failed.append(what)
    return worst, close, failed


def compiled_row(w, expected, args):
    """Cold and warm compile and compiled ms of one row; the compiled function is made anew
    after torch._dynamo.reset(), as Ember's row makes a new compiled function."""
    torch._dynamo.reset()
    cf = w.make_compiled()
    cold_s, out = seconds(cf)
    diff, close, failed = compare_groups(w.results(out, True), expected)
    # A second call before the reset, as bench_inductor_workloads makes: a training step's
    # later graphs differ from its first (SGD's first step creates the momentum buffers),
    # so the cache then holds every graph the warm call traces.
    cf()
    torch._dynamo.reset()
    warm_s, _ = seconds(cf)
    eager_ms, ms = interleaved_median_ms(w.run, cf, args.iters)
    return {"eager_ms": eager_ms, "compiled_ms": ms, "cold_compile_s": cold_s, "warm_compile_s": warm_s,
            "max_abs_diff": diff, "within_tolerance": close, "mismatched": failed}


def cuda_median_ms(f, warmup=3, iters=21, host=False):
    """Median ms of `iters` calls, each between two torch.cuda.Event records on the current
    stream, after `warmup` calls, each call after a 256 MiB zeroing that flushes the L2
    cache and keeps the device busy while the host launches the call; one synchronization
    at the end (bench_cuda_eager_workloads' timing, Triton's do_bench's way). host=True also
    returns the median time the host took to return from the call (its launch overhead)."""
    flush = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    events, host_times = [], []
    for _ in range(iters):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        f()
        host_times.append((time.perf_counter() - t0) * 1e3)
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) for start, end in events]
    if host:
        return statistics.median(times), statistics.median(host_times)
    return statistics.median(times)


def copy_gbps(nbytes=None):
    """GB/s of dst.copy_(src) between two 1 GiB float32 tensors on the device, bytes read
    and written (bench_cuda_eager_workloads' copy); with `nbytes`, between two tensors of
    nbytes / 2 each, so that the copy moves a row's bytes (its launch and ramp included, as
    the row's kernels have them)."""
    n = (1 << 28) if nbytes is None else max(1, int(nbytes) // 8)
    src, dst = torch.zeros(n, device="cuda"), torch.empty(n, device="cuda")
    ms = cuda_median_ms(lambda: dst.copy_(src), warmup=2, iters=9)
    return 2.0 * n * 4 / (ms * 1e-3) / 1e9


def launch_row():
    """L1: x + 1 on a one-element tensor: its host ms is one op's launch work, its device
    time one tiny kernel's
    (bench_cuda_eager_workloads' L1)."""
    x = torch.zeros(1, device="cuda")
    return types.SimpleNamespace(id="L1", what="x + 1, x[1] (one tiny op)", run=lambda: x + 1, nbytes=0)


def cuda_main(args):
    """W1-W7 eagerly on cuda:0, as bench_cuda_eager_workloads prints them."""
    if not torch.cuda.is_available():
        print(f"torch_workloads.py --device cuda: PyTorch {torch.__version__} sees no CUDA device")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    copy = copy_gbps()
    print(f"PyTorch {torch.__version__} eager on cuda:0, {name} (sm_{major}{minor}); device-to-device copy_: "
          f"{copy:.1f} GB/s (read + written); TF32 off")
    print(f"ms: median of {args.iters} calls, torch.cuda.Event around each call, each after a 256 MiB zeroing that "
          f"flushes the L2 cache and keeps the queue busy, after 3 warm-up calls")
    print(f"{'id':8} | {'workload':36} | {'eager ms':>10} | {'GB/s':>8} | % of copy")
    only = [o for o in args.only.split(",") if o]
    rows = []
    with torch.no_grad():
        for w in memory_bound_rows("cuda") + block_workloads("cuda") + [launch_row()]:
            if only and not any(w.id.startswith(o) for o in only):
                continue
            ms, host_ms = cuda_median_ms(w.run, iters=args.iters, host=True)
            row = {"id": w.id, "workload": w.what, "eager_ms": ms, "host_ms": host_ms}
            if w.nbytes:
                row["gbps"] = w.nbytes / (ms * 1e-3) / 1e9
                print(f"{w.id:8} | {w.what:36} | {ms:10.3f} | {row['gbps']:8.1f} | {100 * row['gbps'] / copy:5.1f}%",
                      flush=True)
            else:
                print(f"{w.id:8} | {w.what:36} | {ms:10.3f} | {'-':>8} | {'-':>6}", flush=True)
            rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "device": name, "capability": f"{major}.{minor}",
                       "copy_gbps": copy, "iters": args.iters, "rows": rows}, fh)
    return 0


def main():
    args = ARGS
    if args.device == "cuda" and args.compile:
        from torch_cuda_compiled import cuda_compiled_main
        status = cuda_compiled_main(args)
        if REMOVE_CACHE_DIR:
            shutil.rmtree(CACHE_DIR, ignore_errors=True)
        return status
    if args.device == "cuda":
        return cuda_main(args)
    if args.dynamic:
        from torch_dynamic import dynamic_main
        status = dynamic_main(args)
        if REMOVE_CACHE_DIR:
            shutil.rmtree(CACHE_DIR, ignore_errors=True)
        return status
    torch.set_num_threads(args.threads)
    compiling = args.compile and hasattr(torch, "compile")
    if compiling:
        torch_settings.use(args.setting)
    if args.compile and not compiling:
        print(f"PyTorch {torch.__version__} has no torch.compile (needs >= 2): compile columns skipped")
    workloads = memory_bound_rows() + block_workloads()
    only = [o for o in args.only.split(",") if o]
    triad = triad_gbps()
    mode = f"eager vs torch.compile ({torch_settings.current()} inductor)" if compiling else "eager"
    print(f"PyTorch {torch.__version__} {mode}, {torch.get_num_threads()} threads; STREAM triad: {triad:.1f} GB/s")
    if compiling:
        print(f"ms: median of {args.iters} calls each, eager and compiled alternating, after 3 warm-up calls.\n"
              f"cold/warm compile s: first call after torch._dynamo.reset() with an empty TORCHINDUCTOR_CACHE_DIR\n"
              f"({CACHE_DIR}) / with it filled; both include one execution. GB/s: the compiled run.\n"
              f"max |diff|: compiled against eager; tolerance {ATOL:.0e} + {RTOL:.0e} * |eager|;\n"
              f"W8, W9 (loss, gradients, parameters after the step, buffers of a compiled and an eager copy of the model,\n"
              f"after the first step): each tensor's tolerance also adds {OF_MAX:.0e} * its largest |eager|, and W8's\n"
              f"parameters get atol 2 * lr + 1e-4 (AdamW's first update is about +-lr whatever the gradient's size).")
        if os.listdir(CACHE_DIR):
            print(f"note: {CACHE_DIR} was not empty at start: cold compile times include its cache hits")
        print(f"{'id':8} | {'eager ms':>10} | {'compiled ms':>11} | {'speedup':>7} | {'cold compile s':>14} | "
              f"{'warm compile s':>14} | {'GB/s':>6} | {'% of triad':>10} | {'max |diff|':>9} | notes")
        # Import and start inductor once, outside the rows' cold times.
        torch.compile(lambda t: t * 2 + 1)(torch.ones(8))
    else:
        print(f"{'id':8} | {'workload':36} | {'eager ms':>10} | {'GB/s':>8} | % of triad")
    rows, training_rows = [], []
    all_close = True
    with torch.no_grad():
        for w in workloads:
            wid, what, f, nbytes = w.id, w.what, w.run, w.nbytes
            if only and not any(wid.startswith(o) for o in only):
                continue
            row = {"id": wid, "workload": what}
            if not compiling:
                ms = row["eager_ms"] = median_ms(f, iters=args.iters)
                if nbytes:
                    row["gbps"] = nbytes / (ms * 1e-3) / 1e9
                    print(f"{wid:8} | {what:36} | {ms:10.2f} | {row['gbps']:8.1f} | "
                          f"{100 * row['gbps'] / triad:5.1f}%", flush=True)
                else:
                    print(f"{wid:8} | {what:36} | {ms:10.2f} | {'-':>8} | {'-':>6}", flush=True)
                rows.append(row)
                continue
            row.update(compiled_row(w, w.results(f(), False), args))
            ms = row["eager_ms"]
            row["speedup"] = ms / row["compiled_ms"]
            gb = pct = "-"
            if nbytes:
                row["gbps"] = nbytes / (row["compiled_ms"] * 1e-3) / 1e9
                row["pct_of_triad"] = 100 * row["gbps"] / triad
                gb, pct = f"{row['gbps']:.1f}", f"{row['pct_of_triad']:.1f}%"
            notes = "" if row["within_tolerance"] else \
                f"MISMATCH: compiled differs from eager beyond the tolerance ({', '.join(row['mismatched'])})"
            all_close = all_close and row["within_tolerance"]
            print(f"{wid:8} | {ms:10.2f} | {row['compiled_ms']:11.2f} | {row['speedup']:6.2f}x | "
                  f"{row['cold_compile_s']:14.2f} | {row['warm_compile_s']:14.2f} | {gb:>6} | {pct:>10} | "
                  f"{row['max_abs_diff']:9.2e} | {notes}", flush=True)
            if w.training is not None:
                row.update(measure_training(w.training))
                training_rows.append(row)
            rows.append(row)
    if training_rows:
        print_training_table(training_rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "triad_gbps": triad,
                       "iters": args.iters, "compiled": compiling, "setting": torch_settings.current(),
                       "rows": rows}, fh)
    if REMOVE_CACHE_DIR:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)
    return 0 if all_close else 1


if __name__ == "__main__":
    sys.exit(main())
