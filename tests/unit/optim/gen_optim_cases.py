# Prints the expected parameter values pasted into optim_test.cpp: PyTorch 1.13 optimizers
# run on the same pattern parameters and gradients that the C++ test builds.
import torch

def pattern(n, a, m, s, d, dtype):
    return torch.tensor([((i * a) % m - s) / d for i in range(n)], dtype=torch.float64).to(dtype)

def run(make, dtype, steps=4, n=6):
    p = pattern(n, 7, 11, 5, 4.0, dtype).requires_grad_()
    opt = make([p])
    out = []
    for k in range(steps):
        p.grad = pattern(n, 5 + k, 13, 6, 3.0 + k, dtype)
        opt.step()
        out.append(p.detach().double().tolist())
    return out

cases = {
    "SgdPlain": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "SgdMomentumDampeningWd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    "SgdNesterovMaximize": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True),
    "AdamWDefault": lambda ps: torch.optim.AdamW(ps),
    "AdamWAmsgrad": lambda ps: torch.optim.AdamW(ps, lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1, amsgrad=True),
    "AdamWMaximizeNoWd": lambda ps: torch.optim.AdamW(ps, lr=0.02, weight_decay=0.0, maximize=True),
}
for name, make in cases.items():
    for dt, tag in ((torch.float32, "kFloat"), (torch.float64, "kDouble")):
        res = run(make, dt)
        print(f"// {name} {tag}")
        print("{" + ",\n".join("{" + ", ".join(repr(v) for v in step) + "}" for step in res) + "}")
