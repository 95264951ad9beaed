#!/usr/bin/python3
"""Writes tests/data/torch_pointwise_methods.txt: the methods of PyTorch's torch.Tensor that
are pointwise ops, one a line (in-place forms as `name_`). Pointwise means what PyTorch's
own reference implementations (torch._refs, torch._refs.nn.functional) build as
elementwise: functions made by _make_elementwise_unary_reference /
_make_elementwise_binary_reference or wrapped by elementwise_type_promotion_wrapper.
`div` is listed by hand: its reference dispatches on rounding_mode to elementwise refs
and carries no such decorator itself.

The unit test TensorMethods.EveryPointwiseMethodOfPyTorchThatEmberRegisters
(tests/unit/capture/tensor_methods_pytorch_test.cpp) reads the file.
Run: /usr/bin/python3 tests/data/gen_tensor_methods.py
"""
import ast
import os

import torch
import torch._refs
import torch._refs.nn.functional

MAKERS = {"_make_elementwise_unary_reference", "_make_elementwise_binary_reference",
          "elementwise_type_promotion_wrapper"}
BY_HAND = {"div"}


def callee(node):
    if isinstance(node, ast.Call):
        node = node.func
    return node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)


def elementwise_refs(module):
    with open(module.__file__) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(callee(d) in MAKERS for d in node.decorator_list):
            names.add(node.name)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and callee(node.value) in MAKERS:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def main():
    names = elementwise_refs(torch._refs) | elementwise_refs(torch._refs.nn.functional) | BY_HAND
    methods = set()
    for n in names:
        if hasattr(torch.Tensor, n):
            methods.add(n)
        if hasattr(torch.Tensor, n + "_"):
            methods.add(n + "_")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_pointwise_methods.txt")
    with open(path, "w") as f:
        f.write("# torch.Tensor methods that are pointwise ops, PyTorch %s (tests/data/gen_tensor_methods.py)\n"
                % torch.__version__)
        for m in sorted(methods):
            f.write(m + "\n")
    print("%d methods -> %s" % (len(methods), path))


if __name__ == "__main__":
    main()
