"""The conformance rows of the fold family (src/ops/fold.cpp), imported by gen_cases.py:
im2col and col2im with and without a batch dim, padding, dilation and stride (alone and
together, overlapping and gapped blocks), strided and empty-batch inputs, the dtypes
PyTorch's CPU kernels take, and the errors PyTorch raises. The composites record
gradients too."""
import torch

from opinfo import OpInfo, S

f32, f64, f16, bf16, i64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64


def im2col(g):
    return [S(g.t((2, 3, 5, 6)), [2, 2], [1, 1], [0, 0], [1, 1], desc="2x2 blocks"),
            S(g.t((3, 5, 6)), [2, 3], [1, 1], [0, 0], [1, 1], desc="unbatched"),
            S(g.t((2, 3, 5, 6)), [3, 3], [1, 1], [1, 2], [1, 1], desc="padding"),
            S(g.t((2, 2, 7, 8)), [2, 3], [2, 1], [0, 1], [1, 2], desc="dilation, stride"),
            S(g.t((1, 2, 7, 7)), [2, 2], [1, 1], [0, 0], [3, 3], desc="gapped blocks"),
            S(g.t((2, 3, 5, 6), lay="transposed"), [2, 2], [1, 1], [1, 1], [2, 1], desc="transposed"),
            S(g.t((0, 3, 5, 6)), [2, 2], [1, 1], [0, 0], [1, 1], desc="empty batch"),
            S(g.t((2, 3, 5, 6), f64), [3, 2], [1, 2], [1, 0], [2, 1], desc="f64"),
            S(g.t((2, 3, 5, 6), bf16), [2, 2], [1, 1], [0, 0], [1, 1], desc="bf16", expect="maybe"),
            S(g.t((2, 3, 5, 6), f16), [2, 2], [1, 1], [0, 0], [1, 1], desc="f16", expect="maybe"),
            S(g.t((2, 3, 5, 6), i64), [2, 2], [1, 1], [0, 0], [1, 1], desc="int64", expect="error"),
            S(g.t((2, 3, 5, 6)), [0, 2], [1, 1], [0, 0], [1, 1], desc="empty kernel", expect="error"),
            S(g.t((2, 3, 5, 6)), [2, 2], [0, 1], [0, 0], [1, 1], desc="zero dilation", expect="error"),
            S(g.t((2, 3, 5, 6)), [2, 2], [1, 1], [-1, 0], [1, 1], desc="negative padding", expect="error"),
            S(g.t((2, 3, 5, 6)), [2, 2], [1, 1], [0, 0], [0, 1], desc="zero stride", expect="error"),
            S(g.t((2, 3, 5, 6)), [7, 2], [1, 1], [0, 0], [1, 1], desc="kernel larger than input", expect="error"),
            S(g.t((2, 0, 5, 6)), [2, 2], [1, 1], [0, 0], [1, 1], desc="no channels", expect="error")]


def col2im(g):
    return [S(g.t((2, 12, 20)), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="2x2 blocks"),
            S(g.t((12, 20)), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="unbatched"),
            S(g.t((2, 27, 40)), [5, 6], [3, 3], [1, 1], [1, 2], [1, 1], desc="padding"),
            S(g.t((2, 12, 20)), [7, 8], [2, 3], [2, 1], [0, 1], [1, 2], desc="dilation, stride"),
            S(g.t((1, 8, 4)), [7, 7], [2, 2], [1, 1], [0, 0], [3, 3], desc="gapped blocks"),
            S(g.t((2, 12, 20), lay="transposed"), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="transposed"),
            S(g.t((0, 12, 20)), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="empty batch"),
            S(g.t((2, 18, 12), f64), [5, 6], [3, 2], [1, 2], [1, 0], [2, 1], desc="f64"),
            S(g.t((2, 12, 20), bf16), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="bf16", expect="maybe"),
            S(g.t((2, 12, 20), i64), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="int64", expect="error"),
            S(g.t((2, 12, 21)), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="wrong block count", expect="error"),
            S(g.t((2, 13, 20)), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="channels not a multiple of the kernel",
              expect="error"),
            S(g.t((2, 12, 20)), [5, 6], [0, 2], [1, 1], [0, 0], [1, 1], desc="empty kernel", expect="error"),
            S(g.t((2, 12, 0)), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], desc="no blocks", expect="error"),
            S(g.t((2, 12, 20)), [1, 1], [2, 2], [1, 1], [0, 0], [1, 1], desc="output smaller than a block",
              expect="error")]


def fold_rows():
    F = "fold"
    return [OpInfo("aten::im2col", F, im2col, grads=True), OpInfo("aten::col2im", F, col2im, grads=True)]
