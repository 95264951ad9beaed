"""The conformance rows of the fft family (src/ops/fft.cpp), imported by gen_cases.py: the
complex views (view_as_real, view_as_complex, real, imag) and ATen's transforms _fft_r2c,
_fft_c2r and _fft_c2c over one and several dims, each normalization mode, onesided and
two-sided, even and odd lengths, float and double precision, strided and broadcast inputs,
and the errors PyTorch raises; abs of complex tensors (the modulus). Complex tensors are stored as their real and imaginary parts
interleaved (opinfo.Store: safetensors C64/C128). The views and the transforms record
gradients (complex upstream gradients for complex outputs). The transforms' outputs are
checked for PyTorch's strides too (batch dims outermost, dim.back() innermost)."""
import torch

from opinfo import OpInfo, S, T

f32, f64, f16, i64 = torch.float32, torch.float64, torch.float16, torch.int64
c64, c128 = torch.complex64, torch.complex128


def view_as_real(g):
    return [S(g.t((3, 4), c64), desc="complex64 (3,4)"),
            S(g.t((2, 3, 4), c128), desc="complex128 (2,3,4)"),
            S(g.t((), c64), desc="0-dim"),
            S(g.t((0, 3), c64), desc="empty"),
            S(g.t((3, 4), c64, "transposed"), desc="transposed"),
            S(g.t((3, 4), c128, "step"), desc="every 2nd element"),
            S(g.t((3, 4), c64, "expand"), desc="broadcast dim 0"),
            S(g.t((3, 4), f32), desc="float32 input", expect="error")]


def view_as_complex(g):
    offset = T(g.values((5, 2), f32), [["slice", 0, 1, 5, 2]])  # rows 1 and 3: offset 2, stride 4
    return [S(g.t((3, 2), f32), desc="float32 (3,2)"),
            S(g.t((2, 3, 2), f64), desc="float64 (2,3,2)"),
            S(g.t((2,), f32), desc="one complex value: 0-dim"),
            S(g.t((0, 2), f32), desc="empty"),
            S(offset, desc="sliced rows: even offset and strides"),
            S(g.t((3, 4, 2), f32, "permute"), desc="permuted: last dim not of stride 1", expect="error"),
            S(g.t((3, 2), f32, "transposed"), desc="transposed: last dim of stride 3", expect="error"),
            S(g.t((3, 2), f32, "step"), desc="last dim of stride 2", expect="error"),
            S(g.t((3, 3), f32), desc="last dim of size 3", expect="error"),
            S(g.t((3, 2), i64), desc="int64", expect="error"),
            S(g.t((), f32), desc="0-dim", expect="error")]


def real_imag(imag):
    def samples(g):
        out = [S(g.t((3, 4), c64), desc="complex64"),
               S(g.t((2, 3), c128, "transposed"), desc="complex128 transposed"),
               S(g.t((3, 4), c64, "step"), desc="every 2nd element"),
               S(g.t((), c64), desc="0-dim")]
        out.append(S(g.t((3, 4), f32), desc="float32 input",
                     expect="error" if imag else "ok"))
        return out
    return samples


def abs_complex(g):
    zero = T(torch.tensor([0j, 3 + 4j, -1e30 + 1e30j, 1e-30j], dtype=c128))
    return [S(g.t((3, 4), c64), desc="complex64"),
            S(g.t((2, 3), c128, "transposed"), desc="complex128 transposed"),
            S(g.t((3, 4), c64, "step"), desc="every 2nd element"),
            S(g.t((), c64), desc="0-dim"),
            S(g.t((0, 3), c64), desc="empty"),
            S(zero, desc="zero, 3+4j, huge and tiny parts")]


def r2c(g):
    return [S(g.t((8,)), [0], 0, True, desc="1-D, onesided"),
            S(g.t((3, 8)), [1], 0, False, desc="two-sided"),
            S(g.t((3, 7)), [1], 2, True, desc="odd length, normalized by 1/n"),
            S(g.t((5, 3)), [0], 1, True, desc="over dim 0, by 1/sqrt(n)"),
            S(g.t((2, 3, 4)), [0, 2], 0, True, desc="two dims"),
            S(g.t((2, 3, 5)), [1, 2], 2, False, desc="two dims, two-sided"),
            S(g.t((2, 3, 4)), [2, 0], 1, True, desc="two dims, dim 0 halved"),
            S(g.t((3, 4, 5), f64), [0, 1, 2], 0, True, desc="float64, three dims"),
            S(g.t((4, 6), f32, "transposed"), [1], 0, True, desc="transposed"),
            S(g.t((3, 5), f32, "step"), [1], 2, True, desc="every 2nd element"),
            S(g.t((3, 6), f32, "expand"), [1], 0, True, desc="broadcast batch"),
            S(g.t((3, 6), f32, "expand"), [0], 0, True, desc="broadcast signal"),
            S(g.t((0, 4)), [1], 0, True, desc="empty batch", expect="maybe"),
            S(g.t((3, 8), i64), [1], 0, True, desc="int64", expect="error"),
            S(g.t((3, 8), f16), [1], 0, True, desc="float16", expect="error"),
            S(g.t((3, 8), c64), [1], 0, True, desc="complex input", expect="error"),
            S(g.t((3, 8)), [], 0, True, desc="no dims", expect="error")]


def c2r(g):
    return [S(g.t((5,), c64), [0], 0, 8, desc="1-D, 8 points"),
            S(g.t((3, 5), c64), [1], 2, 9, desc="9 points, normalized by 1/n"),
            S(g.t((3, 4), c64), [0], 1, 4, desc="over dim 0, by 1/sqrt(n)"),
            S(g.t((2, 3, 3), c64), [0, 2], 0, 4, desc="two dims"),
            S(g.t((2, 3, 3), c64), [1, 2], 2, 5, desc="two dims, odd length"),
            S(g.t((3, 4, 3), c128), [0, 1, 2], 1, 5, desc="complex128, three dims"),
            S(g.t((4, 5), c64, "transposed"), [1], 0, 8, desc="transposed"),
            S(g.t((3, 4), c64, "step"), [1], 0, 7, desc="every 2nd element"),
            S(g.t((0, 3), c64), [1], 0, 4, desc="empty batch", expect="maybe"),
            S(g.t((3, 5), f32), [1], 0, 8, desc="float32 input", expect="error")]


def c2c(g):
    return [S(g.t((8,), c64), [0], 0, True, desc="1-D forward"),
            S(g.t((8,), c64), [0], 2, False, desc="1-D inverse, by 1/n"),
            S(g.t((3, 5), c64), [1], 1, True, desc="by 1/sqrt(n)"),
            S(g.t((4, 3), c64), [0], 0, False, desc="over dim 0"),
            S(g.t((2, 3, 4), c64), [0, 2], 2, True, desc="two dims"),
            S(g.t((2, 3, 4), c128), [2, 1, 0], 0, False, desc="complex128, every dim"),
            S(g.t((4, 6), c64, "transposed"), [1], 0, True, desc="transposed"),
            S(g.t((3, 5), c64, "step"), [1], 1, False, desc="every 2nd element"),
            S(g.t((3, 6), c64, "expand"), [1], 0, True, desc="broadcast batch"),
            S(g.t((0, 4), c64), [1], 0, True, desc="empty batch", expect="maybe"),
            S(g.t((3, 8), f32), [1], 0, True, desc="float32 input", expect="error")]


def fft_rows():
    F = "fft"
    return [OpInfo("aten::view_as_real", F, view_as_real),
            OpInfo("aten::view_as_complex", F, view_as_complex),
            OpInfo("aten::real", F, real_imag(False)),
            OpInfo("aten::imag", F, real_imag(True)),
            OpInfo("aten::abs", F, abs_complex),
            OpInfo("aten::_fft_r2c", F, r2c, strides=True),
            OpInfo("aten::_fft_c2r", F, c2r, strides=True),
            OpInfo("aten::_fft_c2c", F, c2c, strides=True)]
