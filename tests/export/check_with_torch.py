"""Loads an archive Ember wrote with torch.export.load and runs it on the inputs of an
_io.safetensors file, comparing with that file's outputs (and buffers) by
torch.testing.assert_close. Usage: check_with_torch.py ARCHIVE IO.safetensors
Prints OK and exits 0 when everything matches; otherwise says what differs and exits 1."""
import os
import sys

import torch
from torch.export.graph_signature import InputKind

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_lite import load_file  # noqa: E402


def main():
    archive, io_path = sys.argv[1], sys.argv[2]
    io = load_file(io_path)
    ep = torch.export.load(archive)
    names = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    module = ep.module()
    outs = module(*[io["input." + n] for n in names])
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    expected = sorted((k for k in io if k.startswith("output.")), key=lambda k: int(k.split(".")[1]))
    if len(outs) != len(expected):
        print(f"{len(outs)} outputs, expected {len(expected)}")
        return 1
    for k, o in zip(expected, outs):
        torch.testing.assert_close(o, io[k], msg=lambda m: f"{k}: {m}")
    buffers = dict(module.named_buffers())
    for k in io:
        if k.startswith("state."):
            torch.testing.assert_close(buffers[k[6:]], io[k], msg=lambda m: f"{k}: {m}")
    print(f"OK {len(outs)} outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
