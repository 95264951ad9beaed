"""The conformance rows of the pool3d family (src/ops/pool3d.cpp), imported by
gen_cases.py: _adaptive_avg_pool3d (uneven, larger-than-input, empty windows), avg_pool3d (count_include_pad both ways, divisor_override, ceil_mode, int64
inputs) and max_pool3d_with_indices (padding, dilation, ceil_mode) batched and not, with
one-int and omitted arguments, strided inputs, and the errors PyTorch raises; and
max_pool3d_with_indices_backward on PyTorch's own indices. The composites record
gradients too."""
import torch

from opinfo import OpInfo, S, T

f32, f64, f16, bf16, i64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64
A = torch.ops.aten


def avg(g):
    return [S(g.t((2, 3, 4, 6, 6)), [2, 2, 2], desc="k2, default stride"),
            S(g.t((3, 5, 6, 7)), [3, 2, 3], [2, 1, 2], [1, 1, 0], desc="unbatched, stride, padding"),
            S(g.t((1, 2, 5, 6, 7)), [3, 3, 3], [2, 2, 2], [1, 1, 1], False, False,
              desc="padding not counted"),
            S(g.t((1, 2, 5, 6, 7)), [2, 3, 2], [2, 2, 2], [1, 1, 1], True, True, desc="ceil_mode"),
            S(g.t((1, 2, 5, 6, 7)), [2, 3, 2], [2, 2, 2], [1, 1, 1], True, False, desc="ceil_mode, padding not counted"),
            S(g.t((1, 2, 4, 5, 6)), [2, 2, 2], [1, 1, 1], [1, 0, 1], False, True, 3, desc="divisor_override"),
            S(g.t((1, 2, 4, 4, 4)), [2], [1], [1], desc="one-int arguments"),
            S(g.t((1, 2, 4, 6, 6), lay="transposed"), [2, 2, 2], [2, 1, 2], desc="transposed"),
            S(g.t((0, 2, 4, 4, 4)), [2, 2, 2], desc="empty batch"),
            S(g.t((1, 2, 4, 5, 6), f64), [3, 2, 2], [1, 2, 2], [1, 1, 0], desc="f64"),
            S(g.t((1, 2, 4, 5, 6), i64), [2, 2, 2], [1, 1, 1], [1, 1, 1], desc="int64"),
            S(g.t((1, 2, 4, 5, 6), i64), [2, 2, 2], [1, 1, 1], [0, 0, 0], False, True, 3, desc="int64, divisor"),
            S(g.t((1, 2, 4, 4, 4), bf16), [2, 2, 2], desc="bf16", expect="maybe"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2], desc="two kernel sizes", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2, 2], [1, 2], desc="two strides", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2, 2], [], [2, 1, 1], desc="padding over half the kernel", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2, 2], [], [0], False, True, 0, desc="divisor 0", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [0, 2, 2], desc="empty kernel", expect="error"),
            S(g.t((4, 4, 4)), [2, 2, 2], desc="3-D input", expect="error"),
            S(g.t((2, 3, 0, 6, 7)), [2, 2, 2], desc="an empty spatial dim", expect="error"),
            S(g.t((1, 2, 5, 6, 7)), [6, 2, 2], desc="kernel larger than input", expect="error")]


def max_pool(g):
    return [S(g.t((2, 3, 4, 6, 6)), [2, 2, 2], desc="k2, default stride"),
            S(g.t((3, 5, 6, 7)), [3, 2, 3], [2, 1, 2], [1, 1, 0], desc="unbatched, stride, padding"),
            S(g.t((1, 2, 5, 6, 7)), [3, 3, 3], [2, 2, 2], [1, 1, 1], [2, 1, 2], desc="dilation"),
            S(g.t((1, 2, 5, 6, 7)), [2, 3, 2], [2, 2, 2], [1, 1, 1], [1, 1, 1], True, desc="ceil_mode"),
            S(g.t((1, 2, 6, 6, 6)), [3, 3, 3], [2], [1], [2], True, desc="one-int arguments, ceil_mode"),
            S(g.t((1, 2, 4, 6, 6), lay="transposed"), [2, 2, 2], [2, 1, 2], desc="transposed"),
            S(g.t((0, 2, 4, 4, 4)), [2, 2, 2], desc="empty batch"),
            S(g.t((1, 2, 4, 5, 6), f64), [3, 2, 2], [1, 2, 2], [1, 1, 0], desc="f64"),
            S(g.t((1, 2, 4, 4, 4), bf16), [2, 2, 2], desc="bf16", expect="maybe"),
            S(g.t((1, 2, 4, 4, 4), i64), [2, 2, 2], desc="int64", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2, 2], [], [0], [0], desc="zero dilation", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2, 2], [], [0], [1, 1], desc="two dilations", expect="error"),
            S(g.t((1, 2, 4, 4, 4)), [2, 2, 2], [0, 1, 1], desc="zero stride", expect="error"),
            S(g.t((4, 4, 4)), [2, 2, 2], desc="3-D input", expect="error")]


def max_pool_backward(g):
    def s(x, k, st, pad, dil, ceil, desc, expect="ok", gdt=None):
        out, ind = A.max_pool3d_with_indices(x.value(), k, st, pad, dil, ceil)
        return S(g.t(tuple(out.shape), gdt or x.base.dtype), x, k, st, pad, dil, ceil, T(ind), desc=desc,
                 expect=expect)
    return [s(g.t((2, 3, 4, 6, 6)), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False, "k2"),
            s(g.t((1, 2, 5, 6, 7)), [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], False, "overlapping windows accumulate"),
            s(g.t((3, 5, 6, 7)), [3, 2, 3], [2, 1, 2], [1, 1, 0], [2, 1, 1], True, "unbatched, dilation, ceil_mode"),
            s(g.t((1, 2, 4, 5, 6), f64), [2, 2, 2], [1, 2, 2], [1, 0, 1], [1, 1, 1], False, "f64")]


def pool3d_rows():
    F = "pool3d"
    return [OpInfo("aten::avg_pool3d", F, avg, grads=True),
            OpInfo("aten::max_pool3d_with_indices", F, max_pool, grads=True),
            OpInfo("aten::max_pool3d_with_indices_backward", F, max_pool_backward, grads=True)]


def adaptive(g):
    return [S(g.t((2, 3, 5, 6, 7)), [2, 3, 4], desc="uneven windows"),
            S(g.t((3, 4, 4, 4)), [8, 3, 3], desc="unbatched, output larger than input"),
            S(g.t((1, 2, 4, 6, 6)), [4, 6, 6], desc="identity"),
            S(g.t((1, 2, 4, 5, 6)), [1, 1, 1], desc="global"),
            S(g.t((1, 2, 4, 6, 6), lay="transposed"), [3, 2, 5], desc="transposed"),
            S(g.t((0, 3, 4, 4, 4)), [2, 3, 3], desc="empty batch"),
            S(g.t((2, 3, 5, 6, 7)), [0, 3, 3], desc="an empty output dim"),
            S(g.t((2, 3, 5, 6, 7), f64), [3, 2, 4], desc="f64"),
            S(g.t((2, 3, 5, 6, 7), f16), [2, 3, 4], desc="f16", expect="maybe"),
            S(g.t((2, 3, 5, 6, 7), bf16), [2, 3, 4], desc="bf16", expect="maybe"),
            S(g.t((2, 3, 5, 6, 7), i64), [2, 3, 4], desc="int64", expect="error"),
            S(g.t((2, 3, 5, 6, 7)), [2, 3], desc="two output sizes", expect="error"),
            S(g.t((5, 6, 7)), [2, 3, 3], desc="3-D input", expect="error"),
            S(g.t((2, 3, 0, 4, 4)), [2, 3, 3], desc="an empty spatial dim", expect="error")]


def adaptive_pool3d_rows():
    """After every other family's rows, so that their seeds stay as they were. float16 and
    bfloat16 references are computed in float32 and rounded (torch 1.13 sums float16 in
    float16; later PyTorch in float32)."""
    return [OpInfo("aten::_adaptive_avg_pool3d", "pool3d", adaptive, grads=True, reduced_in_float=True)]
