"""The conformance rows of the upsample family (src/ops/upsample.cpp), imported by
gen_cases.py: upsample_nearest2d.vec and upsample_bilinear2d.vec by output size and by
scale factors (whole and fractional, shrinking; no scale other than 2 that doubles a
size: PyTorch's CPU forward kernels and its backward kernel index such an output
differently), align_corners both ways, strided inputs, the dtypes PyTorch's CPU kernels
take (float16/bfloat16 computed in float32 and rounded, as later PyTorch does: torch
1.13's bfloat16 bilinear kernel rounds its weights), and the errors PyTorch raises. The
composites record gradients too."""
import torch

from opinfo import OpInfo, S

f32, f64, f16, bf16, u8, i64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8, torch.int64


def nearest(g):
    return [S(g.t((2, 3, 4, 5)), [8, 10], None, desc="x2 by size"),
            S(g.t((2, 3, 4, 5)), [7, 3], None, desc="odd size, shrinks W"),
            S(g.t((1, 2, 5, 6)), None, [2.0, 3.0], desc="whole scales"),
            S(g.t((1, 2, 5, 6)), None, [1.7, 2.3], desc="fractional scales"),
            S(g.t((1, 2, 6, 4)), None, [0.5, 0.75], desc="scales < 1"),
            S(g.t((2, 3, 4, 5), lay="transposed"), [6, 9], None, desc="transposed"),
            S(g.t((2, 3, 4, 6), lay="step"), [5, 5], None, desc="strided"),
            S(g.t((0, 3, 4, 5)), [6, 6], None, desc="empty batch"),
            S(g.t((2, 3, 4, 5), f64), [9, 11], None, desc="f64"),
            S(g.t((2, 3, 4, 5), bf16), [6, 7], None, desc="bf16", expect="maybe"),
            S(g.t((2, 3, 4, 5), u8), [6, 7], None, desc="uint8"),
            S(g.t((2, 3, 4, 5), f16), [6, 7], None, desc="f16", expect="maybe"),
            S(g.t((2, 3, 4, 5), i64), [6, 7], None, desc="int64", expect="error"),
            S(g.t((2, 3, 4, 5)), [6, 7], [2.0, 2.0], desc="both size and scales", expect="error"),
            S(g.t((2, 3, 4, 5)), None, None, desc="neither size nor scales", expect="error"),
            S(g.t((2, 3, 4, 5)), [6], None, desc="one size for two dims", expect="error"),
            S(g.t((2, 3, 4, 5)), None, [2.0], desc="one scale for two dims", expect="error"),
            S(g.t((2, 3, 4, 5)), None, [0.1, 0.1], desc="scales to an empty output", expect="error"),
            S(g.t((3, 4, 5)), [6, 7], None, desc="3-D input", expect="error"),
            S(g.t((1, 0, 4, 5)), [6, 7], None, desc="no channels", expect="error"),
            S(g.t((1, 2, 0, 5)), [6, 7], None, desc="an empty spatial dim", expect="error")]


def bilinear(g):
    return [S(g.t((2, 3, 4, 5)), [8, 10], False, None, desc="x2 by size"),
            S(g.t((2, 3, 4, 5)), [8, 10], True, None, desc="x2 by size, align_corners"),
            S(g.t((2, 3, 4, 5)), [7, 3], False, None, desc="odd size, shrinks W"),
            S(g.t((2, 3, 4, 5)), [7, 3], True, None, desc="odd size, shrinks W, align_corners"),
            S(g.t((1, 2, 5, 6)), None, False, [1.7, 2.3], desc="fractional scales"),
            S(g.t((1, 2, 5, 6)), None, True, [1.7, 2.3], desc="fractional scales, align_corners"),
            S(g.t((1, 2, 6, 4)), None, False, [0.5, 0.75], desc="scales < 1"),
            S(g.t((1, 2, 3, 4)), [1, 1], True, None, desc="1x1 output, align_corners"),
            S(g.t((1, 2, 1, 1)), [3, 4], False, None, desc="1x1 input"),
            S(g.t((2, 3, 4, 5), lay="transposed"), [6, 9], False, None, desc="transposed"),
            S(g.t((2, 3, 4, 6), lay="step"), [5, 5], True, None, desc="strided"),
            S(g.t((0, 3, 4, 5)), [6, 6], False, None, desc="empty batch"),
            S(g.t((2, 3, 4, 5), f64), [9, 11], False, None, desc="f64"),
            S(g.t((2, 3, 4, 5), f64), None, True, [2.5, 1.5], desc="f64 scales, align_corners"),
            S(g.t((2, 3, 4, 5), bf16), [6, 7], False, None, desc="bf16", expect="maybe"),
            S(g.t((2, 3, 4, 5), f16), [6, 7], False, None, desc="f16", expect="maybe"),
            S(g.t((2, 3, 4, 5), u8), [6, 7], False, None, desc="uint8", expect="error"),
            S(g.t((2, 3, 4, 5)), [6, 7], False, [2.0, 2.0], desc="both size and scales", expect="error"),
            S(g.t((2, 3, 4, 5)), None, False, None, desc="neither size nor scales", expect="error"),
            S(g.t((2, 3, 4, 5, 2)), [6, 7], False, None, desc="5-D input", expect="error"),
            S(g.t((2, 3, 4, 5)), [0, 7], False, None, desc="an empty output", expect="error")]


def upsample_rows():
    F = "upsample"
    return [OpInfo("aten::upsample_nearest2d.vec", F, nearest, grads=True),
            OpInfo("aten::upsample_bilinear2d.vec", F, bilinear, grads=True, reduced_in_float=True)]
