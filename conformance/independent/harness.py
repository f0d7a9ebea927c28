#!/usr/bin/env python3
"""Clean-room harness for the execution-layout vectors (vectors/README.md, spec 20).

    harness.py [--vectors DIR] [--judge NWC_CONFORM]

Checks every execution-layout vector of the corpus in DIR (default `vectors`) with this
directory's implementation; with --judge, also runs the transcoder and the decoder of this
directory through `NWC_CONFORM transcoder` and `NWC_CONFORM exec-decoder`. Exit 0 only if
everything passed. The format-10 sources of the transcoder are decoded by `nwc decode`
($NWC_BIN, default `nwc` on PATH)."""
import hashlib, json, os, struct, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exec_core as ec
import exec_matvec as mv

VEC = "vectors"
KEYMAP = {"exec_sm": "sm", "exec_codes": "codes", "exec_base": "base",
          "exec_esc_start": "esc_start", "exec_esc": "esc"}


class Bad(Exception):
    pass


def reader(v):
    def read(path):
        if path is None:
            return None
        if not isinstance(path, str) or not path.startswith("files/") or ".." in path.split("/"):
            raise Bad(f"path outside corpus: {path}")
        want = v["sha256"].get(path)
        if want is None:
            raise Bad(f"no sha256 for {path}")
        data = open(os.path.join(VEC, path), "rb").read()
        if hashlib.sha256(data).hexdigest() != want:
            raise Bad(f"sha256 mismatch {path}")
        return data
    return read


def u32s(b):
    return list(struct.unpack(f"<{len(b)//4}I", b))


def same_f32(a, b):
    return a == b or (mv.is_nan(a) and mv.is_nan(b))


def same_bf16(a, b):
    nan = lambda w: (w & 0x7F80) == 0x7F80 and (w & 0x7F) != 0
    return a == b or (nan(a) and nan(b))


def check(v):
    read = reader(v)
    M, K, kind = v["rows"], v["cols"], v["kind"]
    f = {KEYMAP[k]: read(p) for k, p in v["fields"].items() if k in KEYMAP}
    notes = []
    if kind in ("invalid", "malformed"):
        try:
            ec.validate_and_decode(M, K, f)
        except ec.ExecError as e:
            if e.rule == v["expected_error"]:
                return True, str(e)
            return False, f"reported {e.rule}, expected {v['expected_error']}: {e}"
        except ec.LimitError as e:
            return False, f"limit error {e}, expected {v['expected_error']}"
        return False, f"accepted, expected {v['expected_error']}"
    # canonical / valid
    try:
        words = ec.validate_and_decode(M, K, f)
    except (ec.ExecError, ec.LimitError) as e:
        return False, f"rejected: {e}"
    inp = ec.bytes_to_words(read(v["input"]))
    if list(words) != list(inp):
        return False, "decode differs from input"
    if kind == "canonical":
        enc = ec.encode_exec(M, K, inp)
        for key in ec.FIELDS:
            if enc[key] != (f.get(key) or b""):
                a, b = enc[key], f.get(key) or b""
                i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
                return False, f"encoder differs in {key} at byte {i}"
        notes.append("encode=")
    else:
        # valid: the fields are the encoding under their own bases (20.11)
        enc = ec.encode_exec(M, K, inp, bases=list(f["base"]))
        if any(enc[k] != (f.get(k) or b"") for k in ec.FIELDS):
            return False, "valid fields are not the encoding under their own bases"
        canon = ec.encode_exec(M, K, inp)
        if canon["base"] == f["base"]:
            notes.append("(valid vector has canonical bases!)")
    if v.get("dequant"):
        if ec.words_to_bytes(ec.dequant(M, K, words)) != read(v["dequant"]):
            return False, "dequant differs"
    for g in v.get("gathers", []):
        if ec.words_to_bytes(ec.gather(M, K, words, g["rows"])) != read(g["output"]):
            return False, f"gather {g['rows']} differs"
    for i, c in enumerate(v.get("matvecs", [])):
        N = c["batch"]
        xb = u32s(read(c["activations"]))
        if len(xb) != N * K:
            return False, f"matvec {i}: activation size"
        xs = [xb[n * K:(n + 1) * K] for n in range(N)]
        bias = u32s(read(c["bias"])) if c.get("bias") else None
        y = mv.matvec(M, K, words, xs, bias)
        flat = [y[n][m] for n in range(N) for m in range(M)]
        e32 = u32s(read(c["output_f32"]))
        e16 = list(struct.unpack(f"<{N*M}H", read(c["output_bf16"])))
        for idx, (a, b) in enumerate(zip(flat, e32)):
            if not same_f32(a, b):
                return False, f"matvec {i} f32 out[{idx}] = {a:08X}, expected {b:08X}"
        for idx, (a, b) in enumerate(zip(flat, e16)):
            if not same_bf16(mv.f32_to_bf16(a), b):
                return False, f"matvec {i} bf16 out[{idx}] = {mv.f32_to_bf16(a):04X}, expected {b:04X}"
        if len(e32) != N * M or len(e16) != N * M:
            return False, f"matvec {i}: output size"
    notes.append(f"dequant+{len(v.get('gathers', []))} gathers+{len(v.get('matvecs', []))} matvecs ok")
    return True, " ".join(notes)


def option(name):
    if name in sys.argv:
        i = sys.argv.index(name)
        if i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        print(f"{name} needs a value"); sys.exit(2)
    return None


def main():
    global VEC
    VEC = option("--vectors") or VEC
    man = json.load(open(os.path.join(VEC, "manifest.json")))
    if man.get("corpus_version") != 2 or man.get("format_version") != 10:
        print("unknown corpus version"); return 2
    tally = {}
    for v in man["vectors"]:
        if v.get("representation") != "exec":
            continue
        try:
            ok, msg = check(v)
        except Bad as e:
            ok, msg = False, f"corpus: {e}"
        except Exception as e:
            ok, msg = False, f"harness error: {type(e).__name__}: {e}"
        k = v["kind"]
        t = tally.setdefault(k, [0, 0])
        t[0 if ok else 1] += 1
        print(f"{'PASS' if ok else 'FAIL'} {v['id']}: {msg}")
    tp = sum(t[0] for t in tally.values()); tf = sum(t[1] for t in tally.values())
    for k, (p, fl) in sorted(tally.items()):
        print(f"  {k}: {p} passed, {fl} failed")
    print(f"{tp} passed, {tf} failed")
    judge = option("--judge")
    failed_runs = 0
    if judge:
        here = os.path.dirname(os.path.abspath(__file__))
        for sub, script in [["transcoder", "exec_transcode.py"], ["exec-decoder", "exec_decode.py"]]:
            r = subprocess.run([judge, "--vectors", VEC, sub, "--", sys.executable, os.path.join(here, script)],
                               capture_output=True, text=True)
            last = [l for l in r.stdout.splitlines() if l.strip()][-1:] or ["(no output)"]
            print(f"nwc-conform {sub}: {last[0]} (exit {r.returncode})")
            if r.returncode != 0:
                failed_runs += 1
                print(r.stdout[-3000:] + r.stderr[-2000:])
    return 0 if tf == 0 and failed_runs == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
