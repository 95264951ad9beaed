"""The conformance rows of 3-D convolution (aten::convolution with 5-D input, Note [3-D
convolution] in src/ops/conv.cpp), imported by gen_cases.py: forward with bias or not,
stride, padding, dilation, groups, one-value lists, transposed (output_padding included),
float64, int64, strided and channels_last_3d inputs, and the errors PyTorch raises; and
aten::convolution_backward over the same geometries by output_mask. convolution records
gradients too. Family conv3d, made by PyTorch 2.x."""
import torch

from opinfo import OpInfo, S

f32, f64, bf16, i64 = torch.float32, torch.float64, torch.bfloat16, torch.int64
A = torch.ops.aten
F = "conv3d"
CL = "channels_last"


def convolution(g):
    def s(x, w, b, stride, pad, dil, transposed, opad, groups, desc, expect="ok"):
        return S(x, w, b, stride, pad, dil, transposed, opad, groups, desc=desc, expect=expect)
    z = [0, 0, 0]
    one = [1, 1, 1]
    return [
        s(g.t((2, 3, 5, 6, 4)), g.t((4, 3, 3, 2, 3)), g.t((4,)), one, z, one, False, z, 1, "3-D plain, bias"),
        s(g.t((1, 4, 6, 7, 7)), g.t((4, 2, 3, 3, 3)), None, [2, 2, 2], one, one, False, z, 2,
          "stride 2 pad 1 groups 2"),
        s(g.t((1, 2, 7, 6, 8)), g.t((3, 2, 2, 2, 2)), g.t((3,)), [1, 2, 1], [2, 0, 1], [2, 1, 2], False, z, 1,
          "dilation, mixed stride and padding"),
        s(g.t((2, 6, 5, 4, 4)), g.t((6, 2, 2, 3, 2)), g.t((6,)), [2], [1], [1], False, [0], 3,
          "groups 3, one-value lists"),
        s(g.t((1, 2, 4, 5, 5), f64), g.t((2, 2, 3, 3, 3), f64), g.t((2,), f64), one, one, one, False, z, 1, "f64"),
        s(g.t((1, 2, 4, 4, 4), i64), g.t((2, 2, 2, 2, 2), i64), g.t((2,), i64), one, z, one, False, z, 1, "int64"),
        s(g.t((2, 3, 4, 5, 5), lay="transposed"), g.t((2, 3, 2, 2, 2), lay="step"), None, one, z, one, False, z, 1,
          "non-contiguous"),
        s(g.t((0, 3, 4, 4, 4)), g.t((2, 3, 2, 2, 2)), g.t((2,)), one, z, one, False, z, 1, "empty batch"),
        s(g.t((1, 3, 3, 4, 4)), g.t((3, 2, 3, 3, 3)), g.t((2,)), [2, 2, 2], one, one, True, one, 1,
          "transposed, stride 2 pad 1 output_padding 1"),
        s(g.t((2, 4, 3, 3, 3), f64), g.t((4, 3, 2, 2, 2), f64), g.t((6,), f64), [2, 1, 2], z, one, True, [1, 0, 0], 2,
          "transposed f64 groups 2"),
        s(g.t((1, 2, 3, 3, 3)), g.t((2, 2, 2, 2, 2)), None, one, z, [2, 2, 2], True, one, 1,
          "transposed, output_padding >= stride (< dilation)"),
        s(g.t((1, 2, 3, 3, 3), bf16), g.t((2, 2, 2, 2, 2), bf16), None, one, z, one, False, z, 1, "bf16",
          expect="maybe"),
        s(g.t((1, 2, 5, 5, 5)), g.t((2, 3, 3, 3, 3)), None, one, z, one, False, z, 1, "channel mismatch",
          expect="error"),
        s(g.t((1, 2, 3, 5, 5)), g.t((2, 2, 4, 3, 3)), None, one, z, one, False, z, 1,
          "kernel larger than the input", expect="error"),
        s(g.t((1, 2, 4, 4, 4)), g.t((2, 2, 2, 2, 2)), None, [1, 1], z, one, False, z, 1, "two strides",
          expect="error")]


def convolution_channels_last(g):
    def s(x, w, b, stride, pad, dil, groups, desc):
        return S(x, w, b, stride, pad, dil, False, [0] * 3, groups, desc=desc)
    one = [1, 1, 1]
    return [
        s(g.t((2, 3, 4, 5, 4), lay=CL), g.t((4, 3, 3, 2, 2)), g.t((4,)), one, [0, 0, 0], one, 1,
          "channels_last_3d input, bias"),
        s(g.t((1, 4, 5, 5, 5)), g.t((4, 2, 3, 3, 3), lay=CL), None, [2, 2, 2], one, one, 2,
          "channels_last_3d weight, stride 2 pad 1 groups 2"),
        s(g.t((1, 2, 4, 5, 5), f64, CL), g.t((2, 2, 3, 3, 3), f64), g.t((2,), f64), one, one, one, 1,
          "channels_last_3d f64")]


def backward(g):
    def s(x, w, bias_sizes, stride, pad, dil, transposed, opad, groups, mask, desc, lay="contiguous"):
        out = A.convolution(x.value(), w.value(), None, stride, pad, dil, transposed, opad, groups)
        grad = g.t(tuple(out.shape), x.base.dtype, lay)
        return S(grad, x, w, bias_sizes, stride, pad, dil, transposed, opad, groups, mask, desc=desc)
    all3 = [True, True, True]
    z = [0, 0, 0]
    one = [1, 1, 1]
    return [
        s(g.t((2, 3, 5, 6, 4)), g.t((4, 3, 3, 2, 3)), [4], one, z, one, False, z, 1, all3, "3-D plain"),
        s(g.t((1, 4, 6, 7, 7)), g.t((4, 2, 3, 3, 3)), None, [2, 2, 2], one, one, False, z, 2, [True, True, False],
          "stride 2 pad 1 groups 2, no bias"),
        s(g.t((1, 2, 7, 6, 8)), g.t((3, 2, 2, 2, 2)), [3], [1, 2, 1], [2, 0, 1], [2, 1, 2], False, z, 1, all3,
          "dilation, mixed stride and padding"),
        s(g.t((2, 6, 5, 4, 4)), g.t((6, 2, 2, 3, 2)), [6], [2], [1], [1], False, [0], 3, all3,
          "groups 3, one-value lists"),
        s(g.t((1, 2, 4, 5, 5), f64), g.t((2, 2, 3, 3, 3), f64), [2], one, one, one, False, z, 1, all3, "f64"),
        s(g.t((2, 3, 4, 5, 5), lay="transposed"), g.t((2, 3, 2, 2, 2), lay="step"), [2], one, z, one, False, z, 1,
          all3, "non-contiguous", lay="transposed"),
        s(g.t((1, 3, 3, 4, 4)), g.t((3, 2, 3, 3, 3)), [2], [2, 2, 2], one, one, True, one, 1, all3,
          "transposed, stride 2 pad 1 output_padding 1"),
        s(g.t((2, 4, 3, 3, 3), f64), g.t((4, 3, 2, 2, 2), f64), [6], [2, 1, 2], z, one, True, [1, 0, 0], 2, all3,
          "transposed f64 groups 2"),
        s(g.t((1, 2, 3, 3, 3)), g.t((2, 2, 2, 2, 2)), None, one, z, [2, 2, 2], True, one, 1, [True, True, False],
          "transposed, output_padding >= stride (< dilation)"),
        s(g.t((2, 3, 4, 5, 4)), g.t((4, 3, 3, 2, 2)), [4], one, z, one, False, z, 1, [False, True, False],
          "weight only"),
        s(g.t((2, 3, 4, 5, 4), f64), g.t((4, 3, 3, 2, 2), f64), None, one, z, one, False, z, 1,
          [False, False, True], "bias only, no bias_sizes (f64)"),
        s(g.t((0, 3, 4, 4, 4)), g.t((2, 3, 2, 2, 2)), [2], one, z, one, False, z, 1, all3, "empty batch")]


def backward_channels_last(g):
    def s(x, w, bias_sizes, stride, pad, dil, groups, mask, desc, lay="contiguous"):
        out = A.convolution(x.value(), w.value(), None, stride, pad, dil, False, [0] * 3, groups)
        grad = g.t(tuple(out.shape), x.base.dtype, lay)
        return S(grad, x, w, bias_sizes, stride, pad, dil, False, [0] * 3, groups, mask, desc=desc)
    all3 = [True, True, True]
    one = [1, 1, 1]
    return [
        s(g.t((2, 3, 4, 5, 4), lay=CL), g.t((4, 3, 3, 2, 2)), [4], one, [0, 0, 0], one, 1, all3,
          "channels_last_3d input and grad_output", lay=CL),
        s(g.t((1, 4, 5, 5, 5)), g.t((4, 2, 3, 3, 3), lay=CL), None, [2, 2, 2], one, one, 2, [True, True, False],
          "channels_last_3d weight, contiguous grad_output, groups 2"),
        s(g.t((1, 2, 4, 5, 5), f64, CL), g.t((2, 2, 3, 3, 3), f64), [2], one, one, one, 1, all3,
          "channels_last_3d f64", lay=CL)]


def conv3d_rows():
    return [OpInfo("aten::convolution", F, convolution),
            OpInfo("aten::convolution", F, convolution_channels_last, strides=True),
            OpInfo("aten::convolution_backward", F, backward),
            OpInfo("aten::convolution_backward", F, backward_channels_last, strides=True)]
