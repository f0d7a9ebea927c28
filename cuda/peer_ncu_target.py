"""Nsight Compute target: the 0.10.1 library's fused BF16 matvec (its `linear_bf16`) on the given
shapes, two launches each inside a cudaProfilerStart/Stop range, everything else (weights, encode,
warm-up) outside it. On the device, `B=DIR bash cuda/device-run.sh 0 peer-ncu` runs it under
Nsight Compute beside our format-10 kernel (docs/gpu-history.md, session 9); by hand:

    pip install --no-deps --target /tmp/peer neural_weight_compression-0.10.1-*.whl
    PYTHONPATH=/tmp/peer ncu --profile-from-start off --metrics ... \\
        python3 cuda/peer_ncu_target.py 4096x4096 19456x2560 6144x4096

Weights are N(0, 0.02) rounded to BF16, as in `nwc-gpu-bench --profile` (NWC_PROFILE_SHAPE=MxK
profiles our format-10 kernel on the same shape)."""
import sys

import torch
import nwc.nwc_torch as peer

torch.manual_seed(0)
work = []
for arg in sys.argv[1:]:
    m, k = (int(v) for v in arg.split("x"))
    w = (torch.randn(m, k, device="cuda") * 0.02).to(torch.bfloat16)
    nw = peer.NWCWeight(w, elem="bf16")
    x = torch.randn(k, device="cuda").float()
    for _ in range(3):
        nw.linear_bf16(x, None)
    work.append((nw, x))
torch.cuda.synchronize()
torch.cuda.profiler.start()
for nw, x in work:
    nw.linear_bf16(x, None)
    nw.linear_bf16(x, None)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
