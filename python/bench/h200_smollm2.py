"""Part A of h200_e2e.py: the real SmolLM2-135M-Instruct (all 30 layers, the 49152-row tied
embedding), as the BF16 Llama folder `nwc-model-folder smollm2 DIR 30 49152` writes from the
pinned GGUF. It is compressed with nwc.compress, loaded with nwc.torch.load_checkpoint (format 10,
and the execution layout transcoded at load), and each model greedy-generates 64 tokens for 8
text prompts beside transformers on the BF16 folder. Reports the tokens that match and, at a
prompt's first difference, the logit margins (top-1 minus top-2) of both models there."""

import json
import os
import time

import torch

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Water boils at a temperature of",
    "Once upon a time, in a small village,",
    "The three primary colors are",
    "To make a cup of tea, first",
    "The largest planet in the solar system is",
    "Machine learning is a field of study that",
]


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


def compare(a, la, b, lb):
    """Matching tokens of two greedy runs, and the margins at the first difference."""
    first = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
    row = dict(matching=sum(x == y for x, y in zip(a, b)), first_difference=first)
    if first is not None:
        ta, tb = la[first].topk(2), lb[first].topk(2)
        row.update(bf16_margin=float(ta.values[0] - ta.values[1]), nwc_margin=float(tb.values[0] - tb.values[1]),
                   bf16_top2=[int(x) for x in ta.indices], nwc_top2=[int(x) for x in tb.indices])
    row["step0_max_abs_logit_diff"] = float((la[0] - lb[0]).abs().max())
    return row


def part_a(args, results):
    import nwc
    import nwc.torch as nt
    import transformers
    from gguf_tokenizer import tokenizer

    say = args.say
    bf16_dir, nwc_dir = args.smollm2_folder, "/tmp/smol-nwc"
    t = time.time()
    s = nwc.compress(bf16_dir, nwc_dir)
    rows = nwc.inspect(nwc_dir)
    ratio = sum(r["bytes"] for r in rows) / sum(2 * r["rows"] * r["cols"] for r in rows)
    say("nwc.compress", s, f"{time.time() - t:.1f}s;", len(rows), "matrices, ratio", round(ratio, 4))
    tok = tokenizer(args.gguf)
    dev = torch.device("cuda")
    ref = transformers.AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).to(dev).eval()
    models = {}
    for layout in (None, "exec"):
        t = time.time()
        models[layout or "f10"] = nt.load_checkpoint(nwc_dir, layout=layout).eval()
        say("load_checkpoint", layout, f"{time.time() - t:.1f}s")
    cfg = json.load(open(os.path.join(bf16_dir, "config.json")))
    table = {name: [] for name in models}
    texts = []
    with torch.no_grad():
        for i, prompt in enumerate(PROMPTS):
            ids = torch.tensor([tok.encode(prompt)], device=dev)
            a, la = greedy(ref, ids, 64)
            texts.append(dict(prompt=prompt, bf16=tok.decode(a)))
            for name, model in models.items():
                b, lb = greedy(model, ids, 64)
                row = dict(prompt=i, prompt_tokens=ids.shape[1], **compare(a, la, b, lb))
                table[name].append(row)
                say(name, json.dumps(row))
    results["smollm2"] = dict(
        config=dict(layers=cfg["num_hidden_layers"], vocab=cfg["vocab_size"]), compress=s, ratio=ratio, texts=texts,
        prompts=table, matching={n: sum(r["matching"] for r in t) for n, t in table.items()}, total=64 * len(PROMPTS))
    say("smollm2 matching", results["smollm2"]["matching"], "of", 64 * len(PROMPTS))
    say("sample", json.dumps(texts[0]))
    del ref, models
    torch.cuda.empty_cache()
