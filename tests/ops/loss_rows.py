"""The conformance rows of the loss family (src/ops/loss.cpp), imported by gen_cases.py:
every reduction (0 none, 1 mean, 2 sum, as ATen's enum), class weights, ignore_index hits,
label smoothing, probability targets, 1-D / 2-D / (N, C, d1, ...) inputs, empty batches,
and the errors PyTorch raises. The composite losses record gradients too (grads=True):
Ember differentiates them through the ops they decompose into."""
import torch

from opinfo import OpInfo, S, T

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32 = torch.int64, torch.int32
NONE, MEAN, SUM = 0, 1, 2


def classes(g, shape, n_classes, ignore=None, where=()):
    """int64 class indices in [0, n_classes), with `ignore` at the flat positions `where`."""
    v = torch.randint(0, n_classes, tuple(shape), generator=g.g)
    flat = v.view(-1)
    for i in where:
        flat[i] = ignore
    return T(v)


def probs(g, shape, dim=1):
    return T(torch.softmax(torch.randn(tuple(shape), generator=g.g, dtype=torch.float64), dim).float())


def pos(g, shape, dtype=f32):
    return g.t(shape, dtype, kind="pos")


def regression(name):
    """mse_loss, l1_loss, smooth_l1_loss: (self, target, reduction[, beta])."""
    def samples(g):
        out = [S(g.t((3, 4)), g.t((3, 4)), r, desc="reduction %d" % r) for r in (NONE, MEAN, SUM)]
        out += [S(g.t((3, 4)), g.t((3, 4)), desc="default reduction"),
                S(g.t((2, 3, 4), f64), g.t((2, 3, 4), f64), SUM, desc="f64 3-D"),
                S(g.t((3, 4), f64), g.t((3, 4), f64), NONE, desc="f64 none"),
                S(g.t((3, 4), lay="transposed"), g.t((3, 4), lay="step"), SUM, desc="non-contiguous"),
                S(g.t((3, 4)), g.t((4,)), NONE, desc="target broadcast"),
                S(g.t(()), g.t(()), NONE, desc="0-dim"),
                S(g.t((0, 3)), g.t((0, 3)), MEAN, desc="empty mean"),
                S(g.t((0, 3)), g.t((0, 3)), SUM, desc="empty sum"),
                S(g.t((3, 4)), g.t((3, 4), f64), desc="f32 input, f64 target", expect="maybe"),
                S(g.t((3, 4), i64), g.t((3, 4), i64), desc="int64", expect="maybe"),
                S(g.t((3, 4), f16), g.t((3, 4), f16), desc="f16", expect="maybe"),
                S(g.t((2, 3)), g.t((3, 2)), desc="shapes that do not broadcast", expect="error")]
        if name != "l1_loss":  # ATen's l1_loss returns the unreduced loss for a bad enum
            out.append(S(g.t((3, 4)), g.t((3, 4)), 3, desc="reduction 3", expect="error"))
        if name == "smooth_l1_loss":
            out += [S(g.t((3, 4)), g.t((3, 4)), MEAN, 0.5, desc="beta 0.5"),
                    S(g.t((3, 4), f64), g.t((3, 4), f64), NONE, 2.0, desc="beta 2"),
                    S(g.t((3, 4)), g.t((3, 4)), SUM, 0.0, desc="beta 0 (l1)"),
                    S(g.t((3, 4)), g.t((3, 4)), MEAN, -1.0, desc="negative beta", expect="error")]
        return out
    return samples


def bce(g):
    x = lambda shape, dtype=f32, lay="contiguous": g.t(shape, dtype, lay, kind="prob")  # noqa: E731
    out = [S(x((3, 4)), x((3, 4)), None, r, desc="reduction %d" % r) for r in (NONE, MEAN, SUM)]
    out += [S(x((3, 4)), x((3, 4)), desc="defaults"),
            S(x((3, 4)), x((3, 4)), pos(g, (3, 4)), MEAN, desc="weight"),
            S(x((3, 4)), x((3, 4)), pos(g, (4,)), NONE, desc="weight broadcast"),
            S(x((2, 3, 4), f64), x((2, 3, 4), f64), None, SUM, desc="f64 3-D"),
            S(x((5,)), x((5,)), None, MEAN, desc="1-D"),
            S(x((3, 4), lay="transposed"), x((3, 4), lay="step"), None, NONE, desc="non-contiguous"),
            S(T(torch.tensor([0.3, 0.7])), T(torch.tensor([0.0, 1.0])), None, SUM, desc="hard targets"),
            S(x((0, 3)), x((0, 3)), None, MEAN, desc="empty mean"),
            S(x((0, 3)), x((0, 3)), None, SUM, desc="empty sum"),
            S(x((3, 4)), x((3, 4), f64), desc="f32 input, f64 target", expect="error"),
            S(x((3, 4), i64), x((3, 4), i64), desc="int64", expect="error"),
            S(x((2, 3)), x((3, 2)), desc="shape mismatch", expect="error")]
    return out


def bce_with_logits(g):
    t = lambda shape, dtype=f32: g.t(shape, dtype, kind="prob")  # noqa: E731
    out = [S(g.t((3, 4)), t((3, 4)), None, None, r, desc="reduction %d" % r) for r in (NONE, MEAN, SUM)]
    out += [S(g.t((3, 4)), t((3, 4)), desc="defaults"),
            S(g.t((3, 4)), t((3, 4)), pos(g, (3, 4)), None, MEAN, desc="weight"),
            S(g.t((3, 4)), t((3, 4)), None, pos(g, (4,)), MEAN, desc="pos_weight"),
            S(g.t((3, 4)), t((3, 4)), pos(g, (4,)), pos(g, (4,)), NONE, desc="weight and pos_weight"),
            S(g.t((2, 3, 4), f64), t((2, 3, 4), f64), None, pos(g, (4,), f64), SUM, desc="f64 3-D pos_weight"),
            S(g.t((3, 4), lay="transposed"), t((3, 4)), None, None, NONE, desc="non-contiguous"),
            S(T(torch.tensor([-60.0, -20.0, 0.5, 20.0, 60.0])), T(torch.tensor([0.0, 1.0, 0.5, 0.0, 1.0])),
              None, None, NONE, desc="large logits"),
            S(g.t((5,)), t((5,)), None, None, SUM, desc="1-D"),
            S(g.t((0, 3)), t((0, 3)), None, None, MEAN, desc="empty mean"),
            S(g.t((3, 4), bf16), t((3, 4), bf16), desc="bf16", expect="maybe"),
            S(g.t((3, 4)), t((4,)), desc="target smaller than input", expect="error"),
            S(g.t((2, 3)), t((3, 2)), desc="shape mismatch", expect="error"),
            S(g.t((3, 4), i64), g.t((3, 4), i64), desc="int64", expect="error")]
    return out


def nll_forward(g):
    lp = lambda shape, dtype=f32, lay="contiguous": g.t(shape, dtype, lay)  # noqa: E731
    out = [S(lp((4, 5)), classes(g, (4,), 5), None, r, -100, desc="reduction %d" % r) for r in (NONE, MEAN, SUM)]
    out += [S(lp((4, 5)), classes(g, (4,), 5), pos(g, (5,)), r, -100, desc="weight, reduction %d" % r)
            for r in (NONE, MEAN, SUM)]
    out += [S(lp((6, 3)), classes(g, (6,), 3, -100, (1, 4)), None, MEAN, -100, desc="ignore_index hits"),
            S(lp((6, 3)), classes(g, (6,), 3, 2, (0, 5)), pos(g, (3,)), SUM, 2, desc="ignore_index 2, weight"),
            S(lp((6, 3)), classes(g, (6,), 3, -100, (0,)), pos(g, (3,)), NONE, -100, desc="ignore hit, none"),
            S(lp((5,)), T(torch.tensor(3)), None, NONE, -100, desc="1-D input, none"),
            S(lp((5,)), T(torch.tensor(2)), pos(g, (5,)), MEAN, -100, desc="1-D input, weight"),
            S(lp((4, 5), f64), classes(g, (4,), 5), pos(g, (5,), f64), MEAN, -100, desc="f64"),
            S(lp((4, 5), lay="transposed"), classes(g, (4,), 5), None, SUM, -100, desc="transposed input"),
            S(lp((4, 5), bf16), classes(g, (4,), 5), None, MEAN, -100, desc="bf16", expect="maybe"),
            S(lp((0, 5)), T(torch.zeros(0, dtype=i64)), None, MEAN, -100, desc="empty batch mean"),
            S(lp((0, 5)), T(torch.zeros(0, dtype=i64)), None, NONE, -100, desc="empty batch none"),
            S(lp((2, 3)), T(torch.tensor([-100, -100])), None, MEAN, -100, desc="all ignored mean"),
            S(lp((3, 5)), T(torch.tensor([0, 5, 1])), None, MEAN, -100, desc="target 5 out of bounds",
              expect="error"),
            S(lp((3, 5)), T(torch.tensor([0, -1, 1])), None, SUM, -100, desc="target -1", expect="error"),
            S(lp((3, 5)), T(torch.tensor([0, 1, 1], dtype=i32)), None, MEAN, -100, desc="int32 target",
              expect="error"),
            S(lp((3, 5)), T(torch.tensor([0.0, 1.0, 1.0])), None, MEAN, -100, desc="float target", expect="error"),
            S(lp((3, 5)), T(torch.tensor([0, 1])), None, MEAN, -100, desc="batch mismatch", expect="error"),
            S(lp((3, 5)), T(torch.tensor([0, 1, 1])), pos(g, (4,)), MEAN, -100, desc="weight of 4 for 5 classes",
              expect="error"),
            S(lp((3, 5)), T(torch.tensor([0, 1, 1])), pos(g, (5,), f64), MEAN, -100, desc="f64 weight",
              expect="error"),
            S(lp((2, 3, 4)), classes(g, (2, 4), 3), None, MEAN, -100, desc="3-D input", expect="error"),
            S(lp((2, 3), f16), classes(g, (2,), 3), None, SUM, -100, desc="f16", expect="maybe")]
    return out


def nll_backward(g):
    def case(shape, n_classes, reduction, weight=False, ignore=-100, where=(), dtype=f32, desc=""):
        x = torch.randn(shape, generator=g.g, dtype=dtype)
        t = classes(g, shape[:1] if len(shape) == 2 else (), n_classes, ignore, where)
        w = torch.rand(n_classes, generator=g.g, dtype=torch.float64).to(dtype) + 0.5 if weight else None
        out, tw = torch.ops.aten.nll_loss_forward(x, t.value(), w, reduction, ignore)
        grad = torch.randn(out.shape, generator=g.g, dtype=dtype)
        return S(T(grad), T(x), t, None if w is None else T(w), reduction, ignore, T(tw), desc=desc)
    out = [case((4, 5), 5, r, desc="reduction %d" % r) for r in (NONE, MEAN, SUM)]
    out += [case((4, 5), 5, MEAN, weight=True, desc="weight, mean"),
            case((6, 3), 3, NONE, weight=True, where=(1, 4), desc="weight, ignore hits, none"),
            case((6, 3), 3, SUM, ignore=1, where=(0,), desc="ignore_index 1, sum"),
            case((5,), 5, MEAN, desc="1-D"),
            case((4, 5), 5, MEAN, dtype=f64, desc="f64")]
    x, t, tw = g.t((3, 4)), classes(g, (3,), 4), T(torch.tensor(3.0))
    out += [S(g.t((2,)), x, t, None, NONE, -100, tw, desc="grad_output of 2 for a batch of 3", expect="error"),
            S(g.t((2,)), x, t, None, MEAN, -100, tw, desc="grad_output of 2 elements, mean", expect="error"),
            S(g.t(()), x, t, None, MEAN, -100, T(torch.ones(2)), desc="total_weight of 2 elements", expect="error"),
            S(g.t(()), x, T(torch.tensor([1, 5, 2])), None, MEAN, -100, tw, desc="target out of bounds",
              expect="error")]
    return out


def nll_loss(g):
    return [S(g.t((4, 5)), classes(g, (4,), 5), None, r, desc="reduction %d" % r) for r in (NONE, MEAN, SUM)] + [
        S(g.t((4, 5)), classes(g, (4,), 5), desc="defaults"),
        S(g.t((6, 3)), classes(g, (6,), 3, -100, (2,)), pos(g, (3,)), MEAN, desc="weight, ignore hit"),
        S(g.t((5,)), T(torch.tensor(1)), desc="1-D"),
        S(g.t((2, 3, 4)), classes(g, (2, 4), 3), desc="3-D input", expect="error")]


def nll_loss_nd(g):
    out = [S(g.t((2, 3, 4)), classes(g, (2, 4), 3), None, r, desc="(N,C,d) reduction %d" % r)
           for r in (NONE, MEAN, SUM)]
    out += [S(g.t((2, 3, 4, 5)), classes(g, (2, 4, 5), 3), pos(g, (3,)), r, desc="(N,C,H,W) weight, reduction %d" % r)
            for r in (NONE, MEAN)]
    out += [S(g.t((2, 4, 3, 2, 2)), classes(g, (2, 3, 2, 2), 4, -100, (0, 5, 7)), None, MEAN,
              desc="5-D, ignore hits"),
            S(g.t((2, 3, 4), f64), classes(g, (2, 4), 3, 1, (3,)), pos(g, (3,), f64), SUM, 1,
              desc="f64 3-D ignore_index 1"),
            S(g.t((4, 5)), classes(g, (4,), 5), desc="2-D"),
            S(g.t((5,)), T(torch.tensor(4)), None, NONE, desc="1-D"),
            S(g.t((0, 3, 2, 2)), T(torch.zeros(0, 2, 2, dtype=i64)), None, NONE, desc="empty batch (N,C,H,W) none"),
            S(g.t((2, 3, 4, 5)), classes(g, (2, 4, 4), 3), desc="(N,C,H,W) target size mismatch", expect="error"),
            S(g.t((2, 3, 4)), classes(g, (2, 5), 3), desc="(N,C,d) target size mismatch", expect="error"),
            S(g.t((2, 3, 4)), classes(g, (3, 4), 3), desc="batch size mismatch", expect="error"),
            S(g.t((2, 3, 4)), T(torch.tensor([[0, 1, 2, 3], [0, 0, 0, 0]])), desc="target 3 out of bounds",
              expect="error")]
    return out


def cross_entropy(g):
    out = [S(g.t((4, 5)), classes(g, (4,), 5), None, r, desc="indices, reduction %d" % r) for r in (NONE, MEAN, SUM)]
    out += [S(g.t((4, 5)), classes(g, (4,), 5), desc="defaults"),
            S(g.t((6, 3)), classes(g, (6,), 3, -100, (1, 4)), pos(g, (3,)), MEAN, desc="weight, ignore hits"),
            S(g.t((6, 3)), classes(g, (6,), 3, 0, (2,)), None, SUM, 0, desc="ignore_index 0"),
            S(g.t((4, 5)), classes(g, (4,), 5), None, MEAN, -100, 0.1, desc="label smoothing 0.1")]
    out += [S(g.t((6, 3)), classes(g, (6,), 3, -100, (0, 3)), pos(g, (3,)), r, -100, 0.2,
              desc="label smoothing, weight, ignore hits, reduction %d" % r) for r in (NONE, MEAN, SUM)]
    out += [S(g.t((6, 3)), classes(g, (6,), 3, -100, (5,)), None, MEAN, -100, 0.3,
              desc="label smoothing, ignore hit, no weight"),
            S(g.t((2, 3, 4, 5)), classes(g, (2, 4, 5), 3), pos(g, (3,)), MEAN, desc="(N,C,H,W) weight"),
            S(g.t((2, 3, 4)), classes(g, (2, 4), 3, -100, (1,)), None, NONE, -100, 0.1,
              desc="(N,C,d) label smoothing, none"),
            S(g.t((5,)), T(torch.tensor(2)), desc="1-D input, 0-dim target"),
            S(g.t((4, 5), f64), classes(g, (4,), 5), pos(g, (5,), f64), SUM, desc="f64 weight"),
            S(g.t((4, 5), lay="transposed"), classes(g, (4,), 5), desc="transposed input"),
            S(g.t((0, 5)), T(torch.zeros(0, dtype=i64)), None, MEAN, desc="empty batch mean"),
            S(g.t((0, 5)), T(torch.zeros(0, dtype=i64)), None, NONE, desc="empty batch none")]
    out += [S(g.t((4, 5)), probs(g, (4, 5)), None, r, desc="probabilities, reduction %d" % r)
            for r in (NONE, MEAN, SUM)]
    out += [S(g.t((4, 5)), probs(g, (4, 5)), pos(g, (5,)), MEAN, desc="probabilities, weight"),
            S(g.t((4, 5)), probs(g, (4, 5)), pos(g, (5,)), NONE, -100, 0.25,
              desc="probabilities, weight, label smoothing"),
            S(g.t((2, 3, 4)), probs(g, (2, 3, 4)), None, SUM, desc="probabilities (N,C,d)"),
            S(g.t((5,)), probs(g, (5,), 0), None, MEAN, desc="probabilities 1-D"),
            S(g.t((0, 5)), T(torch.zeros(0, 5)), None, MEAN, desc="probabilities, empty batch mean"),
            S(g.t((4, 5)), T(torch.tensor([0, 5, 1, 2])), desc="target 5 out of bounds", expect="error"),
            S(g.t((4, 5)), classes(g, (4,), 5), None, MEAN, -100, 1.5, desc="label smoothing 1.5", expect="error"),
            S(g.t((4, 5)), probs(g, (4, 5)), None, MEAN, 0, desc="probabilities with ignore_index 0",
              expect="error"),
            S(g.t(()), T(torch.tensor(1)), desc="0-dim input, int target", expect="error"),
            S(g.t((4, 5)), T(torch.tensor([0, 1, 1, 2], dtype=i32)), desc="int32 target", expect="error"),
            S(g.t((4, 5)), probs(g, (4, 6)), desc="probabilities of 6 classes for 5", expect="error")]
    return out


def loss_rows():
    L = "loss"
    return [
        OpInfo("aten::mse_loss", L, regression("mse_loss"), grads=True),
        OpInfo("aten::l1_loss", L, regression("l1_loss"), grads=True),
        OpInfo("aten::smooth_l1_loss", L, regression("smooth_l1_loss"), grads=True),
        OpInfo("aten::binary_cross_entropy", L, bce, grads=True, no_grad_args=("weight",)),
        OpInfo("aten::binary_cross_entropy_with_logits", L, bce_with_logits, grads=True,
               no_grad_args=("weight", "pos_weight")),
        OpInfo("aten::nll_loss_forward", L, nll_forward, no_grad_args=("weight",)),
        OpInfo("aten::nll_loss_backward", L, nll_backward),
        OpInfo("aten::nll_loss", L, nll_loss, grads=True, no_grad_args=("weight",)),
        OpInfo("aten::nll_loss_nd", L, nll_loss_nd, grads=True, no_grad_args=("weight",)),
        OpInfo("aten::cross_entropy_loss", L, cross_entropy, grads=True, no_grad_args=("weight",)),
    ]
