import sys, time, torch
sys.path.insert(0, "/work/wt/convspeed/bench")
from torch_blocks import BasicBlock
n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
def time_it(name, f, n):
    for _ in range(3): f()
    ts = []; c0 = time.process_time()
    for _ in range(n):
        t0 = time.perf_counter(); f(); ts.append((time.perf_counter() - t0) * 1e3)
    c = (time.process_time() - c0) * 1e3 / n
    ts.sort(); print(f"{name:10s} min {ts[0]:8.3f}  p25 {ts[n//4]:8.3f}  med {ts[n//2]:8.3f} ms  cpu {c:8.3f} ms/call", flush=True)
with torch.no_grad():
    sys.path.insert(0, "/work/wt/convspeed/tests/export")
    from safetensors_lite import load_file
    m = torch.export.load("/tmp/cs/exp/cnn.pt2").module()
    x = load_file("/tmp/cs/exp/cnn_io.safetensors")["input.x"]
    c = torch.compile(m)
    time_it("cnn_eager", lambda: m(x), n)
    time_it("cnn_ind", lambda: c(x), n)
    torch.manual_seed(0)
    b = BasicBlock().eval()
    x6 = torch.randn(8, 64, 56, 56)
    cb = torch.compile(b)
    time_it("W6_eager", lambda: b(x6), n // 2)
    time_it("W6_ind", lambda: cb(x6), n // 2)
