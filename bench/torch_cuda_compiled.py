"""W1-W9 and L1 on cuda:0 with torch.compile, in both of the modes a GPU user picks from:
the default (Triton kernels launched by inductor's wrapper) and mode="reduce-overhead"
(the same kernels replayed as CUDA graphs by cudagraph trees). Run by
`torch_workloads.py --device cuda --compile`; the Ember side is bench_cuda_inductor_workloads,
and bench/run_cuda_compiled_side_by_side.sh runs both in one device call and prints the
race's table.

Each row: eager ms, then per mode the compiled ms (the eager rows' timing,
torch_workloads.cuda_median_ms: CUDA events around each call after an L2-flushing 256 MiB
zeroing, median of --iters, after warm-up calls; reduce-overhead gets 5, so its graph is
recorded before timing), the host ms to return from one call, the cold compile s (the
first call after torch._dynamo.reset(), with the run's fresh TORCHINDUCTOR_CACHE_DIR), and
max |compiled - eager| relative to 1 + |eager| with MISMATCH past 1e-2, Ember's bench
tolerance (GEMMs of hundreds of terms summed in another order). TF32 off."""
import json
import statistics
import time

import torch

MODES = ("default", "reduce-overhead")
TOL = 1e-2


def max_rel_diff(actual, expected):
    """max |a - e| / (1 + |e|) over the tensors of two results (inf when they differ in
    shape or where NaNs are)."""
    a = actual if isinstance(actual, (list, tuple)) else [actual]
    e = expected if isinstance(expected, (list, tuple)) else [expected]
    worst = 0.0
    for x, y in zip(a, e):
        if not isinstance(x, torch.Tensor):
            continue
        if x.shape != y.shape or not torch.equal(torch.isnan(x), torch.isnan(y)):
            return float("inf")
        x, y = x.detach().double(), y.detach().double()
        ok = ~torch.isnan(y)
        if ok.any():
            worst = max(worst, ((x - y).abs() / (1 + y.abs()))[ok].max().item())
    return worst


def compiled_row(w, mode, iters, median_ms):
    """(ms, host ms, cold compile s, max diff) of w.run compiled in `mode`. A training row
    (W8, W9) compiles its step's forward and optimizer step (its compile_mode), as Ember's
    program does; its copies have stepped apart by then, so its diff is None (the state
    after the first step is compared by training_check)."""
    torch._dynamo.reset()
    compile_mode = getattr(w, "compile_mode", None)
    if compile_mode is not None:
        fn = compile_mode(None if mode == "default" else mode)
    else:
        fn = torch.compile(w.run, mode=None if mode == "default" else mode)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    cold_s = time.perf_counter() - t0
    expected = w.run()
    # reduce-overhead: the output lives in the graph's pool until the next replay; clone it.
    out = fn()
    out = [t.clone() if isinstance(t, torch.Tensor) else t for t in (out if isinstance(out, (list, tuple)) else [out])]
    torch.cuda.synchronize()
    diff = None if compile_mode is not None else max_rel_diff(out, expected)
    ms, host_ms = median_ms(fn, warmup=5, iters=iters, host=True)
    return ms, host_ms, cold_s, diff


def training_check(w):
    """A training row's first eager step and its compiled copy's first (default mode): the
    loss, gradients, parameters and buffers compared group by group at the CPU rows'
    tolerances (torch_workloads.compare_groups). (max |diff|, close, failed groups)."""
    import torch_workloads as tw

    torch._dynamo.reset()
    expected = w.results(w.run(), False)
    out = w.compile_mode(None)()
    return tw.compare_groups(w.results(out, True), expected)


def cuda_compiled_main(args):
    import torch_workloads as tw

    if not torch.cuda.is_available():
        print(f"torch_workloads.py --device cuda --compile: PyTorch {torch.__version__} sees no CUDA device")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(0)
    copy = tw.copy_gbps()
    print(f"PyTorch {torch.__version__} torch.compile on cuda:0, {name}; modes: {', '.join(MODES)}; "
          f"device-to-device copy_: {copy:.1f} GB/s (read + written); TF32 off")
    print(f"ms: median of {args.iters} calls (CUDA events, L2 flushed before each); host ms: the call's return; "
          f"cold s: first call after torch._dynamo.reset()")
    head = f"{'id':8} | {'eager ms':>9}"
    for m in MODES:
        head += f" | {m + ' ms':>20} | {'host ms':>8} | {'cold s':>7} | {'max diff':>9}"
    print(head)
    only = [o for o in args.only.split(",") if o]
    rows, failed = [], False
    with torch.no_grad():
        for w in tw.memory_bound_rows("cuda") + tw.block_workloads("cuda") + [tw.launch_row()]:
            if only and not any(w.id.startswith(o) for o in only):
                continue
            state_note = ""
            if getattr(w, "compile_mode", None) is not None:
                state_diff, state_close, state_failed = training_check(w)
                state_note = f" | state after step 1: {state_diff:.2e}" + ("" if state_close else
                                                                            f" MISMATCH ({', '.join(state_failed)})")
                failed |= not state_close
            eager_ms = tw.cuda_median_ms(w.run, iters=args.iters)
            row = {"id": w.id, "workload": w.what, "eager_ms": eager_ms, "nbytes": w.nbytes}
            if w.nbytes:
                row["copy_same_gbps"] = tw.copy_gbps(w.nbytes)
            line = f"{w.id:8} | {eager_ms:9.3f}"
            for m in MODES:
                try:
                    ms, host_ms, cold_s, diff = compiled_row(w, m, args.iters, tw.cuda_median_ms)
                except Exception as e:  # a mode that cannot run a row says why, the rest go on
                    line += f" | {'failed: ' + type(e).__name__:>20} | {'-':>8} | {'-':>7} | {'-':>9}"
                    row[m] = {"error": f"{type(e).__name__}: {e}"}
                    failed = True
                    continue
                mark = " MISMATCH" if diff is not None and diff > TOL else ""
                failed |= bool(mark)
                diff_text = "-" if diff is None else f"{diff:9.2e}"
                line += f" | {ms:20.3f} | {host_ms:8.4f} | {cold_s:7.2f} | {diff_text:>9}{mark}"
                row[m] = {"ms": ms, "host_ms": host_ms, "cold_s": cold_s, "max_diff": diff}
                if w.nbytes:
                    row[m]["gbps"] = w.nbytes / (ms * 1e-3) / 1e9
            print(line + state_note, flush=True)
            rows.append(row)
    for m in MODES:
        ratios = [r["eager_ms"] / r[m]["ms"] for r in rows if "ms" in r.get(m, {}) and r["id"] != "L1"]
        if ratios:
            print(f"{m}: geomean eager/compiled over W rows {statistics.geometric_mean(ratios):.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "device": name, "copy_gbps": copy, "iters": args.iters,
                       "rows": rows}, fh)
    return 1 if failed else 0
