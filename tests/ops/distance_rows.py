"""The conformance rows of the distance family (src/ops/distance.cpp), imported by
gen_cases.py: _cdist_forward for p = 0, 1, 2, inf, fractional and other p, by the direct
sum and (p = 2 with more than 25 rows, or compute_mode 1) by ATen's matmul form, with
broadcast batch dims, strided and empty inputs; _pdist_forward for the same p; and the
errors PyTorch raises. The composites record gradients too."""
import math

import torch

from opinfo import OpInfo, S

f32, f64, f16, bf16, i64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64


def cdist(g):
    return [S(g.t((3, 4)), g.t((5, 4)), 2.0, None, desc="p=2"),
            S(g.t((3, 4)), g.t((5, 4)), 1.0, None, desc="p=1"),
            S(g.t((3, 4)), g.t((5, 4)), 0.0, None, desc="p=0"),
            S(g.t((3, 4)), g.t((5, 4)), math.inf, None, desc="p=inf"),
            S(g.t((3, 4)), g.t((5, 4)), 3.0, None, desc="p=3"),
            S(g.t((3, 4)), g.t((5, 4)), 0.5, None, desc="p=0.5"),
            S(g.t((30, 4)), g.t((5, 4)), 2.0, None, desc="p=2, 30 rows: the matmul form"),
            S(g.t((3, 4)), g.t((5, 4)), 2.0, 1, desc="p=2, compute_mode 1: the matmul form"),
            S(g.t((30, 4)), g.t((6, 4)), 2.0, 2, desc="p=2, 30 rows, compute_mode 2: the direct sum"),
            S(g.t((30, 4)), g.t((6, 4)), 1.0, 1, desc="p=1, compute_mode 1: the direct sum"),
            S(g.t((2, 1, 3, 4)), g.t((3, 5, 4)), 2.0, None, desc="broadcast batch dims"),
            S(g.t((2, 3, 4)), g.t((2, 5, 4)), 3.0, None, desc="batched, p=3"),
            S(g.t((4, 3), lay="transposed"), g.t((5, 3)), 2.0, None, desc="transposed"),
            S(g.t((3, 4), f64), g.t((5, 4), f64), 2.0, None, desc="f64"),
            S(g.t((28, 4), f64), g.t((5, 4), f64), 2.0, None, desc="f64, the matmul form"),
            S(g.t((3, 0)), g.t((5, 0)), 2.0, None, desc="no columns"),
            S(g.t((0, 4)), g.t((5, 4)), 2.0, None, desc="no rows"),
            S(g.t((3, 4), f16), g.t((5, 4), f16), 2.0, None, desc="f16", expect="maybe"),
            S(g.t((3, 4), bf16), g.t((5, 4), bf16), 2.0, None, desc="bf16", expect="maybe"),
            S(g.t((3, 4), i64), g.t((5, 4), i64), 2.0, None, desc="int64", expect="error"),
            S(g.t((3, 4)), g.t((5, 4), f64), 2.0, None, desc="mixed dtypes", expect="error"),
            S(g.t((3, 4)), g.t((5, 4)), -1.0, None, desc="negative p", expect="error"),
            S(g.t((3, 4)), g.t((5, 4)), 2.0, 3, desc="compute_mode 3", expect="error"),
            S(g.t((3, 4)), g.t((5, 3)), 2.0, None, desc="column counts differ", expect="error"),
            S(g.t((4,)), g.t((5, 4)), 2.0, None, desc="1-D x1", expect="error"),
            S(g.t((2, 3, 4)), g.t((3, 5, 4)), 2.0, None, desc="batch dims do not broadcast", expect="error")]


def pdist(g):
    return [S(g.t((5, 3)), 2.0, desc="p=2"), S(g.t((5, 3)), 1.0, desc="p=1"), S(g.t((5, 3)), 0.0, desc="p=0"),
            S(g.t((6, 3)), math.inf, desc="p=inf"), S(g.t((6, 3)), 3.0, desc="p=3"),
            S(g.t((4, 3)), 0.5, desc="p=0.5"), S(g.t((7, 2)), desc="default p"),
            S(g.t((40, 3)), 2.0, desc="40 rows"),
            S(g.t((5, 3), f64), 2.0, desc="f64"), S(g.t((1, 3)), 2.0, desc="one row"),
            S(g.t((4, 0)), 2.0, desc="no columns"),
            S(g.t((5, 3), bf16), 2.0, desc="bf16", expect="maybe"),
            S(g.t((5, 3), i64), 2.0, desc="int64", expect="error"),
            S(g.t((3, 5), lay="transposed"), 2.0, desc="not contiguous", expect="error"),
            S(g.t((5,)), 2.0, desc="1-D", expect="error")]


def distance_rows():
    F = "distance"
    return [OpInfo("aten::_cdist_forward", F, cdist, grads=True),
            OpInfo("aten::_pdist_forward", F, pdist, grads=True)]
