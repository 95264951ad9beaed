"""Machinery of the conformance case generator: tensor arguments with layouts, the
safetensors writer, schema parsing, calling PyTorch and recording cases.

gen_cases.py holds the op table (one row per op); this module knows nothing of ops.

DEVICE is where PyTorch runs the cases ("cpu", or "cuda" for tests/ops/cases_cuda/).
Inputs are always drawn on the CPU from the same seeded generators; on "cuda" each
tensor argument's base is copied to the device before its view transforms are applied,
so PyTorch sees the same values and geometry there. The CUDA path differs from the CPU
path in four places only (Family.one_case, record_grads): samples meant to fail and
samples PyTorch's CPU rejects are left out (argument checks are device-independent and
covered by the CPU cases; a data-dependent check that CUDA skips could trip a device-side
assert and end the process), a factory without tensor arguments gets device="cuda",
outputs and gradients are copied back for storing, and upstream gradients go to the
device.
"""
import json
import math
import re
import struct
import zlib

import torch

DTYPE_NAME = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32",
    torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
    torch.complex64: "complex64", torch.complex128: "complex128",
}
ST_NAME = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
    # complex: real and imaginary parts interleaved (the bytes of view_as_real), as the
    # safetensors format's C64/C128 store them
    torch.complex64: "C64", torch.complex128: "C128",
}
DIFFERENTIABLE = (torch.float32, torch.float64, torch.complex64, torch.complex128)
REDUCED = (torch.float16, torch.bfloat16)
DEVICE = "cpu"  # set by gen_cases.py --device


# --- tensor arguments ------------------------------------------------------------------

class T:
    """A tensor argument: a contiguous base tensor plus the view transforms that rebuild
    the (possibly non-contiguous) input from it. The runner applies the same transforms
    with Ember's view ops, so both libraries see the same sizes, strides and offset."""

    def __init__(self, base, transforms=()):
        self.base = base.contiguous()
        self.transforms = [list(t) for t in transforms]

    def value(self, device="cpu"):
        x = self.base.clone().to(device)
        for tr in self.transforms:
            x = apply_transform(x, tr)
        return x

    def layout(self):
        return "contiguous" if not self.transforms else "+".join(t[0] for t in self.transforms)


def apply_transform(x, tr):
    kind = tr[0]
    if kind == "transpose":
        return x.transpose(tr[1], tr[2])
    if kind == "permute":
        return x.permute(tr[1])
    if kind == "slice":
        return torch.ops.aten.slice.Tensor(x, tr[1], tr[2], tr[3], tr[4])
    if kind == "expand":
        return x.expand(tr[1])
    raise ValueError(kind)


class Gen:
    """Random values for each dtype from one seeded generator."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def values(self, shape, dtype, kind="normal"):
        g = self.g
        shape = tuple(shape)
        if dtype.is_complex:  # real and imaginary parts each standard normal
            re = torch.randn(shape, generator=g, dtype=torch.float64)
            im = torch.randn(shape, generator=g, dtype=torch.float64)
            return torch.complex(re, im).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        if not dtype.is_floating_point:
            lo, hi = (0, 20) if dtype == torch.uint8 else (-9, 10)
            if kind == "pos":
                lo = 1
            if kind == "small":
                lo, hi = (0, 4)
            if kind == "unique":
                n = max(1, math.prod(shape))
                v = torch.randperm(n, generator=g)[: math.prod(shape)]
                if dtype != torch.uint8:
                    v = v - n // 2
                return v.reshape(shape).to(dtype)
            v = torch.randint(lo, hi, shape, generator=g)
            if kind == "nonzero":
                v[v == 0] = 1
            return v.to(dtype)
        v = torch.randn(shape, generator=g, dtype=torch.float64)
        if kind == "pos":
            v = torch.rand(shape, generator=g, dtype=torch.float64) * 3 + 0.1
        elif kind == "unit":
            v = torch.rand(shape, generator=g, dtype=torch.float64) * 1.8 - 0.9
        elif kind == "prob":
            v = torch.rand(shape, generator=g, dtype=torch.float64)
        elif kind == "nonzero":
            v = torch.where(v.abs() < 0.1, torch.full_like(v, 0.5), v)
        elif kind == "wide":
            v = v * 5
        elif kind == "above1":
            v = torch.rand(shape, generator=g, dtype=torch.float64) * 3 + 1.05
        return v.to(dtype)

    def t(self, shape, dtype=torch.float32, lay="contiguous", kind="normal"):
        """A tensor argument of logical `shape` in the given layout:
        contiguous | transposed (last two dims) | step (every 2nd element of the last dim,
        starting at 1) | expand (dim 0 broadcast from size 1) | permute (dims reversed) |
        channels_last (a 3-D, 4-D or 5-D tensor with dim 1 fastest, then the last dims back to 2:
        PyTorch's channels_last strides, dense)."""
        shape = list(shape)
        layout = lay
        if layout == "contiguous":
            return T(self.values(shape, dtype, kind))
        if layout == "transposed":
            assert len(shape) >= 2
            base = shape[:-2] + [shape[-1], shape[-2]]
            return T(self.values(base, dtype, kind), [["transpose", len(shape) - 2, len(shape) - 1]])
        if layout == "step":
            d = len(shape) - 1
            base = shape[:-1] + [2 * shape[-1] + 1]
            return T(self.values(base, dtype, kind), [["slice", d, 1, base[-1], 2]])
        if layout == "expand":
            base = [1] + shape[1:]
            return T(self.values(base, dtype, kind), [["expand", shape]])
        if layout == "channels_last":
            assert len(shape) in (3, 4, 5)
            order = [0] + list(range(2, len(shape))) + [1]  # base dims: N, spatial..., C
            back = [order.index(d) for d in range(len(shape))]
            return T(self.values([shape[d] for d in order], dtype, kind), [["permute", back]])
        if layout == "permute":
            base = shape[::-1]
            return T(self.values(base, dtype, kind), [["permute", list(range(len(shape)))[::-1]]])
        raise ValueError(layout)

    def special(self, dtype):
        vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.7, -3.7, 1e-3, 100.0, -100.0,
                float("inf"), float("-inf"), float("nan")]
        return T(torch.tensor(vals, dtype=torch.float64).to(dtype))


class TL(list):
    """A Tensor[] argument."""


class OTL(list):
    """A Tensor?[] argument (None entries allowed)."""


# --- schemas ----------------------------------------------------------------------------

class Arg:
    def __init__(self, text, kwarg_only):
        text = text.strip()
        default = None
        if "=" in text:
            text, default = text.split("=", 1)
        typ, name = text.rsplit(" ", 1)
        self.is_write = "!" in typ
        self.type = re.sub(r"\(.*?\)", "", typ).strip()
        self.name = name
        self.kwarg_only = kwarg_only
        self.has_default = default is not None

    @property
    def base(self):
        return re.sub(r"(\[\d*\])|\?", "", self.type)


class Schema:
    def __init__(self, text):
        self.text = text
        m = re.match(r"^(?:aten::)?([\w.]+)\((.*)\)\s*->\s*(.*)$", text)
        assert m, text
        self.name = m.group(1)
        args, kw = [], False
        for part in split_top(m.group(2)):
            if part.strip() == "*":
                kw = True
                continue
            if part.strip():
                args.append(Arg(part, kw))
        self.args = args
        ret = m.group(3).strip()
        self.returns_list = ret.endswith("[]")
        self.num_returns = len(split_top(ret[1:-1])) if ret.startswith("(") else 1

    def arg(self, name):
        return next(a for a in self.args if a.name == name)


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def torch_overload(name):
    """torch.ops.aten.<op>.<overload> for "aten::op.overload", or None in torch 1.13."""
    base, _, overload = name[len("aten::"):].partition(".")
    try:
        packet = getattr(torch.ops.aten, base)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None


# --- samples and cases -------------------------------------------------------------------

class S:
    """One sample: positional args, keyword args (by ATen argument name), a description,
    and what PyTorch is expected to do: "ok", "error" (must raise) or "maybe" (a dtype
    sweep: whatever PyTorch does is recorded). `meta_reason` skips the meta-device run of
    this one sample, saying why."""

    def __init__(self, *args, desc="", expect="ok", meta_reason=None, **kwargs):
        self.args = list(args)
        self.kwargs = kwargs
        self.desc = desc
        self.expect = expect
        self.meta_reason = meta_reason


def fmt_float(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


class Store:
    """Tensors of one family, deduplicated by content, written as one safetensors file."""

    def __init__(self):
        self.tensors = {}
        self.by_key = {}

    def add(self, t):
        t = t.detach().cpu().contiguous()
        if t.dtype in REDUCED or t.dtype == torch.bool:
            raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        else:
            raw = t.reshape(-1).numpy().tobytes() if t.numel() else b""
        key = (t.dtype, tuple(t.shape), raw)
        if key not in self.by_key:
            name = "t%d" % len(self.by_key)
            self.by_key[key] = name
            self.tensors[name] = (ST_NAME[t.dtype], list(t.shape), raw)
        return self.by_key[key]

    def write(self, path, metadata):
        header, data = {"__metadata__": metadata}, b""
        for name in sorted(self.tensors, key=lambda n: (int(n[1:]) if n[1:].isdigit() else 0, n)):
            dt, shape, raw = self.tensors[name]
            header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
            data += raw
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + data)


def encode_arg(store, arg, value):
    """A JSON argument with its type tag, as the runner rebuilds it."""
    base = arg.base
    out = {"name": arg.name}
    if value is None:
        out["type"] = "None"
    elif isinstance(value, T):
        out.update(type="Tensor", ref=store.add(value.base), transform=value.transforms)
    elif isinstance(value, OTL):
        out.update(type="Tensor?[]", value=[None if v is None else {"ref": store.add(v.base), "transform": v.transforms}
                                            for v in value])
    elif isinstance(value, TL):
        out.update(type="Tensor[]", value=[{"ref": store.add(v.base), "transform": v.transforms} for v in value])
    elif isinstance(value, torch.dtype):
        out.update(type="ScalarType", value=DTYPE_NAME[value])
    elif isinstance(value, torch.memory_format):  # Ember's MemoryFormat arguments are its name
        out.update(type="str", value=str(value).replace("torch.", ""))
    elif isinstance(value, str):
        out.update(type="Device" if base == "Device" else "str", value=value)
    elif isinstance(value, (list, tuple)) and base == "float":
        out.update(type="float[]", value=[fmt_float(float(v)) for v in value])
    elif isinstance(value, (list, tuple)) and base == "bool":
        out.update(type="bool[]", value=[bool(v) for v in value])
    elif isinstance(value, (list, tuple)):
        out.update(type="int[]", value=[int(v) for v in value])
    elif base == "Scalar":
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "float"
        out.update(type="Scalar", kind=kind, value=fmt_float(value) if kind == "float" else value)
    elif isinstance(value, bool):
        out.update(type="bool", value=value)
    elif base == "float" or isinstance(value, float):
        out.update(type="float", value=fmt_float(float(value)))
    elif isinstance(value, int):
        out.update(type="int", value=value)
    else:
        raise TypeError("cannot encode %r for %s" % (value, arg.name))
    return out


def materialize(v, device="cpu"):
    if isinstance(v, T):
        return v.value(device)
    if isinstance(v, (TL, OTL)):
        return [None if x is None else x.value(device) for x in v]
    return v


def upcast(v):
    """Half/bfloat16 tensors (and dtype arguments) as float32, for ops that torch 1.13's
    CPU backend lacks in reduced precision."""
    if isinstance(v, torch.Tensor):
        return v.float() if v.dtype in REDUCED else v
    if isinstance(v, list):
        return [upcast(x) for x in v]
    if isinstance(v, torch.dtype) and v in REDUCED:
        return torch.float32
    return v


def error_kind(e):
    for kind in ("IndexError", "ValueError", "TypeError", "NotImplementedError"):
        if type(e).__name__ == kind:
            return kind
    return "RuntimeError"


def outputs_of(schema, result):
    if isinstance(result, torch.Tensor):
        return [result]
    if schema.returns_list:
        return [list(result)]
    return list(result)


def describe_out(store, t, values=True, inputs=()):
    """An output's entry. `inputs`: (argument name, tensor) of the call; when the output
    is a view of one of them (or that tensor itself), the entry names it (`view_of`) and
    records the storage offset, so the runner can check the view's geometry exactly."""
    if t is None:  # an output a backward op's output_mask left out
        return {"none": True}
    d = {"shape": list(t.shape), "dtype": DTYPE_NAME[t.dtype], "strides": list(t.stride())}
    if DEVICE != "cpu":
        d["device"] = t.device.type  # the runner checks Ember's output is on that device type too
    if values:
        d["ref"] = store.add(t)
    of = view_of(t, inputs)
    if of is not None:
        d["view_of"] = of
        d["storage_offset"] = t.storage_offset()
    return d


def view_of(t, inputs):
    """The name of the argument whose storage `t` shares (t is a view of it, it itself, or
    a tensor over the same memory that autograd does not call a view, as detach() returns),
    or None."""
    root = t if t._base is None else t._base
    ptr = t.storage().data_ptr()
    for name, x in inputs:
        if root is (x if x._base is None else x._base):
            return name
        if ptr != 0 and ptr == x.storage().data_ptr():
            return name
    return None


def tensor_args(schema, pos, kw):
    """(argument name, tensor) for every Tensor argument of a call (positional, then keyword)."""
    named = [(schema.args[i].name, v) for i, v in enumerate(pos)] + list(kw.items())
    return [(n, v) for n, v in named if isinstance(v, torch.Tensor)]


class OpInfo:
    """One op of the table: its ATen name, the family file its cases go to, a sample
    generator (Gen -> [S]), and optionally: a reference function (for ops torch 1.13
    lacks), a schema text (same), `values=False` when outputs are uninitialized, `stat`
    for random ops (statistical checks instead of values), `meta=False` with a reason
    when the op cannot run on meta tensors, `strides=True` to compare output strides,
    `reduced_in_float=True` to compute float16/bfloat16 references in float32 and round
    (where torch 1.13's own reduced kernel is less accurate than later PyTorch),
    `no_grad_args` naming tensor arguments that never require grad in gradient cases
    (PyTorch raises for them: batch norm's running statistics), `unwritten(sample)`
    giving the outputs whose memory PyTorch's kernel on DEVICE leaves partly unwritten for
    that sample (their shape, dtype and strides are checked, not their values), or
    `reason` for an op with no cases."""

    def __init__(self, name, family, samples=None, ref=None, schema=None, values=True, stat=None,
                 meta=True, meta_reason=None, strides=False, reason=None, note=None, reduced_in_float=False,
                 grads=False, grads_reason=None, no_grad_args=(), unwritten=None):
        self.name, self.family, self.samples = name, family, samples
        self.unwritten = unwritten or (lambda sample: ())
        self.ref, self.values, self.stat, self.note = ref, values, stat, note
        self.reduced_in_float = reduced_in_float
        self.grads, self.grads_reason = grads, grads_reason  # record PyTorch's gradients
        self.no_grad_args = no_grad_args  # tensor arguments PyTorch refuses to differentiate
        self.meta, self.meta_reason, self.strides, self.reason = meta, meta_reason, strides, reason
        if schema is None:
            overload = torch_overload(name)
            assert overload is not None or ref is not None, "%s: not in torch 1.13; give ref and schema" % name
            schema = str(overload._schema)
        self.schema = Schema(schema)
        self.torch_op = torch_overload(name) if ref is None else None


def float64_copy(s):
    """The sample with its float32 tensors as float64, or None when it has float tensors of
    another dtype or none at all."""
    wider = {torch.float32: torch.float64, torch.complex64: torch.complex128}

    def conv(v):
        if isinstance(v, T):
            return T(v.base.to(wider[v.base.dtype]), v.transforms) if v.base.dtype in wider else v
        if isinstance(v, (TL, OTL)):
            return type(v)(None if e is None else conv(e) for e in v)
        return v

    def tensors(v):
        return [v] if isinstance(v, T) else [e for e in v if e is not None] if isinstance(v, (TL, OTL)) else []
    given = [t for v in list(s.args) + list(s.kwargs.values()) for t in tensors(v)]
    floats = [t.base.dtype for t in given if t.base.dtype.is_floating_point or t.base.dtype.is_complex]
    if not floats or any(d not in wider for d in floats):
        return None
    out = S(*[conv(v) for v in s.args], desc=s.desc + " (float64 copy, for gradients)", expect="maybe",
            meta_reason=s.meta_reason, **{n: conv(v) for n, v in s.kwargs.items()})
    return out


class _NoGrad(Exception):
    pass


def with_device(schema, s):
    """On a device: a factory sample (an op with a `device` argument and no tensor argument)
    with device=DEVICE added, so PyTorch makes its output there (the case records it, and
    the runner passes it to Ember); any other sample as it is."""
    names = [a.name for a in schema.args]
    if DEVICE == "cpu" or "device" not in names or "device" in s.kwargs or len(s.args) > names.index("device"):
        return s
    given = list(s.args) + list(s.kwargs.values())
    if any(isinstance(v, (T, TL, OTL)) for v in given):
        return s
    return S(*s.args, desc=s.desc, expect=s.expect, meta_reason=s.meta_reason, **dict(s.kwargs, device=DEVICE))


def reduced_gap_in(msg):
    """The reduced dtype an older PyTorch's CPU backend has no kernel for, from its error."""
    return re.search(r"not implemented for '(Half|BFloat16)'", msg)


class Family:
    def __init__(self, name):
        self.name = name
        self.store = Store()
        self.cases = []
        self.ops = {}
        self.left_out = []  # on a device: samples not run there, each with why
        self.device_rejects = []  # on a device: samples its CPU accepts and the device rejects
        self.row_errors = []  # on a device: rows the generator failed on, left out whole
        self.next_k = {}  # op -> the number its next sample takes (a later row of an op goes on)

    def record_row(self, info, gen):
        """record(); on a device, a row that fails in the generator (an error of PyTorch's
        that is no sample's, a reference or statistic that assumes the CPU) is left out
        whole and listed, so that one row cannot stop the others' cases from being written."""
        if DEVICE == "cpu":
            return self.record(info, gen)
        cases, left_out, rejects = len(self.cases), len(self.left_out), len(self.device_rejects)
        try:
            self.record(info, gen)
        except Exception as e:  # noqa: BLE001 — reported in summary.txt and the op's entry
            del self.cases[cases:], self.left_out[left_out:], self.device_rejects[rejects:]
            why = "%s: %s" % (type(e).__name__, str(e).split("\n")[0])
            self.ops[info.name] = {"cases": 0, "generator_error": why}
            self.row_errors.append({"op": info.name, "why": why})

    def record(self, info, gen):
        # A second row of an op (other options, e.g. strides=True) adds to its entry, its
        # samples numbered after the first row's.
        entry = self.ops.get(info.name, {"cases": 0})
        k0 = self.next_k.get(info.name, 0)
        if info.note:
            entry["note"] = info.note
        if info.reason:
            entry["reason"] = info.reason
        if info.grads_reason:
            entry["grads_reason"] = info.grads_reason
        if info.stat:
            entry["note"] = "random op: statistical checks (shape, dtype, range, mean/std against PyTorch's " \
                            "distribution); values cannot match PyTorch's generator"
        self.ops[info.name] = entry
        if info.samples is None:
            return
        samples = info.samples(gen)
        copies = []
        for k, s in enumerate(samples):
            case = self.one_case(info, s, k0 + k)
            if case is None:  # left out on this device (self.left_out says why)
                entry["left_out"] = entry.get("left_out", 0) + 1
                continue
            self.cases.append(case)
            entry["cases"] += 1
            if "grads" in case:
                entry["grad_cases"] = entry.get("grad_cases", 0) + 1
                copy = float64_copy(s)
                if copy is not None:
                    copies.append(copy)
        # float64 copies of the float32 gradient samples: gradients at float64's precision
        for s in copies:
            case = self.one_case(info, s, k0 + len(samples))
            if case is not None and "grads" in case:  # kept only where PyTorch runs and differentiates it
                samples.append(s)
                self.cases.append(case)
                entry["cases"] += 1
                entry["grad_cases"] += 1
        self.next_k[info.name] = k0 + len(samples)

    def one_case(self, info, s, k):
        """The case of sample `s` (its k-th), run by PyTorch on DEVICE; None when it is left
        out on a device (recorded in self.left_out)."""
        schema = info.schema
        s = with_device(schema, s)
        named = {}
        positional = [a for a in schema.args]
        for i, v in enumerate(s.args):
            named[positional[i].name] = v
        for n, v in s.kwargs.items():
            schema.arg(n)  # raises for a name the schema lacks
            named[n] = v
        case = {"id": "%s/%s/%d" % (self.name, info.name, k), "op": info.name, "desc": s.desc}

        # torch 1.13's torch.ops turns a Python bool passed as a Scalar into an int, which
        # changes type promotion; the Python API keeps it a bool, so use that instead.
        bool_scalar = any(schema.arg(n).base == "Scalar" and isinstance(v, bool) for n, v in named.items())
        fn = info.ref or info.torch_op
        if bool_scalar and info.ref is None:
            base = schema.name.split(".")[0]
            fn = getattr(torch, base, None) or getattr(torch.Tensor, base)

        def call(transform, device=DEVICE):
            pos = [transform(materialize(v, device)) for v in s.args]
            kw = {n: transform(materialize(v, device)) for n, v in s.kwargs.items()}
            return fn(*pos, **kw), pos, kw

        if DEVICE != "cpu":
            why = self.left_out_reason(s, call)
            if why:
                self.left_out.append({"id": case["id"], "op": info.name, "desc": s.desc, "why": why})
                return None
        case["args"] = [encode_arg(self.store, a, named[a.name]) for a in schema.args if a.name in named]

        note, target = None, None
        if bool_scalar and info.ref is None:
            note = "reference via torch.%s: torch.ops in 1.13 passes bool Scalars as ints" % base
        given = list(s.args) + list(s.kwargs.values())
        has_reduced = any(isinstance(v, T) and v.base.dtype in REDUCED for v in given)
        try:
            if info.reduced_in_float and has_reduced:
                raise RuntimeError("not implemented for 'Half' (forced: reduced_in_float)")
            result, pos, kw = call(lambda v: v)
        except Exception as e:  # noqa: BLE001 — any PyTorch failure is data for the case
            msg = str(e).split("\n")[0]
            reduced_gap = reduced_gap_in(msg)
            if reduced_gap and s.expect != "error":
                # torch 1.13's CPU backend lacks this reduced-precision kernel; later PyTorch
                # computes in float32 (opmath) and rounds, which is what we record.
                reduced = {v.base.dtype for v in given if isinstance(v, T) and v.base.dtype in REDUCED}
                reduced |= {v for v in given if isinstance(v, torch.dtype) and v in REDUCED}
                try:
                    result, pos, kw = call(upcast)
                except Exception:  # noqa: BLE001 — fails in float32 too (an integer-only op): not a gap
                    reduced_gap = None
            if reduced_gap:
                target = reduced.pop() if len(reduced) == 1 else None
                result = rounded(result, target)
                note = ("reference computed in float32 and rounded (as later PyTorch does): " +
                        ("torch 1.13's reduced-precision kernel rounds intermediates" if info.reduced_in_float
                         else "torch 1.13 has no CPU %s kernel" % reduced_gap.group(1)))
            else:
                if DEVICE != "cpu" and not isinstance(e, NotImplementedError):
                    # Its CPU accepted it (left_out_reason) and the device fails otherwise than
                    # by lacking a kernel for a dtype: an internal assert, a launch error, a
                    # missing check. Not a behaviour to copy; Ember's CPU cases cover the sample.
                    self.left_out.append({"id": case["id"], "op": info.name, "desc": s.desc,
                                          "why": "PyTorch's %s fails on it where its CPU does not (%s: %s)" %
                                                 (DEVICE, error_kind(e), msg)})
                    return None
                if DEVICE != "cpu":  # a dtype the device has no kernel for: Ember's must raise too
                    self.device_rejects.append({"id": case["id"], "op": info.name, "desc": s.desc,
                                                "why": "%s: %s" % (error_kind(e), msg)})
                elif s.expect == "ok" or (s.expect == "maybe" and isinstance(e, TypeError)):
                    raise RuntimeError("%s: PyTorch rejected a sample meant to pass (%s): %s" %
                                       (case["id"], s.desc, msg)) from e
                case["expect"] = {"error": error_kind(e), "message": msg}
                return case
        if s.expect == "error":
            raise RuntimeError("%s: PyTorch accepted a sample meant to fail (%s)" % (case["id"], s.desc))
        if note:
            case["reference"] = note
        outs = outputs_of(schema, result)
        expect = {"outputs": []}
        inputs = tensor_args(schema, pos, kw)
        unwritten = info.unwritten(s)
        for i, o in enumerate(outs):
            if isinstance(o, list):
                expect["outputs"].append({"list": [describe_out(self.store, x, info.values, inputs) for x in o]})
            else:
                values = info.values and not info.stat and i not in unwritten
                expect["outputs"].append(describe_out(self.store, o, values, inputs))
        if DEVICE != "cpu":
            self.mark_device_differences(schema, expect, call, outs)
        mutated = []
        for i, a in enumerate(schema.args):
            if a.is_write and a.name in named and named[a.name] is not None:
                idx = list(named).index(a.name)
                v = (pos + list(kw.values()))[idx] if idx < len(pos) + len(kw) else None
                if isinstance(v, torch.Tensor):
                    if note:
                        v = rounded(v, target)
                    mutated.append({"arg": a.name, **describe_out(self.store, v, not info.stat)})
        if mutated:
            expect["mutated"] = mutated
        if not info.values:
            case["values"] = False
        if info.stat:
            expect["stat"] = info.stat(pos, kw, result)
        if info.strides:
            case["check_strides"] = True
        if not info.meta or s.meta_reason:
            case["meta"] = False
            case["meta_reason"] = s.meta_reason or info.meta_reason
        case["expect"] = expect
        if info.grads and not note and not info.stat and info.values:
            grads = self.record_grads(info, s, case["id"], fn)
            if grads and "skipped" in grads:
                case["grads_skipped"] = grads["skipped"]
            elif grads:
                case["grads"] = grads
        return case

    @staticmethod
    def mark_device_differences(schema, expect, call, device_outs):
        """Where PyTorch's CPU and DEVICE disagree on an output's existence, dtype or shape
        (batch norm's saved statistics in evaluation, a backward op's masked-out output),
        or on the values of an integer output (embedding_bag's offset2bag, bag_size and
        max_indices), the output's entry gets `cpu`: what PyTorch's CPU gives (`{"none":
        true}` or its shape and dtype, with `"values_differ": true` for the integer case).
        Ember's CPU follows PyTorch's CPU and its CUDA kernels follow PyTorch's CUDA, so the
        runner checks such an output against PyTorch's device only, and accepts a missing
        output where PyTorch's CPU has none. Floating-point outputs are not compared by
        value here: they differ by rounding, which the runner's tolerances judge."""
        try:
            cpu_outs = outputs_of(schema, call(lambda v: v, "cpu")[0])
        except Exception:  # noqa: BLE001 — only a reduced-precision gap fails here (left_out_reason)
            return
        for entry, o, d in zip(expect["outputs"], cpu_outs, device_outs):
            if "list" in entry or isinstance(o, list):
                continue
            if o is None:
                if not entry.get("none"):
                    entry["cpu"] = {"none": True}
            elif entry.get("none") or entry["shape"] != list(o.shape) or entry["dtype"] != DTYPE_NAME[o.dtype]:
                entry["cpu"] = {"shape": list(o.shape), "dtype": DTYPE_NAME[o.dtype]}
            elif (isinstance(d, torch.Tensor) and not o.dtype.is_floating_point and not o.dtype.is_complex and
                  not torch.equal(o.cpu(), d.cpu())):
                entry["cpu"] = {"shape": list(o.shape), "dtype": DTYPE_NAME[o.dtype], "values_differ": True}

    @staticmethod
    def left_out_reason(s, call):
        """Why a sample is not run on DEVICE (None: it is). Samples meant to fail are left
        out, and so are those PyTorch's CPU rejects: their checks are device-independent
        (the CPU cases hold them), and a data-dependent one that a CUDA kernel skips (an
        index out of range) could trip a device-side assert, which ends the process."""
        if s.expect == "error":
            return "meant to fail (argument checks are checked by the CPU cases)"
        try:
            call(lambda v: v, "cpu")
        except Exception as e:  # noqa: BLE001 — any rejection
            msg = str(e).split("\n")[0]
            if reduced_gap_in(msg):
                try:
                    call(upcast, "cpu")
                    return None
                except Exception:  # noqa: BLE001 — not a reduced-precision gap
                    pass
            return "PyTorch's CPU rejects it (%s: %s)" % (error_kind(e), msg)
        return None

    def record_grads(self, info, s, case_id, fn):
        """PyTorch's gradients of one sample: every float32/float64/complex64/complex128
        tensor input requires grad; each such output that has a grad_fn gets a fixed random
        upstream gradient (complex for a complex output; seeded by the case id, stored); torch.autograd.grad(..., allow_unused=True) gives
        the input gradients (null where unused). Skipped when any tensor input is
        float16/bfloat16 or no output is differentiable."""
        given = [(i, None, v) for i, v in enumerate(s.args)] + [(None, n, v) for n, v in s.kwargs.items()]
        leaves, where = [], []  # leaf tensors; (arg name, list index or None)

        def prep(v, name, idx):
            x = v.value(DEVICE)
            if x.dtype in REDUCED:
                raise _NoGrad()
            if x.dtype in DIFFERENTIABLE and name not in info.no_grad_args:
                x.requires_grad_()
                leaves.append(x)
                where.append((name, idx))
            return x
        try:
            pos, kw = [], {}
            for i, n, v in given:
                name = info.schema.args[i].name if n is None else n
                if isinstance(v, T):
                    x = prep(v, name, None)
                elif isinstance(v, (TL, OTL)):
                    x = [None if e is None else prep(e, name, j) for j, e in enumerate(v)]
                else:
                    x = v
                if n is None:
                    pos.append(x)
                else:
                    kw[n] = x
        except _NoGrad:
            return None
        if not leaves:
            return None
        # An in-place op writes a clone of its leaf (PyTorch refuses writes to a leaf
        # that requires grad); the runner clones the same arguments.
        written = [a.name for a in info.schema.args if a.is_write]
        for i, n, v in given:
            name = info.schema.args[i].name if n is None else n
            if name in written and isinstance(v, T):
                if n is None:
                    pos[i] = pos[i].clone()
                else:
                    kw[n] = kw[n].clone()
        result = fn(*pos, **kw)
        flat = []
        for o in outputs_of(info.schema, result):
            flat += list(o) if isinstance(o, list) else [o]
        gen = torch.Generator().manual_seed(zlib.crc32(case_id.encode()))
        upstream, outs, grads_out = [], [], []
        for o in flat:
            # Any floating or complex output (a float16 one too: _to_copy from float32)
            # gets an upstream gradient; only inputs are limited to DIFFERENTIABLE dtypes.
            if isinstance(o, torch.Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex) and o.grad_fn is not None:
                wide = torch.complex128 if o.dtype.is_complex else torch.float64
                g = torch.randn(o.shape, generator=gen, dtype=wide).to(o.dtype)
                upstream.append(self.store.add(g))
                outs.append(o)
                grads_out.append(g.to(o.device))
            else:
                upstream.append(None)
        if not outs:
            return None
        try:
            got = torch.autograd.grad(outs, leaves, grads_out, allow_unused=True)
        except RuntimeError as e:
            return {"skipped": "PyTorch's backward raises: " + str(e).split("\n")[0]}
        inputs = []
        for (name, idx), g in zip(where, got):
            e = {"arg": name}
            if idx is not None:
                e["index"] = idx
            e["ref"] = None if g is None else self.store.add(g)
            if g is not None and g.dtype == torch.float64 and any(o.dtype in (torch.float32, torch.complex64)
                                                                  for o in outs):
                e["tol_dtype"] = "float32"
            inputs.append(e)
        out = {"upstream": upstream, "inputs": inputs}
        cloned = [n for n in written if any(w[0] == n for w in where)]
        if cloned:
            out["clone_written"] = cloned
        if any("tol_dtype" in e for e in inputs):
            out["tol_reason"] = ("a float64 input of a float32 (or complex64) output: its gradient is computed in "
                                 "float32 and cast, so float32 tolerances apply (PyTorch sums broadcast gradients in "
                                 "float32)")
        return out

    def write(self, outdir):
        meta = {"family": self.name, "generator": "tests/ops/gen_cases.py", "torch": torch.__version__}
        on_device = ""
        if DEVICE != "cpu":
            meta["device"] = DEVICE
            on_device = ' "device": %s,\n "device_name": %s,\n' % (json.dumps(DEVICE), json.dumps(device_name()))
        self.store.write("%s/%s.safetensors" % (outdir, self.name), meta)
        with open("%s/%s.json" % (outdir, self.name), "w") as f:
            f.write('{"family": %s,\n "torch_version": %s,\n%s "tensors": %s,\n "ops": {\n' % (
                json.dumps(self.name), json.dumps(torch.__version__), on_device, json.dumps(self.name + ".safetensors")))
            f.write(",\n".join("  %s: %s" % (json.dumps(n), json.dumps(e, sort_keys=True)) for n, e in self.ops.items()))
            f.write('\n },\n "cases": [\n')
            f.write(",\n".join("  " + json.dumps(c, separators=(", ", ": ")) for c in self.cases))
            f.write("\n ]\n}\n")


def device_name():
    """The GPU PyTorch runs the cases on ("NVIDIA H100 80GB HBM3"), or DEVICE."""
    if DEVICE.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(DEVICE))
    return DEVICE


def rounded(result, target):
    if target is None:
        return result
    if isinstance(result, torch.Tensor):
        return result.to(target) if result.dtype == torch.float32 else result
    return type(result)(rounded(r, target) for r in result)
