#!/usr/bin/env python3
"""Interop with the 0.10.1 library (PyPI neural-weight-compression), both ways, on a CUDA machine.

Run through scripts/h200-interop.sh. Needs python3 with torch (CUDA) and transformers; the peer
wheel, the artifacts made by scripts/make-interop-artifacts.sh and our `nwc` binary are carried in.

PEER -> OURS  The library builds NWC checkpoints of a small random Llama (fused q/k/v and gate/up
              with biases, tied embedding) with its own save function: BF16 layout 0 and 1, fp8,
              and BF16 with the library on the CPU. Our `nwc verify --against` and `nwc decompress`
              must give the original tensors back bit for bit (fp8: what the library's own export
              gives).
OURS -> PEER  Checkpoints written by our `nwc compress` (artifacts ck-*) are loaded by the library on
              the GPU: every matrix's dequantized weights must equal the original BF16 tensors bit
              for bit (fp8: the library's own quantization of them), its export function must write
              the originals back, a matvec is compared with a float64 product, and the Llama
              checkpoints are loaded as models with its load function and run.

The library's side of each direction runs in worker processes (scripts/h200_interop_worker.py).
Every check is recorded as PASS or FAIL with details; one failing step never stops the others.
Results: OUT/interop-results.json and a summary on stdout; the exit status is 0 only if all passed.
`--dry-run` runs everything that needs neither torch nor a GPU (our binary on the artifacts, the
safetensors comparisons, the wheel's contents). `--cpu` (torch and transformers installed, no GPU)
also runs PEER -> OURS with the library on the CPU, without its export (which decodes on a GPU).
These are how this script is tested without a GPU.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import safetensors_raw
from h200_interop_worker import PEER_VARIANTS

HERE = os.path.dirname(os.path.abspath(__file__))
COPY_LIMIT = 15_000_000  # peer checkpoints up to this size are copied to OUT for local tests


# ---------------------------------------------------------------- safetensors without torch

def read_folder(folder):
    """All tensors of every .safetensors file in a model folder."""
    return safetensors_raw.read_folder(folder, require=True)


def compare_tensors(expected, got, tie_pairs=()):
    """Compares two name -> (dtype, shape, bytes) maps. A name in `tie_pairs` (missing -> present)
    may be missing on one side if its partner holds the same bytes. Returns a list of problems."""
    problems = []
    for name in sorted(set(expected) | set(got)):
        if name in expected and name in got:
            a, b = expected[name], got[name]
            if a[0] != b[0] or a[1] != b[1]:
                problems.append(f"{name}: {a[0]}{list(a[1])} expected, got {b[0]}{list(b[1])}")
            elif a[2] != b[2]:
                diff = next(i for i, (x, y) in enumerate(zip(a[2], b[2])) if x != y)
                problems.append(f"{name}: bytes differ (first at byte {diff})")
            continue
        side, other = (expected, got) if name in expected else (got, expected)
        partner = dict(tie_pairs).get(name)
        if partner and partner in other and side[name] == other[partner]:
            continue  # tied: written once on the other side, identical bytes
        problems.append(f"{name}: only in the {'expected' if side is expected else 'produced'} tensors")
    return problems


# ---------------------------------------------------------------- running things

class Report:
    def __init__(self, out):
        self.out, self.checks = out, []

    def add(self, direction, name, ok, detail="", **extra):
        rec = {"direction": direction, "check": name, "pass": bool(ok), "detail": detail, **extra}
        self.checks.append(rec)
        print(f"{'PASS' if ok else 'FAIL'}  {direction:<12} {name}: {detail}", flush=True)
        self.write()  # after every check, so a run cut short still leaves its results
        return ok

    def guard(self, direction, name, fn):
        """Runs fn(); an exception becomes a FAIL of that step, never the end of the run."""
        t0 = time.time()
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, none is fatal
            self.add(direction, name, False, f"{type(e).__name__}: {e}", seconds=round(time.time() - t0, 2))
            return None

    def write(self):
        passed = sum(c["pass"] for c in self.checks)
        summary = {"passed": passed, "failed": len(self.checks) - passed, "checks": self.checks}
        with open(os.path.join(self.out, "interop-results.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
        return summary


def run_nwc(nwc, *args, timeout=120):
    p = subprocess.run([nwc, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()


def run_worker(args, env_extra=None, timeout=100):
    """Runs a worker of h200_interop_worker.py in its own process (a crash in the library's native
    code then only fails that worker). The worker prints one JSON object as its last stdout line."""
    env = dict(os.environ, **(env_extra or {}))
    worker = os.path.join(HERE, "h200_interop_worker.py")
    p = subprocess.run([sys.executable, worker, *args], capture_output=True, text=True, timeout=timeout, env=env)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stdout + p.stderr).strip().splitlines()[-15:]
        raise RuntimeError(f"worker {args[0]} exited {p.returncode}: " + " | ".join(tail))
    return json.loads(lines[-1])


def install_wheels(wheels, target):
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--target", target, *wheels], check=True, capture_output=True, text=True)


# ---------------------------------------------------------------- PEER -> OURS

def peer_direction(rep, a, peer_path):
    for variant in PEER_VARIANTS:
        d = os.path.join(a.work, "peer", variant)
        env = {"NWC_LAYOUT": str(PEER_VARIANTS[variant][1]), "NWC_INTEROP_CPU": "1" if a.cpu else ""}
        made = rep.guard("peer->ours", f"{variant}: library saves a checkpoint", lambda: run_worker(["_peer_save", "--variant", variant, "--dir", d, "--peer-path", peer_path], env))
        if not made:
            continue
        rep.add("peer->ours", f"{variant}: library saves a checkpoint", True, f"{made['matrices']} matrices, modules {made['kinds']}, {made['bytes']} bytes, library device {made['device']}")
        if made.get("export_error"):
            rep.add("peer->ours", f"{variant}: library exports its checkpoint", False, made["export_error"])
        rep.guard("peer->ours", f"{variant}: ours reads it", lambda: check_peer_checkpoint(rep, a, variant, d))


def check_peer_checkpoint(rep, a, variant, d):
    ck, orig, export = (os.path.join(d, x) for x in ("ck", "orig", "peer-export"))
    lossless = PEER_VARIANTS[variant][0] == "bf16"
    args = ["verify", ck, "--against", orig] if lossless else ["verify", ck]
    code, text = run_nwc(a.nwc, *args)
    rep.add("peer->ours", f"{variant}: nwc {' '.join(args[:1] + args[2:3])}", code == 0, text.splitlines()[-1] if text else "")
    code, text = run_nwc(a.nwc, "inspect", ck)
    rep.add("peer->ours", f"{variant}: nwc inspect", code == 0, text.splitlines()[-1] if text else "", table=text)
    out2 = os.path.join(d, "ours-decompressed")
    code, text = run_nwc(a.nwc, "decompress", ck, out2)
    if not rep.add("peer->ours", f"{variant}: nwc decompress", code == 0, text):
        return
    pairs = [("lm_head.weight", "model.embed_tokens.weight")]
    got = read_folder(out2)
    if lossless:
        problems = compare_tensors(read_folder(orig), got, pairs)
        rep.add("peer->ours", f"{variant}: decompressed == original, bit for bit", not problems, f"{len(got)} tensors" if not problems else "; ".join(problems[:5]))
    # The library's own export of its checkpoint (for fp8 the only reference: scaled fp8 -> BF16);
    # there is none with --cpu (the library decodes on the GPU).
    if not a.cpu and not os.path.isdir(export):
        rep.add("peer->ours", f"{variant}: library's export_bf16 of its own checkpoint", False, "no export (see the save step)")
    elif not a.cpu:
        problems = compare_tensors(read_folder(export), got, pairs)
        rep.add("peer->ours", f"{variant}: decompressed == library's export_bf16", not problems, f"{len(got)} tensors" if not problems else "; ".join(problems[:5]))
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ck) for f in fs)
    if size <= COPY_LIMIT:
        dst = os.path.join(a.out, "peer-checkpoints", variant)
        for x in ("ck", "orig", "peer-export"):
            if os.path.isdir(os.path.join(d, x)):
                shutil.copytree(os.path.join(d, x), os.path.join(dst, x))
        rep.add("peer->ours", f"{variant}: copied for local tests", True, f"{size} bytes -> {dst}")


# ---------------------------------------------------------------- OURS -> PEER

def ours_direction(rep, a, peer_path, accel_path):
    cks = sorted(x for x in os.listdir(a.artifacts) if x.startswith("ck-"))
    if not cks:
        rep.add("ours->peer", "artifacts", False, f"no ck-* folders in {a.artifacts}")
    for ck in cks:
        model = ck.split("-")[1]
        orig = os.path.join(a.artifacts, f"orig-{model}")
        ckp = os.path.join(a.artifacts, ck)
        # Our own reading of our artifact first (so a failure below is known to be on the library's side).
        code, text = run_nwc(a.nwc, "verify", ckp, "--against", orig)
        rep.add("ours->peer", f"{ck}: nwc verify --against (this machine)", code == 0, text.splitlines()[-1] if text else "")
        if a.dry_run or a.cpu:
            continue
        res = rep.guard("ours->peer", f"{ck}: library loads it", lambda: run_worker(["_ours_load", "--ck", ckp, "--orig", orig, "--peer-path", peer_path, "--accel-path", accel_path or ""]))
        for c in (res or {}).get("checks", []):
            rep.add("ours->peer", f"{ck}: {c['check']}", c["pass"], c["detail"], **{k: v for k, v in c.items() if k not in ("check", "pass", "detail")})


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer-wheel", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nwc", default="target/release/nwc")
    ap.add_argument("--dry-run", action="store_true", help="no torch, no GPU: our side only")
    ap.add_argument("--cpu", action="store_true", help="torch but no GPU: the library saves on the CPU; nothing that decodes on a GPU")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    a.work = tempfile.mkdtemp(prefix="nwc-interop-")
    rep = Report(a.out)
    t0 = time.time()
    peer_path = os.path.join(a.work, "peer")

    def install_peer():
        with zipfile.ZipFile(a.peer_wheel) as z:
            names = set(z.namelist())
        missing = {"nwc/checkpoint.py", "nwc/nwc_torch.py", "nwc/lib/nwc_ops.so"} - names
        if missing:
            raise RuntimeError(f"wheel lacks {sorted(missing)}")
        install_wheels([a.peer_wheel], peer_path)
        return True

    installed = rep.guard("setup", "peer wheel installs", install_peer)
    if installed:
        rep.add("setup", "peer wheel installs", True, f"{os.path.basename(a.peer_wheel)} -> {peer_path}")
    accel_path = None
    if not a.dry_run and not a.cpu:
        try:
            import accelerate  # noqa: F401
        except ImportError:
            wheels = [os.path.join(a.artifacts, "wheels", f) for f in sorted(os.listdir(os.path.join(a.artifacts, "wheels")))] if os.path.isdir(os.path.join(a.artifacts, "wheels")) else []
            accel_path = os.path.join(a.work, "accelerate")
            rep.guard("setup", "accelerate from the artifacts", lambda: install_wheels(wheels, accel_path))
    if installed and not a.dry_run:
        rep.guard("peer->ours", "direction", lambda: peer_direction(rep, a, peer_path))
    rep.guard("ours->peer", "direction", lambda: ours_direction(rep, a, peer_path, accel_path))
    if a.dry_run or a.cpu:
        rep.guard("self-test", "comparisons", lambda: self_test(rep, a))
    s = rep.write()
    print(f"\n== interop summary: {s['passed']} passed, {s['failed']} failed ({time.time() - t0:.0f} s); details in {a.out}/interop-results.json")
    shutil.rmtree(a.work, ignore_errors=True)
    return 0 if s["failed"] == 0 and s["passed"] > 0 else 1


def self_test(rep, a):
    """Dry run: our decompression of each artifact against its original, through the same
    comparison code the GPU run uses, and that the comparison catches a flipped bit."""
    for ck in sorted(x for x in os.listdir(a.artifacts) if x.startswith("ck-") and "fp8" not in x):
        out = os.path.join(a.work, "dry", ck)
        os.makedirs(os.path.dirname(out), exist_ok=True)  # `nwc decompress` makes the folder, not its parent
        code, text = run_nwc(a.nwc, "decompress", os.path.join(a.artifacts, ck), out)
        orig = read_folder(os.path.join(a.artifacts, f"orig-{ck.split('-')[1]}"))
        problems = compare_tensors(orig, read_folder(out)) if code == 0 else [text]
        rep.add("self-test", f"{ck}: decompressed == original (dry run)", not problems, "; ".join(problems[:3]) or f"{len(orig)} tensors")
    orig = read_folder(os.path.join(a.artifacts, "orig-llama"))
    flipped = dict(orig)
    dtype, shape, data = flipped["model.norm.weight"]
    flipped["model.norm.weight"] = (dtype, shape, bytes([data[0] ^ 1]) + data[1:])
    del flipped["lm_head.weight"]
    problems = compare_tensors(orig, flipped, [("lm_head.weight", "model.embed_tokens.weight")])
    rep.add("self-test", "a flipped bit is caught, a tied lm_head is accepted", problems == ["model.norm.weight: bytes differ (first at byte 0)"], "; ".join(problems))


if __name__ == "__main__":
    sys.exit(main())
