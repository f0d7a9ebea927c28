#!/usr/bin/env python3
"""Encode one matrix with the 0.10.1 library's host encoder and write the nwc-conform protocol's
encoding directory (conformance/README.md): data.bin, bases.bin, hdr.bin, lut.bin, low.bin,
exp_of_rank.bin, summary.json and, when scales are given, scale.bin.

    peer_encode.py --lib nwc_ops.so --elem bf16|fp8 --layout 0|1 --rows M --cols K
                   [--scales FILE] INPUT OUTDIR

Standard library only (ctypes). It calls the library's exported host functions nwc_layout,
nwc_encode and nwc_build_tab with the C signatures its own Python wrapper declares; the library
needs only libc, so this runs on any x86-64 Linux without a GPU. scripts/peer-encoder.sh fetches
the pinned wheel and calls this file. Written for this repository from the library's documented
behaviour; no code of the library's is reused.

Exit status: 0 ok, 2 usage, 3 the library refused the input (its negative return value is printed).
"""

import argparse
import ctypes
import json
import os
import sys

# Buffers the library writes for one block: 32 lanes of at most 192 words, plus 8 alignment bytes.
BLOCK_CAP = 32 * 192 * 4 + 8
RAW_SLACK = 512  # spec 9.6: the raw-plane slack the library writes after n_low bytes
TABLE_SLOTS = 1024  # freq and psym arrays the encoder fills (psym[0..16] is exp_of_rank)
LUT_ENTRIES = 4096


def load(path):
    lib = ctypes.CDLL(path)
    lib.nwc_info.argtypes = [ctypes.c_int]
    lib.nwc_info.restype = ctypes.c_int
    lib.nwc_layout.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
    lib.nwc_layout.restype = ctypes.c_int
    lib.nwc_encode.argtypes = [
        ctypes.c_void_p,  # weights: M*K BF16 words or fp8 bytes
        ctypes.c_uint64,  # n = M*K
        ctypes.c_uint32,  # K
        ctypes.c_int,  # elem (the mode code)
        ctypes.POINTER(ctypes.c_uint16),  # freq[1024] (comes back zeroed)
        ctypes.POINTER(ctypes.c_uint16),  # psym[1024]: exp_of_rank in 0..16
        ctypes.POINTER(ctypes.c_uint32),  # bases[nb]
        ctypes.POINTER(ctypes.c_uint8),  # hdr[32*nb]
        ctypes.POINTER(ctypes.c_uint8),  # data[cap]
        ctypes.c_uint64,  # cap
        ctypes.POINTER(ctypes.c_uint8),  # low[n_low + 512]
    ]
    lib.nwc_encode.restype = ctypes.c_int64
    lib.nwc_build_tab.argtypes = [
        ctypes.POINTER(ctypes.c_uint16),
        ctypes.POINTER(ctypes.c_uint16),
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_uint32),
    ]
    lib.nwc_build_tab.restype = None
    version = lib.nwc_info(0)
    if version != 10:
        raise SystemExit(f"peer_encode.py: {path} reports format version {version}, expected 10")
    return lib


def encode(lib, mode_code, rows, cols, weights):
    """Returns (data, bases, hdr, lut, low, exp_of_rank) as bytes, or raises RuntimeError(rc)."""
    layout = (ctypes.c_int64 * 4)()
    rc = lib.nwc_layout(rows, cols, mode_code, layout)
    if rc != 0:
        raise RuntimeError(rc)
    nb, n_low = layout[0], layout[1]
    freq = (ctypes.c_uint16 * TABLE_SLOTS)()
    psym = (ctypes.c_uint16 * TABLE_SLOTS)()
    bases = (ctypes.c_uint32 * nb)()
    hdr = (ctypes.c_uint8 * (32 * nb))()
    cap = nb * BLOCK_CAP + 4096
    data = (ctypes.c_uint8 * (cap + 64))()
    low = (ctypes.c_uint8 * (n_low + RAW_SLACK))()
    src = ctypes.create_string_buffer(weights, len(weights))
    dl = lib.nwc_encode(src, rows * cols, cols, mode_code, freq, psym, bases, hdr, data, cap, low)
    if dl < 0:
        raise RuntimeError(dl)
    lut = (ctypes.c_uint32 * LUT_ENTRIES)()
    lib.nwc_build_tab(freq, psym, mode_code, lut)
    exp_of_rank = bytes(psym[i] & 0xFF for i in range(16))
    # The return value dl already includes the 64-byte read-ahead slack (spec 9.4, 9.5).
    return bytes(data)[:dl], bytes(bases), bytes(hdr), bytes(lut), bytes(low), exp_of_rank


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", required=True)
    p.add_argument("--elem", choices=["bf16", "fp8"], required=True)
    p.add_argument("--layout", type=int, choices=[0, 1], required=True)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--cols", type=int, required=True)
    p.add_argument("--scales")
    p.add_argument("input")
    p.add_argument("outdir")
    a = p.parse_args()
    if a.rows < 1 or a.cols < 1:
        p.error("--rows and --cols must be positive")
    elem_bytes = 2 if a.elem == "bf16" else 1
    mode_code = (0 if a.elem == "bf16" else 1) | (a.layout << 4)
    with open(a.input, "rb") as f:
        weights = f.read()
    if len(weights) != a.rows * a.cols * elem_bytes:
        p.error(f"{a.input} has {len(weights)} bytes, a {a.rows}x{a.cols} {a.elem} matrix has {a.rows * a.cols * elem_bytes}")
    scales = None
    if a.scales is not None:
        if a.elem != "fp8":
            p.error("--scales is for fp8 only (BF16 encodings have no scale field, spec 12.1)")
        with open(a.scales, "rb") as f:
            scales = f.read()
        if len(scales) != 4 * a.rows:
            p.error(f"{a.scales} has {len(scales)} bytes, expected 4 x {a.rows} (f32 per row)")
    try:
        data, bases, hdr, lut, low, exp_of_rank = encode(load(a.lib), mode_code, a.rows, a.cols, weights)
    except RuntimeError as e:
        print(f"peer_encode.py: the library refused the input (return value {e.args[0]})", file=sys.stderr)
        return 3
    files = {"data": data, "bases": bases, "hdr": hdr, "lut": lut, "low": low, "exp_of_rank": exp_of_rank}
    if scales is not None:
        files["scale"] = scales  # spec 11.4: scales given with FP8 bytes are stored as given
    os.makedirs(a.outdir, exist_ok=True)
    for name, blob in files.items():
        with open(os.path.join(a.outdir, name + ".bin"), "wb") as f:
            f.write(blob)
    summary = {
        "M": a.rows,
        "K": a.cols,
        "elem": mode_code,  # the mode code (spec 2), not the element type: see conformance/README.md
        "type": "bf16" if a.elem == "bf16" else "fp8_e4m3",
        "layout": a.layout,
    }
    with open(os.path.join(a.outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
