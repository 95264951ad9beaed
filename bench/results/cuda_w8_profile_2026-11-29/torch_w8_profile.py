"""PyTorch's compiled W8 step on cuda:0 under torch.profiler: GPU time of each step (the sum
of its kernels and copies) and the kernels that take it, default mode and reduce-overhead.
Run from bench/: python3 results/cuda_w8_profile_2026-11-29/torch_w8_profile.py"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, ".")
import torch_training  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
for mode in (None, "reduce-overhead"):
    torch._dynamo.reset()
    row = [w for w in torch_training.training_workloads("cuda") if w.id == "W8"][0]
    step = row.make_compiled_step(mode)
    for _ in range(6):
        step()
    torch.cuda.synchronize()
    steps = 5
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    total_us = sum(e.self_device_time_total for e in events)
    print(f"== torch.compile W8, mode={mode}: GPU time {total_us / steps / 1e3:.4f} ms a step "
          f"over {sum(e.count for e in events) / steps:.0f} kernels and copies a step")
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:30]:
        print(f"  {e.self_device_time_total / steps:9.1f} us  x{e.count / steps:4.0f}  {e.key[:110]}")
