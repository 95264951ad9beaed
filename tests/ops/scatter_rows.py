"""The conformance rows of the slicing and scattering ops added beside the indexing family,
imported by gen_cases.py: diagonal (a view: strides checked), slice_scatter and
select_scatter (family "slices"); scatter_reduce.two with every reduction, with and without
self, and masked_scatter (family "scatter"). Ops with a derivative row record PyTorch's
gradients (gen_cases.py finds them in src/ops/derivatives*.cpp)."""
import torch

from opinfo import OpInfo, S, T

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, b8, u8 = torch.int64, torch.int32, torch.bool, torch.uint8


def idx(g, shape, n, dtype=i64):
    return T(torch.randint(0, n, tuple(shape), generator=g.g).to(dtype))


def mask(g, shape, dtype=b8):
    return T((torch.rand(tuple(shape), generator=g.g) > 0.5).to(dtype))


# --- slices ----------------------------------------------------------------------------------

def diagonal(g):
    return [S(g.t((3, 4)), desc="main"), S(g.t((3, 4)), 1, desc="offset 1"), S(g.t((4, 3)), -2, desc="offset -2"),
            S(g.t((3, 4)), 5, desc="offset past the end: empty"), S(g.t((3, 4)), -3, desc="offset -3: empty"),
            S(g.t((2, 3, 4)), 0, 1, 2, desc="dims 1, 2"), S(g.t((2, 3, 4)), 1, -1, 0, desc="dims -1, 0 offset 1"),
            S(g.t((3, 4), lay="transposed"), desc="transposed"), S(g.t((3, 4), lay="step"), -1, desc="step"),
            S(g.t((4, 2, 4), lay="permute"), 0, 2, 0, desc="permuted, dims 2, 0"),
            S(g.t((0, 3)), desc="empty"), S(g.t((3, 3), i64), desc="int64"),
            S(g.t((3,)), desc="1-D", expect="error"),
            S(g.t((3, 4)), 0, 1, 1, desc="identical dims", expect="error")]


def slice_scatter(g):
    return [S(g.t((4, 5)), g.t((2, 5)), 0, 1, 3, desc="rows 1:3"),
            S(g.t((4, 5)), g.t((4, 2)), 1, None, None, 3, desc="dim 1 step 3"),
            S(g.t((4, 5)), g.t((4, 2)), 1, -3, -1, desc="negative start, end"),
            S(g.t((4, 5)), g.t((4, 5)), desc="defaults: everything"),
            S(g.t((4, 5), lay="transposed"), g.t((4, 2), lay="step"), 1, 1, 5, 2, desc="transposed self, step src"),
            S(g.t((2, 3, 4)), g.t((2, 1, 4)), 1, 2, 100, desc="end past the size"),
            S(g.t((4, 5)), g.t((0, 5)), 0, 2, 2, desc="empty slice"),
            S(g.t((4, 5), i64), g.t((2, 5), i64), 0, 0, 4, 2, desc="int64"),
            S(g.t((4, 5)), g.t((2, 5), f64), 0, 1, 3, desc="float64 src into float32", expect="maybe"),
            S(g.t((4, 5)), g.t((3, 5)), 0, 1, 3, desc="src of the wrong size", expect="error"),
            S(g.t((4, 5)), g.t((5,)), 0, 1, 2, desc="src without the sliced dim", expect="error"),
            S(g.t(()), g.t(()), 0, desc="0-dim", expect="error")]


def select_scatter(g):
    return [S(g.t((4, 5)), g.t((5,)), 0, -1, desc="last row"),
            S(g.t((4, 5)), g.t((4,)), 1, 2, desc="column 2"),
            S(g.t((2, 3, 4), lay="permute"), g.t((2, 4)), 1, 0, desc="permuted 3-D"),
            S(g.t((4, 5), i64), g.t((5,), i64), 0, 1, desc="int64"),
            S(g.t((4, 5)), g.t((5,), f64), 0, 1, desc="float64 src into float32", expect="maybe"),
            S(g.t((4, 5)), g.t((4,)), 0, 1, desc="src of the wrong size", expect="error"),
            S(g.t((4, 5)), g.t((5,)), 0, 4, desc="index out of range", expect="error")]


def slices_rows():
    F = "slices"
    return [OpInfo("aten::diagonal", F, diagonal, strides=True),
            OpInfo("aten::slice_scatter", F, slice_scatter, grads=True),
            OpInfo("aten::select_scatter", F, select_scatter, grads=True)]


# --- scatter ---------------------------------------------------------------------------------

def scatter_reduce(g):
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            out.append(S(g.t((4, 3)), 0, idx(g, (5, 3), 4), g.t((5, 3)), reduce, include_self=include_self,
                         desc="%s, include_self=%s, dim 0" % (reduce, include_self)))
        out.append(S(g.t((3, 5), lay="transposed"), 1, idx(g, (3, 4), 5), g.t((3, 6), lay="step"), reduce,
                     include_self=False, desc="%s: dim 1, src larger than index, strided" % reduce))
        out.append(S(g.t((4, 3), i64), 0, idx(g, (6, 3), 4), g.t((6, 3), i64), reduce,
                     desc="%s: int64" % reduce))
    zeros = T(torch.tensor([[0.0, 2.0], [0.0, 3.0], [1.5, 0.0], [-2.0, 4.0]]))
    out += [S(g.t((3, 2)), 0, T(torch.tensor([[0, 1], [1, 1], [1, 2], [0, 2]])), zeros, "prod",
              desc="prod with zeros in src"),
            S(g.t((3, 2)), 0, T(torch.tensor([[0, 1], [0, 1]])), T(torch.tensor([[float("nan"), 1.0], [2.0, 1.0]])),
              "amax", desc="amax: NaN in src"),
            S(g.t((4, 3), i64), 0, idx(g, (6, 3), 4), g.t((6, 3), i64), "mean", include_self=False,
              desc="mean: int64 floor division, without self"),
            S(g.t((4, 3), f64), 1, idx(g, (4, 2), 3), g.t((4, 2), f64), "mean", desc="mean: float64"),
            S(g.t((4, 3)), 0, idx(g, (0, 3), 4), g.t((0, 3)), "sum", desc="empty index"),
            S(g.t((4, 3), bf16), 0, idx(g, (5, 3), 4), g.t((5, 3), bf16), "sum", desc="bf16", expect="maybe"),
            S(g.t((4, 3)), 0, idx(g, (2, 3), 4), g.t((2, 3)), "max", desc="unknown reduction", expect="error"),
            S(g.t((4, 3)), 0, idx(g, (2, 3), 4, i32), g.t((2, 3)), "sum", desc="int32 index", expect="error"),
            S(g.t((4, 3)), 0, T(torch.full((2, 3), 7)), g.t((2, 3)), "sum", desc="index out of range",
              expect="error"),
            S(g.t((4, 3)), 0, idx(g, (2, 3), 4), g.t((2, 3), f64), "sum", desc="dtype mismatch", expect="error")]
    return out


def masked_scatter(g):
    return [S(g.t((4, 5)), mask(g, (4, 5)), g.t((20,)), desc="same shape"),
            S(g.t((4, 5)), mask(g, (5,)), g.t((3, 5)), desc="mask broadcast"),
            S(g.t((5,)), mask(g, (4, 5)), g.t((30,)), desc="self broadcast"),
            S(g.t((4, 5), lay="transposed"), mask(g, (4, 5)), g.t((4, 6), lay="step"), desc="strided"),
            S(g.t((4, 5)), T(torch.zeros(4, 5, dtype=b8)), g.t((0,)), desc="empty mask and source"),
            S(g.t((3, 4), i64), mask(g, (3, 4)), g.t((12,), i64), desc="int64"),
            S(g.t((4, 5)), mask(g, (4, 5), u8), g.t((20,)), desc="uint8 mask", expect="maybe"),
            S(g.t((4, 5)), T(torch.ones(4, 5, dtype=b8)), g.t((3,)), desc="source too small", expect="error"),
            S(g.t((4, 5)), mask(g, (4, 5)), g.t((20,), f64), desc="dtype mismatch", expect="error")]


def scatter_rows():
    F = "scatter"
    return [OpInfo("aten::scatter_reduce.two", F, scatter_reduce), OpInfo("aten::masked_scatter", F, masked_scatter)]
