"""The conformance rows of the complex_ops family (src/ops/complex_arith.cpp), imported by
gen_cases.py: complex64/complex128 arithmetic on the CPU. add, sub, mul and div (Tensor and
Scalar overloads, alpha, in-place forms), neg, reciprocal, exp, log, sqrt, the conjugates,
eq/ne, where, sum and mean, each with complex operands, complex with real tensors (type
promotion), with Python int/float/bool scalars, broadcast, non-contiguous, 0-dim and empty
tensors, infinite, NaN and zero parts and divisors, huge and tiny magnitudes, and the errors
PyTorch raises; and one complex sample each of ops PyTorch's CPU refuses for complex (lt,
maximum, clamp, remainder, floor_divide, sign, floor, amax, …), which Ember refuses too. Python complex scalars are left out: Ember's Scalar has no complex form.

Special values stay in tensors of at most 7 elements: PyTorch's CPU kernels run the
scalar c10::complex code on those (its SIMD loop takes 2 vectors of 8 complex64 or 4
complex128 at a time), and its SIMD division and reciprocal use other formulas whose
infinities and NaNs differ from the scalar ones. Ember's kernels are the scalar code.

conj is a lazy view in PyTorch (the conjugate bit); Ember's materializes (Note [conj
materializes]), so its reference is conj followed by resolve_conj, a new tensor."""
import torch

from opinfo import OpInfo, S, T

f32, f64, i64, b8 = torch.float32, torch.float64, torch.int64, torch.bool
c64, c128 = torch.complex64, torch.complex128
inf, nan = float("inf"), float("nan")

LAYOUTS = ["transposed", "step", "expand"]


def ct(values, dtype=c128):
    return T(torch.tensor(values, dtype=dtype))


def binary_tensor(op):
    """Samples of add/sub/mul/div.Tensor: complex with complex and with real tensors,
    broadcast, layouts, 0-dim, empty, special parts, and bool operands."""
    def samples(g):
        out = [S(g.t((3, 4), c64), g.t((3, 4), c64), desc="complex64"),
               S(g.t((2, 3), c128), g.t((2, 3), c128), desc="complex128"),
               S(g.t((3, 4), c64), g.t((3, 4), f32), desc="complex64 with float32"),
               S(g.t((3, 4), c64), g.t((3, 4), f64), desc="complex64 with float64: complex128"),
               S(g.t((3, 4), f32), g.t((3, 4), c64), desc="float32 with complex64"),
               S(g.t((3, 4), c64), g.t((3, 4), i64, kind="nonzero"), desc="complex64 with int64"),
               S(g.t((3, 4), c64), g.t((), f64), desc="0-dim float64 does not widen complex64"),
               S(g.t((), c64), g.t((3,), f64), desc="0-dim complex64 lifts float64 to complex128"),
               S(g.t((3, 1), c64), g.t((4,), c128), desc="broadcast (3,1) with (4,)"),
               S(g.t((), c128), g.t((), c128), desc="0-dim"),
               S(g.t((0, 3), c64), g.t((3,), c64), desc="empty")]
        out += [S(g.t((3, 4), c64, lay), g.t((3, 4), c128, "transposed"), desc=lay) for lay in LAYOUTS]
        a = [complex(inf, 0), complex(1, 2), complex(inf, inf), complex(nan, 1), complex(-0.0, 0), complex(3, -4)]
        b = [complex(1, 0), complex(inf, 0), 0j, complex(2, 1), complex(0, inf), complex(-2, 0.5)]
        out += [S(ct(a, d), ct(b, d), desc="infinite, NaN and zero parts %s" % d) for d in (c64, c128)]
        if op != "sub":
            out.append(S(g.t((2, 3), c64), g.t((2, 3), b8), desc="complex64 with bool"))
        else:
            out.append(S(g.t((2, 3), c64), g.t((2, 3), b8), desc="complex64 with bool", expect="error"))
            out.append(S(g.t((2, 3), b8), g.t((2, 3), c64), desc="bool with complex64", expect="error"))
        if op == "div":
            zero = [0j, 0j, 0j, 0j]
            out += [S(ct([complex(1, 1), 0j, complex(1, 0), complex(0, 1)], d), ct(zero, d), desc="zero divisors %s" % d)
                    for d in (c64, c128)]
            out += [S(ct([complex(1e300, 1e300), 1 + 0j, complex(1e-300, 2e-300)]),
                      ct([complex(1e300, 1e300), complex(1e300, 1e300), complex(1e-300, 1e-300)]),
                      desc="huge and tiny divisors: c^2 + d^2 would overflow or underflow"),
                    S(ct([complex(1e30, 1e30), 1 + 0j, complex(3e-30, 1e-30)], c64),
                      ct([complex(2e30, 2e30), complex(1e30, -1e30), complex(1e-30, 1e-30)], c64),
                      desc="huge and tiny complex64 divisors")]
        if op in ("add", "sub"):
            out += [S(g.t((3, 4), c64), g.t((3, 4), c64), alpha=2, desc="alpha 2"),
                    S(g.t((3, 4), c128), g.t((4,), f32), alpha=-1.5, desc="alpha -1.5, broadcast real other"),
                    S(ct(a, c64), ct(b, c64), alpha=0.5, desc="alpha 0.5, special parts")]
        return out
    return samples


def binary_scalar(op):
    """Samples of add/sub/mul/div.Scalar: Python int, float and bool scalars."""
    def samples(g):
        out = [S(g.t((3, 4), c64), 2, desc="complex64, int scalar"),
               S(g.t((3, 4), c64), -2.5, desc="complex64, float scalar"),
               S(g.t((2, 3), c128), 0.25, desc="complex128, float scalar"),
               S(g.t((3, 4), c64, "transposed"), 3, desc="transposed"),
               S(g.t((), c128), 1.5, desc="0-dim"),
               S(g.t((0, 2), c64), 2, desc="empty"),
               S(ct([complex(inf, 0), complex(nan, 1), complex(1, 2)], c64), 2.0, desc="special parts")]
        if op == "sub":
            out.append(S(g.t((3,), c64), True, desc="bool scalar", expect="error"))
        else:
            out.append(S(g.t((3,), c64), True, desc="bool scalar"))
        if op == "div":
            out.append(S(ct([complex(1, 1), 0j, complex(-1, 0)]), 0, desc="division by int zero"))
            out.append(S(ct([complex(1, 1), 0j, complex(-1, 0)], c64), 0.0, desc="division by float zero"))
        if op in ("add", "sub"):
            out.append(S(g.t((3, 4), c64), 2, 3, desc="alpha 3"))
        return out
    return samples


def inplace(op, scalar):
    def samples(g):
        other = (lambda d: 2.5) if scalar else (lambda d: g.t((3, 4), d))
        out = [S(g.t((3, 4), c64), other(c64), desc="complex64 self"),
               S(g.t((3, 4), c128, "transposed"), other(f64), desc="complex128 transposed self, real other"),
               S(g.t((3, 4), c64), other(f32), desc="complex64 self, float32 other")]
        if not scalar:
            out.append(S(g.t((3, 4), f32), g.t((3, 4), c64), desc="float32 self, complex other", expect="error"))
            out.append(S(g.t((3, 1), c64), g.t((3, 4), c64), desc="other broadcasts past self", expect="error"))
        return out
    return samples


def rounding(g):
    return [S(g.t((3,), c64), g.t((3,), c64), rounding_mode="floor", desc="floor", expect="error"),
            S(g.t((3,), c128), g.t((3,), f64), rounding_mode="trunc", desc="trunc", expect="error"),
            S(g.t((3,), f32), g.t((3,), f32), rounding_mode="floor", desc="real floor still works")]


def unary(op):
    def samples(g):
        out = [S(g.t((3, 4), c64), desc="complex64"),
               S(g.t((2, 3), c128), desc="complex128"),
               S(g.t((), c64), desc="0-dim"),
               S(g.t((0, 3), c128), desc="empty")]
        out += [S(g.t((3, 4), c64, lay), desc=lay) for lay in LAYOUTS]
        special = [0j, complex(inf, 0), complex(-inf, 1), complex(nan, 0), complex(0, inf), complex(-1, 0),
                   complex(1e30, 1e30)]
        out += [S(ct(special, d), desc="special parts %s" % d) for d in (c64, c128)]
        if op == "reciprocal":
            out.append(S(ct([complex(1e300, 1e300), complex(1e-300, -1e-300)]), desc="huge and tiny magnitudes"))
        return out
    return samples


def conj_samples(g):
    return [S(g.t((3, 4), c64), desc="complex64"),
            S(g.t((2, 3), c128, "transposed"), desc="complex128 transposed"),
            S(g.t((3, 4), c64, "step"), desc="every 2nd element"),
            S(g.t((), c64), desc="0-dim"),
            S(ct([complex(nan, inf), complex(-0.0, 0.0)]), desc="special parts"),
            S(g.t((3, 4), f32), desc="float32: its own conjugate")]


def unary_inplace(g):
    return [S(g.t((3, 4), c64), desc="complex64"), S(g.t((3, 4), c128, "transposed"), desc="complex128 transposed"),
            S(g.t((2, 3), f32), desc="float32")]


def compare(scalar):
    def samples(g):
        a = [complex(1, 2), complex(3, 0), complex(nan, 0), complex(0, -1), complex(inf, 1)]
        b = [complex(1, 2), complex(3, 1), complex(nan, 0), complex(0, -1), complex(inf, 1)]
        if scalar:
            return [S(ct(a, c64), 3, desc="complex64, int scalar"),
                    S(ct([complex(3, 0), complex(3, 1e-7), complex(-2.5, 0)]), -2.5, desc="complex128, float scalar"),
                    S(g.t((3, 4), c64, "transposed"), 0.5, desc="transposed"),
                    S(ct([complex(1, 0), 0j], c64), True, desc="bool scalar")]
        return [S(ct(a, c64), ct(b, c64), desc="complex64, some equal, NaN parts"),
                S(ct(a), ct(b, c64), desc="complex128 with complex64"),
                S(ct([complex(1, 0), complex(1, 1), complex(2, 0)], c64), T(torch.tensor([1.0, 1.0, 3.0])),
                  desc="complex with float32"),
                S(g.t((3, 1), c64), g.t((4,), c64), desc="broadcast"),
                S(g.t((3, 4), c64, "step"), g.t((3, 4), c64, "transposed"), desc="non-contiguous"),
                S(g.t((), c128), g.t((), c128), desc="0-dim")]
    return samples


def where_self(g):
    cond = lambda *shape: g.t(shape, b8)  # noqa: E731
    return [S(cond(3, 4), g.t((3, 4), c64), g.t((3, 4), c64), desc="complex64"),
            S(cond(3, 4), g.t((3, 4), c64), g.t((3, 4), f64), desc="complex64 with float64: complex128"),
            S(cond(3, 4), g.t((3, 4), f32), g.t((3, 4), c128), desc="float32 with complex128"),
            S(cond(4), g.t((3, 1), c64), g.t((), c64), desc="broadcast"),
            S(cond(3, 4), g.t((3, 4), c64, "transposed"), g.t((3, 4), c64, "step"), desc="non-contiguous")]


def where_scalar_other(g):
    return [S(g.t((3, 4), b8), g.t((3, 4), c64), 2.5, desc="complex64, float scalar"),
            S(g.t((3,), b8), g.t((3,), c128), 2, desc="complex128, int scalar")]


def where_scalar_self(g):
    return [S(g.t((3, 4), b8), -1, g.t((3, 4), c64), desc="int scalar, complex64")]


def reduce(mean):
    def samples(g):
        out = [S(g.t((3, 4), c64), [1], desc="complex64 over dim 1"),
               S(g.t((3, 4), c64), [0], True, desc="keepdim"),
               S(g.t((2, 3, 4), c128), [0, 2], desc="complex128 over two dims"),
               S(g.t((2, 3, 4), c64), [-1], desc="negative dim"),
               S(g.t((3, 4), c64), [], desc="no dims: all"),
               S(g.t((3, 4), c64, "transposed"), [1], desc="transposed"),
               S(g.t((3, 4), c64, "expand"), [0], desc="broadcast dim reduced"),
               S(g.t((3, 4), c64), [1], dtype=c128, desc="dtype complex128"),
               S(g.t((), c64), [0], desc="0-dim"),
               S(g.t((0, 3), c64), [0], desc="empty dim")]
        if not mean:
            out.append(S(g.t((3, 4), f32), [1], dtype=c64, desc="float32 summed as complex64"))
        return out
    return samples


def reduce_all(g):
    return [S(g.t((3, 4), c64), desc="complex64"), S(g.t((2, 3), c128, "step"), desc="complex128 every 2nd"),
            S(g.t((), c64), desc="0-dim"), S(g.t((3, 4), c64), dtype=c128, desc="dtype complex128")]


def refused(*extra):
    """One complex64 sample of an op PyTorch's CPU refuses for complex: Ember refuses it too."""
    def samples(g):
        return [S(g.t((3,), c64), *[e(g) if callable(e) else e for e in extra], desc="complex64", expect="error")]
    return samples


def refused_rows(F):
    other = lambda g: g.t((3,), c64)  # noqa: E731
    rows = [OpInfo("aten::" + n, F, refused(other))
            for n in ("lt.Tensor", "maximum", "minimum", "remainder.Tensor", "fmod.Tensor", "floor_divide", "atan2",
                      "bitwise_and.Tensor")]
    rows += [OpInfo("aten::" + n, F, refused()) for n in ("sign", "floor", "ceil", "round", "relu", "erf", "argmax")]
    rows += [OpInfo("aten::ge.Scalar", F, refused(1)), OpInfo("aten::clamp", F, refused(0, 1)),
             OpInfo("aten::div.Scalar_mode", F, lambda g: [S(g.t((3,), c64), 2, rounding_mode="trunc", desc="complex64",
                                                              expect="error")]),
             OpInfo("aten::amax", F, refused([0]))]
    return rows


def conj_ref(x):
    return torch.conj(x).resolve_conj()


def complex_rows():
    F = "complex_ops"
    rows = []
    for op in ("add", "sub", "mul", "div"):
        rows.append(OpInfo("aten::%s.Tensor" % op, F, binary_tensor(op)))
        rows.append(OpInfo("aten::%s.Scalar" % op, F, binary_scalar(op)))
        rows.append(OpInfo("aten::%s_.Tensor" % op, F, inplace(op, False)))
    rows.append(OpInfo("aten::mul_.Scalar", F, inplace("mul", True)))
    rows.append(OpInfo("aten::div_.Scalar", F, inplace("div", True)))
    rows.append(OpInfo("aten::div.Tensor_mode", F, rounding))
    for op in ("neg", "reciprocal", "exp", "log", "sqrt"):
        rows.append(OpInfo("aten::" + op, F, unary(op)))
    rows.append(OpInfo("aten::neg_", F, unary_inplace))
    rows.append(OpInfo("aten::_conj_physical", F, conj_samples))
    rows.append(OpInfo("aten::conj_physical", F, conj_samples))
    rows.append(OpInfo("aten::conj_physical_", F, unary_inplace))
    rows.append(OpInfo("aten::conj", F, conj_samples, ref=conj_ref, schema="conj(Tensor(a) self) -> Tensor(a)",
                       note="reference conj(x).resolve_conj(): Ember has no lazy conjugate bit, its conj materializes "
                            "(Note [conj materializes])"))
    rows.append(OpInfo("aten::resolve_conj", F, conj_samples))
    for op in ("eq", "ne"):
        rows.append(OpInfo("aten::%s.Tensor" % op, F, compare(False)))
        rows.append(OpInfo("aten::%s.Scalar" % op, F, compare(True)))
    rows.append(OpInfo("aten::where.self", F, where_self))
    rows.append(OpInfo("aten::where.ScalarOther", F, where_scalar_other))
    rows.append(OpInfo("aten::where.ScalarSelf", F, where_scalar_self))
    rows.append(OpInfo("aten::sum.dim_IntList", F, reduce(False)))
    rows.append(OpInfo("aten::mean.dim", F, reduce(True)))
    rows.append(OpInfo("aten::sum", F, reduce_all))
    rows.append(OpInfo("aten::mean", F, reduce_all))
    return rows + refused_rows(F)
