#!/usr/bin/env python3
"""Peer compatibility of today's streaming writer and reader (`nwc compress`, `nwc decompress`)
with the 0.10.1 library (PyPI neural-weight-compression), both ways, in one short run.

    python3 scripts/peer_load_check.py --peer PEER --nwc NWC --out OUT [--device cuda|cpu]

PEER: the 0.10.1 wheel (.whl) or the folder it was extracted to (holding nwc/); NWC: our `nwc`
binary; OUT: results (peer_load_check.json, peer_load_check.md). Needs python3 with numpy, torch
and safetensors; --device cuda (default when torch sees a GPU) runs the library's GPU decoder.

OURS -> PEER  Originals made here (one safetensors file with a hand-written header: spaces, its
              own key order, tensors stored out of name order; BF16 matrices of ragged shapes,
              NaN/Inf/subnormal words and escapes, a BF16 bias, an F32 and an I64 tensor) are
              compressed by `nwc compress` (BF16 layout 0, BF16 layout 1, fp8 layout 0) and read
              the way the library's own loader reads a checkpoint: its config check, the
              safetensors library's `load_file`, `NWCWeight.from_tensors` for every weights entry.
              On a GPU, every matrix the library decodes (`dequant`, fp8 times its scales) must
              equal our `nwc decompress` output bit for bit (BF16: the originals), and so must
              the library's `export_bf16` of the whole checkpoint.
PEER -> OURS  The library encodes BF16 matrices (layouts 0 and 1, and fp8 from BF16) with its
              own `NWCWeight` and writes a checkpoint with its `save_pretrained`; `nwc verify`
              and `nwc decompress` must read it and give the originals back bit for bit (fp8:
              the library's own quantization, scaled back as spec 17.3 says).

Without a GPU the library cannot decode (its decoder is CUDA only): the OURS -> PEER checks stop
after `from_tensors` and are reported as such; PEER -> OURS runs in full (the library's encoder
runs on the host). Exit status 0 only if every check passed. Our own code: it uses the library
only through its public Python API.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import types
import zipfile

import numpy as np

from safetensors_raw import read_folder, read_safetensors

# fp8 refuses non-finite weights (spec 11.3): the matrix with NaN and Inf words stays BF16 there (copied).
VARIANTS = {"bf16-l0": [], "bf16-l1": ["--layout", "1"], "fp8-l0": ["--elem", "fp8", "--exclude", "*.odd.weight"]}
DTYPES = {"BF16": (np.uint16, 2), "F32": (np.float32, 4), "I64": (np.int64, 8), "U8": (np.uint8, 1), "I8": (np.int8, 1),
          "I32": (np.int32, 4), "F16": (np.float16, 2)}


class Report:
    def __init__(self):
        self.checks = []

    def add(self, direction, name, ok, detail=""):
        self.checks.append({"direction": direction, "check": name, "pass": bool(ok), "detail": str(detail)[:400]})
        print(f"{'PASS' if ok else 'FAIL'}  {direction}  {name}  {detail if not ok else ''}".rstrip(), flush=True)
        return ok

    def guard(self, direction, name, fn):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - every failure is a recorded check, never a stop
            self.add(direction, name, False, f"{type(e).__name__}: {e}")
            return None


# ------------------------------------------------------------------ safetensors by hand

def write_safetensors(path, tensors, header_text=None):
    """tensors: list of (name, dtype, shape, bytes), stored in that order. header_text(entries)
    may format the JSON itself (hand-written style)."""
    entries, offset = {}, 0
    for name, dtype, shape, data in tensors:
        entries[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = header_text(entries) if header_text else json.dumps(entries, separators=(",", ":"))
    raw = text.encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for _, _, _, data in tensors:
            f.write(data)


def compare(expected, got, names=None):
    """Problems (a list of strings) between two name -> (dtype, shape, bytes) maps."""
    problems = []
    for name in sorted(names if names is not None else set(expected) | set(got)):
        if name not in expected or name not in got:
            problems.append(f"{name}: only in {'expected' if name in expected else 'got'}")
        elif expected[name] != got[name]:
            (d1, s1, b1), (d2, s2, b2) = expected[name], got[name]
            if (d1, s1) != (d2, s2):
                problems.append(f"{name}: {d1}{list(s1)} vs {d2}{list(s2)}")
            else:
                i = next(i for i in range(len(b1)) if b1[i] != b2[i])
                problems.append(f"{name}: first byte difference at {i}")
    return problems


# ------------------------------------------------------------------ originals

def bf16_words(rng, rows, cols, std=0.02):
    x = (rng.standard_normal((rows, cols)) * std).astype(np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation is fine: any BF16 word is a weight


def make_original(folder, seed=7):
    """One hand-written safetensors file plus config.json (the library's export reads it)."""
    rng = np.random.default_rng(seed)
    odd = bf16_words(rng, 40, 520)
    specials = np.array([0x7FC0, 0xFFC1, 0x7F80, 0xFF80, 0x0001, 0x8001, 0x0000, 0x8000, 0x7F7F, 0x0080], dtype=np.uint16)
    odd.flat[rng.choice(odd.size, 400, replace=False)] = np.resize(specials, 400)
    heavy = bf16_words(rng, 24, 512, std=1.0)
    heavy.flat[::7] = (rng.integers(1, 255, heavy.size)[::7] << 7).astype(np.uint16)  # exponents all over: escapes
    t = [
        ("model.layers.0.mlp.down_proj.weight", "BF16", (136, 700), bf16_words(rng, 136, 700).tobytes()),
        ("model.norm.weight", "F32", (512,), rng.standard_normal(512).astype(np.float32).tobytes()),
        ("model.embed_tokens.weight", "BF16", (300, 512), bf16_words(rng, 300, 512).tobytes()),
        ("model.layers.0.self_attn.q_proj.bias", "BF16", (64,), bf16_words(rng, 1, 64).tobytes()),
        ("model.layers.0.self_attn.q_proj.weight", "BF16", (64, 512), bf16_words(rng, 64, 512).tobytes()),
        ("model.layers.0.mlp.up_proj.weight", "BF16", (700, 136), bf16_words(rng, 700, 136).tobytes()),
        ("model.layers.0.odd.weight", "BF16", (40, 520), odd.tobytes()),
        ("model.layers.0.heavy.weight", "BF16", (24, 512), heavy.tobytes()),
        ("model.tiny.weight", "BF16", (3, 5), bf16_words(rng, 3, 5).tobytes()),
        ("position_ids", "I64", (1, 16), np.arange(16, dtype=np.int64).tobytes()),
    ]

    def hand(entries):  # spaces, metadata last, key order as stored: not what a library writes
        body = ", ".join(f'"{k}" : {{"dtype":"{e["dtype"]}", "shape": {e["shape"]}, "data_offsets":{e["data_offsets"]}}}'
                         for k, e in entries.items())
        return "{ " + body + ', "__metadata__": {"format": "pt", "source": "peer_load_check"} }   '

    os.makedirs(folder)
    write_safetensors(os.path.join(folder, "model.safetensors"), t, hand)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"tie_word_embeddings": False, "note": "peer_load_check original"}, f)


def run_nwc(nwc, *args):
    p = subprocess.run([nwc, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, (p.stdout + p.stderr).strip()


def sha256(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ------------------------------------------------------------------ OURS -> PEER

def to_np(t):
    import torch
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
    return t.contiguous().cpu().numpy()


def ours_to_peer(rep, peer, nwc, work, device):
    import torch
    from safetensors.torch import load_file
    orig = os.path.join(work, "orig")
    make_original(orig)
    for variant, flags in VARIANTS.items():
        d = f"ours->peer {variant}"
        ck, dec = os.path.join(work, f"ck-{variant}"), os.path.join(work, f"dec-{variant}")
        code, text = run_nwc(nwc, "compress", orig, ck, *flags)
        if not rep.add(d, "nwc compress", code == 0, text):
            continue
        code, text = run_nwc(nwc, "verify", ck, "--against", orig)
        rep.add(d, "nwc verify --against (files and tensors)", code == 0, text.splitlines()[-1] if text else "")
        code, text = run_nwc(nwc, "decompress", ck, dec)
        rep.add(d, "nwc decompress", code == 0, text)
        if variant != "fp8-l0":
            same = sha256(os.path.join(orig, "model.safetensors")) == sha256(os.path.join(dec, "model.safetensors"))
            rep.add(d, "decompressed file has the original's SHA-256 (spec 17.12)", same)
        with open(os.path.join(ck, "nwc_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        rep.add(d, "library_version accepted by the library", config.get("library_version") in peer.checkpoint.COMPATIBLE,
                config.get("library_version"))
        tensors = rep.guard(d, "safetensors load_file of model.safetensors", lambda: load_file(os.path.join(ck, "model.safetensors")))
        if tensors is None:
            continue
        rep.add(d, "safetensors load_file of model.safetensors", True, f"{len(tensors)} tensors")
        expected = read_folder(dec)
        records = {r["name"]: r for r in config.get("nwc_rs", {}).get("tensors", [])}
        for e in config["weights"]:
            name = f"matrix {e['id']} ({e['out']}x{e['in']} {e.get('elem', 'bf16')} L{e.get('layout', 0)})"

            def load(e=e):
                t = {n: tensors[f"nwc/{e['id']}/{n}"] for n in ("data", "bases", "hdr", "lut", "low")}
                return peer.NWCWeight.from_tensors(e["out"], e["in"], e["block"], t["data"], t["bases"], t["hdr"], t["lut"], t["low"],
                                                   device, elem=e.get("elem", "bf16"), scale=tensors.get(f"nwc/{e['id']}/scale"),
                                                   layout=e.get("layout", 0))
            w = rep.guard(d, f"{name}: NWCWeight.from_tensors", load)
            if w is None or device != "cuda":
                if w is not None:
                    rep.add(d, f"{name}: NWCWeight.from_tensors on {device} (no GPU: the library cannot decode here)", True)
                continue

            def decoded(w=w):
                full = w.dequant()
                if w.scale is not None:
                    full = (full.float() * w.scale[:, None]).to(torch.bfloat16)
                return to_np(full)
            got = rep.guard(d, f"{name}: library dequant", decoded)
            if got is None:
                continue
            users = [n for n, r in records.items() if r.get("matrix") == e["id"]]
            problems = []
            for n in users:
                want = np.frombuffer(expected[n][2], dtype=np.uint16).reshape(expected[n][1])
                if got.shape != want.shape or not np.array_equal(got, want):
                    problems.append(n)
            rep.add(d, f"{name}: library dequant == nwc decompress, bit for bit ({', '.join(users)})", users and not problems, problems)
        if device == "cuda":
            out = os.path.join(work, f"peer-export-{variant}")
            if rep.guard(d, "library export_bf16", lambda: peer.export_bf16(ck, out, device=device, verbose=False)) is not None:
                problems = compare(expected, read_folder(out))
                rep.add(d, "library export_bf16 == nwc decompress, tensor for tensor", not problems, "; ".join(problems[:4]))


# ------------------------------------------------------------------ PEER -> OURS

def peer_to_ours(rep, peer, nwc, work, device):
    import torch
    import torch.nn as nn
    torch.manual_seed(99)
    shapes = [("a", 64, 512), ("b", 128, 1024), ("c", 40, 520), ("d", 3, 5)]
    for elem, layout in (("bf16", 0), ("bf16", 1), ("fp8", 0)):
        d = f"peer->ours {elem}-l{layout}"
        ck, dec, orig = (os.path.join(work, f"{x}-peer-{elem}-l{layout}") for x in ("ck", "dec", "orig"))
        model = nn.Module()
        originals, expected = [], {}
        for name, rows, cols in shapes:
            wt = (torch.randn(rows, cols) * 0.02).to(torch.bfloat16)
            if name == "c":
                wt.view(torch.int16)[0, :4] = torch.tensor([0x7FC0, 0x7F80, 0x0001, -32768], dtype=torch.int16)  # NaN, Inf, subnormal, -0
            bias = (torch.randn(rows) * 0.1).to(torch.bfloat16) if name == "a" else None
            if elem == "fp8" and name == "c":
                wt.view(torch.int16)[0, :4] = 0  # the library refuses NaN/Inf for fp8 (spec 11.3)
            originals.append((f"{name}.weight", "BF16", (rows, cols), to_np(wt).tobytes()))
            if bias is not None:
                originals.append((f"{name}.bias", "BF16", (rows,), to_np(bias).tobytes()))
            nw = rep.guard(d, f"library encodes {name} {rows}x{cols}", lambda wt=wt: peer.NWCWeight(wt, device, elem=elem, layout=layout))
            if nw is None:
                break
            if elem == "fp8":  # what spec 17.3 says the matrix decompresses to: the library's fp8 values times its scales
                q, s = peer.quantize_fp8(wt)
                expected[f"{name}.weight"] = ("BF16", (rows, cols), to_np((q.float() * s[:, None].float()).to(torch.bfloat16)).tobytes())
            setattr(model, name, peer.NWCLinear(w=nw, bias=bias, device=device))
        else:
            os.makedirs(orig)
            write_safetensors(os.path.join(orig, "model.safetensors"), originals)

            def save_config(path):
                with open(os.path.join(path, "config.json"), "w") as f:
                    json.dump({"tie_word_embeddings": False}, f)
            model.config = types.SimpleNamespace(save_pretrained=save_config)
            if rep.guard(d, "library save_pretrained", lambda: peer.save_pretrained(model, ck, base_model="peer_load_check")) is None:
                continue
            rep.add(d, "library save_pretrained", True, f"{len(shapes)} matrices")
            code, text = run_nwc(nwc, "verify", ck)
            rep.add(d, "nwc verify", code == 0, text.splitlines()[-1] if text else "")
            code, text = run_nwc(nwc, "decompress", ck, dec)
            if not rep.add(d, "nwc decompress", code == 0, text):
                continue
            got = read_folder(dec)
            want = read_safetensors(os.path.join(orig, "model.safetensors"))
            want.update(expected)
            problems = compare(want, got)
            what = "the library's quantization scaled back (spec 17.3)" if elem == "fp8" else "the originals"
            rep.add(d, f"nwc decompress == {what}, bit for bit", not problems, "; ".join(problems[:4]))
            if elem == "bf16":
                code, text = run_nwc(nwc, "verify", ck, "--against", os.path.join(orig, "model.safetensors"))
                rep.add(d, "nwc verify --against the originals", code == 0, text.splitlines()[-1] if text else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", required=True, help="the 0.10.1 wheel or the folder it was extracted to")
    ap.add_argument("--nwc", required=True, help="our nwc binary")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="peer-load-check-")
    peer_path = a.peer
    if a.peer.endswith(".whl"):
        peer_path = os.path.join(work, "peer")
        zipfile.ZipFile(a.peer).extractall(peer_path)
    sys.path.insert(0, os.path.abspath(peer_path))
    import torch
    import nwc as peer
    import nwc.checkpoint  # noqa: F401 - the loader's config check (COMPATIBLE)
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    rep = Report()
    t0 = time.time()
    code, version = run_nwc(a.nwc, "--version")
    print(f"peer {peer.__version__} from {peer_path}; ours: {version}; torch {torch.__version__}; device {device}", flush=True)
    ours_to_peer(rep, peer, a.nwc, work, device)
    peer_to_ours(rep, peer, a.nwc, work, device)
    passed = sum(c["pass"] for c in rep.checks)
    failed = len(rep.checks) - passed
    summary = f"{passed} checks passed, {failed} failed ({time.time() - t0:.0f} s, device {device}, peer {peer.__version__}, {version})"
    with open(os.path.join(a.out, "peer_load_check.json"), "w") as f:
        json.dump({"summary": summary, "device": device, "checks": rep.checks}, f, indent=1)
    with open(os.path.join(a.out, "peer_load_check.md"), "w") as f:
        f.write(f"{summary}\n\n| direction | check | result | detail |\n|---|---|---|---|\n")
        for c in rep.checks:
            f.write(f"| {c['direction']} | {c['check']} | {'PASS' if c['pass'] else 'FAIL'} | {c['detail'].replace('|', '/')} |\n")
    print(summary)
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()
