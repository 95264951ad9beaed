"""Writes the exported programs with dynamic shapes that Ember's import tests read.

Run with PyTorch 2.11 (CPU):  python tests/export/make_dynamic_programs.py [out_dir [name ...]]
(names: only those programs are written).
Each model is exported with torch.export.export(..., dynamic_shapes=...) and
run_decompositions() (Core ATen) and saved as <name>.pt2; for each of its test sizes k,
<name>_io<k>.safetensors holds the user inputs ("input.<name>") and PyTorch's outputs of
the saved program ("output.<k>"), the layout of make_programs.py's files.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_programs import MLP, Block, relative_paths, user_input_names  # noqa: E402
from safetensors_lite import save_file  # noqa: E402

torch.manual_seed(0)


class CausalBlock(Block):
    """make_programs.py's block with its causal mask built from the sequence length, so that
    batch and sequence are both dynamic (its mask buffer is then unused)."""

    def __init__(self):
        super().__init__(t=1)

    def mask_scores(self, att, t):
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        return torch.where(mask, att, float("-inf"))


class SizeArithmetic(nn.Module):
    """Sizes read with x.size() and computed with: sym_size, mul and floordiv nodes feeding
    views; y's batch dim must equal x's."""

    def forward(self, x, y):
        b, t, c = x.shape
        h = x.view(b, (t * 4) // 2, c // 2)
        return (h * 2.0).sum(1) + y, h.reshape(b * t, -1).mean(0)


class ArangeBias(nn.Module):
    """Adds arange(batch) and slices by a size: Core ATen calls arange with the symbolic
    batch as its scalar end, and slice with a symbolic bound."""

    def forward(self, x):
        n = x.size(0)
        return x + torch.arange(n, dtype=x.dtype).unsqueeze(1), x[: n - 2]


class Ranged(nn.Module):
    """A batch dim constrained to [2, 64], shared by two inputs."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)

    def forward(self, x, y):
        return torch.relu(self.lin(x)) * y + 1.0


class StridedSpectrum(nn.Module):
    """as_strided with sizes, strides and an offset over the symbols (its SymInt[] and
    SymInt? arguments), and rfft then irfft back to the symbolic length (_fft_r2c and
    _fft_c2r with a symbolic last_dim_size)."""

    def forward(self, x):
        n, t = x.shape
        rows = x.as_strided((n - 1, 2), (t, 1), t)
        smooth = torch.fft.irfft(torch.fft.rfft(x, dim=1), n=t, dim=1)
        return rows * 2.0, smooth + 1.0


def programs():
    """name -> (model, dynamic_shapes, [example args for each test size])."""
    batch = Dim("batch")
    b, t = Dim("b", max=64), Dim("t", max=64)
    tb, tt = Dim("b"), Dim("t", min=3, max=100)
    rb = Dim("b", min=2, max=64)
    return {
        "mlp_batch": (MLP(), {"x": {0: batch}}, [(torch.randn(n, 16),) for n in (4, 7, 33)]),
        "causal_block": (
            CausalBlock(),
            {"x": {0: b, 1: t}},
            [(torch.randn(n, s, 32),) for n, s in ((2, 8), (3, 5), (2, 13))],
        ),
        "size_arith": (
            SizeArithmetic(),
            {"x": {0: tb, 1: tt}, "y": {0: tb}},
            [(torch.randn(n, s, 8), torch.randn(n, 4)) for n, s in ((3, 5), (2, 9), (6, 4))],
        ),
        "ranged": (
            Ranged(),
            {"x": {0: rb}, "y": {0: rb}},
            [(torch.randn(n, 6), torch.randn(n, 4)) for n in (3, 2, 64)],
        ),
        "arange_bias": (ArangeBias(), {"x": {0: Dim("n", min=4)}}, [(torch.randn(n, 3),) for n in (4, 7, 33)]),
        # The causal block in plain Core ATen: tril becomes arange(T) comparisons, so the
        # symbolic sequence length reaches arange as its scalar end.
        "causal_block_core": (
            CausalBlock(),
            {"x": {0: b, 1: t}},
            [(torch.randn(n, s, 32),) for n, s in ((2, 8), (3, 5), (2, 13))],
        ),
        "strided_spectrum": (
            StridedSpectrum(),
            {"x": {0: Dim("n", min=3), 1: Dim("t", min=3)}},
            [(torch.randn(n, s),) for n, s in ((4, 6), (3, 9), (7, 16))],
        ),
    }


def core_aten(ep, keep=()):
    """run_decompositions() into Core ATen, leaving the ops in `keep` undecomposed."""
    table = torch.export.default_decompositions()
    for op in keep:
        table.pop(op, None)
    return ep.run_decompositions(table)


# causal_block keeps aten.tril (Ember's tril over symbolic sizes); causal_block_core is the
# same model in plain Core ATen, where tril is arange(T) comparisons.
KEEP = {"causal_block": (torch.ops.aten.tril.default,)}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)) + "/programs"
    os.makedirs(out, exist_ok=True)
    only = set(sys.argv[2:])
    for name, (model, dynamic, sizes) in programs().items():
        if only and name not in only:
            continue
        model.eval()
        ep = torch.export.export(model, sizes[0], dynamic_shapes=dynamic)
        ep = relative_paths(core_aten(ep, KEEP.get(name, ())))
        torch.export.save(ep, f"{out}/{name}.pt2")
        loaded = torch.export.load(f"{out}/{name}.pt2").module()
        for k, args in enumerate(sizes):
            outs = loaded(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            tensors = {f"input.{n}": a.contiguous() for n, a in zip(user_input_names(ep), args)}
            for i, o in enumerate(outs):
                tensors[f"output.{i}"] = o.detach().contiguous()
            save_file(tensors, f"{out}/{name}_io{k}.safetensors")
        print(name, ep.range_constraints)
        print(" ", " ".join(sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})))


if __name__ == "__main__":
    main()
