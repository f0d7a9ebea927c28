#!/usr/bin/env python3
"""The workers of scripts/h200_interop.py, each run in its own process by its `run_worker` (a crash
in the 0.10.1 library's native code then fails only that worker). Each prints one JSON object as
its last stdout line.

  _peer_save  a random tiny Llama saved by the library (PEER -> OURS)
  _ours_load  one of our checkpoints loaded and checked by the library on the GPU (OURS -> PEER)

torch, transformers and the library are imported inside the workers only, so h200_interop.py
imports this module (for its variants) where torch is missing (`--dry-run`).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

PEER_VARIANTS = {  # name -> (elem, layout, device of the library's encoder)
    "bf16-l0": ("bf16", 0, "cuda"),
    "bf16-l1": ("bf16", 1, "cuda"),
    "fp8-l0": ("fp8", 0, "cuda"),
    "bf16-l0-cpu": ("bf16", 0, "cpu"),
}
DEVICE = os.environ.get("NWC_INTEROP_DEVICE", "cuda")  # the GPU the library decodes on


def tied(folder):
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            return bool(json.load(f).get("tie_word_embeddings", False))
    except (OSError, ValueError):
        return False


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
    worker_main()
