import json
import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "vectors"


@pytest.fixture(scope="session")
def corpus():
    """The golden corpus of the repository (vectors/manifest.json)."""
    return json.loads((VECTORS / "manifest.json").read_text())["vectors"]


def read_vector_file(rel, dtype=np.uint8):
    return np.fromfile(VECTORS / rel, dtype=dtype)


def bf16_weights(rows, cols, seed=0, scale=0.02):
    """Gaussian weights rounded to BF16 (as uint16 words), like a trained layer's."""
    rng = np.random.default_rng(seed)
    f = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
    u = f.view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def write_safetensors(path, tensors):
    """A minimal safetensors writer for tests: {name: (dtype, shape, bytes)}."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} of a safetensors file (tests only)."""
    blob = open(path, "rb").read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    return {k: (v["dtype"], tuple(v["shape"]), blob[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
            for k, v in header.items()}


def sub_corpus(tmp_path, count):
    """A corpus of the first `count` canonical and valid vectors of vectors/ (same files)."""
    import shutil

    doc = json.loads((VECTORS / "manifest.json").read_text())
    keep = [v for v in doc["vectors"] if v["kind"] in ("canonical", "valid")][:count]
    for v in keep:
        for rel in v["sha256"]:
            dst = tmp_path / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(VECTORS / rel, dst)
    doc["vectors"] = keep
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    return tmp_path
