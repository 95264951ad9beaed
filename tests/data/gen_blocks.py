#!/usr/bin/env python3
"""Writes the PyTorch side of tests/unit/nn/blocks_test.cpp: for each block of
bench/torch_blocks.py, built small with a fixed seed,
  blocks_<name>_state.safetensors  its state_dict, laid out as safetensors.torch.save_file
                                   writes it (metadata {"format": "pt"})
  blocks_<name>_io.safetensors     an input, PyTorch's eval-mode output and, for the MLP and
                                   GPT-2 blocks, a training-mode backward: grad_output,
                                   grad.input and grad.<parameter name>.
The safetensors package is not needed: the format is written here with struct + json.
Run with /usr/bin/python3 (torch 1.13) from any directory."""
import json
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import torch_blocks  # noqa: E402

ST_DTYPE = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.bool: "BOOL"}
# safetensors' Dtype enum order (BOOL < ... < F32 < F64 < I64): data is laid out largest first.
DTYPE_RANK = {"BOOL": 0, "F32": 1, "F64": 2, "I64": 3}


def save_file(tensors, path, metadata=None):
    """As safetensors.torch.save_file: tensors ordered by dtype (descending in safetensors'
    enum order), then by name; header keys in data order, each {dtype, shape, data_offsets};
    header JSON padded with spaces to a multiple of 8."""
    entries = []
    for name, t in tensors.items():
        t = t.detach().contiguous()
        dt = ST_DTYPE[t.dtype]
        entries.append((name, dt, list(t.shape), t.reshape(-1).numpy().tobytes() if t.numel() else b""))
    entries.sort(key=lambda e: (-DTYPE_RANK[e[1]], e[0]))
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dt, shape, raw in entries:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def perturb_norms(block):
    """Non-default LayerNorm/BatchNorm affine parameters and running statistics, so that a
    load that silently skipped them would show in the output."""
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, (torch.nn.LayerNorm, torch.nn.BatchNorm2d)):
                m.weight.copy_(1 + 0.3 * torch.randn_like(m.weight))
                m.bias.copy_(0.2 * torch.randn_like(m.bias))
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(0.5 * torch.randn_like(m.running_mean))
                m.running_var.copy_(0.5 + torch.rand_like(m.running_var))
                m.num_batches_tracked.fill_(7)


def write(name, block, x, backward):
    torch.manual_seed(1)
    perturb_norms(block)
    save_file(block.state_dict(), os.path.join(HERE, "blocks_%s_state.safetensors" % name), {"format": "pt"})
    io = {"input": x}
    block.eval()
    with torch.no_grad():
        io["output"] = block(x.clone())
    if backward:
        block.train()
        xg = x.clone().requires_grad_()
        y = block(xg)
        g = torch.randn_like(y)
        y.backward(g)
        io["grad_output"] = g
        io["grad.input"] = xg.grad
        for pname, p in block.named_parameters():
            io["grad." + pname] = p.grad
    save_file(io, os.path.join(HERE, "blocks_%s_io.safetensors" % name), {"format": "pt"})
    print("%-6s %2d state keys, %2d io tensors" % (name, len(block.state_dict()), len(io)))


def main():
    torch.manual_seed(0)
    write("mlp", torch_blocks.MLPBlock(16, 48), torch.randn(2, 3, 16), backward=True)
    torch.manual_seed(0)
    write("gpt2", torch_blocks.Block(32, 4, 128), torch.randn(2, 6, 32), backward=True)
    torch.manual_seed(0)
    write("basic", torch_blocks.BasicBlock(4), torch.randn(2, 4, 5, 6), backward=False)


if __name__ == "__main__":
    main()
