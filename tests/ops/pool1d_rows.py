"""The conformance rows of the pool1d family (avg_pool1d and adaptive_avg_pool1d, the
composites of src/ops/conv.cpp over the 2-D poolings, Note [1-D pooling]), imported by
gen_cases.py. Generated with PyTorch 2.x (rows of torch2_rows(), see TORCH2_SEED): batched
and unbatched inputs, omitted and one-int arguments, padding counted or not, ceil_mode,
strided inputs, the dtypes, and the errors of ATen's checkDimRange/check1d. Both are
composites, so their ok samples record gradients too."""
import torch

from opinfo import OpInfo, S

f32, f64, f16, bf16, i64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64


def avg(g):
    return [S(g.t((2, 3, 8)), [2], desc="k2, default stride"),
            S(g.t((3, 9)), [3], [2], [1], desc="unbatched, stride, padding"),
            S(g.t((2, 3, 9)), [3], [2], [1], False, False, desc="padding not counted"),
            S(g.t((1, 2, 10)), [3], [2], [1], True, desc="ceil_mode"),
            S(g.t((1, 2, 10)), [3], [2], [1], True, False, desc="ceil_mode, padding not counted"),
            S(g.t((2, 3, 7)), [7], desc="window of the whole length"),
            S(g.t((2, 6, 5), lay="transposed"), [2], [1], desc="transposed"),
            S(g.t((0, 2, 6)), [2], desc="empty batch"),
            S(g.t((2, 3, 9), f64), [4], [3], [2], desc="f64"),
            S(g.t((2, 3, 9), i64), [3], [2], [1], desc="int64"),
            S(g.t((2, 3, 8), f16), [2], desc="f16", expect="maybe"),
            S(g.t((2, 3, 8), bf16), [2], desc="bf16", expect="maybe"),
            S(g.t((2, 3, 4, 5)), [2], desc="4-D input", expect="error"),
            S(g.t((5,)), [2], desc="1-D input", expect="error"),
            S(g.t((2, 3, 8)), [2, 2], desc="two kernel sizes", expect="error"),
            S(g.t((2, 3, 8)), [2], [1, 1], desc="two strides", expect="error"),
            S(g.t((2, 3, 8)), [2], [1], [0, 0], desc="two paddings", expect="error"),
            S(g.t((2, 3, 8)), [2], [1], [2], desc="padding over half the kernel", expect="error"),
            S(g.t((2, 3, 3)), [5], desc="kernel larger than input", expect="error")]


def adaptive(g):
    return [S(g.t((2, 3, 8)), [4], desc="8->4"),
            S(g.t((3, 7)), [3], desc="unbatched, uneven windows"),
            S(g.t((2, 3, 5)), [8], desc="output larger than input"),
            S(g.t((2, 3, 6)), [1], desc="global"),
            S(g.t((2, 3, 6)), [6], desc="identity"),
            S(g.t((2, 6, 5), lay="transposed"), [2], desc="transposed"),
            S(g.t((0, 3, 6)), [2], desc="empty batch"),
            S(g.t((2, 3, 9), f64), [4], desc="f64"),
            S(g.t((2, 3, 8), bf16), [3], desc="bf16", expect="maybe"),
            S(g.t((2, 3, 8), i64), [3], desc="int64", expect="error"),
            S(g.t((2, 3, 4, 5)), [2], desc="4-D input", expect="error"),
            S(g.t((2, 3, 8)), [2, 2], desc="two output sizes", expect="error"),
            S(g.t((2, 3, 0)), [2], desc="an empty length", expect="error")]


def pool1d_rows():
    F = "pool1d"
    return [OpInfo("aten::avg_pool1d", F, avg, grads=True),
            OpInfo("aten::adaptive_avg_pool1d", F, adaptive, grads=True)]
