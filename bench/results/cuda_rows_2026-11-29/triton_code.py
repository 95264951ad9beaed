# Prints the Triton kernels torch.compile generates for W2 (softmax) and W3 (layer norm).
import os, torch
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code
x = torch.randn(8192, 1024, device="cuda")
w = torch.randn(1024, device="cuda"); b = torch.randn(1024, device="cuda")
for name, fn, args in [("W2", lambda x: torch.softmax(x, -1), (x,)),
                       ("W3", lambda x, w, b: F.layer_norm(x, (1024,), w, b), (x, w, b))]:
    _, code = run_and_get_code(torch.compile(fn), *args)
    print("=====", name)
    for c in code:
        keep = [l for l in c.splitlines() if ("triton" in l or "tl." in l or "def " in l or "XBLOCK" in l or "num_warps" in l or "R0_BLOCK" in l or "RBLOCK" in l or "grid" in l)]
        print("\n".join(keep[:120]))
