"""Per-shape timings for h200_e2e.py (part s): the Qwen3-8B linear shapes at batch 1 and 8,
cuBLAS on BF16 beside the NWC paths, each in one CUDA graph over rotating copies."""

import json
import time
from concurrent.futures import ThreadPoolExecutor

import torch

# Qwen3-8B's linear shapes (out, in) and how many of each a layer has.
SHAPES = [("q_proj, o_proj", 4096, 4096, 2), ("k_proj, v_proj", 1024, 4096, 2), ("gate_proj, up_proj", 12288, 4096, 2),
          ("down_proj", 4096, 12288, 1)]


def graph_us(fns, reps=10):
    """Median microseconds of one call, the calls `fns` (rotating copies, so no call finds its
    weights in the 60 MB L2) captured as one CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            for f in fns:
                f()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / (reps * len(fns)))
    return sorted(times)[2]


def part_shapes(args, results):
    """Per shape, batch 1 and 8: cuBLAS on BF16 vs NWC layout 0 (exact matvec; dequant + cuBLAS)
    vs NWC layout 1 with the bounded tensor-core matvec (spec 19): the measurement behind
    NWCLinear's choice of path by batch size."""
    import nwc
    import nwc.torch as nt
    from torch import nn

    say = args.say
    if args.budget_s - (time.time() - args.t0) < 40:
        say("shapes: skipped for time")
        return
    rows = []
    results["shapes"] = rows
    for name, M, K, per_layer in SHAPES:
        if args.budget_s - (time.time() - args.t0) < 25:
            say("shapes: stopped for time before", name)
            break
        torch.manual_seed(2)
        layer = nn.Linear(K, M, bias=False, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            layer.weight.normal_(0, 0.02)
        copies = max(2, -(-200_000_000 // (M * K * 2)))
        words = nt._words(layer.weight)
        m0, m1 = nwc.encode(words, "bf16", 0), nwc.encode(words, "bf16", 1)
        with ThreadPoolExecutor(16) as pool:
            l0 = list(pool.map(lambda _: nt.NWCLinear(nt.CudaWeight(m0, "cuda")), range(copies)))
            l1 = list(pool.map(lambda _: nt.NWCLinear(nt.CudaWeight(m1, "cuda", "bounded")), range(copies)))
        ws = [layer.weight.clone() for _ in range(copies)]
        for b in (1, 8):
            x = torch.randn(b, K, device="cuda", dtype=torch.bfloat16)
            row = dict(shape=name, M=M, K=K, batch=b, per_layer=per_layer, ratio=round(m0.ratio, 4))
            with torch.no_grad():
                row["cublas_us"] = graph_us([lambda w=w: torch.nn.functional.linear(x, w) for w in ws])
                nt.NWCLinear.matvec_max_batch = 16
                row["l0_matvec_us"] = graph_us([lambda q=q: q(x) for q in l0])
                row["l1_bounded_us"] = graph_us([lambda q=q: q(x) for q in l1])
                nt.NWCLinear.matvec_max_batch = 0
                row["l0_dequant_cublas_us"] = graph_us([lambda q=q: q(x) for q in l0])
                nt.NWCLinear.matvec_max_batch = 1
                ref = x.double() @ layer.weight.double().T
                y1 = l1[0](x) if b > 1 else None
                if y1 is not None:
                    row["l1_bounded_max_rel_err"] = float(((y1.double() - ref).abs().max() / ref.abs().max()))
            row = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}
            rows.append(row)
            say(json.dumps(row))
        del l0, l1, ws
        torch.cuda.empty_cache()


