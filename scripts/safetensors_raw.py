"""Safetensors files read without torch: name -> (dtype, shape, raw bytes). Shared by the interop
scripts (peer_load_check.py, h200_interop.py), which run where torch may be missing."""
import json
import os
import struct


def read_safetensors(path):
    """name -> (dtype, shape, raw bytes) of one .safetensors file (header checked)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} runs past the end")
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        if not 0 <= a <= b <= len(blob) - base:
            raise ValueError(f"{path}: tensor {name} offsets {a}..{b} outside the data")
        out[name] = (info["dtype"], tuple(info["shape"]), blob[base + a:base + b])
    return out


def read_folder(folder, require=False):
    """All tensors of every .safetensors file in a model folder (`require`: none is an error)."""
    out = {}
    for f in sorted(os.listdir(folder)):
        if f.endswith(".safetensors"):
            out.update(read_safetensors(os.path.join(folder, f)))
    if require and not out:
        raise ValueError(f"{folder}: no safetensors files")
    return out
