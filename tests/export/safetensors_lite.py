"""The safetensors format (an 8-byte little-endian header length, a JSON header, the
tensors' little-endian bytes) read and written with torch alone, so that the export
scripts need nothing beside PyTorch."""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
          torch.int16: "I16", torch.int8: "I8", torch.bool: "BOOL", torch.float16: "F16",
          torch.bfloat16: "BF16", torch.uint8: "U8"}


def save_file(tensors, path):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_file(path):
    by_name = {v: k for k, v in DTYPES.items()}
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        flat = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        out[name] = flat.view(by_name[e["dtype"]]).reshape(e["shape"]).clone()
    return out
