#!/usr/bin/env python3
"""Execution-layout decoder: exec_decode.py DIR OUT.raw (spec 20.9, 20.10, 20.13).
Exit 1 with one line naming the first broken rule of 20.10; exit 3 for a resource-limit refusal;
exit 2 for usage / unreadable metadata."""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exec_core as ec

FILES = {"sm": "exec_sm.bin", "codes": "exec_codes.bin", "base": "exec_base.bin",
         "esc_start": "exec_esc_start.bin", "esc": "exec_esc.bin"}


def load_dir(d):
    try:
        summ = json.load(open(os.path.join(d, "summary.json")))
    except Exception as e:
        summ = {}
    M, K = summ.get("M"), summ.get("K")
    return M, K


def read_fields(d, M, K):
    """Read the field files.  Sizes are checked from the file system first (no read of a file
    whose size is wrong is needed beyond what 20.9.2 requires)."""
    f = {}
    for key, name in FILES.items():
        p = os.path.join(d, name)
        f[key] = open(p, "rb").read() if os.path.isfile(p) else None
    return f


def main(argv):
    if len(argv) != 2:
        print("usage: exec_decode.py DIR OUT.raw", file=sys.stderr)
        return 2
    d, out = argv
    M, K = load_dir(d)
    try:
        ec.check_shape(M, K)  # before anything sized by the shape is read (20.10 step 1)
        f = read_fields(d, M, K)
        words = ec.validate_and_decode(M, K, f)
    except ec.ExecError as e:
        print(f"exec_decode: {e}", file=sys.stderr)
        return 1
    except ec.LimitError as e:
        print(f"exec_decode: {e}", file=sys.stderr)
        return 3
    data = ec.words_to_bytes(words)
    tmp = out + ".partial"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
