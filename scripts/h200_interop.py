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

HERE = os.path.dirname(os.path.abspath(__file__))
PEER_VARIANTS = {  # name -> (elem, layout, device of the library's encoder)
    "bf16-l0": ("bf16", 0, "cuda"),
    "bf16-l1": ("bf16", 1, "cuda"),
    "fp8-l0": ("fp8", 0, "cuda"),
    "bf16-l0-cpu": ("bf16", 0, "cpu"),
}
DEVICE = os.environ.get("NWC_INTEROP_DEVICE", "cuda")  # the GPU the library decodes on
COPY_LIMIT = 15_000_000  # peer checkpoints up to this size are copied to OUT for local tests


# ---------------------------------------------------------------- safetensors without torch

def read_folder(folder):
    """All tensors of every .safetensors file in a model folder."""
    return safetensors_raw.read_folder(folder, require=True)


def tied(folder):
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            return bool(json.load(f).get("tie_word_embeddings", False))
    except (OSError, ValueError):
        return False


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
    """Runs this script as a worker in its own process (a crash in the library's native code
    then only fails that worker). The worker prints one JSON object as its last stdout line."""
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True, timeout=timeout, env=env)
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


def worker_peer_save(w):
    """Worker: a random tiny Llama, saved as the original folder, then converted and saved by the
    library (its fuse, convert and save_pretrained), then exported back by the library."""
    sys.path.insert(0, w.peer_path)
    import torch
    import nwc as peer
    from transformers import LlamaConfig, LlamaForCausalLM
    elem, layout, device = PEER_VARIANTS[w.variant]
    cpu_only = os.environ.get("NWC_INTEROP_CPU") == "1"
    if cpu_only:
        device = "cpu"
    torch.manual_seed(1234)  # the same model for every variant
    cfg = LlamaConfig(vocab_size=1003, hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=64, attention_bias=True, tie_word_embeddings=True, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.1)  # biases start at zero; make them worth comparing
            elif "norm" in name:
                p.add_(torch.randn_like(p) * 0.05)
    model = model.to(torch.bfloat16).eval()
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise RuntimeError("embedding and lm_head are not tied in this transformers version")
    orig, ck, export = (os.path.join(w.dir, x) for x in ("orig", "ck", "peer-export"))
    model.save_pretrained(orig)
    peer.fuse(model, device=device, elem=elem)
    peer.convert(model, device=device, elem=elem, verbose=False)
    config = peer.save_pretrained(model, ck, base_model="nwc-interop/tiny-llama")
    export_error = None
    if not cpu_only:
        try:  # a failing export must not hide the checkpoint from our checks
            peer.export_bf16(ck, export, device=DEVICE, verbose=False)
        except Exception as e:  # noqa: BLE001
            export_error = f"{type(e).__name__}: {e}"
    kinds = sorted({m["kind"] for m in config["modules"]})
    return {"matrices": len(config["weights"]), "kinds": kinds, "bytes": config["bytes_nwc"], "device": device, "export_error": export_error,
            "layouts": sorted({e.get("layout", 0) for e in config["weights"]})}


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


def worker_ours_load(w):
    """Worker: loads one of our checkpoints with the library on the GPU and checks it."""
    sys.path.insert(0, w.peer_path)
    if w.accel_path:
        sys.path.append(w.accel_path)
    import torch
    import nwc as peer
    from safetensors.torch import load_file
    checks = []

    def check(name, ok, detail, **extra):
        checks.append({"check": name, "pass": bool(ok), "detail": detail, **extra})

    def guarded(name, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            check(name, False, f"{type(e).__name__}: {e}")

    with open(os.path.join(w.ck, "nwc_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    stored = load_file(os.path.join(w.ck, "model.safetensors"))
    original = load_file(os.path.join(w.orig, "model.safetensors"))
    names_of = {}
    for m in config["modules"]:
        names_of.setdefault(m["weight"], []).append(m["path"] + ".weight")

    def same_bits(x, y):
        flat = lambda t: t.detach().contiguous().cpu().view(-1).view(torch.uint8)  # noqa: E731
        return x.dtype == y.dtype and x.shape == y.shape and torch.equal(flat(x), flat(y))

    def expected(entry, name):
        """What the library must decode: the original BF16 words, or for fp8 the library's own
        quantization of them (fp8 bytes and per-row scales)."""
        w = original[name].to(DEVICE)
        return (w, None) if entry.get("elem", "bf16") == "bf16" else peer.quantize_fp8(w)

    def per_matrix():
        bad, matvec, detail = [], None, []
        for e in config["weights"]:
            t = {f: stored[f"nwc/{e['id']}/{f}"] for f in ("data", "bases", "hdr", "lut", "low")}
            w = peer.NWCWeight.from_tensors(e["out"], e["in"], e["block"], t["data"], t["bases"], t["hdr"], t["lut"], t["low"], DEVICE,
                                            elem=e.get("elem", "bf16"), scale=stored.get(f"nwc/{e['id']}/scale"), layout=e.get("layout", 0))
            for name in names_of[e["id"]]:
                want, want_scale = expected(e, name)
                if want_scale is None:
                    same = same_bits(w.dequant(), want)
                else:
                    q, s = w.dequant_fp8()
                    same = same_bits(q, want) and same_bits(s.float(), want_scale.float())
                    if not same and not bad:  # say how they differ, for the first one
                        qa, qb = q.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8)
                        sa, sb = s.float().view(-1), want_scale.float().view(-1)
                        detail.append(f"{name}: {int((qa != qb).sum())} of {qa.numel()} fp8 bytes and "
                                      f"{int((sa != sb).sum())} of {sa.numel()} scales differ; max scale rel diff "
                                      f"{((sa - sb).abs() / sb.abs().clamp_min(1e-30)).max().item():.2e}; "
                                      f"first bytes ours {qa.view(-1)[:8].tolist()} library {qb.view(-1)[:8].tolist()}")
                if not same:
                    bad.append(f"{name} (id {e['id']}, {e.get('elem', 'bf16')} layout {e.get('layout', 0)})")
            if matvec is None or e["out"] * e["in"] > matvec[0]:
                matvec = (e["out"] * e["in"], e, w)
        check("dequantized matrices == originals, bit for bit", not bad,
              f"{len(config['weights'])} matrices, {sum(len(v) for v in names_of.values())} tensors" if not bad
              else "differ: " + ", ".join(bad[:5]) + "; " + "; ".join(detail))
        _, e, w = matvec
        name = names_of[e["id"]][0]
        want, want_scale = expected(e, name)
        dense = want.double() if want_scale is None else want.double() * want_scale.double()[:, None]
        x = torch.randn(e["in"], generator=torch.Generator().manual_seed(5)).to(DEVICE)
        # Layout 1's token path takes BF16 activations (format facts section 7), so the exact
        # product it approximates is the one with x rounded to BF16.
        xr = x.to(torch.bfloat16).double() if e.get("layout", 0) == 1 else x.double()
        ref = dense @ xr
        y = w.matvec(x).double()
        err = ((y - ref).abs().max() / ref.abs().max()).item()
        y16 = w.linear_bf16(x, None).double()
        err16 = ((y16 - ref).abs().max() / ref.abs().max()).item()
        # fp32 accumulation over K terms; the BF16 token path also rounds its output to BF16.
        check(f"matvec of {name} ({e['out']}x{e['in']}) vs float64", err < 1e-4 and err16 < 1e-2,
              f"max |y - y64| / max |y64|: matvec (fp32) {err:.2e}, linear_bf16 (BF16 out) {err16:.2e}", rel_err_fp32=err, rel_err_bf16=err16)

    guarded("dequantized matrices == originals, bit for bit", per_matrix)

    def export():
        out = tempfile.mkdtemp()
        peer.export_bf16(w.ck, out, device=DEVICE, verbose=False)
        got = load_file(os.path.join(out, "model.safetensors"))
        bad = []
        for name, o in original.items():
            entry = next((e for e in config["weights"] if name in names_of.get(e["id"], [])), None)
            if name not in got:
                if name == "lm_head.weight" and tied(w.ck) and "model.embed_tokens.weight" in got:
                    continue  # the library writes a tied lm_head once, as the embedding
                bad.append(f"{name} missing")
                continue
            if entry is not None and entry.get("elem") == "fp8":
                q, s = expected(entry, name)
                o = (q.float() * s[:, None]).to(torch.bfloat16).cpu()  # what the library's export computes
            if not same_bits(got[name], o):
                bad.append(name)
        check("library's export_bf16 == originals", not bad, f"{len(got)} tensors" if not bad else "differ: " + ", ".join(bad[:5]))
        shutil.rmtree(out, ignore_errors=True)

    guarded("library's export_bf16 == originals", export)

    def as_model():
        with open(os.path.join(w.ck, "config.json"), encoding="utf-8") as f:
            if json.load(f).get("model_type") != "llama":
                return  # only causal LMs load with load_pretrained
        try:
            import accelerate  # noqa: F401 - load_pretrained needs it
        except ImportError as e:
            check("load_pretrained + forward", False, f"accelerate not importable: {e}")
            return
        from transformers import AutoModelForCausalLM
        model = peer.load_pretrained(w.ck, device=DEVICE, verbose=False)
        ref = AutoModelForCausalLM.from_pretrained(w.orig, dtype=torch.bfloat16).to(DEVICE).eval()
        ids = torch.tensor([[1, 17, 42, 99, 5, 200, 7, 31]], device=DEVICE) % ref.config.vocab_size
        with torch.no_grad():
            a, b = model(ids).logits.float(), ref(ids).logits.float()
            step_a, step_b = model(ids[:, :1]).logits.float(), ref(ids[:, :1]).logits.float()  # 1 token: the fused kernel
        rel = ((a - b).abs().max() / b.abs().max()).item()
        rel1 = ((step_a - step_b).abs().max() / step_b.abs().max()).item()
        lossless = all(e.get("elem", "bf16") == "bf16" for e in config["weights"])
        limit = 2e-2 if lossless else 0.25  # fp8 is lossy: only a sanity bound
        check("load_pretrained + forward vs transformers on the originals", rel < limit and rel1 < limit,
              f"logits max rel diff: prefill (8 tokens) {rel:.2e} (identical: {torch.equal(a, b)}), 1 token {rel1:.2e}; argmax agree {bool((a.argmax(-1) == b.argmax(-1)).all())}",
              rel_prefill=rel, rel_token=rel1)

    guarded("load_pretrained + forward vs transformers on the originals", as_model)
    return {"checks": checks}


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


def worker_main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role")
    ap.add_argument("--variant")
    ap.add_argument("--dir")
    ap.add_argument("--ck")
    ap.add_argument("--orig")
    ap.add_argument("--peer-path")
    ap.add_argument("--accel-path", default="")
    w = ap.parse_args()
    result = worker_peer_save(w) if w.role == "_peer_save" else worker_ours_load(w)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        worker_main()
    else:
        sys.exit(main())
