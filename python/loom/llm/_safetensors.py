"""Reads and writes .safetensors files (docs/llm.md, "Weights"): an 8-byte
little-endian header length, a JSON header mapping each tensor's name to
its dtype, shape and byte range [begin, end) in the data that follows, and
the raw little-endian bytes.  Read without the safetensors package; every
length and range is checked against the file before it is used."""
import json
import struct
from pathlib import Path

import numpy as np

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items() if v is not None}
_MAX_HEADER = 100 << 20


def _bad(path, why):
    return ValueError(f"{path}: not a valid .safetensors file: {why}")


def read(path):
    """{name: NumPy array} of a .safetensors file; BF16 arrives as float32
    (its bits widened), the others in their own dtype."""
    path = Path(path)
    data = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8)
    if data.size < 8:
        raise _bad(path, f"{data.size} bytes, fewer than the 8 of the header length")
    (length,) = struct.unpack("<Q", data[:8].tobytes())
    if length > min(_MAX_HEADER, data.size - 8):
        raise _bad(path, f"the header length {length} exceeds the file ({data.size} bytes) or {_MAX_HEADER}")
    try:
        header = json.loads(data[8:8 + length].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(path, f"the header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    body = data[8 + length:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
            raise _bad(path, f"tensor {name!r} lacks dtype, shape or data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in _DTYPES:
            raise _bad(path, f"tensor {name!r} has dtype {dtype!r}; Loom reads {', '.join(_DTYPES)}")
        if (not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape)
                or not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) for o in offsets)):
            raise _bad(path, f"tensor {name!r} has a malformed shape or data_offsets")
        begin, end = offsets
        item = 2 if dtype == "BF16" else np.dtype(_DTYPES[dtype]).itemsize
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not 0 <= begin <= end <= body.size or end - begin != count * item:
            raise _bad(path, f"tensor {name!r}: bytes [{begin}, {end}) do not hold {count} {dtype} elements "
                             f"inside the {body.size} bytes of data")
        raw = body[begin:end]
        if dtype == "BF16":
            bits = raw.view("<u2").astype(np.uint32) << 16
            out[name] = bits.view(np.float32).reshape(shape)
        else:
            out[name] = np.array(raw.view(np.dtype(_DTYPES[dtype]).newbyteorder("<")).reshape(shape))
    return out


def write(path, tensors, metadata=None):
    """Writes {name: NumPy array} (F64, F32, F16, integer and bool dtypes)."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        a = np.ascontiguousarray(array)
        if a.dtype not in _NAMES:
            raise ValueError(f"safetensors: tensor {name!r} has dtype {a.dtype}, which the format has no name for")
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _NAMES[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
