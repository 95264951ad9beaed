"""Writes the exported programs Ember's import tests read, with PyTorch's outputs.

Run with PyTorch 2.11 (CPU):  python tests/export/make_programs.py [out_dir [name ...]]
For each model: <name>.pt2 (torch.export.save of the program after run_decompositions(),
i.e. Core ATen; <name>_training_ir.pt2 without it), <name>_io.safetensors holding the user inputs under their signature names
("input.<name>") and PyTorch's outputs ("output.<k>", and "state.<buffer>" for each buffer
after one run when the program mutates buffers). Programs Ember refuses (refused_models)
are written as <name>.pt2 alone.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_lite import save_file  # noqa: E402

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self, c1=8, c2=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, c1, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c1)
        self.conv2 = nn.Conv2d(c1, c2, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(c2)
        self.fc = nn.Linear(c2, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = x.mean(dim=(2, 3))
        return self.fc(x)


class Block(nn.Module):
    """A pre-norm transformer block: causal self-attention written out, then an MLP."""

    def __init__(self, d=32, heads=4, t=8):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = self.mask_scores(att, t)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    def mask_scores(self, att, t):
        """-inf above the diagonal, from the mask buffer."""
        return att.masked_fill(~self.mask[:t, :t], float("-inf"))


class Stateful(nn.Module):
    """Buffers, a tensor constant, several outputs (one an integer tensor), a norm and
    in-place buffer updates."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.scale = torch.tensor([0.5, 1.0, 2.0, 4.0])

    def forward(self, x, y):
        h = self.lin(x) * self.scale
        self.running.mul_(0.9).add_(h.mean(0), alpha=0.1)
        self.steps.add_(1)
        n = torch.linalg.vector_norm(h, dim=1, keepdim=True)
        values, indices = h.max(dim=1)
        return h / n + y, values, indices, h.max()


class SdpaBlock(Block):
    """The block above with its attention as one scaled_dot_product_attention call (causal)."""

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class BuffersConstants(nn.Module):
    """A persistent buffer (in the state), a non-persistent one and plain tensor attributes
    (constants of the program: a float table and integer indices into it)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("mean", torch.randn(8))
        self.register_buffer("inv_std", torch.rand(8) + 0.5, persistent=False)
        self.table = torch.randn(5, 8)
        self.rows = torch.tensor([0, 3, 4])

    def forward(self, x):
        h = (x - self.mean) * self.inv_std
        return self.lin(h) + self.table[self.rows].sum(0)


class SeveralOutputs(nn.Module):
    """A dict of outputs of several dtypes and shapes, one of them a view of another."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 5)

    def forward(self, x):
        logits = self.lin(x)
        top = torch.topk(logits, 2, dim=-1)
        return {
            "logits": logits,
            "probs": torch.softmax(logits, dim=-1),
            "top_values": top.values,
            "top_indices": top.indices,
            "positive": logits > 0,
            "flat": logits.view(-1),
        }


class KVCache(nn.Module):
    """In-place buffer updates as a decoder's key cache makes them: a slice assignment,
    index_copy_ at positions given as an input tensor, and a step counter."""

    def __init__(self):
        super().__init__()
        self.k_proj = nn.Linear(8, 8)
        self.register_buffer("cache", torch.zeros(1, 6, 8))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x, pos):
        k = self.k_proj(x)
        self.cache[:, :1] = k[:, :1] * 0.5
        self.cache.index_copy_(1, pos, k)
        self.steps += 1
        return self.cache.sum(1), self.steps * 2


class Resizes(nn.Module):
    """resize_ of tensors the program makes (the training IR keeps it; Core ATen's
    run_decompositions makes it as_strided): one shrinks, one grows and only the elements
    it kept are read (resize_ leaves new ones uninitialized)."""

    def forward(self, x):
        a = x.clone()
        a.resize_(2, 2)
        b = x * 2
        b.resize_(2, 4)
        return a + 1, b[0] * 3, b.flatten()[:6] - x.flatten()


def models():
    return {
        "mlp": (MLP(), (torch.randn(4, 16),)),
        "cnn": (SmallCNN(), (torch.randn(2, 3, 16, 16),)),
        "block": (Block(), (torch.randn(2, 8, 32),)),
        "stateful": (Stateful(), (torch.randn(3, 6), torch.randn(3, 4))),
        # The same model left in the training IR: in-place buffer updates, linear, contiguous.
        "stateful_training_ir": (Stateful(), (torch.randn(3, 6), torch.randn(3, 4))),
        "sdpa_block": (SdpaBlock(), (torch.randn(2, 8, 32),)),
        # Left in the training IR, the attention stays one scaled_dot_product_attention call
        # (Core ATen decomposes it into the math form above).
        "sdpa_block_training_ir": (SdpaBlock(), (torch.randn(2, 8, 32),)),
        "buffers_constants": (BuffersConstants(), (torch.randn(4, 8),)),
        "several_outputs": (SeveralOutputs(), (torch.randn(3, 6),)),
        "kv_cache": (KVCache(), (torch.randn(1, 2, 8), torch.tensor([3, 5]))),
        "resizes_training_ir": (Resizes(), (torch.randn(2, 3),)),
    }


class ReadsItem(nn.Module):
    """Reads a number from tensor data (.item(): Core ATen's _local_scalar_dense), which
    Ember refuses to import (written without outputs: no run in Ember to compare)."""

    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n >= 0)
        return x * n


class ResizesInput(nn.Module):
    """resize_ of a user input: the caller's tensor would change size, which an imported
    graph cannot give back, so Ember refuses it (PyTorch's signature does not record it)."""

    def forward(self, x):
        x.resize_(2, 2)
        return x + 1


def refused_models():
    return {"reads_item": (ReadsItem(), (torch.randn(3),)),
            "resizes_input_training_ir": (ResizesInput(), (torch.randn(2, 3),))}


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def relative_paths(ep):
    """Stack traces name this script relative to the repository, as a user's file would be."""
    for n in ep.graph.nodes:
        if n.meta.get("stack_trace"):
            n.meta["stack_trace"] = n.meta["stack_trace"].replace(REPO_ROOT, "")
    return ep


def user_input_names(ep):
    from torch.export.graph_signature import InputKind

    return [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)) + "/programs"
    only = set(sys.argv[2:])  # names to write (default: every program)
    os.makedirs(out, exist_ok=True)
    for name, (model, args) in models().items():
        if only and name not in only:
            continue
        model.eval()
        ep = torch.export.export(model, args)
        ep = relative_paths(ep if name.endswith("_training_ir") else ep.run_decompositions())
        torch.export.save(ep, f"{out}/{name}.pt2")
        # Run the saved program, as a loader of the file would.
        loaded = torch.export.load(f"{out}/{name}.pt2").module()
        outs = loaded(*args)
        outs = torch.utils._pytree.tree_leaves(outs)  # a dict or nested tuple: the signature's order
        tensors = {}
        for n, a in zip(user_input_names(ep), args):
            tensors[f"input.{n}"] = a.contiguous()
        for k, o in enumerate(outs):
            tensors[f"output.{k}"] = o.detach().contiguous()
        for bname, b in loaded.named_buffers():
            tensors[f"state.{bname}"] = b.detach().contiguous()
        save_file(tensors, f"{out}/{name}_io.safetensors")
        print(name, " ".join(sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})))
    for name, (model, args) in refused_models().items():
        if only and name not in only:
            continue
        ep = torch.export.export(model, args)
        ep = ep if name.endswith("_training_ir") else ep.run_decompositions()
        torch.export.save(relative_paths(ep), f"{out}/{name}.pt2")


if __name__ == "__main__":
    main()
