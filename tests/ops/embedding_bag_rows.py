"""The conformance rows of the embedding_bag family (src/ops/embedding_bag.cpp), imported
by gen_cases.py: _embedding_bag in sum, mean and max mode, with empty bags,
include_last_offset, padding_idx, per_sample_weights, scale_grad_by_freq (its gradient),
int32 indices, float64 and strided weights, and the errors PyTorch raises. All four
outputs are compared (offset2bag, bag_size and max_indices as PyTorch's kernel on the
device makes them; they differ between its CPU and CUDA, see src/ops/embedding_bag.cpp). Offsets start at 0 and, with include_last_offset, end at the number of indices
(torch 1.13 reads out of bounds otherwise). The composite records gradients (weight and
per_sample_weights) too."""
import torch

import opinfo
from opinfo import OpInfo, S, T

f32, f64, bf16, i32, i64 = torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.int64


def ints(values, dtype=i64):
    return T(torch.tensor(values, dtype=dtype))


IDX = [1, 2, 4, 5, 4, 3, 2, 9]
OFF = [0, 4, 4, 6]


def embedding_bag(g):
    out = []
    for mode in (0, 1, 2):
        name = ("sum", "mean", "max")[mode]
        out += [S(g.t((10, 3)), ints(IDX), ints(OFF), False, mode, desc=name + ", an empty bag"),
                S(g.t((10, 3)), ints(IDX), ints(OFF + [8]), False, mode, False, None, True,
                  desc=name + ", include_last_offset"),
                S(g.t((10, 3)), ints(IDX, i32), ints(OFF, i32), False, mode, desc=name + ", int32 indices"),
                S(g.t((10, 3), f64), ints(IDX), ints(OFF), False, mode, desc=name + ", f64"),
                S(g.t((10, 3)), ints(IDX), ints(OFF), True, mode, desc=name + ", scale_grad_by_freq")]
    return out + [
        S(g.t((10, 3)), ints(IDX), ints(OFF), False, 0, False, None, False, 4, desc="sum, padding_idx"),
        S(g.t((10, 3)), ints(IDX), ints(OFF), False, 1, False, None, False, 4, desc="mean, padding_idx"),
        S(g.t((10, 3)), ints([4, 4, 1]), ints([0, 2]), False, 1, False, None, False, 4,
          desc="mean, a bag of padding only"),
        S(g.t((10, 3)), ints(IDX), ints(OFF), False, 0, False, g.t((8,)), desc="per_sample_weights"),
        S(g.t((10, 3), f64), ints(IDX), ints(OFF), False, 0, False, g.t((8,), f64), desc="f64 per_sample_weights"),
        S(g.t((10, 3), lay="transposed"), ints(IDX), ints(OFF), False, 0, desc="transposed weight"),
        S(g.t((10, 3)), ints([], i64), ints([0, 0]), False, 1, desc="no indices, mean"),
        S(g.t((10, 3)), ints([], i64), ints([0, 0]), False, 2, desc="no indices, max"),
        S(g.t((10, 3), bf16), ints(IDX), ints(OFF), False, 0, desc="bf16", expect="error"),
        S(g.t((10, 3)), ints(IDX), ints(OFF, i32), False, 1, desc="int32 offsets, int64 indices"),
        S(g.t((10, 3)), ints(IDX, i32), ints(OFF), False, 0, desc="int64 offsets, int32 indices"),
        S(g.t((10, 3)), T(torch.tensor(IDX, dtype=f32)), ints(OFF), False, 0, desc="float indices", expect="error"),
        S(g.t((10, 3)), ints(IDX), ints(OFF), False, 1, False, g.t((8,)), desc="per_sample_weights with mean",
          expect="error")]


def unwritten(s):
    """PyTorch's CUDA kernel allocates bag_size (output 2) with one entry per offset and,
    with include_last_offset, never writes the last one: its values are left unchecked
    there (Ember writes 0)."""
    include_last_offset = len(s.args) > 7 and s.args[7] is True
    return (2,) if opinfo.DEVICE != "cpu" and include_last_offset else ()


CHECKED_OFFSETS_REASON = (
    "Ember's own op (not ATen): _embedding_bag's offsets, copied after ATen's check_arguments checks their "
    "values (the first is 0, the last at most the number of indices); every _embedding_bag case runs it, "
    "and CompileErrors.EmbeddingBagWithBadOffsetsRaisesTheEagerErrorInEveryCompiledGraph and "
    "NnErrors.EmbeddingBagOffsetsMustStartAtZeroAndEndWithinIndices check its errors")


def embedding_bag_rows():
    return [OpInfo("aten::_embedding_bag", "embedding_bag", embedding_bag, grads=True, unwritten=unwritten),
            OpInfo("ember::_embedding_bag_checked_offsets", "embedding_bag", reason=CHECKED_OFFSETS_REASON)]
