"""The GEMMs of bench/gemm_library_probe.cpp in PyTorch: torch.mm (MKL), MKL's linear on a
weight packed once (torch.ops.mkl._mkl_linear, what inductor's freezing calls for float32
linears where MKL is present) and oneDNN's packed linear (torch.ops.mkldnn._linear_pointwise).

    python3 bench/gemm_library_probe_torch.py THREADS [CALLS]
"""
import sys, time, torch
t = int(sys.argv[1]); it = int(sys.argv[2]) if len(sys.argv) > 2 else 15
torch.set_num_threads(t)
shapes = [(256,1024,4096),(256,4096,1024),(1024,768,2304),(1024,768,768),(1024,768,3072),(1024,3072,768),(128,768,2304),(128,768,3072),(128,3072,768)]
def med(f):
    for _ in range(3): f()
    ts = []
    for _ in range(it):
        a = time.perf_counter(); f(); ts.append((time.perf_counter() - a) * 1e3)
    ts.sort(); return ts[it // 2]
with torch.no_grad():
    for m, k, n in shapes:
        x = torch.randn(m, k); w = torch.randn(n, k); wt = w.t().contiguous()
        out = torch.empty(m, n)
        gf = 2.0 * m * k * n * 1e-6
        a = med(lambda: torch.mm(x, wt, out=out))
        pw = torch.ops.mkl._mkl_reorder_linear_weight(w, m)
        b = med(lambda: torch.ops.mkl._mkl_linear(x, pw, w, None, m))
        dw = torch.ops.mkldnn._reorder_linear_weight(w, m)
        c = med(lambda: torch.ops.mkldnn._linear_pointwise(x, dw, None, "none", [], ""))
        print(f"torch threads {t} | {m:5d}x{k:5d}x{n:5d} | mkl mm {a:7.3f} ms {gf/a:6.1f} GF | mkl packed {b:7.3f} ms {gf/b:6.1f} GF | onednn3.10 packed {c:7.3f} ms {gf/c:6.1f} GF", flush=True)
