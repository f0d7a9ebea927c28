"""End-to-end proof on a GPU: the nwc wheel inside real transformers models.

Part A (h200_smollm2.py): the real SmolLM2-135M, compressed with nwc.compress, loaded with
nwc.torch (format 10 and the execution layout), greedy generation beside BF16.

Part B (Qwen3-8B shapes, transformers' random initialisation, no download): decode tokens/s at
batch 1 and 8, BF16 vs NWC format 10 vs the execution layout (nwc.torch.convert), with CUDA
graphs and without (eager), and the VRAM of the weights. Part C: the 0.10.1 library's convert on
the same model (same seed), loaded in this process under the name nwc_peer (its package is also
named `nwc`). Part S (h200_shapes.py): per-shape timings.

Usage: python3 h200_e2e.py --out DIR [--pytest FILE] [--smollm2-folder DIR --gguf FILE]
       [--peer-site DIR] [--skip PARTS] [--budget-s S]
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
        row["eager_tok_s"] = round(decode_rate(model, b, steps=16), 1)
        if graphs:
            try:
                row["graph_tok_s"] = round(graph_rate(model, b), 1)
            except Exception as e:  # capture can fail on a transformers version; say why
                row["graph_error"] = f"{type(e).__name__}: {str(e)[:160]}"
        table.append(row)
        say(json.dumps(row))
        save()


def convert_timed(model, label, results, **kw):
    import nwc.torch as nt

    torch.cuda.synchronize()
    free_a = torch.cuda.mem_get_info()[0]
    t = time.time()
    nt.convert(model, **kw)
    torch.cuda.synchronize()
    conv_s = time.time() - t
    torch.cuda.empty_cache()
    dense_left, comp = weight_bytes(model)
    freed = torch.cuda.mem_get_info()[0] - free_a
    results[label] = dict(convert_s=round(conv_s, 2), nwc_weight_bytes=comp, dense_left_bytes=dense_left,
                          device_memory_freed_by_convert=freed)
    save()
    say(label, f"convert {conv_s:.1f}s", f"compressed {comp / 1e9:.2f} GB + dense {dense_left / 1e9:.2f} GB;",
        f"device memory freed {freed / 1e9:.2f} GB")


def part_b(args, results):
    import copy

    import nwc.torch as nt

    table = []
    results["qwen3"] = dict(layers=args.layers or 36, table=table)
    model = qwen3(args.layers)
    dense, _ = weight_bytes(model)
    results["qwen3"]["bf16_weight_bytes"] = dense
    say("qwen3 built", f"{dense / 1e9:.2f} GB of BF16 weights")
    measure(model, "BF16", True, table)
    exec_model = copy.deepcopy(model)
    convert_timed(model, "f10", results["qwen3"])
    measure(model, "NWC f10 (batch 1 exact matvec, batch 8 dequant + cuBLAS)", True, table)
    nt.NWCLinear.matvec_max_batch = 8
    linears_row(model, "NWC f10, batch 8 fused exact matvec", 8, table)
    nt.NWCLinear.matvec_max_batch = 1
    del model
    torch.cuda.empty_cache()
    convert_timed(exec_model, "exec", results["qwen3"], layout="exec")
    measure(exec_model, "NWC exec (batch 1 exact matvec, batch 8 tensor cores)", True, table)
    nt.NWCLinear.tensor_max_batch = 1
    linears_row(exec_model, "NWC exec, batch 8 dequant + cuBLAS", 8, table)
    nt.NWCLinear.matvec_max_batch = 8
    linears_row(exec_model, "NWC exec, batch 8 exact matvec", 8, table)
    nt.NWCLinear.matvec_max_batch, nt.NWCLinear.tensor_max_batch = 1, 32
    del exec_model
    torch.cuda.empty_cache()


def linears_row(model, label, b, table):
    row = dict(model=label, batch=b)
    try:
        rate, us, n = linear_step_rate(model, b)
        row.update(linears_graph_us=round(us, 1), linears_graph_tok_s=round(rate, 1), linears=n)
    except Exception as e:
        row["linears_error"] = f"{type(e).__name__}: {str(e)[:160]}"
    table.append(row)
    say(json.dumps(row))
    save()


def part_c(args, results):
    """The 0.10.1 library's convert on a copy of the same Qwen3 model, loaded in this process
    under the name nwc_peer (its package is also named nwc)."""
    if not args.peer_site:
        return
    left = args.budget_s - (time.time() - T0)
    if left < 130:  # its convert alone took 93 s on the H200 (2026-12-01)
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
    model = qwen3(args.layers)  # part B's seed: the same weights
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
        if b == 1:
            row["eager_tok_s"] = round(decode_rate(model, b, steps=16), 1)
        table.append(row)
        say(json.dumps(row))
    nbytes = sum(getattr(getattr(m, "w", None), "bytes", 0) for m in model.modules())
    results["peer"] = dict(convert_s=conv, nwc_weight_bytes=nbytes, table=table)
    save()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smollm2-folder", help="the BF16 Llama folder of nwc-model-folder smollm2 DIR 30 49152")
    ap.add_argument("--gguf", help="the SmolLM2 GGUF (its vocabulary makes the tokenizer)")
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
    from h200_smollm2 import part_a

    if args.pytest:
        import pytest

        t = time.time()
        code = pytest.main(["-q", "--tb=short", "-p", "no:cacheprovider", args.pytest])
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
