"""The conformance rows of the grid_sample family (src/ops/grid_sample.cpp), imported by
gen_cases.py: grid_sampler_2d for every interpolation (bilinear, nearest, bicubic) and
padding mode (zeros, border, reflection), align_corners both ways, grids reaching outside
[-1, 1], strided and empty inputs, and the errors PyTorch raises. The composite records
gradients (input and grid) too; bicubic's are float64 (a grid gradient sums 16 taps whose
cancellation leaves float32 rounding above float32's tolerance)."""
import torch

from opinfo import OpInfo, S

f32, f64, bf16, i64 = torch.float32, torch.float64, torch.bfloat16, torch.int64
MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADS = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(g):
    out = []
    for mode in (0, 1, 2):
        for pad in (0, 1, 2):
            for align in (False, True):
                dt = f64 if mode == 2 else f32
                out.append(S(g.t((2, 3, 5, 6), dt), g.t((2, 4, 3, 2), dt), mode, pad, align,
                             desc="%s, %s%s" % (MODES[mode], PADS[pad], ", align_corners" if align else "")))
    return out + [
        S(g.t((1, 2, 4, 4)), g.t((1, 3, 5, 2), kind="unit"), 0, 0, False, desc="grid inside [-1, 1]"),
        S(g.t((1, 2, 1, 1)), g.t((1, 2, 2, 2)), 0, 2, False, desc="1x1 input, reflection"),
        S(g.t((1, 2, 1, 5)), g.t((1, 2, 2, 2)), 2, 2, True, desc="one row, bicubic reflection"),
        S(g.t((2, 3, 5, 6), lay="transposed"), g.t((2, 4, 3, 2)), 0, 1, False, desc="transposed input"),
        S(g.t((2, 3, 5, 6)), g.t((2, 4, 3, 2), lay="permute"), 1, 0, True, desc="permuted grid"),
        S(g.t((2, 3, 5, 6), f64), g.t((2, 4, 3, 2), f64), 0, 2, True, desc="f64"),
        S(g.t((2, 3, 5, 6)), g.t((2, 4, 3, 2)), 2, 0, False, desc="f32 bicubic"),
        S(g.t((0, 3, 5, 6)), g.t((0, 4, 3, 2)), 0, 0, False, desc="empty batch"),
        S(g.t((2, 3, 5, 6)), g.t((2, 0, 3, 2)), 0, 0, False, desc="empty grid"),
        S(g.t((2, 3, 5, 6), bf16), g.t((2, 4, 3, 2), bf16), 0, 0, False, desc="bf16", expect="maybe"),
        S(g.t((2, 3, 5, 6), i64), g.t((2, 4, 3, 2), i64), 0, 0, False, desc="int64", expect="error"),
        S(g.t((2, 3, 5, 6)), g.t((2, 4, 3, 2), f64), 0, 0, False, desc="mixed dtypes", expect="error"),
        S(g.t((3, 5, 6)), g.t((2, 4, 3, 2)), 0, 0, False, desc="3-D input", expect="error"),
        S(g.t((2, 3, 5, 6)), g.t((3, 4, 3, 2)), 0, 0, False, desc="batch sizes differ", expect="error"),
        S(g.t((2, 3, 5, 6)), g.t((2, 4, 3, 3)), 0, 0, False, desc="grid's last dim 3", expect="error"),
        S(g.t((2, 3, 0, 6)), g.t((2, 4, 3, 2)), 0, 0, False, desc="an empty spatial dim", expect="error")]


def grid_sample_rows():
    return [OpInfo("aten::grid_sampler_2d", "grid_sample", grid_sampler, grads=True)]
