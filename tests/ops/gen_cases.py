#!/usr/bin/python3
"""Generates the conformance cases: every Ember op, by ATen name, run through PyTorch
(torch.ops.aten.<op>.<overload>) on seeded random inputs of several dtypes, broadcast
pairs, non-contiguous layouts, empty and 0-dim tensors. Writes, per family,
tests/ops/cases/<family>.safetensors (inputs and expected outputs, contiguous) and
tests/ops/cases/<family>.json (the cases). Run: /usr/bin/python3 tests/ops/gen_cases.py

On a GPU machine, `python3 tests/ops/gen_cases.py --device cuda` runs the same rows on
PyTorch's CUDA backend and writes the same files to tests/ops/cases_cuda/ (--out DIR
elsewhere), read by test_cuda_conformance; samples meant to fail, and samples PyTorch's
CPU rejects, are left out there (opinfo.py says why). Both write summary.txt beside the
files: what was stored per family, and on a device each sample left out and why.
`--only SUBSTRING --out DIR` runs the rows whose op name contains it (for trying a row;
the seeds stay those of the full run).

The table below has one row (OpInfo) per op; see docs/testing.md for how to add one.
"""
import argparse
import math
import os
import re
import sys

import torch

TORCH_MAJOR = int(torch.__version__.split(".")[0])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opinfo  # noqa: E402
from opinfo import OTL, TL, Family, Gen, OpInfo, S  # noqa: E402
from loss_rows import loss_rows  # noqa: E402
from norm_rows import norm_legit_rows, norm_rows  # noqa: E402
from scatter_rows import scatter_rows, slices_rows  # noqa: E402
from padding_rows import padding_rows  # noqa: E402
from upsample_rows import upsample_rows  # noqa: E402
from distance_rows import distance_rows  # noqa: E402
from fold_rows import fold_rows  # noqa: E402
from pool3d_rows import adaptive_pool3d_rows, pool3d_rows  # noqa: E402
from grid_sample_rows import grid_sample_rows  # noqa: E402
from embedding_bag_rows import embedding_bag_rows  # noqa: E402
from attention_rows import attention_rows  # noqa: E402
from fft_rows import fft_rows  # noqa: E402
from conv3d_rows import conv3d_rows  # noqa: E402
from pool1d_rows import pool1d_rows  # noqa: E402
from complex_rows import complex_rows  # noqa: E402

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, i16, i8, u8, b8 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool
ALL = [f64, f16, bf16, i64, i32, i16, i8, u8, b8]  # swept besides float32
FLOATS = [f32, f64, f16, bf16]
LAYOUTS = ["transposed", "step", "expand"]

# --- pointwise ------------------------------------------------------------------------

FLOAT_DOMAIN = {"log": "pos", "log1p": "pos", "log2": "pos", "sqrt": "pos", "rsqrt": "pos",
                "reciprocal": "nonzero", "floor": "wide", "ceil": "wide", "round": "wide", "trunc": "wide"}
INT_ONLY = {"bitwise_not"}


def unary(name):
    kind = FLOAT_DOMAIN.get(name, "normal")

    def samples(g):
        dt = i64 if name in INT_ONLY else f32
        out = [S(g.t(s, dt, kind=kind), desc="%s %s" % (list(s), dt)) for s in [(), (5,), (3, 4), (2, 3, 4), (0, 3)]]
        out += [S(g.t((3, 4), dt, lay, kind=kind), desc="%s (3,4)" % lay) for lay in LAYOUTS]
        out.append(S(g.t((2, 3, 4), dt, "permute", kind=kind), desc="permuted (2,3,4)"))
        out += [S(g.t((3, 4), d, kind=kind), desc="dtype %s" % d, expect="maybe") for d in ALL + [f32]
                if d != dt]
        if name not in INT_ONLY:
            out += [S(g.special(d), desc="special values %s" % d, expect="maybe") for d in (f32, f64, f16)]
        return out
    return samples


def unary_inplace(name):
    kind = FLOAT_DOMAIN.get(name, "normal")

    def samples(g):
        dt = i64 if name in INT_ONLY else f32
        out = [S(g.t((3, 4), dt, lay, kind=kind), desc="self %s" % lay) for lay in ("contiguous", "transposed", "step")]
        out += [S(g.t((0, 2), dt), desc="empty"), S(g.t((), dt, kind=kind), desc="0-dim")]
        out += [S(g.t((2, 3), d, kind=kind), desc="dtype %s" % d, expect="maybe") for d in (f64, bf16, i64, i32, u8, b8)
                if d != dt]
        return out
    return samples


BINARY_KIND = {"div": "nonzero", "remainder": "nonzero", "fmod": "nonzero", "_div_trunc": "nonzero",
               "_div_floor": "nonzero", "floor_divide": "nonzero"}
INT_BINARY = {"bitwise_and", "bitwise_or", "bitwise_xor"}


def binary(name, extra_kwargs=None):
    other_kind = BINARY_KIND.get(name, "normal")
    self_kind = "pos" if name.startswith("pow") else "normal"
    if name.startswith("pow"):
        other_kind = "small"
    kw = extra_kwargs or {}

    def samples(g):
        dt = i64 if name in INT_BINARY else f32

        def t(shape, d=dt, lay="contiguous", kind=None):
            return g.t(shape, d, lay, kind or self_kind)

        def o(shape, d=dt, lay="contiguous"):
            return g.t(shape, d, lay, other_kind if (d.is_floating_point or other_kind != "small")
                       else "small")
        out = [S(t((3, 4)), o((3, 4)), desc="same shape", **kw)]
        out += [S(t(a), o(b), desc="broadcast %s %s" % (a, b), **kw)
                for a, b in [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3, 4)), ((3, 4), ()), ((0, 4), (4,)),
                             ((0,), ())]]
        out += [S(t((3, 4), lay=lay), o((3, 4), lay=lay2), desc="layouts %s/%s" % (lay, lay2), **kw)
                for lay, lay2 in [("transposed", "contiguous"), ("contiguous", "step"), ("expand", "transposed"),
                                  ("step", "expand")]]
        out.append(S(t((2, 3, 4), lay="permute"), o((2, 3, 4), lay="permute"), desc="permuted", **kw))
        out += [S(t((3, 4), d), o((3, 4), d), desc="dtype %s" % d, expect="maybe", **kw) for d in ALL + [f32]
                if d != dt]
        pairs = [(f32, f64), (i64, f32), (i32, i64), (u8, i8), (b8, f32), (f16, f32), (bf16, f16), (b8, i32),
                 (u8, b8), (f32, i64)]
        out += [S(t((3, 4), a), o((4,), b), desc="promote %s,%s" % (a, b), expect="maybe", **kw) for a, b in pairs]
        out += [S(t((3, 4), i64), o((), f64), desc="int tensor, 0-dim float", expect="maybe", **kw),
                S(t((), f64), o((3, 4), f32), desc="0-dim f64, f32 tensor", expect="maybe", **kw),
                S(t((2, 3), f32), o((3, 2), f32), desc="shape mismatch", expect="error", **kw)]
        return out
    return samples


def binary_scalar(name, scalars=(2, -1.5, True), extra_kwargs=None):
    kw = extra_kwargs or {}
    self_kind = "pos" if name.startswith("pow") else "normal"

    def samples(g):
        out = []
        ok_dtype = i64 if name in INT_BINARY else f32
        for d in [f32, f64, f16, bf16, i64, i32, u8, b8]:
            for sc in scalars:
                out.append(S(g.t((3, 4), d, kind=self_kind), sc, desc="%s, scalar %r" % (d, sc),
                             expect="ok" if d == ok_dtype and not isinstance(sc, bool) else "maybe", **kw))
        out += [S(g.t((), ok_dtype, kind=self_kind), scalars[1], desc="0-dim", **kw),
                S(g.t((0, 3), ok_dtype, kind=self_kind), scalars[0], desc="empty", **kw),
                S(g.t((3, 4), ok_dtype, "transposed", kind=self_kind), scalars[0], desc="transposed", **kw)]
        return out
    return samples


def binary_inplace(name, scalar=False, extra_kwargs=None):
    kw = extra_kwargs or {}
    other_kind = BINARY_KIND.get(name, "normal")
    if name.startswith("pow"):
        other_kind = "small"

    def samples(g):
        dt = i64 if name in INT_BINARY else f32

        def rhs(shape, d):
            if scalar:
                return 2 if not d.is_floating_point else 1.5
            return g.t(shape, d, kind=other_kind)
        out = [S(g.t((3, 4), dt, lay, kind="pos"), rhs((4,), dt), desc="self %s" % lay, **kw)
               for lay in ("contiguous", "transposed", "step")]
        out += [S(g.t((3, 4), a, kind="pos"), rhs((3, 4), b), desc="self %s, other %s" % (a, b), expect="maybe", **kw)
                for a, b in [(f64, f32), (f32, f64), (i64, f32), (i64, i64), (b8, b8), (bf16, f32), (i32, u8)]]
        if not scalar:
            out.append(S(g.t((4,), dt), g.t((3, 4), dt), desc="broadcast into self", expect="error", **kw))
        return out
    return samples


def unary_ops():
    names = ["abs", "neg", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
             "tanh", "sigmoid", "relu", "silu", "erf", "sign", "floor", "ceil", "round", "trunc", "logical_not",
             "bitwise_not"]
    rows = []
    for n in names:
        rows.append(OpInfo("aten::" + n, "pointwise", unary(n)))
        rows.append(OpInfo("aten::%s_" % n, "pointwise", unary_inplace(n)))
    rows.append(OpInfo("aten::isnan", "pointwise", unary("isnan")))
    return rows


def div_trunc(a, b):
    return torch.div(a, b, rounding_mode="trunc")


def div_floor(a, b):
    return torch.div(a, b, rounding_mode="floor")


def binary_ops():
    rows = []
    alpha = {"alpha": 2}
    for n in ["add", "sub"]:
        rows.append(OpInfo("aten::%s.Tensor" % n, "pointwise", lambda g, n=n: binary(n)(g) + binary(n, alpha)(g)[:6] + [
            S(g.t((3, 4)), g.t((3, 4)), alpha=0.5, desc="float alpha"),
            S(g.t((3, 4), i64), g.t((3, 4), i64), alpha=0.5, desc="float alpha on ints", expect="error")]))
        rows.append(OpInfo("aten::%s.Scalar" % n, "pointwise", binary_scalar(n)))
        rows.append(OpInfo("aten::%s_.Tensor" % n, "pointwise", binary_inplace(n, extra_kwargs=alpha)))
        rows.append(OpInfo("aten::%s_.Scalar" % n, "pointwise", binary_inplace(n, scalar=True)))
    for n in ["mul", "div", "remainder", "fmod", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or",
              "bitwise_xor"]:
        rows.append(OpInfo("aten::%s.Tensor" % n, "pointwise", binary(n)))
        scal = (3, 2, True) if n.startswith("bitwise") else (2, -1.5, True)
        rows.append(OpInfo("aten::%s.Scalar" % n, "pointwise", binary_scalar(n, scal)))
        rows.append(OpInfo("aten::%s_.Tensor" % n, "pointwise", binary_inplace(n)))
        rows.append(OpInfo("aten::%s_.Scalar" % n, "pointwise", binary_inplace(n, scalar=True)))
    rows.append(OpInfo("aten::div.Tensor_mode", "pointwise", lambda g: binary("div", {"rounding_mode": "trunc"})(g) +
                       binary("div", {"rounding_mode": "floor"})(g) + binary("div", {"rounding_mode": None})(g)[:3] + [
                           S(g.t((3,)), g.t((3,)), rounding_mode="round", desc="bad mode", expect="error"),
                           S(g.t((3,), i64), g.t((3,), i64, kind="small"), rounding_mode="floor", desc="int floor, zeros possible",
                             expect="maybe")], grads=True))
    rows.append(OpInfo("aten::div.Scalar_mode", "pointwise", lambda g: binary_scalar(
        "div", (2, -1.5), {"rounding_mode": "trunc"})(g) + binary_scalar("div", (3, 0.7), {"rounding_mode": "floor"})(g), grads=True))
    rows.append(OpInfo("aten::_div_trunc", "pointwise", binary("_div_trunc"), ref=div_trunc,
                       schema="_div_trunc(Tensor self, Tensor other) -> Tensor",
                       note="Ember's helper behind div(rounding_mode='trunc'); reference torch.div(..., 'trunc')"))
    rows.append(OpInfo("aten::_div_floor", "pointwise", binary("_div_floor"), ref=div_floor,
                       schema="_div_floor(Tensor self, Tensor other) -> Tensor",
                       note="Ember's helper behind div(rounding_mode='floor'); reference torch.div(..., 'floor')"))
    rows.append(OpInfo("aten::floor_divide", "pointwise", binary("floor_divide")))
    rows.append(OpInfo("aten::pow.Tensor_Tensor", "pointwise", binary("pow")))
    rows.append(OpInfo("aten::pow.Tensor_Scalar", "pointwise", lambda g: binary_scalar("pow", (2, 0.5, 3))(g) + [
        S(g.t((3, 4), kind="pos"), e, desc="exponent %r" % e) for e in (0, 1, -1, -2.5, 1.0)] + [
        S(g.t((3, 4), i64), -1, desc="int to negative int power", expect="error")]))
    rows.append(OpInfo("aten::pow_.Tensor", "pointwise", binary_inplace("pow")))
    rows.append(OpInfo("aten::pow_.Scalar", "pointwise", binary_inplace("pow", scalar=True)))
    for n in ["maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor"]:
        rows.append(OpInfo("aten::" + n, "pointwise", binary(n)))
    for n in ["atan2", "logical_and", "logical_or", "logical_xor"]:
        rows.append(OpInfo("aten::%s_" % n, "pointwise", binary_inplace(n)))
    return rows


def where_samples(overload):
    def samples(g):
        def c(shape):
            return g.t(shape, b8)
        out = []
        if overload == "self":
            out += [S(c((3, 4)), g.t((3, 4)), g.t((3, 4)), desc="same shape"),
                    S(c((3, 1)), g.t((1, 4)), g.t((4,)), desc="broadcast"),
                    S(c((3, 4)), g.t((3, 4), lay="transposed"), g.t((3, 4), lay="step"), desc="non-contiguous"),
                    S(c((0, 4)), g.t((4,)), g.t(()), desc="empty"),
                    S(c(()), g.t(()), g.t(()), desc="0-dim"),
                    S(c((3, 4)), g.t((3, 4), i64), g.t((3, 4), f64), desc="promote i64,f64", expect="maybe"),
                    S(c((3, 4)), g.t((3, 4), f16), g.t((3, 4), f16), desc="f16"),
                    S(c((3, 4)), g.t((3, 4), b8), g.t((3, 4), b8), desc="bool"),
                    S(g.t((3, 4), u8, kind="small"), g.t((3, 4)), g.t((3, 4)), desc="uint8 condition",
                      expect="maybe"),
                    S(g.t((3, 4)), g.t((3, 4)), g.t((3, 4)), desc="float condition", expect="error")]
        elif overload == "ScalarSelf":
            out += [S(c((3, 4)), s, g.t((3, 4), d), desc="%r, %s" % (s, d), expect="maybe")
                    for s in (2, 1.5) for d in (f32, i64, f64)]
        elif overload == "ScalarOther":
            out += [S(c((3, 4)), g.t((3, 4), d), s, desc="%r, %s" % (s, d), expect="maybe")
                    for s in (2, 1.5) for d in (f32, i64, b8)]
        else:
            out += [S(c((3, 4)), a, b, desc="%r, %r" % (a, b), expect="maybe") for a, b in [(1, 0), (1.5, 2), (True, False)]]
        return out
    return samples


def clamp_samples(g):
    return [S(g.t((3, 4)), -0.5, 0.5, desc="both"), S(g.t((3, 4)), -0.5, desc="min only"),
            S(g.t((3, 4)), None, 0.2, desc="max only"), S(g.t((3, 4), lay="transposed"), -0.1, 0.1, desc="transposed"),
            S(g.t((3, 4), i64), -2, 3, desc="int"), S(g.t((3, 4), i64), -2.5, 3.5, desc="int tensor, float bounds",
                                                      expect="maybe"),
            S(g.t((3, 4), f16), -0.5, 0.5, desc="f16", expect="maybe"), S(g.t((3, 4), bf16), -0.5, 0.5, desc="bf16"),
            S(g.special(f32), -1.0, 1.0, desc="special values"), S(g.t((3, 4)), 1.0, -1.0, desc="min > max"),
            S(g.t((0, 2)), 0, 1, desc="empty"), S(g.t((3, 4)), desc="no bounds", expect="error")]


def clamp_tensor_samples(g):
    return [S(g.t((3, 4)), g.t((4,)), g.t((3, 1)), desc="broadcast bounds"),
            S(g.t((3, 4)), g.t((3, 4)), None, desc="min only"), S(g.t((3, 4)), None, g.t(()), desc="max 0-dim"),
            S(g.t((3, 4), i64), g.t((3, 4), f32), None, desc="int self, float bound", expect="maybe"),
            S(g.t((3, 4)), None, None, desc="no bounds", expect="error")]


def masked_fill_samples(overload, inplace=False):
    def samples(g):
        def v(x):
            return g.t((), f32) if overload == "Tensor" else x
        out = [S(g.t((3, 4)), g.t((3, 4), b8), v(-1.5), desc="same shape"),
               S(g.t((3, 4)), g.t((4,), b8), v(2), desc="broadcast mask"),
               S(g.t((3, 4), lay="transposed"), g.t((3, 4), b8, "step"), v(0.5), desc="non-contiguous"),
               S(g.t((3, 4), i64), g.t((3, 4), b8), v(7) if overload == "Scalar" else g.t((), i64), desc="int"),
               S(g.t((3, 4), b8), g.t((3, 4), b8), v(True) if overload == "Scalar" else g.t((), b8), desc="bool"),
               S(g.t((0, 4)), g.t((4,), b8), v(1), desc="empty"),
               S(g.t((3, 4)), g.t((3, 4), u8, kind="small"), v(1), desc="uint8 mask", expect="maybe")]
        if not inplace:
            out.append(S(g.t((4,)), g.t((3, 4), b8), v(1), desc="mask broadcasts self", expect="maybe"))
        if overload == "Tensor":
            out.append(S(g.t((3, 4)), g.t((3, 4), b8), g.t((2,)), desc="value with dims", expect="error"))
        return out
    return samples


def gelu_samples(g):
    out = [S(g.t(s), approximate=a, desc="%s %s" % (s, a)) for s in [(3, 4), (), (0, 2)] for a in ("none", "tanh")]
    out += [S(g.t((3, 4), d), approximate=a, desc="%s %s" % (d, a), expect="maybe") for d in (f64, f16, bf16, i64)
            for a in ("none", "tanh")]
    out += [S(g.t((3, 4), lay="transposed"), desc="transposed default"), S(g.special(f32), desc="special values"),
            S(g.t((3,)), approximate="sigmoid", desc="bad approximate", expect="error")]
    return out


def pointwise_rows():
    rows = unary_ops() + binary_ops()
    for ov in ["self", "ScalarSelf", "ScalarOther", "Scalar"]:
        rows.append(OpInfo("aten::where." + ov, "pointwise", where_samples(ov)))
    rows.append(OpInfo("aten::clamp", "pointwise", clamp_samples))
    rows.append(OpInfo("aten::clamp.Tensor", "pointwise", clamp_tensor_samples))
    rows.append(OpInfo("aten::clamp_", "pointwise", lambda g: [
        S(g.t((3, 4), lay=lay), -0.5, 0.5, desc=lay) for lay in ("contiguous", "transposed", "step")] + [
        S(g.t((3, 4), i64), -1.5, 2.5, desc="int self, float bounds", expect="maybe")]))
    rows.append(OpInfo("aten::clamp_min", "pointwise", lambda g: [
        S(g.t((3, 4)), 0.1, desc="f32"), S(g.t((3, 4), i64), 0, desc="i64"), S(g.special(f32), 0.0, desc="special"),
        S(g.t((3, 4), bf16, "transposed"), -0.2, desc="bf16 transposed")]))
    rows.append(OpInfo("aten::clamp_max", "pointwise", lambda g: [
        S(g.t((3, 4)), 0.1, desc="f32"), S(g.t((3, 4), i64), 0, desc="i64"), S(g.special(f32), 0.0, desc="special"),
        S(g.t((3, 4), f64, "step"), -0.2, desc="f64 step")]))
    for ov in ["Scalar", "Tensor"]:
        rows.append(OpInfo("aten::masked_fill." + ov, "pointwise", masked_fill_samples(ov)))
        rows.append(OpInfo("aten::masked_fill_." + ov, "pointwise", masked_fill_samples(ov, inplace=True)))
    rows.append(OpInfo("aten::gelu", "pointwise", gelu_samples, reduced_in_float=True))
    return rows


# --- views -------------------------------------------------------------------------------

def squeeze_dims(x, dim):
    for d in sorted({d % max(x.dim(), 1) for d in dim}, reverse=True):
        if x.dim() > 0 and x.size(d) == 1:
            x = x.squeeze(d)
    return x


def view_rows():
    V = "view"
    return [
        OpInfo("aten::view", V, lambda g: [
            S(g.t((3, 4)), [4, 3], desc="4x3"), S(g.t((3, 4)), [-1], desc="-1"), S(g.t((2, 3, 4)), [2, -1, 2], desc="2,-1,2"),
            S(g.t(()), [1], desc="0-dim to [1]"), S(g.t((1,)), [], desc="[1] to 0-dim"), S(g.t((0, 3)), [3, 0], desc="empty"),
            S(g.t((3, 4), lay="step"), [3, 2, 2], desc="step split last dim"),
            S(g.t((3, 4), i64, "expand"), [3, 2, 2], desc="expanded", expect="maybe"),
            S(g.t((3, 4), lay="transposed"), [12], desc="transposed to 1-D", expect="error"),
            S(g.t((3, 4)), [5, -1], desc="bad size", expect="error"),
            S(g.t((3, 4), lay="transposed"), [1, 3, 1, 4, 1], desc="size-1 dims around a transposed base"),
            S(g.t((1, 3, 1), lay="permute"), [3, 1], desc="size-1 dims in and out"),
            S(g.t((2, 0, 3)), [0, 1, 6], desc="empty with a size-1 dim")], strides=True),
        OpInfo("aten::reshape", V, lambda g: [
            S(g.t((3, 4)), [4, 3], desc="contiguous"), S(g.t((3, 4), lay="transposed"), [12], desc="transposed (copies)"),
            S(g.t((2, 3, 4), lay="permute"), [-1, 2], desc="permuted"), S(g.t((3, 4), b8, "step"), [2, 6], desc="step bool"),
            S(g.t(()), [], desc="0-dim"), S(g.t((0, 4)), [-1, 2], desc="empty"),
            S(g.t((3, 4)), [-1, -1], desc="two -1", expect="error")]),
        OpInfo("aten::_reshape_alias", V, lambda g: [
            S(g.t((3, 4)), [2, 6], [6, 1], desc="2x6"), S(g.t((2, 3, 4)), [6, 4], [4, 1], desc="6x4"),
            S(g.t((3, 4), lay="transposed"), [4, 3], [3, 1], desc="over a transposed base")], strides=True),
        OpInfo("aten::permute", V, lambda g: [
            S(g.t((2, 3, 4)), [2, 0, 1], desc="2,0,1"), S(g.t((2, 3, 4), lay="transposed"), [-1, 0, 1], desc="negative"),
            S(g.t(()), [], desc="0-dim"), S(g.t((0, 2)), [1, 0], desc="empty"),
            S(g.t((2, 3)), [0, 0], desc="repeated dim", expect="error"),
            S(g.t((2, 3)), [0], desc="wrong count", expect="error"),
            S(g.t((1, 3, 1)), [2, 0, 1], desc="size-1 dims")], strides=True),
        OpInfo("aten::transpose.int", V, lambda g: [
            S(g.t((2, 3, 4)), 0, 2, desc="0,2"), S(g.t((2, 3, 4), lay="permute"), -1, -2, desc="negative"),
            S(g.t(()), 0, -1, desc="0-dim"), S(g.t((3, 4)), 1, 1, desc="same dim"),
            S(g.t((3, 4)), 0, 2, desc="dim out of range", expect="error"),
            S(g.t((1, 3), lay="step"), 0, 1, desc="size-1 dim of a step view")], strides=True),
        OpInfo("aten::t", V, lambda g: [
            S(g.t((3, 4)), desc="2-D"), S(g.t((5,)), desc="1-D"), S(g.t(()), desc="0-dim"),
            S(g.t((3, 4), lay="step"), desc="step"), S(g.t((2, 3, 4)), desc="3-D", expect="error")], strides=True),
        OpInfo("aten::alias", V, lambda g: [
            S(g.t((3, 4), lay="transposed"), desc="transposed"), S(g.t((), i64), desc="0-dim")], strides=True),
        OpInfo("aten::expand", V, lambda g: [
            S(g.t((3, 1)), [3, 4], desc="3,1->3,4"), S(g.t((4,)), [2, 3, 4], desc="new leading dims"),
            S(g.t((3, 1)), [-1, 5], desc="-1 keeps"), S(g.t(()), [2, 2], desc="0-dim"),
            S(g.t((1, 4), lay="step"), [3, 4], desc="step"), S(g.t((3, 1)), [0, 3, 1], desc="to empty"),
            S(g.t((3, 2)), [3, 4], desc="non-singleton", expect="error"),
            S(g.t((3, 1)), [4], desc="fewer dims", expect="error"),
            S(g.t((2, 1, 3, 3)), [2, 1, 3, 3], desc="size-1 dim kept"), S(g.t((3, 4)), [1, 3, 4], desc="new size-1 dim"),
            S(g.t((4,)), [1, 2, 4], desc="new size-1 dim before an expanded one"),
            S(g.t((2, 1, 3), lay="permute"), [2, 1, 3], desc="size-1 dim kept, permuted"),
            S(g.t((1, 3), lay="step"), [1, 1, 3], desc="size-1 dims over a step view"),
            S(g.t(()), [1, 1], desc="0-dim to size-1 dims"), S(g.t((0, 1)), [2, 0, 1], desc="empty, size-1 dim kept")],
            strides=True),
        OpInfo("aten::expand_as", V, lambda g: [
            S(g.t((3, 1)), g.t((2, 3, 4)), desc="broadcast"), S(g.t((3,)), g.t((2, 4)), desc="bad", expect="error")],
            strides=True),
        OpInfo("aten::slice.Tensor", V, lambda g: [
            S(g.t((6, 4)), 0, 1, 5, 2, desc="dim0 1:5:2"), S(g.t((6, 4)), 1, -3, None, 1, desc="negative start"),
            S(g.t((6, 4)), 0, None, 100, 3, desc="end beyond size"), S(g.t((6, 4)), -1, 3, 1, 1, desc="empty range"),
            S(g.t((6, 4), lay="transposed"), 1, 0, 6, 4, desc="transposed"), S(g.t((6, 4)), desc="defaults"),
            S(g.t((6, 4)), 0, -100, -2, 1, desc="start before 0"),
            S(g.t((6, 4)), 0, 0, 4, 0, desc="step 0", expect="error"),
            S(g.t((6, 4)), 2, 0, 1, 1, desc="dim out of range", expect="error"),
            S(g.t((6, 4), lay="transposed"), 1, 2, 3, 1, desc="to size 1"), S(g.t((6, 1)), 1, 0, 1, 1, desc="size-1 dim"),
            S(g.t((6, 4)), 0, 5, 1, 1, desc="empty, start after end")], strides=True),
        OpInfo("aten::narrow", V, lambda g: [
            S(g.t((6, 4)), 0, 2, 3, desc="0,2,3"), S(g.t((6, 4), lay="step"), -1, -3, 2, desc="negative start"),
            S(g.t((6, 4)), 1, 4, 0, desc="length 0"), S(g.t((6, 4)), 0, 4, 3, desc="past end", expect="error")],
            strides=True),
        OpInfo("aten::select.int", V, lambda g: [
            S(g.t((3, 4)), 0, 1, desc="0,1"), S(g.t((3, 4), lay="transposed"), 1, -1, desc="negative"),
            S(g.t((5,)), 0, 2, desc="to 0-dim"), S(g.t((2, 3, 4), i64, "permute"), 2, 0, desc="permuted int"),
            S(g.t((3, 4)), 0, 3, desc="index out of range", expect="error"),
            S(g.t(()), 0, 0, desc="0-dim", expect="error"),
            S(g.t((1, 3, 1), lay="permute"), 1, 2, desc="size-1 dims left"), S(g.t((3, 0)), 0, 1, desc="empty")],
            strides=True),
        OpInfo("aten::squeeze", V, lambda g: [
            S(g.t((1, 3, 1, 4)), desc="1,3,1,4"), S(g.t(()), desc="0-dim"), S(g.t((1, 1)), desc="all ones"),
            S(g.t((1, 0, 1)), desc="empty"), S(g.t((1, 3, 1, 4), lay="permute"), desc="permuted")], strides=True),
        OpInfo("aten::squeeze.dim", V, lambda g: [
            S(g.t((1, 3, 1, 4)), 2, desc="2"), S(g.t((1, 3, 1, 4)), 1, desc="not size 1"),
            S(g.t((1, 3, 1, 4)), -4, desc="negative"), S(g.t(()), 0, desc="0-dim"),
            S(g.t((3, 1)), 2, desc="out of range", expect="error")], strides=True),
        OpInfo("aten::squeeze.dims", V, lambda g: [
            S(g.t((1, 3, 1, 4)), [0, 2], desc="0,2"), S(g.t((1, 3, 1, 4)), [-2], desc="negative"),
            S(g.t((1, 3, 1, 4)), [1], desc="not size 1"), S(g.t((1, 3, 1, 4)), [], desc="no dims")],
            ref=squeeze_dims, schema="squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", strides=True,
            note="not in torch 1.13; reference squeezes each listed size-1 dim"),
        OpInfo("aten::unsqueeze", V, lambda g: [
            S(g.t((3, 4)), 0, desc="0"), S(g.t((3, 4)), -1, desc="-1"), S(g.t((3, 4), lay="transposed"), 1, desc="1"),
            S(g.t(()), 0, desc="0-dim"), S(g.t((3, 4)), 3, desc="out of range", expect="error"),
            S(g.t((3, 4), lay="transposed"), 2, desc="last of a transposed base"),
            S(g.t((3, 4), lay="step"), 0, desc="first of a step view"), S(g.t((0, 3)), 1, desc="empty"),
            S(g.t((1, 3)), 1, desc="next to a size-1 dim")], strides=True),
        OpInfo("aten::as_strided", V, lambda g: [
            S(g.t((3, 4)), [2, 2], [1, 2], desc="overlapping window"), S(g.t((3, 4)), [3], [4], 1, desc="offset 1"),
            S(g.t((3, 4), lay="step"), [2, 3], [9, 2], desc="over a step view"), S(g.t((3, 4)), [0, 2], [1, 1], desc="empty"),
            S(g.t((3, 4)), [], [], 5, desc="0-dim"),
            S(g.t((3, 4), lay="expand"), [2, 3], [1, 1], desc="over an expanded (self-overlapping) input")],
               strides=True),
        OpInfo("aten::flatten.using_ints", V, lambda g: [
            S(g.t((2, 3, 4)), desc="all"), S(g.t((2, 3, 4)), 1, 2, desc="1,2"), S(g.t(()), desc="0-dim"),
            S(g.t((2, 3, 4), lay="permute"), 0, 1, desc="permuted (copies)"),
            S(g.t((2, 3, 4)), 2, 1, desc="start after end", expect="error")]),
        OpInfo("aten::unflatten.int", V, lambda g: [
            S(g.t((2, 12)), 1, [3, 4], desc="1 -> 3,4"), S(g.t((2, 12)), -1, [-1, 6], desc="-1"),
            S(g.t((2, 12)), 1, [5, 3], desc="bad product", expect="error"),
            S(g.t((2, 12), lay="step"), 1, [1, 12, 1], desc="size-1 dims over a step view")], strides=True),
        OpInfo("aten::unbind.int", V, lambda g: [
            S(g.t((3, 4)), desc="dim 0"), S(g.t((3, 4), lay="transposed"), 1, desc="dim 1"),
            S(g.t((0, 2)), desc="empty"), S(g.t((2, 3, 4)), -1, desc="negative")], strides=True),
        OpInfo("aten::split_with_sizes", V, lambda g: [
            S(g.t((6, 4)), [1, 2, 3], desc="1,2,3"), S(g.t((6, 4), lay="step"), [4, 0], 1, desc="with zero"),
            S(g.t((6, 4)), [2, 2], desc="wrong sum", expect="error")], strides=True),
        OpInfo("aten::split.Tensor", V, lambda g: [
            S(g.t((7, 4)), 3, desc="uneven"), S(g.t((7, 4), lay="transposed"), 2, 1, desc="dim 1"),
            S(g.t((0, 4)), 2, desc="empty"), S(g.t((4,)), 10, desc="larger than size")], strides=True),
        OpInfo("aten::chunk", V, lambda g: [
            S(g.t((7, 4)), 3, desc="7 in 3"), S(g.t((6, 4)), 4, desc="6 in 4 gives 3"),
            S(g.t((6, 4), lay="step"), 2, 1, desc="dim 1"), S(g.t((6,)), 0, desc="0 chunks", expect="error")],
            strides=True),
    ]


# --- copies ------------------------------------------------------------------------------

def to_copy_samples(g):
    out = []
    for a in [f32, f64, f16, bf16, i64, i32, i16, i8, u8, b8]:
        for b in [f32, f64, f16, bf16, i64, i32, u8, b8]:
            kind = "pos" if b == u8 or a == u8 else "wide"
            out.append(S(g.t((3, 4), a, kind=kind), dtype=b, desc="%s -> %s" % (a, b)))
    out += [S(g.t((3, 4), lay="transposed"), desc="no dtype, transposed"), S(g.t((2, 3), lay="expand"), dtype=f64,
                                                                             desc="expanded"),
            S(g.special(f32), dtype=f64, desc="special f32 -> f64"), S(g.special(f64), dtype=f16, desc="special -> f16"),
            S(g.special(f64), dtype=bf16, desc="special -> bf16"), S(g.t((0, 3)), dtype=i64, desc="empty"),
            S(g.t(()), dtype=i32, desc="0-dim")]
    return out


def copy_rows():
    C = "copy"
    return [
        OpInfo("aten::copy_", C, lambda g: [
            S(g.t((3, 4)), g.t((3, 4)), desc="same"), S(g.t((3, 4)), g.t((4,)), desc="broadcast src"),
            S(g.t((3, 4), lay="transposed"), g.t((3, 4), lay="step"), desc="non-contiguous both"),
            S(g.t((3, 4)), g.t((3, 4), i64), desc="i64 -> f32"), S(g.t((3, 4), i64), g.t((3, 4), kind="wide"),
                                                                    desc="f32 -> i64 truncates"),
            S(g.t((3, 4), b8), g.t((3, 4)), desc="f32 -> bool"), S(g.t((3, 4)), g.t((3, 4), b8), desc="bool -> f32"),
            S(g.t((3, 4), f16), g.t((3, 4), f64), desc="f64 -> f16"), S(g.t((3, 4), bf16), g.t(()), desc="0-dim src"),
            S(g.t((0, 4)), g.t((4,)), desc="empty"), S(g.t((3, 4)), g.t((2, 4)), desc="bad shape", expect="error")]),
        OpInfo("aten::_to_copy", C, to_copy_samples),
        OpInfo("aten::clone", C, lambda g: [
            S(g.t((3, 4), d, lay), desc="%s %s" % (d, lay)) for d in (f32, i64, b8, bf16)
            for lay in ("contiguous", "transposed", "expand")] + [S(g.t(()), desc="0-dim"), S(g.t((0, 2)), desc="empty")]),
        OpInfo("aten::fill_.Scalar", C, lambda g: [
            S(g.t((3, 4), d, lay), v, desc="%s %s %r" % (d, lay, v)) for d, v in
            [(f32, 1.5), (f32, 2), (i64, 3), (i64, -2.7), (b8, True), (bf16, 0.1), (f16, -3), (u8, 7), (f64, False)]
            for lay in ("contiguous", "step")] + [S(g.t(()), 4.0, desc="0-dim"), S(g.t((0,)), 1, desc="empty")]),
        OpInfo("aten::fill_.Tensor", C, lambda g: [
            S(g.t((3, 4)), g.t(()), desc="0-dim value"), S(g.t((3, 4), i64, "transposed"), g.t((), f32), desc="f32 into i64"),
            S(g.t((3, 4)), g.t((2,)), desc="value with dims", expect="error")]),
        OpInfo("aten::zero_", C, lambda g: [
            S(g.t((3, 4), d, lay), desc="%s %s" % (d, lay)) for d in (f32, i64, b8) for lay in ("contiguous", "step")]),
        OpInfo("aten::contiguous", C, lambda g: [
            S(g.t((3, 4), lay=lay), desc=lay) for lay in ("contiguous", "transposed", "step", "expand")] + [
            S(g.t((2, 3, 4), i64, "permute"), desc="permuted"), S(g.t(()), desc="0-dim")]),
    ]


# --- factories -----------------------------------------------------------------------------

def factory_rows():
    F = "factory"
    like = [(f32, None), (i64, None), (f32, f64), (i64, b8), (bf16, f32)]
    return [
        OpInfo("aten::empty.memory_format", F, lambda g: [
            S([2, 3], dtype=d, desc="%s" % d) for d in (None, f64, i64, b8)] + [S([0], desc="empty"), S([], desc="0-dim"),
                                                                              S([-1], desc="negative", expect="error")],
            values=False, strides=True, note="values are uninitialized: shape, dtype and strides only"),
        OpInfo("aten::empty_strided", F, lambda g: [
            S([2, 3], [1, 2], desc="column-major"), S([2, 3], [3, 1], dtype=i64, desc="row-major i64"),
            S([2, 2], [0, 1], desc="stride 0")], values=False, strides=True,
            note="values are uninitialized: shape, dtype and strides only"),
        OpInfo("aten::full", F, lambda g: [
            S([2, 3], v, dtype=d, desc="%r %s" % (v, d)) for v, d in
            [(1.5, None), (2, None), (True, None), (2, f64), (2.7, i64), (-1, bf16), (1, b8)]] + [S([], 3.0, desc="0-dim"),
                                                                                                  S([0, 2], 1, desc="empty")]),
        OpInfo("aten::zeros", F, lambda g: [S([2, 3], dtype=d, desc="%s" % d) for d in (None, f64, i64, b8, f16)] + [
            S([0], desc="empty"), S([], desc="0-dim")]),
        OpInfo("aten::ones", F, lambda g: [S([2, 3], dtype=d, desc="%s" % d) for d in (None, f64, i64, b8, bf16)] + [
            S([0, 3], desc="empty"), S([], desc="0-dim")]),
        OpInfo("aten::full_like", F, lambda g: [
            S(g.t((2, 3), a), 2.5, dtype=b, desc="%s -> %s" % (a, b)) for a, b in like] + [
            S(g.t((3, 4), lay="transposed"), 1, desc="transposed"), S(g.t((0, 2)), 1, desc="empty")]),
        OpInfo("aten::empty_like", F, lambda g: [S(g.t((2, 3), a), dtype=b, desc="%s -> %s" % (a, b)) for a, b in like],
               values=False, note="values are uninitialized: shape and dtype only"),
        OpInfo("aten::zeros_like", F, lambda g: [S(g.t((2, 3), a), dtype=b, desc="%s -> %s" % (a, b)) for a, b in like] +
               [S(g.t(()), desc="0-dim")]),
        OpInfo("aten::ones_like", F, lambda g: [S(g.t((2, 3), a), dtype=b, desc="%s -> %s" % (a, b)) for a, b in like] +
               [S(g.t((3, 4), lay="step"), desc="step")]),
        OpInfo("aten::scalar_tensor", F, lambda g: [
            S(v, dtype=d, desc="%r %s" % (v, d)) for v, d in [(1.5, None), (3, None), (True, None), (2, i64), (2.5, f64),
                                                               (1, b8), (-7, bf16)]]),
        OpInfo("aten::arange", F, lambda g: [
            S(5, desc="int end"), S(5.5, desc="float end"), S(4, dtype=f64, desc="f64"), S(0, desc="zero"),
            S(3, dtype=bf16, desc="bf16"), S(-2, desc="negative end", expect="error")]),
        OpInfo("aten::arange.start", F, lambda g: [
            S(2, 7, desc="int"), S(-1.5, 2, desc="float start"), S(3, 3, desc="empty"), S(1, 4, dtype=f32, desc="f32")]),
        OpInfo("aten::arange.start_step", F, lambda g: [
            S(0, 10, 3, desc="int step"), S(0, 1, 0.1, desc="float step"), S(5, 0, -1, desc="negative step"),
            S(1.0, 2.0, 0.25, dtype=f64, desc="f64"), S(0, 7, 2, dtype=i32, desc="i32"),
            S(0, 5, 0, desc="step 0", expect="error"), S(0, 5, -1, desc="wrong sign", expect="error")]),
        OpInfo("aten::linspace", F, lambda g: [
            S(0, 1, 5, desc="0..1 5"), S(-2.5, 2.5, 4, desc="float"), S(3, 3, 1, desc="1 step"), S(0, 1, 0, desc="0 steps"),
            S(0, 10, 6, dtype=i64, desc="i64"), S(1, 0, 5, dtype=f64, desc="descending f64"),
            S(0, 1, -1, desc="negative steps", expect="error")]),
        OpInfo("aten::eye", F, lambda g: [S(3, desc="3"), S(0, desc="0"), S(2, dtype=i64, desc="i64"),
                                         S(2, dtype=b8, desc="bool"), S(-1, desc="negative", expect="error")]),
        OpInfo("aten::eye.m", F, lambda g: [S(2, 4, desc="2x4"), S(4, 2, dtype=f64, desc="4x2"), S(3, 0, desc="3x0")]),
    ]


# --- reductions ----------------------------------------------------------------------------

def red_full(dtypes, kind="normal"):
    def samples(g):
        out = [S(g.t(s), desc="%s" % (s,)) for s in [(3, 4), (2, 3, 4), (), (7,)]]
        out += [S(g.t((3, 4), lay=lay, kind=kind), desc=lay) for lay in LAYOUTS]
        out += [S(g.t((3, 4), d, kind=kind), desc="%s" % d, expect="maybe") for d in dtypes]
        out.append(S(g.t((0, 3)), desc="empty", expect="maybe"))
        return out
    return samples


def red_dims(dims_arg, dtypes, kind="normal", list_dims=True, keep=True):
    def samples(g):
        def d(x):
            return [x] if list_dims and not isinstance(x, list) else x
        out = [S(g.t((3, 4), kind=kind), d(1), desc="dim 1"), S(g.t((2, 3, 4), kind=kind), d(-1), True, desc="dim -1 keepdim"),
               S(g.t((2, 3, 4), lay="permute", kind=kind), d(0), desc="permuted dim 0"),
               S(g.t((3, 4), lay="transposed", kind=kind), d(1), True, desc="transposed keepdim"),
               S(g.t((3, 4), lay="step", kind=kind), d(0), desc="step"), S(g.t((3, 4), lay="expand", kind=kind), d(0), desc="expanded"),
               S(g.t((), kind=kind), d(0), desc="0-dim"), S(g.t((0, 3), kind=kind), d(1), desc="empty rows"),
               S(g.t((3, 4)), d(2), desc="dim out of range", expect="error")]
        if list_dims:
            out += [S(g.t((2, 3, 4), kind=kind), [0, 2], desc="dims 0,2"), S(g.t((2, 3, 4), kind=kind), [], desc="no dims = all")]
        out += [S(g.t((3, 4), dt, kind=kind), d(0), desc="%s" % dt, expect="maybe") for dt in dtypes]
        return out
    return samples


def var_samples(g):
    out = []
    for corr in (None, 0, 1, 2):
        out += [S(g.t((3, 4)), [1], correction=corr, desc="dim 1 correction %r" % corr),
                S(g.t((2, 3, 4), lay="permute"), None, correction=corr, keepdim=True, desc="all keepdim %r" % corr)]
    out += [S(g.t((3, 4), d), [0], correction=1, desc="%s" % d, expect="maybe") for d in (f64, f16, bf16, i64)]
    out += [S(g.t((1, 4)), [0], correction=None, desc="single element (nan)"),
            S(g.t((3, 4), lay="transposed"), [0, 1], correction=None, desc="transposed")]
    return out


def vector_norm_samples(g):
    out = [S(g.t((3, 4)), o, [1], desc="ord %r dim 1" % o) for o in (2, 1, 3, 0.5, 0, float("inf"), float("-inf"))]
    out += [S(g.t((2, 3, 4), lay="permute"), 2, None, desc="all dims"),
            S(g.t((2, 3, 4)), 2, [0, 2], True, desc="dims 0,2 keepdim"),
            S(g.t((3, 4), lay="transposed"), 1, [0], desc="transposed"),
            S(g.t((3, 4)), 2, [1], dtype=f64, desc="dtype f64"),
            S(g.t((3, 4), f64), 3, [0], desc="f64 ord 3"),
            S(g.t((0, 3)), 2, [1], desc="empty rows"),
            S(g.t((3, 4), i64), 2, [1], desc="integer input", expect="error"),
            # Zeros and ties: PyTorch's norm backward gives 0 where the norm is 0 and splits
            # an infinity norm's gradient evenly between tied maxima.
            S(torch_tensor_T([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0]]), 2, [1], desc="a zero row, ord 2"),
            S(torch_tensor_T([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0]]), 1, [1], desc="a zero row, ord 1"),
            S(torch_tensor_T([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0]]), 3, [1], desc="a zero row, ord 3"),
            S(torch_tensor_T([[1.0, -1.0, 0.5], [0.0, 2.0, -2.0]]), float("inf"), [1], desc="tied maxima, ord inf")]
    return out


def reduction_rows():
    R = "reduction"
    num = [f64, f16, bf16, i64, i32, u8, b8]
    flt = [f64, f16, bf16, i64]
    return [
        OpInfo("aten::sum", R, lambda g: red_full(num)(g) + [S(g.t((3, 4), i32), dtype=f64, desc="dtype f64")]),
        OpInfo("aten::sum.dim_IntList", R, lambda g: red_dims(1, num)(g) + [S(g.t((3, 4), i64), [1], dtype=f32, desc="dtype")]),
        OpInfo("aten::mean", R, lambda g: red_full(flt)(g) + [S(g.t((3, 4), i64), dtype=f64, desc="int with dtype")]),
        OpInfo("aten::mean.dim", R, red_dims(1, flt)),
        OpInfo("aten::prod", R, red_full(num, "unit")),
        OpInfo("aten::prod.dim_int", R, red_dims(1, num, "unit", list_dims=False)),
        OpInfo("aten::amax", R, red_dims(1, num, "unique")),
        OpInfo("aten::amin", R, red_dims(1, num, "unique")),
        OpInfo("aten::max", R, lambda g: red_full(num, "unique")(g) + [S(TIES(), desc="ties share the gradient")]),
        OpInfo("aten::min", R, lambda g: red_full(num, "unique")(g) + [S(TIES(-1), desc="ties share the gradient")]),
        OpInfo("aten::max.dim", R, red_dims(1, [f64, bf16, i64, i32, u8], "unique", list_dims=False)),
        OpInfo("aten::min.dim", R, red_dims(1, [f64, bf16, i64, i32, u8], "unique", list_dims=False)),
        OpInfo("aten::argmax", R, lambda g: [S(g.t((3, 4), kind="unique"), desc="all")] +
               red_dims(1, [f64, i64, u8, bf16], "unique", list_dims=False)(g)),
        OpInfo("aten::argmin", R, lambda g: [S(g.t((2, 3, 4), kind="unique", lay="permute"), desc="all permuted")] +
               red_dims(1, [f64, i64, u8, bf16], "unique", list_dims=False)(g)),
        OpInfo("aten::var.correction", R, var_samples),
        OpInfo("aten::linalg_vector_norm", R, vector_norm_samples, grads=True),
        OpInfo("aten::std.correction", R, var_samples),
        OpInfo("aten::any", R, red_full([f64, i64, u8, b8, bf16])),
        OpInfo("aten::any.dim", R, red_dims(1, [f64, i64, u8, b8], list_dims=False)),
        OpInfo("aten::all", R, red_full([f64, i64, u8, b8, bf16])),
        OpInfo("aten::all.dim", R, red_dims(1, [f64, i64, u8, b8], list_dims=False)),
        OpInfo("aten::cumsum", R, lambda g: red_dims(1, num, list_dims=False, keep=False)(g)[:0] + [
            S(g.t((3, 4)), 1, desc="dim 1"), S(g.t((2, 3, 4), lay="permute"), 0, desc="permuted"),
            S(g.t((3, 4), lay="transposed"), -1, desc="transposed"), S(g.t(()), 0, desc="0-dim"),
            S(g.t((0, 3)), 1, desc="empty"), S(g.t((3, 4), i32), 0, desc="i32 -> i64"),
            S(g.t((3, 4), b8), 1, desc="bool"), S(g.t((3, 4), i64), 1, dtype=f64, desc="dtype f64"),
            S(g.t((3, 4), bf16), 1, desc="bf16", expect="maybe"), S(g.t((3, 4), f16), 1, desc="f16", expect="maybe"),
            S(g.t((3, 4)), 2, desc="dim out of range", expect="error")]),
        OpInfo("aten::logsumexp", R, lambda g: [
            S(g.t((3, 4)), [1], desc="dim 1"), S(g.t((2, 3, 4), lay="permute"), [0, 2], True, desc="permuted keepdim"),
            S(g.t((3, 4), lay="step"), [0, 1], desc="all dims"), S(g.special(f32), [0], desc="special values"),
            S(g.t((0, 3)), [0], desc="empty"), S(g.t((3, 4), f64), [0], desc="f64"),
            S(g.t((3, 4), bf16), [1], desc="bf16", expect="maybe"), S(g.t((3, 4), i64), [1], desc="i64", expect="maybe")]),
    ]


# --- linalg ------------------------------------------------------------------------------

def linalg_rows():
    L = "linalg"

    def mm(g):
        out = []
        for d in (f32, f64):
            out += [S(g.t((3, 5), d), g.t((5, 4), d), desc="%s" % d),
                    S(g.t((3, 5), d, "transposed"), g.t((5, 4), d, "transposed"), desc="%s both transposed" % d),
                    S(g.t((3, 5), d, "step"), g.t((5, 4), d, "expand"), desc="%s step/expand" % d)]
        out += [S(g.t((0, 3)), g.t((3, 2)), desc="empty rows"), S(g.t((2, 0)), g.t((0, 3)), desc="empty inner"),
                S(g.t((3, 5), d), g.t((4, 4), d), desc="shape mismatch", expect="error"),
                S(g.t((3, 5)), g.t((5, 4), f64), desc="dtype mismatch", expect="error"),
                S(g.t((3, 5), bf16), g.t((5, 4), bf16), desc="bf16", expect="maybe"),
                S(g.t((3, 5), i64), g.t((5, 4), i64), desc="i64", expect="maybe")]
        return out

    def bmm(g):
        return [S(g.t((2, 3, 5), d), g.t((2, 5, 4), d, lay), desc="%s %s" % (d, lay)) for d in (f32, f64)
                for lay in ("contiguous", "transposed", "permute")][:-1] + [
            S(g.t((0, 3, 2)), g.t((0, 2, 4)), desc="empty batch"),
            S(g.t((2, 3, 5)), g.t((3, 5, 4)), desc="batch mismatch", expect="error")]

    def addmm(g):
        return [S(g.t((3, 4)), g.t((3, 5)), g.t((5, 4)), desc="plain"),
                S(g.t((4,)), g.t((3, 5)), g.t((5, 4), lay="transposed"), beta=0.5, alpha=2, desc="broadcast bias, beta/alpha"),
                S(g.t((3, 4), f64), g.t((3, 5), f64), g.t((5, 4), f64), beta=0, desc="beta 0 f64"),
                S(g.t((3, 4)), g.t((3, 5)), g.t((4, 4)), desc="shape mismatch", expect="error")]

    def matmul(g):
        shapes = [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)), ((2, 3, 5), (5, 4)),
                  ((3, 5), (2, 5, 4)), ((2, 1, 3, 5), (4, 5, 2)), ((5,), (2, 5, 3)), ((2, 3, 5), (5,))]
        out = [S(g.t(a), g.t(b), desc="%s @ %s" % (a, b)) for a, b in shapes]
        out += [S(g.t((3, 5), f64, "transposed"), g.t((2, 5, 4), f64), desc="f64 transposed"),
                S(g.t((3, 5)), g.t((4, 5)), desc="mismatch", expect="error"), S(g.t(()), g.t((3,)), desc="0-dim", expect="error")]
        return out

    def linear(g):
        return [S(g.t((3, 5)), g.t((4, 5)), g.t((4,)), desc="with bias"), S(g.t((2, 3, 5)), g.t((4, 5)), desc="no bias 3-D"),
                S(g.t((5,)), g.t((4, 5), lay="transposed"), g.t((4,)), desc="1-D input"),
                S(g.t((3, 5), f64), g.t((4, 5), f64), g.t((4,), f64), desc="f64"),
                S(g.t((3, 5)), g.t((4, 6)), desc="mismatch", expect="error")]
    # torch 1.13's small bfloat16 GEMMs round partial sums (about twice the error of
    # accumulating in float32, as later PyTorch and Ember do).
    def dot(g):
        return [S(g.t((5,)), g.t((5,)), desc="f32"), S(g.t((7,), f64), g.t((7,), f64), desc="f64"),
                S(g.t((6,), lay="step"), g.t((6,)), desc="strided"), S(g.t((0,)), g.t((0,)), desc="empty"),
                S(g.t((5,), i64), g.t((5,), i64), desc="i64"), S(g.t((4,)), g.t((5,)), desc="mismatch", expect="error")]

    def mv(g):
        return [S(g.t((3, 5)), g.t((5,)), desc="f32"), S(g.t((3, 5), lay="transposed"), g.t((5,)), desc="transposed"),
                S(g.t((4, 2), f64), g.t((2,), f64), desc="f64"), S(g.t((0, 3)), g.t((3,)), desc="empty rows"),
                S(g.t((3, 5)), g.t((4,)), desc="mismatch", expect="error")]

    return [OpInfo("aten::dot", L, dot, reduced_in_float=True), OpInfo("aten::mv", L, mv, reduced_in_float=True),
            OpInfo("aten::mm", L, mm, reduced_in_float=True), OpInfo("aten::bmm", L, bmm, reduced_in_float=True),
            OpInfo("aten::addmm", L, addmm, reduced_in_float=True), OpInfo("aten::matmul", L, matmul, reduced_in_float=True),
            OpInfo("aten::linear", L, linear, reduced_in_float=True)]


# --- nn --------------------------------------------------------------------------------------

def softmax_samples(internal):
    def samples(g):
        out = [S(g.t((3, 4)), 1, *([False] if internal else []), desc="dim 1"),
               S(g.t((2, 3, 4), lay="permute"), 0, *([False] if internal else []), desc="permuted dim 0"),
               S(g.t((3, 4), lay="transposed"), -1, *([False] if internal else []), desc="transposed"),
               S(g.t(()), 0, *([False] if internal else []), desc="0-dim"),
               S(g.t((0, 4)), 1, *([False] if internal else []), desc="empty"),
               S(g.special(f32), 0, *([False] if internal else []), desc="special values"),
               S(g.t((3, 4), f64), 0, *([False] if internal else []), desc="f64"),
               S(g.t((3, 4), bf16), 1, *([False] if internal else []), desc="bf16", expect="maybe"),
               S(g.t((3, 4)), 2, *([False] if internal else []), desc="dim out of range", expect="error")]
        if internal:
            out.append(S(g.t((3, 4), i64), 1, False, desc="int", expect="maybe"))
        else:
            out += [S(g.t((3, 4)), 1, f64, desc="dtype f64"), S(g.t((3, 4), i64), 1, desc="int", expect="maybe"),
                    S(g.t((3, 4), bf16), 1, f32, desc="bf16 dtype f32", expect="maybe")]
        return out
    return samples


def layer_norm_samples(native):
    def samples(g):
        extra = [1e-5] if native else []
        out = [S(g.t((2, 3, 4)), [4], g.t((4,)), g.t((4,)), *extra, desc="last dim, affine"),
               S(g.t((2, 3, 4), lay="permute"), [3, 4], g.t((3, 4)), None, *extra, desc="two dims, no bias"),
               S(g.t((3, 4), lay="transposed"), [4], None, None, *extra, desc="no affine"),
               S(g.t((3, 4), f64), [4], g.t((4,), f64), g.t((4,), f64), *extra, desc="f64"),
               S(g.t((0, 4)), [4], None, None, *extra, desc="empty"),
               S(g.t((3, 4), bf16), [4], g.t((4,), bf16), g.t((4,), bf16), *extra, desc="bf16", expect="maybe"),
               S(g.t((3, 4)), [3], None, None, *extra, desc="bad shape", expect="error")]
        if not native:
            out.append(S(g.t((3, 4)), [4], eps=0.1, desc="eps kwarg"))
        return out
    return samples


def batch_norm_samples(native):
    def samples(g):
        tail = [] if native else [False]

        def s(x, w, b, rm, rv, training, desc, expect="ok"):
            return S(x, w, b, rm, rv, training, 0.1, 1e-5, *tail, desc=desc, expect=expect)
        out = [s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), True, "train, running stats"),
               s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), False, "eval"),
               s(g.t((5, 3)), None, None, None, None, True, "train, 2-D, no stats"),
               s(g.t((4, 3, 5), lay="transposed"), g.t((3,)), None, g.t((3,)), g.t((3,), kind="pos"), True, "transposed"),
               s(g.t((4, 3, 2), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64, kind="pos"), True, "f64"),
               s(g.t((4, 3, 2), f64), None, None, g.t((3,), f64), g.t((3,), f64, kind="pos"), False, "eval f64")]
        return out
    return samples


def legit_no_training(x, w, b, rm, rv, momentum, eps):
    return torch.ops.aten.native_batch_norm(x, w, b, rm, rv, False, momentum, eps)


def legit_no_training_samples(g):
    return [S(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), 0.1, 1e-5, desc="4-D"),
            S(g.t((4, 3, 5), lay="transposed"), None, None, g.t((3,)), g.t((3,), kind="pos"), 0.1, 1e-3, desc="no affine"),
            S(g.t((4, 3), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64, kind="pos"), 0.1, 1e-5,
              desc="f64 2-D")]


def TIES(sign=1):
    from opinfo import T
    return T(sign * torch.tensor([[1.5, 3.0, 3.0], [0.5, 3.0, -2.0]]))


def embedding_samples(g):
    w = g.t((10, 3))
    dup = T_list([[1, 2, 1], [0, 1, 9]])
    return [S(w, T_idx(g, (4,), 10), desc="1-D ids"), S(g.t((10, 3), lay="transposed"), T_idx(g, (2, 3), 10), desc="2-D ids"),
            S(g.t((10, 3), f64), T_idx(g, (5,), 10, i32), desc="i32 ids f64"), S(w, T_idx(g, (0,), 10), desc="empty"),
            S(w, T_idx(g, (), 10), desc="0-dim id"), S(g.t((10, 3)), T_idx(g, (4,), 10), 2, desc="padding_idx"),
            S(w, OUT_OF_RANGE(g), desc="index out of range", expect="error"),
            S(w, dup, -1, True, desc="scale_grad_by_freq"),
            S(g.t((10, 3), f64), dup, 1, True, desc="scale_grad_by_freq, padding_idx")]


def T_list(values, dtype=i64):
    from opinfo import T
    return T(torch.tensor(values, dtype=dtype))


def T_idx(g, shape, n, dtype=i64):
    from opinfo import T
    return T(torch.randint(0, n, shape, generator=g.g).to(dtype))


def OUT_OF_RANGE(g):
    from opinfo import T
    return T(torch.tensor([1, 10]))


def nn_rows():
    N = "nn"
    return [
        OpInfo("aten::_softmax", N, softmax_samples(True)),
        OpInfo("aten::softmax.int", N, softmax_samples(False)),
        OpInfo("aten::_log_softmax", N, softmax_samples(True)),
        OpInfo("aten::log_softmax.int", N, softmax_samples(False)),
        # torch 1.13 rounds the bfloat16 row mean before normalizing (see nn.cpp).
        OpInfo("aten::native_layer_norm", N, layer_norm_samples(True), reduced_in_float=True),
        OpInfo("aten::layer_norm", N, layer_norm_samples(False), reduced_in_float=True),
        OpInfo("aten::native_batch_norm", N, batch_norm_samples(True), no_grad_args=("running_mean", "running_var")),
        OpInfo("aten::batch_norm", N, batch_norm_samples(False)),
        OpInfo("aten::_native_batch_norm_legit_no_training", N, legit_no_training_samples, ref=legit_no_training,
               schema="_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
                      "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
               note="the eval batch norm of torch.export's Core ATen graphs (PyTorch 2); reference "
                    "native_batch_norm(..., training=False, ...)"),
        OpInfo("aten::embedding", N, embedding_samples),
        OpInfo("aten::constant_pad_nd", N, lambda g: [
            S(g.t((2, 3, 4)), [1, 2], desc="last dim"), S(g.t((2, 3, 4)), [1, 0, 2, 1], 1.5, desc="two dims value"),
            S(g.t((2, 3, 4), lay="transposed"), [-1, 1], desc="negative crop"), S(g.t((3, 4), i64), [2, 2], 7, desc="i64"),
            S(g.t((3, 4), b8), [1, 1], True, desc="bool"), S(g.t((0, 2)), [1, 1], desc="empty"),
            S(g.t((3, 4)), [1, 1, 1], desc="odd pad", expect="error"),
            S(g.t((3,)), [1, 1, 1, 1], desc="too many pads", expect="error")]),
    ]


# --- conv & pooling -----------------------------------------------------------------------

def conv_rows():
    C = "conv"

    def convolution(g):
        def s(x, w, b, stride, pad, dil, transposed, opad, groups, desc, expect="ok"):
            return S(x, w, b, stride, pad, dil, transposed, opad, groups, desc=desc, expect=expect)
        return [
            s(g.t((2, 3, 6, 5)), g.t((4, 3, 3, 2)), g.t((4,)), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "2-D plain"),
            s(g.t((1, 4, 7, 7)), g.t((4, 2, 3, 3)), None, [2, 2], [1, 1], [1, 1], False, [0, 0], 2, "stride 2 pad 1 groups 2"),
            s(g.t((1, 2, 7, 6)), g.t((3, 2, 2, 2)), g.t((3,)), [1, 2], [2, 0], [2, 1], False, [0, 0], 1, "dilation"),
            s(g.t((2, 3, 8)), g.t((4, 3, 3)), g.t((4,)), [1], [1], [1], False, [0], 1, "1-D"),
            s(g.t((1, 3, 4, 4)), g.t((3, 2, 3, 3)), g.t((2,)), [2, 2], [1, 1], [1, 1], True, [1, 1], 1, "transposed"),
            s(g.t((2, 3, 5, 5), lay="transposed"), g.t((2, 3, 2, 2), lay="step"), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
              "non-contiguous"),
            s(g.t((1, 2, 5, 5), f64), g.t((2, 2, 3, 3), f64), g.t((2,), f64), [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "f64"),
            s(g.t((2, 4, 5)), g.t((4, 3, 3)), g.t((6,)), [2], [0], [1], True, [1], 2, "transposed 1-D groups 2"),
            s(g.t((1, 2, 3, 3)), g.t((2, 2, 2, 2)), None, [1, 1], [0, 0], [2, 2], True, [1, 1], 1,
              "transposed, output_padding >= stride (< dilation)"),
            s(g.t((2, 6, 5, 4)), g.t((6, 2, 2, 3)), g.t((6,)), [2], [1], [1], False, [0], 3, "groups 3, one-value lists"),
            s(g.t((1, 2, 5, 5)), g.t((2, 3, 3, 3)), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "channel mismatch", "error")]

    def conv2d(g):
        return [S(g.t((2, 3, 6, 5)), g.t((4, 3, 3, 3)), g.t((4,)), desc="defaults"),
                S(g.t((1, 4, 7, 7)), g.t((2, 2, 3, 3)), None, [2, 1], [1, 0], [1, 2], 2, desc="all args"),
                S(g.t((3, 6, 5)), g.t((2, 3, 3, 3)), desc="unbatched"),
                S(g.t((2, 3, 6, 5), f64, "transposed"), g.t((4, 3, 2, 2), f64), desc="f64 transposed")]

    def pool(with_dil):
        def samples(g):
            d = [[1, 1]] if with_dil else []
            return [S(g.t((2, 3, 6, 6)), [2, 2], desc="k2"),
                    S(g.t((2, 3, 7, 6)), [3, 2], [2, 1], [1, 0], *d, desc="stride/pad"),
                    S(g.t((3, 7, 7)), [3, 3], [2, 2], [1, 1], *d, True, desc="unbatched ceil_mode"),
                    S(g.t((1, 2, 6, 6), lay="transposed"), [2, 2], desc="transposed"),
                    S(g.t((1, 2, 6, 6), f64), [2, 3], desc="f64"),
                    S(g.t((1, 2, 4, 4), bf16), [2, 2], desc="bf16", expect="maybe"),
                    S(g.t((1, 2, 4, 4)), [5, 5], desc="kernel larger than input", expect="error")] + ([
                S(g.t((1, 2, 7, 7)), [2, 2], [1, 1], [0, 0], [2, 2], desc="dilation 2"),
                S(g.t((1, 2, 4, 4), i64, kind="unique"), [2, 2], desc="i64", expect="maybe")] if with_dil else [])
        return samples

    def avg(g):
        return pool(False)(g) + [
            S(g.t((1, 2, 5, 5)), [3, 3], [2, 2], [1, 1], False, False, desc="count_include_pad False"),
            S(g.t((1, 2, 5, 5)), [2, 2], [2, 2], [0, 0], True, True, 3, desc="divisor_override 3")]

    def adaptive(g):
        return [S(g.t((2, 3, 6, 6)), [2, 2], desc="6->2"), S(g.t((1, 2, 7, 5)), [3, 4], desc="uneven"),
                S(g.t((3, 5, 5)), [1, 1], desc="unbatched global"), S(g.t((1, 2, 6, 6), lay="transposed"), [3, 2], desc="transposed"),
                S(g.t((1, 2, 4, 4), f64), [4, 4], desc="identity f64"),
                S(g.t((1, 2, 4, 4), bf16), [2, 2], desc="bf16", expect="maybe")]
    def conv1d(g):
        return [S(g.t((2, 3, 9)), g.t((4, 3, 3)), g.t((4,)), desc="defaults"),
                S(g.t((1, 4, 11)), g.t((2, 2, 3)), None, [2], [1], [2], 2, desc="all args"),
                S(g.t((3, 8)), g.t((2, 3, 2)), desc="unbatched"),
                S(g.t((2, 3, 7), f64, "transposed"), g.t((4, 3, 2), f64), desc="f64 transposed"),
                S(g.t((2, 4, 9)), g.t((4, 3, 3)), desc="channel mismatch", expect="error")]

    return [OpInfo("aten::convolution", C, convolution), OpInfo("aten::conv2d", C, conv2d),
            OpInfo("aten::conv1d", C, conv1d), OpInfo("aten::_adaptive_avg_pool2d", C, adaptive),
            OpInfo("aten::max_pool2d", C, pool(True)), OpInfo("aten::max_pool2d_with_indices", C, pool(True)),
            OpInfo("aten::avg_pool2d", C, avg), OpInfo("aten::adaptive_avg_pool2d", C, adaptive)]


# --- backward ops (nn_backward.cpp) ----------------------------------------------------------

def nn_backward_rows():
    B = "nn_backward"
    A = torch.ops.aten

    def conv(g):
        def s(x, w, bias_sizes, stride, pad, dil, transposed, opad, groups, mask, desc, expect="ok", lay="contiguous",
              grad_shape=None):
            out = A.convolution(wide(x), wide(w), None, stride, pad, dil, transposed, opad, groups)
            grad = g.t(grad_shape or tuple(out.shape), x.base.dtype, lay)
            return S(grad, x, w, bias_sizes, stride, pad, dil, transposed, opad, groups, mask, desc=desc, expect=expect)
        all3 = [True, True, True]
        return [
            s(g.t((2, 3, 6, 5)), g.t((4, 3, 3, 2)), [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, all3, "2-D plain"),
            s(g.t((1, 4, 7, 7)), g.t((4, 2, 3, 3)), None, [2, 2], [1, 1], [1, 1], False, [0, 0], 2, [True, True, False],
              "stride 2 pad 1 groups 2, no bias"),
            s(g.t((1, 2, 7, 6)), g.t((3, 2, 2, 2)), [3], [1, 2], [2, 0], [2, 1], False, [0, 0], 1, all3, "dilation"),
            s(g.t((2, 3, 8)), g.t((4, 3, 3)), [4], [1], [1], [1], False, [0], 1, all3, "1-D"),
            s(g.t((2, 6, 5, 4)), g.t((6, 2, 2, 3)), [6], [2], [1], [1], False, [0], 3, all3, "groups 3, one-value lists"),
            s(g.t((1, 3, 4, 4)), g.t((3, 2, 3, 3)), [2], [2, 2], [1, 1], [1, 1], True, [1, 1], 1, all3, "transposed"),
            s(g.t((2, 4, 5)), g.t((4, 3, 3)), [6], [2], [0], [1], True, [1], 2, all3, "transposed 1-D groups 2"),
            s(g.t((1, 2, 3, 3)), g.t((2, 2, 2, 2)), None, [1, 1], [0, 0], [2, 2], True, [1, 1], 1, [True, True, False],
              "transposed, output_padding >= stride (< dilation)"),
            s(g.t((2, 3, 5, 5), lay="transposed"), g.t((2, 3, 2, 2), lay="step"), [2], [1, 1], [0, 0], [1, 1], False,
              [0, 0], 1, all3, "non-contiguous", lay="transposed"),
            s(g.t((1, 2, 5, 5), f64), g.t((2, 2, 3, 3), f64), [2], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, all3, "f64"),
            s(g.t((2, 3, 6, 5)), g.t((4, 3, 3, 2)), [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False],
              "weight only"),
            # float64: torch 1.13's float32 (mkldnn) path also returns grad_weight when only grad_bias is asked for
            s(g.t((2, 3, 6, 5), f64), g.t((4, 3, 3, 2), f64), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
              [False, False, True], "bias only, no bias_sizes (f64)"),
            s(g.t((2, 3, 6, 5)), g.t((4, 3, 3, 2)), [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False] * 3, "nothing"),
            s(g.t((0, 3, 6, 5)), g.t((4, 3, 3, 2)), [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, all3, "empty batch"),
            s(g.t((1, 2, 4, 4), bf16), g.t((2, 2, 3, 3), bf16), [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, all3, "bf16",
              expect="maybe"),
            s(g.t((1, 2, 4, 4), f16), g.t((2, 2, 3, 3), f16), [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, all3, "f16",
              expect="maybe"),
            s(g.t((1, 2, 4, 4), i64), g.t((2, 2, 3, 3), i64), [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, all3, "i64",
              expect="error"),
            s(g.t((2, 3, 6, 5)), g.t((4, 3, 3, 2)), [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, all3,
              "grad_output of the wrong size", expect="error", grad_shape=(2, 4, 4, 5))]

    def wide(t):  # float16/bfloat16 inputs: shapes and indices from a float32 copy (torch 1.13 lacks some kernels)
        v = t.value()
        return v if v.dtype in (f32, f64) else v.float()

    def pool_grad(g, x, out_shape, lay="contiguous"):
        return g.t(tuple(out_shape), x.base.dtype, lay)

    def max_pool(g):
        def s(x, k, st, pad, dil, ceil, desc, expect="ok", lay="contiguous", idx_dtype=i64):
            from opinfo import T
            out, ind = A.max_pool2d_with_indices(wide(x), k, st, pad, dil, ceil)
            return S(pool_grad(g, x, out.shape, lay), x, k, st, pad, dil, ceil, T(ind.to(idx_dtype)), desc=desc,
                     expect=expect)
        return [s(g.t((2, 3, 6, 6)), [2, 2], [2, 2], [0, 0], [1, 1], False, "k2"),
                s(g.t((2, 3, 7, 6)), [3, 2], [2, 1], [1, 0], [1, 1], False, "stride/pad"),
                s(g.t((3, 7, 7)), [3, 3], [2, 2], [1, 1], [1, 1], True, "unbatched ceil_mode"),
                s(g.t((1, 2, 6, 6)), [3, 3], [1, 1], [1, 1], [1, 1], False, "overlapping windows accumulate"),
                s(g.t((1, 2, 6, 6), lay="transposed"), [2, 2], [], [0, 0], [1, 1], False, "transposed, default stride",
                  lay="transposed"),
                s(g.t((1, 2, 7, 7)), [2, 2], [1, 1], [0, 0], [2, 2], False, "dilation 2"),
                s(g.t((1, 2, 6, 6), f64), [2, 3], [2, 3], [0, 0], [1, 1], False, "f64"),
                s(g.t((1, 2, 4, 4), bf16), [2, 2], [2, 2], [0, 0], [1, 1], False, "bf16", expect="maybe"),
                s(g.t((1, 2, 4, 4)), [2, 2], [2, 2], [0, 0], [1, 1], False, "int32 indices", expect="error",
                  idx_dtype=i32)]

    def avg_pool(g):
        def s(x, k, st, pad, ceil, cip, div, desc, expect="ok", lay="contiguous"):
            out = A.avg_pool2d(wide(x), k, st, pad, ceil, cip, div)
            return S(pool_grad(g, x, out.shape, lay), x, k, st, pad, ceil, cip, div, desc=desc, expect=expect)
        return [s(g.t((2, 3, 6, 6)), [2, 2], [], [0, 0], False, True, None, "k2"),
                s(g.t((2, 3, 7, 6)), [3, 2], [2, 1], [1, 0], False, True, None, "stride/pad"),
                s(g.t((3, 7, 7)), [3, 3], [2, 2], [1, 1], True, True, None, "unbatched ceil_mode"),
                s(g.t((1, 2, 5, 5)), [3, 3], [2, 2], [1, 1], False, False, None, "count_include_pad False"),
                s(g.t((1, 2, 5, 5)), [2, 2], [2, 2], [0, 0], True, True, 3, "divisor_override 3"),
                s(g.t((1, 2, 6, 6)), [3, 3], [1, 1], [1, 1], False, True, None, "overlapping windows"),
                s(g.t((1, 2, 6, 6), lay="transposed"), [2, 2], [], [0, 0], False, True, None, "transposed", lay="transposed"),
                s(g.t((1, 2, 6, 6), f64), [2, 3], [], [0, 0], False, True, None, "f64"),
                s(g.t((1, 2, 4, 4), bf16), [2, 2], [], [0, 0], False, True, None, "bf16", expect="maybe"),
                s(g.t((1, 2, 4, 4), i64, kind="small"), [2, 2], [], [0, 0], False, True, None, "i64", expect="maybe"),
                S(g.t((1, 2, 2, 3)), g.t((1, 2, 4, 4)), [2, 2], [], [0, 0], False, True, None,
                  desc="grad_output of the wrong size", expect="error")]

    def adaptive(g):
        def s(x, size, desc, expect="ok", lay="contiguous", gdt=None):
            out = A._adaptive_avg_pool2d(wide(x), size)
            return S(g.t(tuple(out.shape), gdt or x.base.dtype, lay), x, desc=desc, expect=expect)
        return [s(g.t((2, 3, 6, 6)), [2, 2], "6->2"), s(g.t((1, 2, 7, 5)), [3, 4], "uneven"),
                s(g.t((3, 5, 5)), [1, 1], "unbatched global"),
                s(g.t((1, 2, 6, 6), lay="transposed"), [3, 2], "transposed", lay="transposed"),
                s(g.t((1, 2, 4, 4), f64), [4, 4], "identity f64"),
                s(g.t((1, 2, 4, 4), bf16), [2, 2], "bf16", expect="maybe"),
                s(g.t((1, 2, 4, 4)), [2, 2], "grad dtype mismatch", expect="error", gdt=f64)]

    def batch_norm(g):
        def s(x, w, rm, rv, train, mask, desc, expect="ok", with_saved=True, gdt=None, lay="contiguous"):
            from opinfo import T
            _, sm, si = A.native_batch_norm(x.value(), None if w is None else w.value(), None,
                                            None if rm is None else rm.value().clone(),
                                            None if rv is None else rv.value().clone(), train, 0.1, 1e-5)
            saved = (T(sm), T(si)) if with_saved and train else (None, None)
            return S(g.t(tuple(x.value().shape), gdt or x.base.dtype, lay),
                     x, w, rm, rv, *saved, train, 1e-5, mask, desc=desc, expect=expect)
        all3 = [True, True, True]
        x4 = g.t((4, 3, 2, 2))
        return [s(x4, g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), True, all3, "train"),
                s(g.t((4, 3, 2, 2)), None, None, None, True, all3, "train, no weight, no running stats"),
                s(g.t((5, 3)), g.t((3,)), None, None, True, [True, False, True], "train 2-D, no weight grad"),
                s(g.t((4, 3, 5), lay="transposed"), g.t((3,)), None, None, True, all3, "transposed input",
                  lay="transposed"),
                s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), False, all3, "eval"),
                s(g.t((4, 3, 2), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64, kind="pos"), True, all3, "f64"),
                s(g.t((4, 3, 2), f64), None, g.t((3,), f64), g.t((3,), f64, kind="pos"), False, [True, False, False],
                  "eval f64, input only"),
                s(g.t((4, 3, 2, 2)), g.t((3,)), None, None, True, [False] * 3, "nothing"),
                s(g.t((4, 3, 2, 2), bf16), g.t((3,)), None, None, True, all3, "bf16 input, float params",
                  expect="maybe"),
                s(g.t((4, 3, 2, 2)), g.t((3,)), None, None, True, all3, "grad dtype mismatch", expect="error",
                  gdt=f64)]

    def embedding(g):
        dup = T_list([[1, 2, 1], [0, 1, 3]])
        return [S(g.t((5, 3)), T_list([1, 2, 1, 0, 1]), 4, -1, False, desc="plain"),
                S(g.t((5, 3)), T_list([1, 2, 1, 0, 1]), 4, -1, True, desc="scale_grad_by_freq"),
                S(g.t((2, 3, 3), lay="transposed"), dup, 4, 1, True, desc="2-D ids, padding_idx, scale"),
                S(g.t((2, 3, 3), f64), T_list([[1, 2, 1], [0, 1, 3]], i32), 5, 2, False, desc="i32 ids f64"),
                S(g.t((0, 3)), T_list([], i64), 4, -1, True, desc="empty"),
                S(g.t((2, 3, 3), bf16), dup, 4, -1, True, desc="bf16", expect="maybe"),
                S(g.t((2, 3, 3)), T_list([[1., 2., 1.], [0., 1., 3.]], f32), 4, 1, True, desc="float ids",
                  expect="error")]

    return [OpInfo("aten::convolution_backward", B, conv), OpInfo("aten::max_pool2d_with_indices_backward", B, max_pool),
            OpInfo("aten::avg_pool2d_backward", B, avg_pool), OpInfo("aten::_adaptive_avg_pool2d_backward", B, adaptive),
            OpInfo("aten::native_batch_norm_backward", B, batch_norm),
            OpInfo("aten::embedding_dense_backward", B, embedding)]


# --- shape -----------------------------------------------------------------------------------

def shape_rows():
    H = "shape"

    def cat(g):
        return [S(TL([g.t((2, 3)), g.t((4, 3))]), desc="dim 0"), S(TL([g.t((2, 3)), g.t((2, 1), lay="step"), g.t((2, 2))]), 1,
                                                                    desc="dim 1 step"),
                S(TL([g.t((2, 3), lay="transposed"), g.t((2, 2))]), -1, desc="transposed"),
                S(TL([g.t((2, 3)), g.t((2, 3), i64)]), desc="promote", expect="maybe"),
                S(TL([g.t((2, 3)), g.t((0,))]), desc="legacy empty 1-D skipped", expect="maybe"),
                S(TL([g.t((0, 3)), g.t((2, 3))]), desc="empty rows"), S(TL([g.t((2, 3), b8)]), desc="single bool"),
                S(TL([g.t((2, 3)), g.t((2, 4))]), desc="mismatch", expect="error"), S(TL([]), desc="empty list", expect="error")]

    def stack(g):
        return [S(TL([g.t((2, 3)), g.t((2, 3))]), desc="dim 0"), S(TL([g.t((2, 3)), g.t((2, 3), lay="transposed")]), 2,
                                                                    desc="dim 2"),
                S(TL([g.t(()), g.t(())]), desc="0-dim"), S(TL([g.t((2, 3), i64), g.t((2, 3), i64)]), -1, desc="i64"),
                S(TL([g.t((2, 3)), g.t((3, 2))]), desc="mismatch", expect="error")]
    return [
        OpInfo("aten::cat", H, cat), OpInfo("aten::stack", H, stack),
        OpInfo("aten::repeat", H, lambda g: [
            S(g.t((2, 3)), [2, 1], desc="2,1"), S(g.t((3,)), [2, 2], desc="more dims"), S(g.t((2, 3), lay="transposed"), [1, 3],
                                                                                          desc="transposed"),
            S(g.t(()), [3], desc="0-dim"), S(g.t((2, 3)), [0, 2], desc="zero"), S(g.t((2, 3), b8), [2, 2], desc="bool"),
            S(g.t((2, 3)), [2], desc="too few", expect="error")]),
        OpInfo("aten::flip", H, lambda g: [
            S(g.t((2, 3, 4)), [0], desc="0"), S(g.t((2, 3, 4), lay="permute"), [0, -1], desc="two dims"),
            S(g.t((3, 4), i64, "step"), [1], desc="step i64"), S(g.t(()), [], desc="0-dim"), S(g.t((3, 4)), [], desc="none"),
            S(g.t((3, 4)), [0, 0], desc="repeated", expect="error")]),
        OpInfo("aten::tril", H, lambda g: [
            S(g.t((4, 5)), desc="default"), S(g.t((4, 5)), 1, desc="+1"), S(g.t((2, 4, 3), lay="transposed"), -1, desc="batched -1"),
            S(g.t((3, 3), i64), 5, desc="beyond"), S(g.t((0, 3)), desc="empty"), S(g.t((4,)), desc="1-D", expect="error")]),
        OpInfo("aten::triu", H, lambda g: [
            S(g.t((4, 5)), desc="default"), S(g.t((4, 5)), -2, desc="-2"), S(g.t((2, 4, 3), b8, "step"), 1, desc="batched bool"),
            S(g.t((4,)), desc="1-D", expect="error")]),
    ]


# --- indexing ---------------------------------------------------------------------------------

def idx(g, values):
    from opinfo import T
    return T(torch.tensor(values, dtype=i64))


def perm_index(g, shape, dim, n):
    """An index tensor whose entries are distinct along `dim` (scatter writes are then
    deterministic)."""
    from opinfo import T
    shape = list(shape)
    moved = [shape[d] for d in range(len(shape)) if d != dim]
    rows = [torch.randperm(n, generator=g.g)[: shape[dim]] for _ in range(math.prod(moved))]
    t = torch.stack(rows).reshape(moved + [shape[dim]]) if rows else torch.zeros(moved + [shape[dim]], dtype=i64)
    return T(t.movedim(-1, dim).contiguous())


def indexing_rows():
    X = "indexing"

    def scatter(kind):
        def samples(g):
            def v(shape, d=f32):
                return g.t(shape, d) if kind != "value" else 2.5
            out = [S(g.t((3, 5)), 1, perm_index(g, (3, 2), 1, 5), v((3, 2)), desc="dim 1"),
                   S(g.t((4, 3)), 0, perm_index(g, (2, 3), 0, 4), v((2, 3)), desc="dim 0"),
                   S(g.t((3, 5), lay="transposed"), -1, perm_index(g, (3, 3), 1, 5), v((3, 4)), desc="transposed, src larger"),
                   S(g.t((3, 5), i64), 1, perm_index(g, (3, 2), 1, 5), v((3, 2), i64) if kind != "value" else 7, desc="i64"),
                   S(g.t((3, 5)), 1, T_empty_idx((3, 0)), v((3, 0)), desc="empty index"),
                   S(g.t((3, 5)), 1, idx(g, [[0, 5]]), v((1, 2)), desc="index out of range", expect="error")]
            if kind == "add":
                out.append(S(g.t((3, 5)), 1, T_idx(g, (3, 4), 5), g.t((3, 4)), desc="duplicate indices accumulate"))
            return out
        return samples

    def index_tensor(g):
        return [S(g.t((4, 5)), OTL([idx(g, [0, 3, -1])]), desc="one index"),
                S(g.t((4, 5)), OTL([None, idx(g, [[1], [4]])]), desc="slice then index"),
                S(g.t((4, 5), lay="transposed"), OTL([idx(g, [0, 1]), idx(g, [2, 3])]), desc="two broadcast indices"),
                S(g.t((4, 5)), OTL([g.t((4,), b8)]), desc="bool mask", expect="ok",
                  meta_reason="a bool mask makes the output shape depend on the mask's values; PyTorch's meta raises too"),
                S(g.t((2, 3, 4)), OTL([idx(g, [1]), None, idx(g, [0, 2])]), desc="separated indices"),
                S(g.t((4, 5)), OTL([idx(g, [4])]), desc="out of range", expect="error")]

    def index_put(g):
        return [S(g.t((4, 5)), OTL([idx(g, [0, 2])]), g.t((5,)), desc="rows from broadcast values"),
                S(g.t((4, 5)), OTL([idx(g, [0, 2]), idx(g, [1, 4])]), g.t((2,)), desc="points"),
                S(g.t((4, 5)), OTL([idx(g, [1, 1, 3])]), g.t((3, 5)), True, desc="accumulate duplicates"),
                S(g.t((4, 5), lay="step"), OTL([g.t((4,), b8)]), g.t(()), desc="bool mask scalar value"),
                S(g.t((4, 5)), OTL([idx(g, [5])]), g.t((5,)), desc="out of range", expect="error")]

    def sort(g):
        return [S(g.t((3, 5), kind="unique"), desc="default"), S(g.t((3, 5), kind="unique"), 0, True, desc="dim 0 descending"),
                S(g.t((3, 5), i64, "transposed", kind="unique"), desc="i64 transposed"),
                S(g.t((), kind="unique"), desc="0-dim"), S(g.t((0, 3)), desc="empty"),
                S(g.t((4, 3), f64, "step", kind="unique"), 1, desc="f64 step")]

    def topk(g):
        return [S(g.t((3, 6), kind="unique"), 2, desc="k2"), S(g.t((3, 6), kind="unique"), 3, 0, False, desc="smallest dim 0"),
                S(g.t((4, 6), i64, "transposed", kind="unique"), 1, desc="i64 transposed"),
                S(g.t((3, 6), kind="unique"), 0, desc="k0"), S(g.t((3, 6)), 7, desc="k too large", expect="error")]

    def nonzero(g):
        return [S(g.t((3, 4), i64, kind="small"), desc="i64"), S(g.t((3, 4), b8, "transposed"), desc="bool transposed"),
                S(g.t(()), desc="0-dim"), S(g.t((0, 3)), desc="empty"), S(g.t((2, 3, 4), f32, "step", kind="small"), desc="f32 step")]
    return [
        OpInfo("aten::index_select", X, lambda g: [
            S(g.t((4, 5)), 0, idx(g, [0, 3, 3]), desc="dim 0 duplicates"), S(g.t((4, 5), lay="transposed"), 1, idx(g, [4, 0]), desc="dim 1"),
            S(g.t((4, 5), i64), -1, T_idx(g, (3,), 5, i32), desc="i32 index"), S(g.t((4, 5)), 0, T_empty_idx((0,)), desc="empty"),
            S(g.t(()), 0, idx(g, [0]), desc="0-dim"), S(g.t((4, 5)), 0, idx(g, [4]), desc="out of range", expect="error")]),
        OpInfo("aten::gather", X, lambda g: [
            S(g.t((3, 5)), 1, T_idx(g, (3, 4), 5), desc="dim 1"), S(g.t((4, 3), lay="transposed"), 0, T_idx(g, (2, 3), 4), desc="dim 0"),
            S(g.t((3, 5), i64), -1, T_idx(g, (2, 2), 5), desc="smaller index"), S(g.t((3, 5)), 1, T_empty_idx((3, 0)), desc="empty"),
            S(g.t((3, 5)), 1, idx(g, [[5]]), desc="out of range", expect="error")]),
        OpInfo("aten::scatter.src", X, scatter("src")),
        OpInfo("aten::scatter.value", X, scatter("value")),
        OpInfo("aten::scatter_add", X, scatter("add")),
        OpInfo("aten::scatter_.src", X, scatter("src")),
        OpInfo("aten::scatter_.value", X, scatter("value")),
        OpInfo("aten::scatter_add_", X, scatter("add")),
        OpInfo("aten::index.Tensor", X, index_tensor),
        OpInfo("aten::index_put", X, index_put),
        OpInfo("aten::index_put_", X, index_put),
        OpInfo("aten::sort", X, sort),
        OpInfo("aten::sort.stable", X, lambda g: [
            S(g.t((3, 6), i64), stable=True, desc="integer ties keep their order"),
            S(g.t((3, 6), i64, "transposed"), stable=True, dim=0, descending=True, desc="descending dim 0"),
            S(g.t((4, 5), kind="unique"), stable=False, desc="stable=False")]),
        OpInfo("aten::topk", X, topk),
        OpInfo("aten::nonzero", X, nonzero, meta=False,
               meta_reason="the output shape depends on the data; PyTorch's meta nonzero raises too"),
    ]


def T_empty_idx(shape):
    from opinfo import T
    return T(torch.zeros(shape, dtype=i64))


# --- random -------------------------------------------------------------------------------

def sample_stats(fn, draws=64):
    xs = torch.cat([fn().double().reshape(-1) for _ in range(draws)])
    return float(xs.mean()), float(xs.std())


def dist_stat(kind, low=None, high=None):
    """Mean/std of PyTorch's own distribution (from many draws) and tolerances for one
    Ember sample of the case's size (6 standard errors)."""
    def stat(pos, kw, result):
        n = max(result.numel(), 1)
        fn = {"uniform": lambda: torch.rand(4096, dtype=torch.float64),
              "normal": lambda: torch.randn(4096, dtype=torch.float64)}[kind]
        mean, std = sample_stats(fn)
        d = {"kind": kind, "mean": mean, "std": std, "tol_mean": 6 * std / math.sqrt(n) + 1e-3,
             "tol_std": 6 * std / math.sqrt(2 * n) + 1e-3}
        if low is not None:
            d.update(low=low, high=high)
        return d
    return stat


def bernoulli_stat(pos, kw, result):
    p = float(kw.get("p", pos[1] if len(pos) > 1 else -1))
    probs = pos[0].double() if p < 0 else torch.full(pos[0].shape, p, dtype=torch.float64)
    mean = float(probs.mean())
    torch_mean = float(torch.cat([torch.bernoulli(probs).reshape(-1) for _ in range(64)]).mean())
    n = max(probs.numel(), 1)
    return {"kind": "bernoulli", "mean": mean, "torch_sample_mean": torch_mean,
            "tol_mean": 6 * math.sqrt(max(mean * (1 - mean), 1e-4) / n) + 1e-3}


def dropout_stat(pos, kw, result):
    p = float(pos[1])
    train = pos[2] if len(pos) > 2 else kw.get("train")
    n = max(pos[0].numel(), 1)
    keep = 1.0 if train is False else 1 - p
    return {"kind": "dropout", "p": p, "train": train is not False, "keep_mean": keep,
            "tol_mean": 6 * math.sqrt(max(keep * (1 - keep), 1e-4) / n) + 1e-3}


def random_rows():
    Rn = "random"
    big = [64, 64]

    def like(g):
        return [S(g.t(big), desc="f32"), S(g.t([32, 128], f64, "transposed"), desc="f64 transposed"),
                S(g.t(big, bf16), desc="bf16")]
    return [
        OpInfo("aten::rand", Rn, lambda g: [S(big, desc="f32"), S(big, dtype=f64, desc="f64"), S([4096], dtype=f16, desc="f16"),
                                           S([0, 3], desc="empty")], stat=dist_stat("uniform", 0.0, 1.0)),
        OpInfo("aten::randn", Rn, lambda g: [S(big, desc="f32"), S(big, dtype=f64, desc="f64"), S([4096], dtype=bf16, desc="bf16")],
               stat=dist_stat("normal")),
        OpInfo("aten::rand_like", Rn, like, stat=dist_stat("uniform", 0.0, 1.0)),
        OpInfo("aten::randn_like", Rn, like, stat=dist_stat("normal")),
        OpInfo("aten::bernoulli", Rn, lambda g: [S(g.t(big, kind="prob"), desc="tensor of p"),
                                                S(g.t(big, f64, "transposed", kind="prob"), desc="f64 transposed")],
               stat=bernoulli_stat,
               grads_reason="random (statistical cases only); its gradient is zero, checked by gradcheck "
                            "(tests/unit/autograd/gradcheck_test.cpp)"),
        OpInfo("aten::bernoulli.p", Rn, lambda g: [S(g.t(big), 0.3, desc="p 0.3"), S(g.t(big, f64), 0.0, desc="p 0"),
                                                  S(g.t(big), 1.0, desc="p 1"), S(g.t(big, f16), 0.5, desc="f16")],
               stat=bernoulli_stat),
        OpInfo("aten::native_dropout", Rn, lambda g: [
            S(g.t(big, kind="pos"), 0.3, True, desc="train p 0.3"), S(g.t(big, kind="pos"), 0.5, False, desc="eval"),
            S(g.t(big, f64, "transposed", kind="pos"), 0.0, True, desc="p 0 f64"),
            S(g.t(big, kind="pos"), 1.0, True, desc="p 1")], stat=dropout_stat,
               grads_reason="random: Ember's mask differs from PyTorch's, so the gradient (grad * mask / (1 - p)) "
                            "is checked by gradcheck under a fixed seed (tests/unit/autograd/gradcheck_test.cpp)"),
        OpInfo("aten::dropout", Rn, lambda g: [
            S(g.t(big, kind="pos"), 0.2, True, desc="train"), S(g.t(big, kind="pos"), 0.2, False, desc="eval"),
            S(g.t(big, bf16, kind="pos"), 0.5, True, desc="bf16 train", expect="maybe")], stat=dropout_stat),
    ]


def channels_last_rows():
    """Convolutions of channels_last inputs or weights, and batch norms of channels_last
    inputs (Note [channels_last convolution]): values and strides of the outputs and of the
    gradients, which PyTorch makes channels_last when the input (or a convolution's weight)
    suggests it. Second rows of their ops, so the cases before them keep their seeds."""
    A = torch.ops.aten
    CL = "channels_last"

    def convolution(g):
        def s(x, w, b, stride, pad, dil, groups, desc, expect="ok"):
            return S(x, w, b, stride, pad, dil, False, [0] * len(stride), groups, desc=desc, expect=expect)
        return [
            s(g.t((2, 3, 6, 5), lay=CL), g.t((4, 3, 3, 2)), g.t((4,)), [1, 1], [0, 0], [1, 1], 1,
              "channels_last input, bias"),
            s(g.t((1, 4, 7, 7)), g.t((4, 2, 3, 3), lay=CL), None, [2, 2], [1, 1], [1, 1], 2,
              "channels_last weight, stride 2 pad 1 groups 2, no bias"),
            s(g.t((1, 2, 7, 6), lay=CL), g.t((3, 2, 2, 2), lay=CL), g.t((3,)), [1, 2], [2, 0], [2, 1], 1,
              "channels_last input and weight, dilation"),
            s(g.t((2, 16, 8, 8), lay=CL), g.t((16, 16, 3, 3)), g.t((16,)), [1, 1], [1, 1], [1, 1], 1,
              "channels_last 16 channels, 3x3 pad 1"),
            s(g.t((2, 8, 6, 6), lay=CL), g.t((8, 1, 3, 3)), None, [1, 1], [1, 1], [1, 1], 8,
              "channels_last depthwise (groups 8)"),
            s(g.t((1, 2, 5, 5), f64, CL), g.t((2, 2, 3, 3), f64), g.t((2,), f64), [1, 1], [1, 1], [1, 1], 1,
              "channels_last f64"),
            s(g.t((2, 3, 8), lay=CL), g.t((4, 3, 3)), g.t((4,)), [1], [1], [1], 1,
              "1-D, channels-last input (the 4-D view ATen makes of it)"),
            s(g.t((2, 3, 6, 5), lay=CL), g.t((4, 3, 3, 2), lay=CL), None, [1, 1], [0, 0], [1, 1], 1,
              "channels_last, no bias")]

    def backward(g):
        def s(x, w, bias_sizes, stride, pad, dil, groups, mask, desc, lay="contiguous"):
            out = A.convolution(x.value(), w.value(), None, stride, pad, dil, False, [0] * len(stride), groups)
            grad = g.t(tuple(out.shape), x.base.dtype, lay)
            return S(grad, x, w, bias_sizes, stride, pad, dil, False, [0] * len(stride), groups, mask, desc=desc)
        all3 = [True, True, True]
        return [
            s(g.t((2, 3, 6, 5), lay=CL), g.t((4, 3, 3, 2)), [4], [1, 1], [0, 0], [1, 1], 1, all3,
              "channels_last input and grad_output", lay=CL),
            s(g.t((1, 4, 7, 7)), g.t((4, 2, 3, 3), lay=CL), None, [2, 2], [1, 1], [1, 1], 2, [True, True, False],
              "channels_last weight, contiguous grad_output, stride 2 pad 1 groups 2"),
            s(g.t((1, 2, 7, 6), lay=CL), g.t((3, 2, 2, 2), lay=CL), [3], [1, 2], [2, 0], [2, 1], 1, all3,
              "channels_last input and weight, dilation", lay=CL),
            s(g.t((2, 16, 8, 8), lay=CL), g.t((16, 16, 3, 3)), [16], [1, 1], [1, 1], [1, 1], 1, all3,
              "channels_last 16 channels, 3x3 pad 1", lay=CL),
            s(g.t((2, 8, 6, 6), lay=CL), g.t((8, 1, 3, 3)), None, [1, 1], [1, 1], [1, 1], 8, [True, True, False],
              "channels_last depthwise (groups 8)", lay=CL),
            s(g.t((1, 2, 5, 5), f64, CL), g.t((2, 2, 3, 3), f64), [2], [1, 1], [1, 1], [1, 1], 1, all3,
              "channels_last f64", lay=CL),
            # input gradient only (float32 PyTorch returns grad_weight as well when grad_bias is asked for)
            s(g.t((2, 3, 6, 5), lay=CL), g.t((4, 3, 3, 2)), None, [1, 1], [0, 0], [1, 1], 1, [True, False, False],
              "channels_last, input gradient only", lay=CL),
            s(g.t((2, 3, 6, 5), lay=CL), g.t((4, 3, 3, 2)), None, [1, 1], [0, 0], [1, 1], 1, [False, True, False],
              "channels_last, weight gradient only", lay=CL),
            s(g.t((2, 3, 8), lay=CL), g.t((4, 3, 3)), [4], [1], [1], [1], 1, all3,
              "1-D, channels-last input", lay=CL)]

    def batch_norm(g):
        def s(x, w, b, rm, rv, train, desc):
            return S(x, w, b, rm, rv, train, 0.1, 1e-5, desc=desc)
        return [
            s(g.t((4, 3, 5, 6), lay=CL), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), True,
              "channels_last, training"),
            s(g.t((2, 20, 3, 4), lay=CL), g.t((20,)), g.t((20,)), g.t((20,)), g.t((20,), kind="pos"), True,
              "channels_last, 20 channels (a block of 16 and a partial one), training"),
            s(g.t((4, 3, 5, 6), lay=CL), None, None, g.t((3,)), g.t((3,), kind="pos"), False, "channels_last, eval"),
            s(g.t((3, 5, 4, 2), f64, CL), None, None, None, None, True, "channels_last f64, no parameters")]

    def batch_norm_backward(g):
        def s(x, w, rm, rv, train, mask, desc, lay=CL):
            from opinfo import T
            _, sm, si = A.native_batch_norm(x.value(), None if w is None else w.value(), None,
                                            None if rm is None else rm.value().clone(),
                                            None if rv is None else rv.value().clone(), train, 0.1, 1e-5)
            saved = (T(sm), T(si)) if train else (None, None)
            return S(g.t(tuple(x.value().shape), x.base.dtype, lay), x, w, rm, rv, *saved, train, 1e-5, mask,
                     desc=desc)
        all3 = [True, True, True]
        return [
            s(g.t((4, 3, 5, 6), lay=CL), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), True, all3,
              "channels_last input and grad_out, training"),
            s(g.t((2, 20, 3, 4), lay=CL), g.t((20,)), None, None, True, all3,
              "channels_last, 20 channels, contiguous grad_out", lay="contiguous"),
            s(g.t((4, 3, 5, 6), lay=CL), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), False, all3,
              "channels_last, eval"),
            s(g.t((3, 5, 4, 2), f64, CL), None, None, None, True, [True, False, True], "channels_last f64"),
            s(g.t((4, 3, 5, 6)), g.t((3,)), None, None, True, all3, "contiguous input, channels_last grad_out")]

    return [OpInfo("aten::convolution", "conv", convolution, strides=True),
            OpInfo("aten::convolution_backward", "nn_backward", backward, strides=True),
            OpInfo("aten::native_batch_norm", "nn", batch_norm, strides=True, no_grad_args=("running_mean", "running_var")),
            OpInfo("aten::native_batch_norm_backward", "nn_backward", batch_norm_backward, strides=True)]


# --- main ---------------------------------------------------------------------------------

def late_rows():
    """Rows of ops added after the families above were generated: each row's seed is its
    position in all_rows(), so new rows go last and the cases before them stay as they are."""
    return [
        OpInfo("aten::detach", "view", lambda g: [
            S(g.t((3, 4), lay="transposed"), desc="transposed"), S(g.t((2, 3), lay="step"), desc="step"),
            S(g.t((), i64), desc="0-dim int64"), S(g.t((0, 2)), desc="empty")], strides=True),
    ]


def core_pointwise_rows():
    """The Core ATen elementwise ops added after the families above (seeds after theirs):
    the trigonometric and hyperbolic functions, log10, isinf, elu, leaky_relu, hardtanh,
    pow with a scalar base and atan2's out= form."""
    P = "pointwise"
    FLOAT_DOMAIN.update({"acos": "unit", "asin": "unit", "atanh": "unit", "acosh": "above1", "log10": "pos"})
    rows = []
    for n in ["acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "tan", "log10"]:
        rows.append(OpInfo("aten::" + n, P, unary(n)))
        rows.append(OpInfo("aten::%s_" % n, P, unary_inplace(n)))
    rows.append(OpInfo("aten::isinf", P, unary("isinf")))

    def activation(extra, bad_dtype_expect="error"):
        def samples(g):
            out = [S(g.t(s), *args, desc="%s %s" % (list(s), d)) for s in [(3, 4), (), (0, 3)] for args, d in extra]
            out += [S(g.t((3, 4), lay=lay, kind="wide"), *extra[1][0], desc=lay) for lay in LAYOUTS + ["permute"]]
            out += [S(g.special(d), *extra[1][0], desc="special values %s" % d) for d in (f32, f64)]
            out += [S(g.t((3, 4), d), *extra[1][0], desc="dtype %s" % d, expect="maybe") for d in (f64, f16, bf16)]
            out += [S(g.t((3, 4), d), *extra[0][0], desc="dtype %s" % d, expect=bad_dtype_expect)
                    for d in (i64, u8, b8)]
            return out
        return samples
    rows.append(OpInfo("aten::elu", P, activation([((), "defaults"), ((0.5, 2.0, 1.5), "alpha 0.5 scale 2 input 1.5"),
                                                   ((-1.2, 1.0507, 0.7), "negative alpha")]), grads=True))
    rows.append(OpInfo("aten::leaky_relu", P, activation([((), "default slope"), ((0.2,), "slope 0.2"),
                                                          ((-0.5,), "negative slope")]), grads=True))
    rows.append(OpInfo("aten::hardtanh", P, lambda g: activation([((), "defaults"), ((-0.5, 0.75), "-0.5, 0.75"),
                                                                  ((0.5, -0.5), "min > max")], "maybe")(g) + [
        S(g.t((3, 4), i64), -2, 3, desc="int bounds on int64"), S(g.t((3, 4), i32), -1.5, 2.5, desc="float bounds on int32"),
        S(g.t((3, 4), u8), 1, 5, desc="uint8, positive bounds"), S(g.t((3, 4), u8), -1, 5, desc="uint8, negative bound",
                                                                  expect="error"),
        S(torch_tensor_T([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0]), desc="at the bounds")], grads=True))

    def pow_scalar(g):
        out = [S(b, g.t((3, 4), kind="normal"), desc="base %r" % b) for b in (2, 0.5, 1, 0, -1.5, True)]
        out += [S(b, g.t((3, 4), d, kind="small"), desc="base %r, %s exponent" % (b, d), expect="maybe")
                for b in (2, 0.5, -3, True) for d in (i64, i32, u8, b8, f64, f16, bf16)]
        out += [S(2.5, g.t((3, 4), lay=lay), desc=lay) for lay in LAYOUTS]
        out += [S(2, g.t(()), desc="0-dim"), S(3, g.t((0, 2)), desc="empty"), S(0.5, g.special(f32), desc="special values"),
                S(2, g.t((3, 4), i64, kind="normal"), desc="int base, negative int exponents", expect="maybe")]
        return out
    rows.append(OpInfo("aten::pow.Scalar", P, pow_scalar, grads=True))

    def atan2_out(g):
        return [S(g.t((3, 4)), g.t((3, 4)), out=g.t((3, 4)), desc="same shape"),
                S(g.t((3, 1)), g.t((4,)), out=g.t((3, 4)), desc="broadcast"),
                S(g.t((3, 4), lay="transposed"), g.t((3, 4), lay="step"), out=g.t((3, 4), lay="transposed"),
                  desc="non-contiguous out"),
                S(g.t((3, 4)), g.t((3, 4)), out=g.t((3, 4), f64), desc="float64 out"),
                S(g.t((3, 4), i64), g.t((3, 4), i32), out=g.t((3, 4)), desc="int inputs, float out"),
                S(g.t(()), g.t(()), out=g.t(()), desc="0-dim"), S(g.t((0, 4)), g.t((4,)), out=g.t((0, 4)), desc="empty"),
                S(g.t((3, 4)), g.t((3, 4)), out=g.t((3, 4), i64), desc="int64 out", expect="error")]
    rows.append(OpInfo("aten::atan2.out", P, atan2_out))
    return rows


def any_dims(x, dim=None, keepdim=False):
    """PyTorch 2's any.dims (torch 1.13 lacks it) from 1.13's any and any.dim: no dims
    (None) reduces every dim, an empty list none (each element's truth value)."""
    out_dtype = torch.uint8 if x.dtype == torch.uint8 else torch.bool
    if dim is None:
        r = torch.ops.aten.any.default(x)
        return r.reshape([1] * x.dim()) if keepdim else r
    wrapped = [d % max(x.dim(), 1) if -max(x.dim(), 1) <= d < max(x.dim(), 1) else d for d in dim]
    for d in wrapped:
        if not -max(x.dim(), 1) <= d < max(x.dim(), 1):
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                             % (-max(x.dim(), 1), max(x.dim(), 1) - 1, d))
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError("dim %d appears multiple times in the list of dims" % wrapped[0])
    if not wrapped:
        return (x != 0).to(out_dtype)
    for d in sorted(wrapped, reverse=True):
        x = torch.ops.aten.any.dim(x, d, keepdim)
    return x


def copy_2x(self, src, non_blocking=False):
    """PyTorch 2's functional copy: a clone of self (its strides) with src copied in. torch
    1.13's aten::copy returned src converted and expanded, often a view of it."""
    r = self.clone()
    r.copy_(src, non_blocking)
    return r


def permutation_stat(pos, kw, result):
    return {"kind": "permutation", "n": int(pos[0])}


def core_other_rows():
    """Core ATen ops added after core_pointwise_rows: the functional fill and copy,
    _local_scalar_dense, any.dims, var.dim and randperm."""
    C, R = "copy", "reduction"
    return [
        OpInfo("aten::fill.Scalar", C, lambda g: [
            S(g.t((3, 4), d, lay), v, desc="%s %s %r" % (d, lay, v)) for d, v in
            [(f32, 1.5), (i64, -2.7), (b8, True), (bf16, 0.1), (u8, 7), (f64, False)]
            for lay in ("contiguous", "transposed", "step")] + [S(g.t(()), 4.0, desc="0-dim"), S(g.t((0,)), 1, desc="empty")],
            grads=True),
        OpInfo("aten::copy", C, lambda g: [
            S(g.t((3, 4)), g.t((3, 4)), desc="same"), S(g.t((3, 4)), g.t((4,)), desc="broadcast src"),
            S(g.t((3, 4), lay="transposed"), g.t((3, 4), lay="step"), desc="non-contiguous both"),
            S(g.t((3, 4)), g.t((3, 4), i64), desc="i64 -> f32", expect="maybe"),
            S(g.t((3, 4), i64), g.t((3, 4), kind="wide"), desc="f32 -> i64"),
            S(g.t((3, 4), b8), g.t((3, 4)), desc="f32 -> bool"), S(g.t((3, 4), f16), g.t((3, 4), f64), desc="f64 -> f16"),
            S(g.t((3, 4), bf16), g.t(()), desc="0-dim src"), S(g.t((0, 4)), g.t((4,)), desc="empty"),
            S(g.t((3, 4)), g.t((3, 4)), True, desc="non_blocking"),
            S(g.t((3, 4)), g.t((2, 4)), desc="bad shape", expect="error")], grads=True,
            ref=copy_2x, schema="copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
            note="PyTorch 2's copy (clone of self, then copy_); torch 1.13's returned a view of src"),
        OpInfo("aten::_local_scalar_dense", C,
               reason="returns a Scalar, which the case files cannot hold (their outputs are tensors): checked by "
                      "CoreOps.LocalScalarDense* in tests/unit/ops/core_ops_test.cpp"),
        OpInfo("aten::any.dims", R, lambda g: red_dims(1, [f64, i64, u8, b8])(g) + [
            S(g.t((2, 3, 4), kind="small"), None, desc="None = all"), S(g.t((2, 3, 4)), None, True, desc="None keepdim"),
            S(g.t((2, 3, 4), i64, kind="small"), [], desc="[] = none"), S(g.t((2, 3), u8, kind="small"), [], True, desc="[] uint8"),
            S(g.t((2, 3, 4)), [0, -3], desc="repeated dim", expect="error"), S(g.special(f32), [0], desc="special values"),
            S(g.t((2, 3, 4), b8, "permute"), [0, 1], True, desc="bool permuted keepdim")],
            ref=any_dims, schema="any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
            note="PyTorch 2's any.dims, which torch 1.13 lacks: reference from 1.13's any and any.dim (gen_cases.any_dims)"),
        OpInfo("aten::var.dim", R, lambda g: [
            S(g.t((3, 4)), [1], u, desc="dim 1 unbiased %r" % u) for u in (True, False)] + [
            S(g.t((2, 3, 4), lay="permute"), None, False, True, desc="all, biased, keepdim"),
            S(g.t((2, 3, 4)), [0, 2], desc="dims 0,2 default"), S(g.t((3, 4), lay="transposed"), [0], True, True,
                                                                 desc="transposed keepdim"),
            S(g.t((1, 4)), [0], desc="single element (nan)"), S(g.t((0, 3)), [1], desc="empty rows"),
            S(g.t((3, 4)), [2], desc="dim out of range", expect="error")] + [
            S(g.t((3, 4), d), [0], desc="%s" % d, expect="maybe") for d in (f64, f16, bf16, i64)], grads=True),
        OpInfo("aten::randperm", "random", lambda g: [
            S(n, desc="n %d" % n) for n in (0, 1, 7, 1000)] + [
            S(300, dtype=d, desc="n 300 %s" % d, expect="maybe") for d in (f32, f64, i32, i16, u8, i8)] + [
            S(257, dtype=bf16, desc="n 257 bfloat16 (past it PyTorch's values round)"), S(256, dtype=u8, desc="n 256 uint8"), S(2049, dtype=f16, desc="n 2049 f16"),
            S(2050, dtype=f16, desc="n 2050 f16", expect="error"), S(5, dtype=b8, desc="bool", expect="error"),
            S(-1, desc="negative n", expect="error")], stat=permutation_stat),
    ]


def torch_tensor_T(values, dtype=f32):
    """A tensor argument holding exactly `values`."""
    return opinfo.T(torch.tensor(values, dtype=dtype))


def geometry_read_rows():
    """The Core ATen geometry reads (sym_size.int, sym_stride.int, sym_numel,
    sym_storage_offset, sym_is_contiguous): rows with the reason they have no cases, after
    every other row so that no seed moves."""
    return [
        OpInfo("aten::" + name, "copy", schema=schema,
               reason="returns a SymInt or SymBool (a geometry read), which the case files cannot hold (their outputs "
                      "are tensors): checked against PyTorch's answers by CoreOps.GeometryReads*/SymIsContiguous* in "
                      "tests/unit/ops/core_ops_test.cpp")
        for name, schema in [
            ("sym_size.int", "sym_size.int(Tensor self, int dim) -> SymInt"),
            ("sym_stride.int", "sym_stride.int(Tensor self, int dim) -> SymInt"),
            ("sym_numel", "sym_numel(Tensor self) -> SymInt"),
            ("sym_storage_offset", "sym_storage_offset(Tensor self) -> SymInt"),
            ("sym_is_contiguous",
             "sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> SymBool")]
    ]


def resize_rows():
    """resize_ (Note [resize_]) where its result is defined: shrinking, equal numel, equal
    sizes (strides kept), a memory format's restride, and the refusals. Growing leaves new
    elements uninitialized, so tests/unit/ops/resize_test.cpp checks it (kept values, views
    of the grown storage). After every other row so that no seed moves."""
    CL, CF = torch.channels_last, torch.contiguous_format
    return [
        OpInfo("aten::resize_", "copy", lambda g: [
            S(g.t((3, 4)), [2, 3], desc="shrink"), S(g.t((3, 4), i64), [12], desc="equal numel, flat i64"),
            S(g.t((3, 4), lay="transposed"), [3, 4], desc="equal sizes keep the strides"),
            S(g.t((3, 4), lay="transposed"), [2, 5], desc="transposed, restrided contiguous"),
            S(g.t((3, 4), f64, "step"), [2, 2], desc="strided view: storage order from its offset"),
            S(g.t((2, 3, 2, 2)), [2, 3, 2, 2], memory_format=CL, desc="channels_last restride"),
            S(g.t((2, 3, 2, 2), lay="channels_last"), [1, 3, 2, 2], memory_format=CF, desc="contiguous_format from channels_last"),
            S(g.t((3, 4), b8), [0], desc="to empty"), S(g.t((3, 4)), [], desc="to 0-dim"),
            S(g.t((3, 4)), [-1, 2], desc="negative size", expect="error"),
            S(g.t((3, 4)), [12], memory_format=CL, desc="channels_last of rank 1", expect="error")],
            strides=True),
    ]


def all_rows():
    return (pointwise_rows() + view_rows() + copy_rows() + factory_rows() + reduction_rows() + linalg_rows() + nn_rows() +
            conv_rows() + shape_rows() + indexing_rows() + random_rows() + nn_backward_rows() + late_rows() +
            loss_rows() + core_pointwise_rows() + core_other_rows() + norm_rows() + slices_rows() + scatter_rows() +
            padding_rows() + upsample_rows() + distance_rows() + fold_rows() + pool3d_rows() + grid_sample_rows() +
            embedding_bag_rows() + adaptive_pool3d_rows() + channels_last_rows() + geometry_read_rows() + resize_rows())


# Families of ops that PyTorch 1.13 lacks, generated with PyTorch 2.x: a CPU run under 1.13
# leaves their files as they are, and a CPU run under 2.x writes only these (the other
# families stay 1.13's). Their rows are seeded from TORCH2_SEED on, apart from all_rows().
TORCH2_SEED = 100000


def torch2_rows():
    return norm_legit_rows() + attention_rows() + fft_rows() + conv3d_rows() + pool1d_rows() + complex_rows()


def rows_to_run(args):
    """(seed, row) of this run: see TORCH2_SEED. A device run has every row."""
    old = list(enumerate(all_rows()))
    new = [(TORCH2_SEED + i, info) for i, info in enumerate(torch2_rows())] if TORCH_MAJOR >= 2 else []
    if args.device == "cpu" and TORCH_MAJOR >= 2:
        return new
    return old + new


def kept_families(outdir, families):
    """The families this run left as they were, each with the PyTorch that made it (from its
    json), so that summary.txt lists every family."""
    import json
    kept = {}
    names = {info.family for info in all_rows() + (torch2_rows() if TORCH_MAJOR >= 2 else [])}
    names |= {f[:-5] for f in os.listdir(outdir) if f.endswith(".json")}
    for name in sorted(names - set(families)):
        path = os.path.join(outdir, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                kept[name] = json.load(f)
    return kept


def differentiable_ops():
    """Ops with a derivative formula in Ember: those named in src/ops/derivatives*.cpp.
    Their ok samples also record PyTorch's gradients (docs/testing.md)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "ops")
    names = set()
    for fn in sorted(os.listdir(src)):
        if fn.startswith("derivatives") and fn.endswith(".cpp"):
            with open(os.path.join(src, fn)) as f:
                names |= set(re.findall(r'"(aten::[\w.]+)"', f.read()))
    return names


def parse_args():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="Writes the conformance cases (see the module's docstring).")
    p.add_argument("--device", default="cpu", help="where PyTorch runs the cases: cpu (default) or cuda")
    p.add_argument("--out", help="output directory (default tests/ops/cases, or tests/ops/cases_cuda for cuda)")
    p.add_argument("--only", default="", help="only the rows whose op name contains this (a trial run)")
    args = p.parse_args()
    if args.device not in ("cpu", "cuda"):
        p.error("--device: expected cpu or cuda, got %r" % args.device)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: PyTorch %s sees no CUDA device" % torch.__version__)
    if args.only and not args.out:
        p.error("--only writes a partial case set: give --out DIR (not the committed cases)")
    args.out = args.out or os.path.join(here, "cases" if args.device == "cpu" else "cases_cuda")
    return args


def on_device_settings():
    """Full float32 precision on CUDA: no TF32 in matrix products and convolutions, no
    reduced-precision accumulation in half/bfloat16 products (PyTorch's defaults allow some
    of these), so the references are what assert_close's tolerances assume."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    if hasattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"):
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    return ("torch.backends.cuda.matmul.allow_tf32 = False, torch.backends.cudnn.allow_tf32 = False, "
            "allow_fp16/bf16_reduced_precision_reduction = False")


def summary(args, families, settings, kept):
    """summary.txt: what was stored, per family, with the PyTorch that made it (families this
    run left as they were included), and (on a device) each sample left out."""
    lines = ["conformance cases written by tests/ops/gen_cases.py --device %s" % args.device,
             "torch %s on %s" % (torch.__version__, opinfo.device_name())]
    if settings:
        lines.append("settings: " + settings)
    if args.only:
        lines.append("only rows whose op name contains %r (a trial run: not a full case set)" % args.only)
    lines.append("%-12s %5s %6s %6s %9s  %s" % ("family", "ops", "cases", "grads", "left out", "made by torch"))
    total = [0, 0, 0, 0]
    for name, fam in families.items():
        grads = sum(1 for c in fam.cases if "grads" in c)
        row = [len(fam.ops), len(fam.cases), grads, len(fam.left_out)]
        total = [a + b for a, b in zip(total, row)]
        lines.append("%-12s %5d %6d %6d %9d  %s" % (name, *row, torch.__version__))
    for name, js in kept.items():
        cases = js.get("cases", [])
        row = [len(js.get("ops", {})), len(cases), sum(1 for c in cases if "grads" in c), 0]
        total = [a + b for a, b in zip(total, row)]
        lines.append("%-12s %5d %6d %6d %9d  %s (kept: not this run's)" % (name, *row, js.get("torch_version")))
    lines.append("%-12s %5d %6d %6d %9d" % ("total", *total))
    empty = [op for fam in families.values() for op, e in fam.ops.items() if e["cases"] == 0 and "reason" not in e]
    if empty and args.device != "cpu":
        lines.append("ops with no case on %s (every sample left out): %s" % (args.device, ", ".join(empty)))
    errors = [x for fam in families.values() for x in fam.row_errors]
    if errors:
        lines.append("rows the generator failed on, left out whole (%d):" % len(errors))
        lines += ["  %s: %s" % (x["op"], x["why"]) for x in errors]
    rejects = [x for fam in families.values() for x in fam.device_rejects]
    if rejects:
        lines.append("samples PyTorch's CPU accepts and %s rejects, stored as error cases (%d):" %
                     (args.device, len(rejects)))
        lines += ["  %s (%s): %s" % (x["id"], x["desc"], x["why"]) for x in rejects]
    left = [x for fam in families.values() for x in fam.left_out]
    if left:
        lines.append("left out on %s (%d samples):" % (args.device, len(left)))
        lines += ["  %s (%s): %s" % (x["id"], x["desc"], x["why"]) for x in left]
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    opinfo.DEVICE = args.device
    settings = on_device_settings() if args.device != "cpu" else ""
    torch.manual_seed(0)
    diff = differentiable_ops()
    outdir = args.out
    os.makedirs(outdir, exist_ok=True)
    families = {}
    for seed, info in rows_to_run(args):
        if args.only and args.only not in info.name:
            continue
        fam = families.setdefault(info.family, Family(info.family))
        if info.name in diff:
            info.grads = True
        torch.manual_seed(seed)
        fam.record_row(info, Gen(1000 + seed))
    for fam in families.values():
        fam.write(outdir)
    text = summary(args, families, settings, {} if args.only else kept_families(outdir, families))
    with open(os.path.join(outdir, "summary.txt"), "w") as f:
        f.write(text)
    print(text if len(text) < 4000 else text[:4000] + "... (see %s)" % os.path.join(outdir, "summary.txt"))
    if args.device == "cpu" and not args.only and TORCH_MAJOR < 2:
        write_torch_layout_file(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                             "torch_layout.safetensors"))



def write_torch_layout_file(path):
    """A safetensors file laid out as PyTorch's safetensors.torch.save_file writes it,
    for the round-trip unit test (tests/unit/core/safetensors_test.cpp)."""
    from opinfo import Store
    store = Store()
    tensors = {"a": torch.arange(6, dtype=f32).reshape(2, 3), "b": torch.tensor([[-1, 2]], dtype=i64),
               "c": torch.tensor([1.5, -2.0], dtype=bf16), "d": torch.tensor([True, False, True]),
               "e": torch.tensor(0.5, dtype=f16), "empty": torch.zeros(0, 3), "f": torch.tensor([-3, 7], dtype=i8),
               "g": torch.tensor([250], dtype=u8), "h": torch.tensor([1e300, -2.5], dtype=f64),
               "i": torch.tensor([-70000], dtype=i32), "j": torch.tensor([-300], dtype=i16)}
    names = {}
    for k, v in tensors.items():
        names[store.add(v)] = k
    store.tensors = {names[n]: store.tensors[n] for n in store.tensors}
    store.write(path, {"format": "pt"})


if __name__ == "__main__":
    main()
