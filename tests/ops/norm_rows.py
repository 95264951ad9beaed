"""The conformance rows of the norm family (src/ops/norm.cpp), imported by gen_cases.py:
group norm (native_group_norm, its backward, group_norm) and layer norm's backward op,
from PyTorch 1.13 (family "norm"); and the _native_batch_norm_legit ops, which 1.13
lacks, from PyTorch 2.x (family "norm_legit", see TORCH2_FAMILIES in gen_cases.py). The
composites record gradients too (grads=True): Ember differentiates them through the ops
they decompose into."""
import torch

from opinfo import OpInfo, S, T

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64 = torch.int64
A = torch.ops.aten


# --- group norm ------------------------------------------------------------------------------

def native_group_norm(g):
    # Contiguous inputs only: torch 1.13 raises for others ("Expected X.is_contiguous"), which
    # Ember, whose decomposition reads any layout, does not copy; group_norm's rows have them.
    def s(x, w, b, N, C, HxW, group, desc, expect="ok", eps=1e-5):
        return S(x, w, b, N, C, HxW, group, eps, desc=desc, expect=expect)
    return [s(g.t((2, 6, 3, 2)), g.t((6,)), g.t((6,)), 2, 6, 6, 3, "4-D, affine"),
            s(g.t((2, 6, 5)), None, None, 2, 6, 5, 2, "3-D, no affine"),
            s(g.t((4, 6)), g.t((6,)), None, 4, 6, 1, 2, "2-D, no bias"),
            s(g.t((3, 4, 5)), None, g.t((4,)), 3, 4, 5, 1, "one group, bias only"),
            s(g.t((2, 4, 3), f64), g.t((4,), f64), g.t((4,), f64), 2, 4, 3, 2, "f64", eps=0.1),
            s(g.t((0, 6, 3)), None, None, 0, 6, 3, 3, "empty batch"),
            s(g.t((2, 6, 3), bf16), g.t((6,), bf16), g.t((6,), bf16), 2, 6, 3, 3, "bf16", expect="maybe"),
            s(g.t((2, 6, 3)), g.t((5,)), None, 2, 6, 3, 3, "weight of the wrong size", expect="error"),
            s(g.t((2, 6, 3)), None, g.t((4,)), 2, 6, 3, 3, "bias of the wrong size", expect="error"),
            s(g.t((2, 6, 3)), None, None, 2, 6, 3, 4, "channels not divisible by groups", expect="error"),
            s(g.t((2, 6, 3)), None, None, 3, 6, 3, 3, "N * C * HxW is not numel", expect="error"),
            s(g.t((2, 6, 3), i64), None, None, 2, 6, 3, 3, "int64", expect="error")]


def group_norm(g):
    return [S(g.t((2, 6, 3, 2)), 3, g.t((6,)), g.t((6,)), desc="4-D, affine"),
            S(g.t((2, 6, 5)), 2, desc="defaults"),
            S(g.t((3, 4)), 2, None, g.t((4,)), 1e-3, desc="2-D, bias only, eps"),
            S(g.t((2, 4, 3, 3), lay="permute"), 4, g.t((4,)), desc="permuted, a group per channel"),
            S(g.t((2, 4, 3), f64), 1, g.t((4,), f64), g.t((4,), f64), desc="f64, one group"),
            S(g.t((2, 6, 3)), 4, desc="channels not divisible by groups", expect="error"),
            S(g.t((2, 6, 3)), 0, desc="zero groups", expect="error"),
            S(g.t((6,)), 3, desc="1-D input", expect="error"),
            S(g.t((2, 6, 3)), 3, g.t((5,)), desc="weight of the wrong size", expect="error")]


def stats(x, w, b, N, C, HxW, group):
    _, mean, rstd = A.native_group_norm(x.value(), None if w is None else w.value(),
                                        None if b is None else b.value(), N, C, HxW, group, 1e-5)
    return T(mean), T(rstd)


def native_group_norm_backward(g):
    # Contiguous grad_out only: torch 1.13's kernel reads a strided one as if it were
    # contiguous (a wrong answer, not a behaviour to copy).
    def s(x, w, N, C, HxW, group, mask, desc, expect="ok", grad_shape=None, lay="contiguous", stat_group=None):
        mean, rstd = stats(x, w, None, N, C, HxW, stat_group or group)
        grad = g.t(grad_shape or tuple(x.value().shape), x.base.dtype, lay)
        return S(grad, x, mean, rstd, w, N, C, HxW, group, mask, desc=desc, expect=expect)
    all3 = [True, True, True]
    return [s(g.t((2, 6, 3, 2)), g.t((6,)), 2, 6, 6, 3, all3, "4-D, affine"),
            s(g.t((2, 6, 5)), g.t((6,)), 2, 6, 5, 2, [True, False, False], "input only"),
            s(g.t((2, 6, 5)), None, 2, 6, 5, 2, [True, False, False], "no weight, input only"),
            s(g.t((4, 6)), g.t((6,)), 4, 6, 1, 2, [False, True, True], "2-D, parameters only"),
            s(g.t((3, 4, 5)), g.t((4,)), 3, 4, 5, 1, all3, "one group"),
            s(g.t((2, 4, 3), f64), g.t((4,), f64), 2, 4, 3, 2, all3, "f64"),
            s(g.t((2, 6, 3), bf16), g.t((6,), bf16), 2, 6, 3, 3, all3, "bf16", expect="maybe"),
            s(g.t((2, 6, 3)), None, 2, 6, 3, 3, all3, "parameter gradients without a weight", expect="error"),
            s(g.t((2, 6, 3)), g.t((6,)), 2, 6, 3, 3, all3, "grad_out of the wrong size", expect="error",
              grad_shape=(2, 6, 2)),
            s(g.t((2, 6, 3)), g.t((6,)), 2, 6, 3, 4, all3, "channels not divisible by groups", expect="error",
              stat_group=3)]


# --- layer norm backward -------------------------------------------------------------------

def native_layer_norm_backward(g):
    # No grad_out of the wrong size: torch 1.13's kernel reads it without a check (Ember
    # raises; tests/errors/norm_errors_test.cpp).
    def s(x, shape, w, b, mask, desc, expect="ok", grad_shape=None, lay="contiguous"):
        xv = x.value()
        _, mean, rstd = A.native_layer_norm(xv if xv.dtype in (f32, f64) else xv.float(), shape,
                                            None, None, 1e-5)
        if xv.dtype not in (f32, f64):
            mean, rstd = mean.to(xv.dtype), rstd.to(xv.dtype)
        grad = g.t(grad_shape or tuple(xv.shape), x.base.dtype, lay)
        return S(grad, x, shape, T(mean), T(rstd), w, b, mask, desc=desc, expect=expect)
    all3 = [True, True, True]
    return [s(g.t((2, 3, 4)), [4], g.t((4,)), g.t((4,)), all3, "last dim, affine"),
            s(g.t((2, 3, 4), lay="permute"), [3, 4], g.t((3, 4)), g.t((3, 4)), all3, "two dims, permuted",
              lay="permute"),
            s(g.t((3, 4), lay="transposed"), [4], None, None, [True, False, False], "no affine, input only"),
            s(g.t((3, 4)), [4], g.t((4,)), g.t((4,)), [False, True, False], "weight only"),
            s(g.t((5,)), [5], g.t((5,)), g.t((5,)), all3, "1-D: every dim normalized"),
            s(g.t((3, 4), f64), [4], g.t((4,), f64), g.t((4,), f64), all3, "f64"),
            s(g.t((0, 4)), [4], g.t((4,)), g.t((4,)), all3, "empty"),
            s(g.t((3, 4), bf16), [4], g.t((4,), bf16), g.t((4,), bf16), all3, "bf16", expect="maybe"),
            s(g.t((3, 4)), [4], None, None, all3, "weight gradient without a weight", expect="error"),
            S(g.t((3, 4)), g.t((3, 4)), [3], g.t((3, 1)), g.t((3, 1)), None, None, [True, False, False],
              desc="bad normalized_shape", expect="error")]


def norm_rows():
    N = "norm"
    # reduced_in_float: torch 1.13's bfloat16 kernels round intermediates (as for layer norm).
    return [OpInfo("aten::native_group_norm", N, native_group_norm, grads=True, reduced_in_float=True),
            OpInfo("aten::group_norm", N, group_norm, grads=True),
            OpInfo("aten::native_group_norm_backward", N, native_group_norm_backward, reduced_in_float=True),
            # torch 1.13's bfloat16 kernel lands 0.2031 where 2.11 and float64 give 0.1738 and
            # 0.1734 (case norm/…/7): its reference is computed in float32 and rounded, as 2.11's.
            OpInfo("aten::native_layer_norm_backward", N, native_layer_norm_backward, reduced_in_float=True)]


# --- _native_batch_norm_legit (PyTorch 2.x) -----------------------------------------------------

def legit(g):
    def s(x, w, b, rm, rv, training, desc, expect="ok", momentum=0.1, eps=1e-5):
        return S(x, w, b, rm, rv, training, momentum, eps, desc=desc, expect=expect)
    return [s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), True,
              "train: running stats updated in place"),
            s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), False,
              "eval: running stats read, saved stats empty"),
            s(g.t((5, 3)), None, None, g.t((3,)), g.t((3,), kind="pos"), True, "2-D, no affine", momentum=0.5),
            s(g.t((4, 3, 5), lay="transposed"), g.t((3,)), None, g.t((3,)), g.t((3,), kind="pos"), True,
              "transposed"),
            s(g.t((4, 3, 2), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64, kind="pos"),
              True, "f64", eps=1e-3),
            s(g.t((4, 3, 2, 2), bf16), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), True,
              "bf16 input, float params", expect="maybe"),
            s(g.t((4, 3, 2), i64), None, None, g.t((3,)), g.t((3,), kind="pos"), True, "int64", expect="error")]


def legit_no_stats(g):
    # training=False has no case: PyTorch 2.11 crashes on it. Nor have parameters of the
    # wrong size: 2.11's CPU kernel reads past them. Ember raises for both
    # (tests/unit/ops/norm_test.cpp).
    def s(x, w, b, desc, expect="ok", momentum=0.1, eps=1e-5):
        return S(x, w, b, True, momentum, eps, desc=desc, expect=expect)
    return [s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), "train, affine"),
            s(g.t((5, 3), lay="transposed"), None, None, "2-D transposed, no affine"),
            s(g.t((4, 3, 2), f64), g.t((3,), f64), None, "f64, no bias", eps=0.1),
            s(g.t((3,)), None, None, "1-D: no channel dim", expect="error")]


def legit_no_training(g):
    def s(x, w, b, rm, rv, desc, expect="ok", eps=1e-5):
        return S(x, w, b, rm, rv, 0.1, eps, desc=desc, expect=expect)
    return [s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), "4-D, affine"),
            s(g.t((5, 3)), None, None, g.t((3,)), g.t((3,), kind="pos"), "2-D, no affine", eps=0.1),
            s(g.t((4, 3, 5), lay="transposed"), None, g.t((3,)), g.t((3,)), g.t((3,), kind="pos"), "transposed"),
            s(g.t((4, 3, 2), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64), g.t((3,), f64, kind="pos"),
              "f64"),
            s(g.t((4, 3, 2, 2), bf16), g.t((3,)), g.t((3,)), g.t((3,)), g.t((3,), kind="pos"),
              "bf16 input, float params", expect="maybe"),
            s(g.t((4, 3, 2), i64), None, None, g.t((3,)), g.t((3,), kind="pos"), "int64", expect="error")]


def update_stats(g):
    def s(x, rm, rv, desc, expect="ok", momentum=0.1):
        return S(x, rm, rv, momentum, desc=desc, expect=expect)
    return [s(g.t((4, 3, 2, 2)), g.t((3,)), g.t((3,), kind="pos"), "4-D: running stats updated in place"),
            s(g.t((5, 3)), None, None, "2-D, no running stats", momentum=0.5),
            s(g.t((4, 3, 5), lay="transposed"), g.t((3,)), g.t((3,), kind="pos"), "transposed"),
            s(g.t((4, 3, 2), f64), g.t((3,), f64), g.t((3,), f64, kind="pos"), "f64"),
            s(g.t((4, 3, 2), i64), g.t((3,)), g.t((3,), kind="pos"), "int64", expect="error")]


def norm_legit_rows():
    L = "norm_legit"
    stats_args = ("running_mean", "running_var")
    return [OpInfo("aten::_native_batch_norm_legit", L, legit, grads=True, no_grad_args=stats_args),
            OpInfo("aten::_native_batch_norm_legit.no_stats", L, legit_no_stats, grads=True),
            OpInfo("aten::_native_batch_norm_legit_no_training", L, legit_no_training, grads=True,
                   no_grad_args=stats_args),
            # ATen's schema leaves out the writes its CPU kernel makes; Ember's states them, so
            # the cases also check the running stats after the call.
            OpInfo("aten::batch_norm_update_stats", L, update_stats,
                   schema="batch_norm_update_stats(Tensor input, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
                          "float momentum) -> (Tensor, Tensor)")]
