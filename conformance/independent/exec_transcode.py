#!/usr/bin/env python3
"""Transcoder to the execution layout (spec 20.12), conformance protocol:
    exec_transcode.py --rows M --cols K INPUT OUTDIR     raw BF16 source (20.12.1)
    exec_transcode.py DIR OUTDIR                         format-10 source (20.12.2, 20.12.3)
Refusal: non-zero exit, no exec_*.bin written."""
import json, os, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exec_core as ec

# The format-10 decoder this transcoder delegates to (chapter 13 and 15.1 are not this
# implementation's subject): `nwc decode`, from $NWC_BIN or PATH.
NWC = os.environ.get("NWC_BIN", "nwc")
NAMES = {"sm": "exec_sm.bin", "codes": "exec_codes.bin", "base": "exec_base.bin",
         "esc_start": "exec_esc_start.bin", "esc": "exec_esc.bin"}


def refuse(msg, code=2):
    print(f"exec_transcode: refused: {msg}", file=sys.stderr)
    sys.exit(code)


def write_outputs(outdir, fields):
    # Outputs appear only when complete: write under temporary names, then rename all.
    tmps = []
    try:
        for key, name in NAMES.items():
            tmp = os.path.join(outdir, f".partial-{name}")
            with open(tmp, "wb") as fh:
                fh.write(fields[key])
            tmps.append((tmp, os.path.join(outdir, name)))
    except Exception:
        for tmp, _ in tmps:
            try: os.unlink(tmp)
            except OSError: pass
        raise
    for tmp, final in tmps:
        os.replace(tmp, final)


def transcode_words(M, K, words):
    if not ec.shape_ok(M, K):
        refuse(f"shape M = {M}, K = {K} outside spec 3.2")
    if M * K > ec.LIMIT_MAX_WEIGHTS:
        refuse(f"resource limit: M*K = {M*K} (spec 20.16)")
    try:
        return ec.encode_exec(M, K, words)
    except ec.RefusalError as e:
        refuse(str(e))


def from_raw(M, K, inp, outdir):
    if not ec.shape_ok(M, K):
        refuse(f"shape M = {M}, K = {K} outside spec 3.2")
    if M * K > ec.LIMIT_MAX_WEIGHTS:
        refuse(f"resource limit: M*K = {M*K} (spec 20.16)")
    data = open(inp, "rb").read()
    if len(data) != 2 * M * K:
        refuse(f"input holds {len(data)} bytes, expected 2*M*K = {2*M*K}")
    write_outputs(outdir, transcode_words(M, K, ec.bytes_to_words(data)))


def from_format10(d, outdir):
    try:
        summ = json.load(open(os.path.join(d, "summary.json")))
        M, K, mode = summ["M"], summ["K"], summ["elem"]
    except Exception as e:
        refuse(f"cannot read summary.json (M, K, elem): {e}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (M, K, mode)):
        refuse("summary.json: M, K, elem must be integers")
    # 20.12.3: an FP8 encoding (mode 1 or 17) has no execution layout.
    if mode in (1, 17):
        refuse(f"FP8 encoding (mode code {mode}): the execution layout carries BF16 only (spec 20.12.3)")
    # Chapter 13 validation + decode (15.1) by the black-box format-10 decoder.
    with tempfile.TemporaryDirectory() as td:
        raw = os.path.join(td, "w.raw")
        r = subprocess.run([NWC, "decode", d, raw], capture_output=True, text=True)
        if r.returncode != 0:
            refuse(f"format-10 encoding rejected (chapter 13): {r.stderr.strip()}")
        if mode not in (0, 16):
            refuse(f"mode code {mode} is not BF16")  # defensive: nwc should have rejected it
        data = open(raw, "rb").read()
    if not ec.shape_ok(M, K) or len(data) != 2 * M * K:
        refuse(f"decoded matrix has {len(data)} bytes, expected 2*M*K")
    write_outputs(outdir, transcode_words(M, K, ec.bytes_to_words(data)))


def main(argv):
    if len(argv) >= 1 and argv[0] == "--rows":
        if len(argv) != 6 or argv[2] != "--cols":
            refuse("usage: --rows M --cols K INPUT OUTDIR", 2)
        try:
            M, K = int(argv[1]), int(argv[3])
        except ValueError:
            refuse("bad --rows/--cols")
        from_raw(M, K, argv[4], argv[5])
    elif len(argv) == 2:
        from_format10(argv[0], argv[1])
    else:
        refuse("usage: exec_transcode.py [--rows M --cols K INPUT | DIR] OUTDIR", 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
