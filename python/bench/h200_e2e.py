"""End-to-end proof on a GPU: the nwc wheel inside real transformers models.

Part A (SmolLM2, real weights): the carried NWC checkpoint is decompressed with nwc.decompress
(the BF16 reference model), compressed again with nwc.compress, loaded with
nwc.torch.load_checkpoint, and both models greedy-generate 64 tokens for 8 prompts; reports the
tokens that match and, where a prompt's tokens differ, the logit margin (top-1 minus top-2 of the
BF16 model) at the first difference.

Part B (Qwen3-8B shapes, transformers' random initialisation, no download): decode tokens/s at
batch 1 and 8, BF16 vs NWC format 10 (nwc.torch.convert), eager and with CUDA graphs where they
can be captured, and the VRAM of the weights; then the 0.10.1 library's convert on the same model
in this process under the name nwc_peer (its package is also named `nwc`).

Usage: python3 h200_e2e.py --smollm2 CKPT --out DIR [--peer-site DIR] [--budget-s S]
"""

import argparse
import json
import os
import sys
import time

import torch

T0 = time.time()
LOG = []


RESULTS = {}
OUT = ["."]


def save():
    """results.json as it stands (written after every row, so a run cut short keeps its rows)."""
    with open(os.path.join(OUT[0], "results.json"), "w") as f:
        json.dump(RESULTS, f, indent=1)


def say(*a):
    line = " ".join(str(x) for x in a)
    print(f"[{time.time() - T0:6.1f}s] {line}", flush=True)
    LOG.append(line)


def greedy(model, ids, steps):
    """Greedy decoding with the KV cache; returns (tokens, per-step logits as f32 on the CPU)."""
    out = model(input_ids=ids, use_cache=True)
    past, logits, toks = out.past_key_values, [], []
    for _ in range(steps):
        last = out.logits[:, -1].float()
        logits.append(last[0].cpu())
        tok = last.argmax(-1, keepdim=True)
        toks.append(int(tok))
        out = model(input_ids=tok, past_key_values=past, use_cache=True)
        past = out.past_key_values
    return toks, logits


def part_a(args, results):
    import nwc
    import nwc.torch as nt
    import transformers

    src = args.smollm2
    bf16_dir, nwc_dir = "/tmp/smol-bf16", "/tmp/smol-nwc"
    t = time.time()
    nwc.decompress(src, bf16_dir)
    rep = nwc.verify(src, against=bf16_dir)
    say("decompress + verify", f"{time.time() - t:.1f}s", rep["matrices"], "matrices,", len(rep["mismatches"]), "mismatches")
    seen = []
    t = time.time()
    s = nwc.compress(bf16_dir, nwc_dir, progress=seen.append)
    say("nwc.compress", s, f"{time.time() - t:.1f}s", "progress calls", len(seen))
    rows = nwc.inspect(nwc_dir)
    say("inspect:", len(rows), "matrices, ratio", round(sum(r["bytes"] for r in rows) / sum(2 * r["rows"] * r["cols"] for r in rows), 4))
    cfg = json.load(open(os.path.join(bf16_dir, "config.json")))
    dev = torch.device("cuda")
    ref = transformers.AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).to(dev).eval()
    t = time.time()
    model = nt.load_checkpoint(nwc_dir).eval()
    say("load_checkpoint", f"{time.time() - t:.1f}s", type(model.lm_head).__name__, type(model.model.embed_tokens).__name__,
        "shared head:", model.lm_head.weight_nwc is model.model.embed_tokens.weight_nwc)
    g = torch.Generator().manual_seed(1)
    vocab = cfg["vocab_size"]
    prompts = [torch.randint(3, vocab, (1, 6 + 3 * i), generator=g) for i in range(8)]
    table = []
    with torch.no_grad():
        for i, p in enumerate(prompts):
            ids = p.to(dev)
            a, la = greedy(ref, ids, 64)
            b, lb = greedy(model, ids, 64)
            same = sum(x == y for x, y in zip(a, b))
            first = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
            row = dict(prompt=i, prompt_len=p.shape[1], matching=same, of=64, first_difference=first)
            if first is not None:
                top = la[first].topk(2)
                row["bf16_margin"] = float(top.values[0] - top.values[1])
                tb = lb[first].topk(2)
                row["nwc_margin"] = float(tb.values[0] - tb.values[1])
                row["bf16_top2"] = [int(x) for x in top.indices]
                row["nwc_top2"] = [int(x) for x in tb.indices]
            # logits of the first step side by side (same input for both: the prompt)
            row["step0_max_abs_logit_diff"] = float((la[0] - lb[0]).abs().max())
            table.append(row)
            say("prompt", json.dumps(row))
    results["smollm2"] = dict(config=dict(layers=cfg["num_hidden_layers"], vocab=vocab), compress=s, prompts=table,
                              matching=sum(r["matching"] for r in table), total=64 * len(table))
    del ref, model
    torch.cuda.empty_cache()


QWEN3_8B = dict(
    architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=4096, intermediate_size=12288,
    num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936,
    max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0, hidden_act="silu",
    attention_bias=False, tie_word_embeddings=False, torch_dtype="bfloat16", bos_token_id=151643,
    eos_token_id=151645,
)


def qwen3(layers=None):
    import transformers

    d = dict(QWEN3_8B)
    if layers:
        d["num_hidden_layers"] = layers
    cfg = transformers.Qwen3Config(**{k: v for k, v in d.items() if k not in ("architectures", "model_type")})
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    return model.eval()


def decode_rate(model, batch, steps=32, prompt=16):
    """Eager decode: tokens/s over `steps` greedy steps after a prompt (median of 3)."""
    ids = torch.randint(0, 1000, (batch, prompt), device="cuda")
    rates = []
    with torch.no_grad():
        for _ in range(3):
            out = model(input_ids=ids, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(steps):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past, tok = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            rates.append(batch * steps / (time.perf_counter() - t))
    return sorted(rates)[1]


def graph_rate(model, batch, steps=32, prompt=16):
    """Decode with a static cache, one step captured as a CUDA graph and replayed (median of 3)."""
    from transformers import StaticCache

    cache = StaticCache(config=model.config, max_cache_len=prompt + 4 * steps + 8)
    ids = torch.randint(0, 1000, (batch, prompt), device="cuda")
    with torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, use_cache=True, cache_position=torch.arange(prompt, device="cuda"))
        tok = out.logits[:, -1].argmax(-1, keepdim=True).clone()
        pos = torch.tensor([prompt], device="cuda")
        nxt = tok.clone()

        def step():
            o = model(input_ids=tok, past_key_values=cache, use_cache=True, cache_position=pos)
            nxt.copy_(o.logits[:, -1].argmax(-1, keepdim=True))

        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        rates = []
        for r in range(3):
            torch.cuda.synchronize()
            t = time.perf_counter()
            for i in range(steps):
                pos.fill_(prompt + 1 + (r * steps + i) % (3 * steps))
                g.replay()
                tok.copy_(nxt)
            torch.cuda.synchronize()
            rates.append(batch * steps / (time.perf_counter() - t))
    return sorted(rates)[1]


def linear_step_rate(model, batch, reps=20):
    """The part of a decode step NWC changes, without the framework's CPU overhead: every linear
    layer of the model (in module order) on one token per sequence, captured as one CUDA graph;
    returns (tokens/s if the step were only these layers, microseconds per step), median of 5."""
    layers = [m for m in model.modules() if getattr(m, "in_features", None) and getattr(m, "out_features", None)
              and not any(True for _ in m.children())]
    xs = {k: torch.randn(batch, 1, k, device="cuda", dtype=torch.bfloat16) for k in {m.in_features for m in layers}}

    def step():
        for m in layers:
            m(xs[m.in_features])

    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        times = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(reps):
                g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3 / reps)
    us = sorted(times)[2]
    return batch / (us * 1e-6), us, len(layers)


def weight_bytes(model):
    dense = sum(p.numel() * p.element_size() for p in model.parameters())
    dense += sum(b.numel() * b.element_size() for b in model.buffers() if b.dtype == torch.bfloat16 and b.dim() == 2)
    comp = 0
    seen = set()
    for m in model.modules():
        w = getattr(m, "weight_nwc", None)
        if w is not None and id(w) not in seen:
            seen.add(id(w))
            comp += w.nbytes
    return dense, comp


def measure(model, label, graphs, table):
    for b in (1, 8):
        row = dict(model=label, batch=b)
        try:
            rate, us, n = linear_step_rate(model, b)
            row.update(linears_graph_us=round(us, 1), linears_graph_tok_s=round(rate, 1), linears=n)
        except Exception as e:
            row["linears_error"] = f"{type(e).__name__}: {str(e)[:160]}"
        row["eager_tok_s"] = round(decode_rate(model, b), 1)
        if graphs:
            try:
                row["graph_tok_s"] = round(graph_rate(model, b), 1)
            except Exception as e:  # capture can fail on a transformers version; say why
                row["graph_error"] = f"{type(e).__name__}: {str(e)[:160]}"
        table.append(row)
        say(json.dumps(row))
        save()


PEER_MODEL = []


def part_b(args, results):
    import copy

    import nwc.torch as nt

    table = []
    results["qwen3"] = dict(layers=args.layers or 36, table=table)
    model = qwen3(args.layers)
    dense, _ = weight_bytes(model)
    say("qwen3 built", f"{dense / 1e9:.2f} GB of BF16 weights")
    measure(model, "BF16", True, table)
    if args.peer_site:
        PEER_MODEL.append(copy.deepcopy(model))  # the same weights for the 0.10.1 library (part c)
    torch.cuda.synchronize()
    free_a = torch.cuda.mem_get_info()[0]
    t = time.time()
    nt.convert(model)
    torch.cuda.synchronize()
    conv_s = time.time() - t
    torch.cuda.empty_cache()
    dense_left, comp = weight_bytes(model)
    freed = torch.cuda.mem_get_info()[0] - free_a
    results["qwen3"]["convert_s"] = conv_s
    save()
    say("nwc convert", f"{conv_s:.1f}s", f"compressed {comp / 1e9:.2f} GB + dense {dense_left / 1e9:.2f} GB; device memory freed by convert {freed / 1e9:.2f} GB")
    measure(model, "NWC f10 (batch 1 matvec, batch 8 dequant+cuBLAS)", True, table)
    nt.NWCLinear.matvec_max_batch = 8
    row = dict(model="NWC f10 (batch 8 fused matvec)", batch=8)
    try:
        rate, us, n = linear_step_rate(model, 8)
        row.update(linears_graph_us=round(us, 1), linears_graph_tok_s=round(rate, 1), linears=n)
    except Exception as e:
        row["linears_error"] = f"{type(e).__name__}: {str(e)[:160]}"
    table.append(row)
    say(json.dumps(row))
    nt.NWCLinear.matvec_max_batch = 1
    results["qwen3"].update(bf16_weight_bytes=dense, nwc_weight_bytes=comp, dense_left_bytes=dense_left,
                            device_memory_freed_by_convert=freed, convert_s=conv_s)
    del model
    torch.cuda.empty_cache()


def part_c(args, results):
    """The 0.10.1 library's convert on a copy of the same Qwen3 model, loaded in this process
    under the name nwc_peer (its package is also named nwc)."""
    if not PEER_MODEL:
        return
    left = args.budget_s - (time.time() - T0)
    if left < 45:
        say("peer: skipped, only", int(left), "s left")
        results["peer"] = dict(skipped=f"{int(left)} s left")
        return
    import importlib.util

    root = os.path.join(args.peer_site, "nwc")
    spec = importlib.util.spec_from_file_location("nwc_peer", os.path.join(root, "__init__.py"), submodule_search_locations=[root])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["nwc_peer"] = mod
    spec.loader.exec_module(mod)
    N = sys.modules["nwc_peer.nwc_torch"]
    model = PEER_MODEL.pop()
    t = time.time()
    N.convert(model, verbose=False)
    torch.cuda.synchronize()
    conv = time.time() - t
    torch.cuda.empty_cache()
    say("peer convert", f"{conv:.1f}s")
    results["peer"] = dict(convert_s=conv)
    save()
    table = []
    for b in (1, 8):
        row = dict(model="0.10.1 library convert", batch=b)
        try:
            rate, us, n = linear_step_rate(model, b)
            row.update(linears_graph_us=round(us, 1), linears_graph_tok_s=round(rate, 1), linears=n)
        except Exception as e:
            row["linears_error"] = f"{type(e).__name__}: {str(e)[:160]}"
        row["eager_tok_s"] = round(decode_rate(model, b), 1)
        table.append(row)
        say(json.dumps(row))
    nbytes = sum(getattr(getattr(m, "w", None), "bytes", 0) for m in model.modules())
    results["peer"] = dict(convert_s=conv, nwc_weight_bytes=nbytes, table=table)
    save()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smollm2")
    ap.add_argument("--out", default=".")
    ap.add_argument("--peer-site")
    ap.add_argument("--layers", type=int, default=0, help="Qwen3 layers (0: 36, the real depth)")
    ap.add_argument("--budget-s", type=float, default=380)
    ap.add_argument("--skip", default="")
    ap.add_argument("--pytest", help="run this pytest file or folder first, in this process")
    args = ap.parse_args()
    args.say, args.t0 = say, T0
    say("torch", torch.__version__, torch.cuda.get_device_name(0))
    import transformers

    results = RESULTS
    OUT[0] = args.out
    results.update(device=torch.cuda.get_device_name(0), torch=torch.__version__, transformers=transformers.__version__)
    from h200_shapes import part_shapes

    if args.pytest:
        import pytest

        t = time.time()
        code = pytest.main(["-q", "-p", "no:cacheprovider", args.pytest])
        results["pytest"] = dict(exit_code=int(code), seconds=round(time.time() - t, 1))
        say("pytest", args.pytest, "exit", int(code))
    for name, part in (("a", part_a), ("b", part_b), ("c", part_c), ("s", part_shapes)):
        if name in args.skip:
            continue
        try:
            part(args, results)
        except Exception as e:
            import traceback

            traceback.print_exc()
            results[f"part_{name}_error"] = f"{type(e).__name__}: {e}"
        save()
    say("done")


if __name__ == "__main__":
    main()
