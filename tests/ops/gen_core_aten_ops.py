#!/usr/bin/env python3
"""Writes tests/ops/core_aten_ops.txt: every ATen operator overload that PyTorch tags
`core` (torch.Tag.core: the Core ATen operator set that backends implement), one
`name.overload` a line ("default" overloads by their bare name), sorted. The registry test
(tests/unit/ops/core_aten_test.cpp) fails for a listed op that Ember neither registers
nor names, with a reason, in tests/ops/core_aten_missing.txt. See Note [registry].

The packets come from the dispatcher's registry (torch._C._dispatch_get_all_op_names()),
not from dir(torch.ops.aten): that lists only the packets already loaded in the process,
which left out core ops such as avg_pool1d, adaptive_avg_pool1d, resize_ and
sym_is_contiguous.

Run with PyTorch 2.11: /work/torchenv/bin/python tests/ops/gen_core_aten_ops.py
"""
import os

import torch


def aten_packet_names():
    """Every aten operator name the dispatcher knows, without overload, sorted."""
    names = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = qualified.partition("::")
        if namespace == "aten":
            names.add(rest.split(".")[0])
    return sorted(names)


def core_ops():
    names = []
    for packet_name in aten_packet_names():
        packet = getattr(torch.ops.aten, packet_name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            if torch.Tag.core in getattr(packet, overload).tags:
                names.append(packet_name if overload == "default" else packet_name + "." + overload)
    return sorted(names)


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_aten_ops.txt")
    ops = core_ops()
    with open(path, "w") as f:
        f.write("# Core ATen operators of PyTorch %s (ops tagged core), written by gen_core_aten_ops.py\n"
                % torch.__version__.split("+")[0])
        f.write("".join(op + "\n" for op in ops))
    print("%d core ops -> %s" % (len(ops), path))


if __name__ == "__main__":
    main()
