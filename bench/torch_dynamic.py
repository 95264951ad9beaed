"""W10 and W11 of docs/workloads.md in PyTorch (bench/torch_workloads.py --dynamic), with
bench_inductor_dynamic's columns, one row per size:

  id | size | eager ms | dynamic ms | static ms | dynamic/static | dynamic compiles | static compiles | max |diff|

dynamic: one torch.compile(dynamic=True) function for every size; static: a
torch.compile(dynamic=False) function made for that size alone. Each compiled function
wraps the block in a function of its own code object, so that Dynamo keeps their cache
entries apart; Dynamo's recompile limit is raised to 64 (they all pass through one
wrapper frame of torch.compile's, whose entries count against it) and reset between the
workloads. Compiles: graphs Dynamo compiled (counters["stats"]["unique_graphs"]) for
that function, the dynamic one's counted up to and including the size (--no-static: no
static function, its columns '-'). ms: medians of
--iters calls each, eager, dynamic and static alternating after 3 warm-up rounds, under
torch.no_grad() in eval mode. max |diff|: both compiled results against eager, tolerance
1e-4 + 1e-4 * |eager| (MISMATCH and exit status 1 outside it). Then `x + 1` over x[8, 16]
compiled with dynamic=True (traced first at x[5, 16]) and statically: µs above eager per
call, medians of 2001 calls."""
import statistics
import time

import torch

from torch_blocks import Block, MLPBlock

ATOL = RTOL = 1e-4


def unique_graphs():
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def wrapped(module):
    """`module(x)` as a function with a code object of its own."""
    ns = {}
    exec("def forward(x):\n    return module(x)\n", {"module": module}, ns)
    return ns["forward"]


def interleaved_medians(fns, iters):
    times = [[] for _ in fns]
    for i in range(-3, iters):
        for f, t in zip(fns, times):
            t0 = time.perf_counter()
            f()
            if i >= 0:
                t.append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(t) for t in times]


def diff(actual, expected):
    if actual.shape != expected.shape or actual.stride() != expected.stride():
        return float("inf"), False
    err = (actual - expected).abs()
    return err.max().item(), bool((err <= ATOL + RTOL * expected.abs()).all())


def workloads():
    torch.manual_seed(0)
    return [
        ("W10", "GPT-2 block, x[1, T, 768]", "T", [32, 77, 128, 200, 384, 512], Block().eval(),
         lambda t: torch.randn(1, t, 768)),
        ("W11", "MLP block, x[B, 1024]", "B", [1, 7, 64, 100, 256], MLPBlock().eval(), lambda b: torch.randn(b, 1024)),
    ]


def call_overhead():
    add_one = lambda x: x + 1  # noqa: E731
    dyn = torch.compile(wrapped(add_one), dynamic=True)
    fixed = torch.compile(wrapped(add_one), dynamic=False)
    x = torch.randn(8, 16)
    dyn(torch.randn(5, 16))
    ms = interleaved_medians([lambda: add_one(x), lambda: dyn(x), lambda: fixed(x)], 2001)
    print(f"\nx + 1, x[8, 16] (n symbolic): eager {ms[0] * 1e3:.2f} us, dynamic {ms[1] * 1e3:.2f} us "
          f"(+{(ms[1] - ms[0]) * 1e3:.2f}), static {ms[2] * 1e3:.2f} us (+{(ms[2] - ms[0]) * 1e3:.2f})")


def dynamic_main(args):
    torch.set_num_threads(args.threads)
    only = [o for o in args.only.split(",") if o]
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; ms: medians of {args.iters} calls each "
          f"(eager, dynamic, static alternating, after 3 warm-up calls)")
    print(f"{'id':4} | {'size':7} | {'eager ms':>9} | {'dynamic ms':>10} | {'static ms':>9} | {'dynamic/static':>14} | "
          f"{'dynamic compiles':>16} | {'static compiles':>15} | {'max |diff|':>10}")
    all_close = True
    torch._dynamo.config.recompile_limit = 64
    with torch.no_grad():
        torch.compile(lambda t: t * 2 + 1)(torch.ones(8))  # start inductor outside the rows
        for wid, what, size_name, sizes, block, make in workloads():
            if only and not any(wid.startswith(o) for o in only):
                continue
            torch._dynamo.reset()
            print(f"{wid}: {what}", flush=True)
            dyn = torch.compile(wrapped(block), dynamic=True)
            dynamic_compiles = 0
            for size in sizes:
                x = make(size)
                expected = block(x)
                before = unique_graphs()
                got_dynamic = dyn(x)
                dynamic_compiles += unique_graphs() - before
                d1, ok1 = diff(got_dynamic, expected)
                size_text = f"{size_name}={size}"
                if args.no_static:
                    all_close = all_close and ok1
                    ms = interleaved_medians([lambda: block(x), lambda: dyn(x)], args.iters)
                    print(f"{wid:4} | {size_text:7} | {ms[0]:9.3f} | {ms[1]:10.3f} | {'-':>9} | {'-':>14} | "
                          f"{dynamic_compiles:16} | {'-':>15} | {d1:10.2e}{'' if ok1 else ' MISMATCH'}", flush=True)
                    continue
                fixed = torch.compile(wrapped(block), dynamic=False)
                before = unique_graphs()
                got_static = fixed(x)
                static_compiles = unique_graphs() - before
                d2, ok2 = diff(got_static, expected)
                all_close = all_close and ok1 and ok2
                ms = interleaved_medians([lambda: block(x), lambda: dyn(x), lambda: fixed(x)], args.iters)
                print(f"{wid:4} | {size_text:7} | {ms[0]:9.3f} | {ms[1]:10.3f} | {ms[2]:9.3f} | {ms[1] / ms[2]:14.2f} | "
                      f"{dynamic_compiles:16} | {static_compiles:15} | {max(d1, d2):10.2e}"
                      f"{'' if ok1 and ok2 else ' MISMATCH'}", flush=True)
        if not only or "overhead" in only:
            torch._dynamo.reset()
            call_overhead()
    return 0 if all_close else 1
