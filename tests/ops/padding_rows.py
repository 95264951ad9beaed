"""The conformance rows of the padding family (src/ops/padding.cpp), imported by
gen_cases.py: reflection_pad1d/2d/3d and replication_pad2d/3d, batched and not, negative
(cropping) and, for replication, wider-than-input padding, strided inputs, and the errors
PyTorch raises. The composites record gradients too (grads=True). No integer inputs and
no padding lists of the wrong length: torch 1.13 rejects the first and accepts the second,
PyTorch 2.x the reverse (Ember follows 2.x)."""
import torch

from opinfo import OpInfo, S

f32, f64, bf16, b8 = torch.float32, torch.float64, torch.bfloat16, torch.bool


def reflection_pad1d(g):
    return [S(g.t((2, 3, 5)), [2, 3], desc="batched"), S(g.t((3, 5)), [1, 1], desc="unbatched"),
            S(g.t((2, 3, 5)), [-1, 2], desc="negative: crops"), S(g.t((2, 3, 5), lay="transposed"), [4, 0],
                                                                   desc="transposed, pad size - 1"),
            S(g.t((2, 3, 6), f64), [2, 1], desc="f64"), S(g.t((0, 3, 5)), [1, 2], desc="empty batch"),
            S(g.t((2, 3, 5), bf16), [1, 2], desc="bf16", expect="maybe"),
            S(g.t((2, 3, 5)), [5, 1], desc="padding not less than the size", expect="error"),
            S(g.t((5,)), [1, 1], desc="1-D", expect="error"),
            S(g.t((2, 3, 5), b8), [1, 1], desc="bool", expect="error")]


def reflection_pad2d(g):
    return [S(g.t((2, 3, 4, 5)), [1, 2, 3, 0], desc="batched"), S(g.t((3, 4, 5)), [2, 2, 1, 1], desc="unbatched"),
            S(g.t((2, 3, 4, 5), lay="permute"), [0, -1, 2, 1], desc="permuted, a crop"),
            S(g.t((1, 2, 4, 4), f64), [3, 3, 3, 3], desc="f64"),
            S(g.t((2, 3, 4, 5)), [1, 2, 4, 0], desc="padding not less than the height", expect="error")]


def reflection_pad3d(g):
    return [S(g.t((1, 2, 3, 4, 5)), [1, 2, 0, 1, 2, 1], desc="batched"),
            S(g.t((2, 3, 4, 5)), [1, 1, 3, 0, 0, 2], desc="unbatched"),
            S(g.t((1, 2, 3, 4, 5), lay="step"), [2, 2, 1, 1, 1, 1], desc="strided"),
            S(g.t((2, 3, 4, 5)), [1, 2, 0, 1, 3, 1], desc="padding not less than the depth", expect="error")]


def replication_pad2d(g):
    return [S(g.t((2, 3, 4, 5)), [1, 2, 3, 0], desc="batched"), S(g.t((3, 4, 5)), [7, 2, 9, 0], desc="wider than input"),
            S(g.t((2, 3, 4, 5)), [-1, 2, 0, -2], desc="negative: crops"),
            S(g.t((2, 3, 4, 5), lay="transposed"), [1, 1, 1, 1], desc="transposed"),
            S(g.t((1, 2, 3, 3), f64), [2, 0, 0, 2], desc="f64"),
            S(g.t((2, 3, 0, 5)), [1, 2, 3, 0], desc="an empty spatial dim", expect="error")]


def replication_pad3d(g):
    return [S(g.t((1, 2, 3, 4, 5)), [1, 2, 0, 1, 2, 1], desc="batched"),
            S(g.t((2, 3, 4, 5)), [4, 4, 0, 0, 5, 1], desc="unbatched, wider than input"),
            S(g.t((1, 2, 3, 4, 5), lay="permute"), [1, 0, 1, 0, 1, 0], desc="permuted"),
            S(g.t((2, 3)), [1, 1, 1, 1, 1, 1], desc="2-D", expect="error")]


def padding_rows():
    F = "padding"
    return [OpInfo("aten::reflection_pad1d", F, reflection_pad1d, grads=True),
            OpInfo("aten::reflection_pad2d", F, reflection_pad2d, grads=True),
            OpInfo("aten::reflection_pad3d", F, reflection_pad3d, grads=True),
            OpInfo("aten::replication_pad2d", F, replication_pad2d, grads=True),
            OpInfo("aten::replication_pad3d", F, replication_pad3d, grads=True)]
