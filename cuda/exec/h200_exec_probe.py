#!/usr/bin/env python3
"""H200 harness for the execution-layout kernels (cuda/exec/*.cu); needs no Rust.

Builds execution-layout matrices from BF16 (exec_ref.encode: the canonical encode of the design,
numpy API, run through cupy), checks every kernel bit for bit (encode against the reference encode,
dequant and gather against the input, exact matvecs against a canonical-order reference kernel,
tensor-core matvecs against the spec 19 bound) and times them beside cuBLAS (torch F.linear on
BF16; CUDA graphs of rotated copies so L2 does not hold the matrix; medians) on the bench shapes
and on random extra shapes, with synthetic N(0, 0.02), real (tiled MiniLM) and zero-padded real
weights. Prints ratios, bandwidths, escape rates and bytes per weight; full log as JSON lines.

Usage (device): PYTHONUNBUFFERED=1 python3 cuda/exec/h200_exec_probe.py [--quick] [--out DIR]
  [--real FILE.bf16] [--cubin FILE]  (the cubin from cuda/exec/nvrtc_check.py --cubin, if any)
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import exec_ref  # noqa: E402

import cupy as cp  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SHAPES = [("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 24576, 4096), ("down", 4096, 12288),
          ("4b_gate_up", 19456, 2560), ("4b_down", 2560, 9728), ("odd", 1000, 3000), ("lm_head", 151936, 4096)]
L2_BYTES = 60 << 20
# version 1 (call 1): kept as baselines
MV1 = [("exec_matvec1_r4u1m4", 4, 1), ("exec_matvec1_r2u2m4", 2, 2)]
MVB = []
MMA = [("exec_mma_r1n2", 1, 2)]
DEQ = [("exec_dequant_u2", 2)]
# version 2: streaming (exec_stream.cu): (name, NB, R, D)
# (call 2 measured all of r1d4, r1d8, r2d4, r2d8, r2d2, r1d4m1, mvs2/4, the six mmas and dqs d4/d8;
#  the best of each kind stays as a baseline)
MVS = [("exec_mvs1_r2d2", 1, 2, 2)]
MVSB = []
MMAS = [("exec_mmas_r1n1d4", 1, 1, 4), ("exec_mmas_r1n2d4", 1, 2, 4), ("exec_mmas_r1n4d4", 1, 4, 4),
        ("exec_mmas_r2n8d4", 2, 8, 4)]
DQS = [("exec_dqs_d4", 4)]
# version 3 (exec_v3.cu): 4-row items, x in shared memory: (name, NB, D, warps, x in smem)
MV3 = [("exec_mv3_1_d4_w16", 1, 4, 16, True), ("exec_mv3_1_d3_w16", 1, 3, 16, True), ("exec_mv3_1_d2_w16", 1, 2, 16, True),
       ("exec_mv3_1_d4_w8g", 1, 4, 8, False)]
MV3B = [("exec_mv3_2_d4_w16", 2, 4, 16, True), ("exec_mv3_2_d2_w16", 2, 2, 16, True), ("exec_mv3_4_d2_w16", 4, 2, 16, True)]
DQ3 = [("exec_dq3_d4_w16", 4, 16)]
MM3 = [("exec_mm3_n1_d2", 1, 2), ("exec_mm3_n2_d2", 2, 2), ("exec_mm3_n4_d2", 4, 2), ("exec_mm3_n8_d2", 8, 2)]
SMS = 132
BATCHES = [2, 3, 4, 8, 16, 32, 64]

REF_SRC = r'''
extern "C" __global__ void ref_partial(const unsigned short* w, unsigned long long ldw, unsigned M, unsigned K,
                                       const float* x, unsigned long long ldx, unsigned ncols, float* part) {
    const unsigned CB = (K + 511u) >> 9;
    const unsigned long long id = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long per = (unsigned long long)M * CB;
    if (id >= per * ncols) return;
    const unsigned long long n = id / per, rem = id % per, m = rem / CB;
    const unsigned cb = (unsigned)(rem % CB);
    float v[32];
    for (int L = 0; L < 32; ++L) {
        float a = 0.0f;
        for (int j = 0; j < 16; ++j) {
            const unsigned k = cb * 512u + 16u * L + j;
            if (k < K) a = __fmaf_rn(__uint_as_float((unsigned)w[m * ldw + k] << 16), x[n * ldx + k], a);
        }
        v[L] = a;
    }
    for (int t = 16; t >= 1; t >>= 1)
        for (int i = 0; i < t; ++i) v[i] = __fadd_rn(v[i], v[i + t]);
    part[id] = v[0];
}
extern "C" __global__ void ref_rowsum(const float* part, unsigned M, unsigned CB, unsigned ncols, const float* bias,
                                      float* y, unsigned long long ldy) {
    const unsigned long long id = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (unsigned long long)M * ncols) return;
    const unsigned long long n = id / M, m = id % M;
    float s = 0.0f;
    for (unsigned cb = 0; cb < CB; ++cb) s = __fadd_rn(s, part[(n * M + m) * CB + cb]);
    if (bias) s = __fadd_rn(s, bias[m]);
    y[n * ldy + m] = s;
}
'''

LOG = []
LOGFILE = []
T0 = time.time()


def log(rec):
    rec["t_s"] = round(time.time() - T0, 1)
    LOG.append(rec)
    print(json.dumps(rec), flush=True)
    if LOGFILE:
        LOGFILE[0].write(json.dumps(rec) + "\n")
        LOGFILE[0].flush()


def tstream():
    return cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


def launch(fn, grid, block, args, smem=0):
    with tstream():
        fn((int(grid),), (int(block),), args, shared_mem=int(smem))


def graph_time(fn, reps=20, replays=15):
    """Median per-call time (us) of fn(i), i = 0..reps-1, captured once as a CUDA graph and replayed."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(reps):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(replays):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / reps)
    ts.sort()
    return ts[len(ts) // 2]


def u64(v):
    return np.uint64(v)


def u32(v):
    return np.uint32(v)


class Kernels:
    def __init__(self, cubin):
        src = "\n".join(open(os.path.join(HERE, f)).read() for f in exec_ref.SOURCES)
        opts = ("--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true", "-std=c++17")
        t0 = time.time()
        self.mod = None
        if cubin and os.path.exists(cubin):
            try:
                self.mod = cp.RawModule(path=cubin)
                self.mod.get_function("exec_matvec1_r4u1")
                how = "cubin " + cubin
            except Exception as e:  # fall back to compiling here
                print("cubin load failed:", e, flush=True)
                self.mod = None
        if self.mod is None:
            self.mod = cp.RawModule(code=src, options=opts)
            how = "nvrtc"
        self.ref = cp.RawModule(code=REF_SRC, options=("--fmad=false",))
        self.f = {}
        print(f"kernels loaded ({how}) in {time.time() - t0:.1f} s", flush=True)

    def __getitem__(self, name):
        if name not in self.f:
            fn = self.mod.get_function(name) if not name.startswith("ref_") else self.ref.get_function(name)
            fn.max_dynamic_shared_size_bytes = 200 * 1024
            self.f[name] = fn
        return self.f[name]


class ExecMatrix:
    """Device fields of one execution-layout matrix (cupy arrays)."""

    def __init__(self, M, K, sm, codes, base, esc_start, esc):
        self.M, self.K = M, K
        self.K16, self.CB = (K + 15) // 16 * 16, (K + 511) // 512
        self.sm, self.codes, self.base, self.esc_start, self.esc = sm, codes, base, esc_start, esc

    def nbytes(self):
        return sum(int(a.nbytes) for a in (self.sm, self.codes, self.base, self.esc_start)) + int(self.E)

    @property
    def E(self):
        return int(self.esc_start[-1])

    def clone(self):
        return ExecMatrix(self.M, self.K, *(a.copy() for a in (self.sm, self.codes, self.base, self.esc_start, self.esc)))

    def args(self):
        return (self.sm, self.codes, self.base, self.esc_start, self.esc)


def gpu_encode(kn, w16, timing=False):
    """BF16 (cupy uint16 [M][K]) -> ExecMatrix with the encode kernels; returns (matrix, launcher)."""
    M, K = w16.shape
    K16, CB = (K + 15) // 16 * 16, (K + 511) // 512
    T = M * CB
    nb = (T + 1023) // 1024
    base = cp.empty(M, cp.uint8)
    esc_start = cp.zeros(T + 1, cp.uint32)
    scratch = cp.zeros(nb + 1, cp.uint64)
    sm = cp.empty(M * K16, cp.uint8)
    codes = cp.empty(M * K16 // 2, cp.uint8)
    ld = u64(K)

    def stats_scan():
        launch(kn["exec_enc_stats"], (M + 7) // 8, 256, (w16, ld, u32(M), u32(K), base, esc_start))
        launch(kn["exec_enc_scan_a"], nb, 256, (esc_start, u64(T), scratch))
        launch(kn["exec_enc_scan_b"], 1, 1024, (scratch, u64(nb)))
        launch(kn["exec_enc_scan_c"], nb, 256, (esc_start, u64(T), scratch))

    stats_scan()
    torch.cuda.synchronize()
    E = int(scratch[nb])
    assert E < 2 ** 32, "E > 2^32 - 1"
    esc = cp.empty(max(E, 1), cp.uint8)

    def emit():
        launch(kn["exec_enc_emit"], (T * 32 + 255) // 256, 256, (w16, ld, u32(M), u32(K), base, esc_start, sm, codes, esc))

    emit()
    torch.cuda.synchronize()

    def run_all(_i=0):
        stats_scan()
        emit()

    return ExecMatrix(M, K, sm, codes, base, esc_start, esc[:E]), run_all


def check_encode(mat, w16, rows_limit=4096):
    """Bit-exact comparison of the GPU encode with the reference encode (first rows_limit rows)."""
    M, K = w16.shape
    r = min(M, rows_limit)
    ref = exec_ref.encode(cp, w16[:r])
    K16, CB = mat.K16, mat.CB
    ok = bool(cp.array_equal(ref["sm"], mat.sm[:r * K16]) and cp.array_equal(ref["codes"], mat.codes[:r * K16 // 2])
              and cp.array_equal(ref["base"], mat.base[:r]) and cp.array_equal(ref["esc_start"], mat.esc_start[:r * CB + 1]))
    E = int(ref["esc_start"][-1])
    ok = ok and bool(cp.array_equal(ref["esc"], mat.esc[:E]))
    if r == M:
        ok = ok and E == mat.E
    return ok


def ref_matvec(kn, w16, xf, ncols, bias):
    """Canonical-order f32 outputs [ncols][M] from the BF16 input (reference kernel)."""
    M, K = w16.shape
    CB = (K + 511) // 512
    part = cp.empty(ncols * M * CB, cp.float32)
    y = cp.empty((ncols, M), cp.float32)
    n = ncols * M * CB
    launch(kn["ref_partial"], (n + 127) // 128, 128, (w16, u64(K), u32(M), u32(K), xf, u64(xf.shape[1]), u32(ncols), part))
    launch(kn["ref_rowsum"], (ncols * M + 255) // 256, 256,
           (part, u32(M), u32(CB), u32(ncols), bias if bias is not None else u64(0), y, u64(M)))
    torch.cuda.synchronize()
    return y


def bf16_rne(y):
    u = y.view(cp.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cp.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return cp.where(nan, ((u >> 16) | 0x40).astype(cp.uint16), r)


def mv_launch(kn, name, rw, u, mat, xf, ncols, bias, y, out_bf16, col0=0):
    nw = min(8, max(1, -(-mat.CB // u)))
    smem = rw * (1 if "matvec1" in name else int(name.split("_")[1][6:])) * mat.CB * 4
    launch(kn[name], -(-mat.M // rw), 32 * nw, (*mat.args(), u32(mat.M), u32(mat.K), xf[col0:], u64(xf.shape[1]),
                                               u32(ncols), bias if bias is not None else u64(0), y[col0:], u64(mat.M),
                                               np.int32(out_bf16)), smem)


def mma_launch(kn, name, rg, nt, mat, xb, ncols, bias, y, out_bf16, col0=0):
    nw = min(8, mat.CB)
    smem = nw * rg * 16 * nt * 8 * 4
    launch(kn[name], -(-mat.M // (16 * rg)), 32 * nw, (*mat.args(), u32(mat.M), u32(mat.K), xb[col0:], u64(xb.shape[1]),
                                                       u32(ncols), bias if bias is not None else u64(0), y[col0:],
                                                       u64(mat.M), np.int32(out_bf16)), smem)


def occupancy(fn, threads, smem):
    """Resident CTAs per SM from the kernel's registers and shared memory (H200: 64 K registers,
    228 KB shared memory, 2048 threads, 32 CTAs per SM)."""
    warps = threads // 32
    per_warp = -(-fn.num_regs * 32 // 256) * 256
    by_regs = (65536 // per_warp) // warps
    by_smem = 233472 // (smem + fn.shared_size_bytes + 1024)
    return max(1, min(by_regs, by_smem, 2048 // threads, 32))


def choose_groups(nrg, CB, slots):
    """Warps per row (G): fewest rounds x tiles per warp over the resident warps."""
    best = None
    for G in (1, 2, 4, 8):
        if G > CB:
            break
        cost = -(-nrg // max(1, slots // G)) * -(-CB // G)
        if best is None or cost < best[0]:
            best = (cost, G)
    return best[1]


MVS_PLAN = {}


def mvs_launch(kn, name, nb, r, d, mat, xf, ncols, bias, y, out_bf16, col0=0, force_G=None):
    key = (name, mat.M, mat.K, force_G)
    if key not in MVS_PLAN:
        fn = kn[name]
        nrg = -(-mat.M // r)
        base_smem = 8 * d * (r * 768 + 16)
        occ = occupancy(fn, 256, base_smem + 8 * 2 * r * nb * mat.CB * 4)
        G = force_G or choose_groups(nrg, mat.CB, SMS * occ * 8)
        smem = base_smem + (8 // G) * 2 * r * nb * mat.CB * 4 if G > 1 else base_smem
        grid = min(SMS * occ, -(-nrg // (8 // G)))
        MVS_PLAN[key] = (grid, smem, G, occ)
    grid, smem, G, occ = MVS_PLAN[key]
    launch(kn[name], grid, 256, (*mat.args(), u32(mat.M), u32(mat.K), xf[col0:], u64(xf.shape[1]), u32(ncols),
                                 bias if bias is not None else u64(0), y[col0:], u64(mat.M), np.int32(out_bf16), u32(G)), smem)


def mmas_launch(kn, name, rg, nt, d, mat, xb, ncols, bias, y, out_bf16, col0=0):
    nw = min(8, mat.CB)
    smem = nw * d * rg * 1600 + nw * rg * 16 * nt * 8 * 4
    occ = occupancy(kn[name], 32 * nw, smem)
    ngroups = -(-mat.M // (16 * rg))
    grid = min(SMS * occ, ngroups)
    launch(kn[name], grid, 32 * nw, (*mat.args(), u32(mat.M), u32(mat.K), xb[col0:], u64(xb.shape[1]), u32(ncols),
                                     bias if bias is not None else u64(0), y[col0:], u64(mat.M), np.int32(out_bf16)), smem)


SMEM_MAX = 227 * 1024
MV3_PLAN = {}


def mv3_plan(kn, name, nb, d, nw, xs, M, K, force_G=None):
    key = (name, M, K, force_G)
    if key not in MV3_PLAN:
        K16, CB = (K + 15) // 16 * 16, (K + 511) // 512
        base_smem = (nb * K16 * 4 if xs else 0) + nw * d * 3104
        nrg = -(-M // 4)
        occ = occupancy(kn[name], 32 * nw, base_smem + nw * 2 * 4 * nb * CB * 4)
        G = force_G or choose_groups(nrg, CB, SMS * occ * nw)
        smem = base_smem + ((nw // G) * 2 * 4 * nb * CB * 4 if G > 1 else 0)
        grid = min(SMS * occ, -(-nrg // (nw // G)))
        MV3_PLAN[key] = (grid, smem, G, occ) if smem <= SMEM_MAX else None
    return MV3_PLAN[key]


def mv3_launch(kn, name, nb, d, nw, xs, mat, xf, ncols, bias, y, out_bf16, col0=0, force_G=None):
    plan = mv3_plan(kn, name, nb, d, nw, xs, mat.M, mat.K, force_G)
    if plan is None:
        raise RuntimeError(f"{name}: shared memory over the limit for K={mat.K}")
    grid, smem, G, occ = plan
    launch(kn[name], grid, 32 * nw, (*mat.args(), u32(mat.M), u32(mat.K), xf[col0:], u64(xf.shape[1]), u32(ncols),
                                     bias if bias is not None else u64(0), y[col0:], u64(mat.M), np.int32(out_bf16),
                                     u32(G)), smem)


def batched_mv3(kn, name, nb, d, nw, xs, mat, xf, N, bias, y, out_bf16):
    for c0 in range(0, N, nb):
        mv3_launch(kn, name, nb, d, nw, xs, mat, xf, min(nb, N - c0), bias, y, out_bf16, col0=c0)


def mm3_launch(kn, name, nt, d, mat, xb, ncols, bias, y, out_bf16, col0=0):
    nw = min(8, mat.CB)
    smem = lambda w: w * d * (16 * 768 + 64) + w * 16 * nt * 8 * 4  # noqa: E731
    while nw > 1 and smem(nw) > SMEM_MAX:
        nw //= 2
    occ = occupancy(kn[name], 32 * nw, smem(nw))
    grid = min(SMS * occ, -(-mat.M // 16))
    launch(kn[name], grid, 32 * nw, (*mat.args(), u32(mat.M), u32(mat.K), xb[col0:], u64(xb.shape[1]), u32(ncols),
                                     bias if bias is not None else u64(0), y[col0:], u64(mat.M), np.int32(out_bf16)),
           smem(nw))


def batched_mm3(kn, name, nt, d, mat, xb, N, bias, y, out_bf16):
    for c0 in range(0, N, 8 * nt):
        mm3_launch(kn, name, nt, d, mat, xb, min(8 * nt, N - c0), bias, y, out_bf16, col0=c0)


def dq3_launch(kn, name, d, nw, mat, rows, nrows, out, ldo):
    smem = nw * d * 3104
    occ = occupancy(kn[name], 32 * nw, smem)
    nrg = -(-nrows // 4)
    G = choose_groups(nrg, mat.CB, SMS * occ * nw)
    grid = min(SMS * occ, -(-nrg // (nw // G)))
    launch(kn[name], grid, 32 * nw, (*mat.args(), u32(mat.K), rows, u32(nrows), out, u64(ldo), u32(G)), smem)


def dqs_launch(kn, name, d, mat, rows, nrows, out, ldo):
    smem = 8 * d * 784
    occ = occupancy(kn[name], 256, smem)
    items = nrows * mat.CB
    grid = min(SMS * occ, -(-items // 8))
    launch(kn[name], grid, 256, (*mat.args(), u32(mat.K), rows, u32(nrows), out, u64(ldo)), smem)


def batched_exact(kn, name, nb, rw, mat, xf, N, bias, y, out_bf16):
    for c0 in range(0, N, nb):
        mv_launch(kn, name, rw, 1, mat, xf, min(nb, N - c0), bias, y, out_bf16, col0=c0)


def batched_mvs(kn, name, nb, r, d, mat, xf, N, bias, y, out_bf16):
    for c0 in range(0, N, nb):
        mvs_launch(kn, name, nb, r, d, mat, xf, min(nb, N - c0), bias, y, out_bf16, col0=c0)


def batched_mmas(kn, name, rg, nt, d, mat, xb, N, bias, y, out_bf16):
    for c0 in range(0, N, 8 * nt):
        mmas_launch(kn, name, rg, nt, d, mat, xb, min(8 * nt, N - c0), bias, y, out_bf16, col0=c0)


def batched_mma(kn, name, rg, nt, mat, xb, N, bias, y, out_bf16):
    for c0 in range(0, N, 8 * nt):
        mma_launch(kn, name, rg, nt, mat, xb, min(8 * nt, N - c0), bias, y, out_bf16, col0=c0)


def bound_A(w16_t, xb_t, K):
    """sum over k of |w x| per output, f64, [ncols][M] (row blocks to bound the memory)."""
    xa = xb_t.view(torch.bfloat16)[:, :K].double().abs().T
    M = w16_t.shape[0]
    out = torch.empty(xb_t.shape[0], M, dtype=torch.float64, device="cuda")
    for r0 in range(0, M, 16384):
        out[:, r0:r0 + 16384] = (w16_t[r0:r0 + 16384].view(torch.bfloat16).double().abs() @ xa).T
    return out


def bound_ok(A0, y, yc, bias_t, K):
    """Spec 19.4 for f32 outputs: |y - y_c| <= B, B from |W| |X| in f64."""
    A = A0
    if bias_t is not None:
        A = A + bias_t.double().abs()[None, :]
    g = lambda j, u: j * u / (1 - j * u)  # noqa: E731
    B = (g(K + 1, 2.0 ** -22) + g(K + 1, 2.0 ** -24)) * A + (K + 1) * 2.0 ** -123
    B = B * (1 + (K + 16) * 2.0 ** -52)
    d = (torch.as_tensor(y, device="cuda").double() - torch.as_tensor(yc, device="cuda").double()).abs()
    ok = bool(torch.isfinite(d).all()) and bool((d <= B).all())
    rel = float((d / B.clamp_min(1e-300)).max())
    return ok, rel


def make_weights(src, M, K, real, gen):
    if src == "synthetic":
        w = (torch.randn(M, K, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
    else:
        n = M * K
        off = int(torch.randint(0, real.numel(), (1,), generator=gen, device="cuda"))
        idx = (torch.arange(n, device="cuda", dtype=torch.int64) + off) % real.numel()
        w = real[idx].view(torch.bfloat16).view(M, K)
        if src == "real_pad":  # zero padding: the last 1/32 rows and the last 48 columns
            w = w.clone()
            w[M - max(1, M // 32):] = 0
            if K > 512:
                w[:, K - 48:] = 0
    return w.contiguous()


def copies_for(nbytes):
    return max(1, min(12, -(-3 * L2_BYTES // max(1, nbytes))))


def run_shape(kn, name, M, K, src, real, args, gen, timing=True, batched=True):
    rec = {"shape": name, "M": M, "K": K, "src": src}
    w = make_weights(src, M, K, real, gen)
    w16 = cp.asarray(w.view(torch.int16)).view(cp.uint16)
    mat, enc_run = gpu_encode(kn, w16)
    K16, CB = mat.K16, mat.CB
    rec["encode_exact"] = check_encode(mat, w16, rows_limit=M if M * K <= 64 << 20 else 2048)
    rec["E"] = mat.E
    rec["esc_per_weight"] = mat.E / (M * K)
    rec["bytes_per_weight"] = mat.nbytes() / (M * K)
    rec["vs_bf16"] = mat.nbytes() / (2 * M * K)
    # dequant, gather: bit-exact against the input (pad columns 0)
    want = cp.zeros((M, K16), cp.uint16)
    want[:, :K] = w16
    out = cp.empty((M, K16), cp.uint16)
    items = M * CB
    for dn, du in DEQ:
        out.fill(0xFFFF)
        launch(kn[dn], -(-items // (du * 8)), 256, (*mat.args(), u32(K), u64(0), u32(M), out, u64(K16)))
        torch.cuda.synchronize()
        rec[f"{dn}_exact"] = bool(cp.array_equal(out, want))
    for dn, d in DQS:
        out.fill(0xFFFF)
        dqs_launch(kn, dn, d, mat, u64(0), M, out, K16)
        torch.cuda.synchronize()
        rec[f"{dn}_exact"] = bool(cp.array_equal(out, want))
    for dn, d, nw in DQ3:
        out.fill(0xFFFF)
        dq3_launch(kn, dn, d, nw, mat, u64(0), M, out, K16)
        torch.cuda.synchronize()
        rec[f"{dn}_exact"] = bool(cp.array_equal(out, want))
    rows = cp.asarray(np.random.default_rng(M + K).integers(0, M, size=min(M, 1000)).astype(np.uint32))
    gout = cp.empty((rows.size, K16), cp.uint16)
    launch(kn["exec_dequant_u4"], -(-(rows.size * CB) // 32), 256, (*mat.args(), u32(K), rows, u32(rows.size), gout, u64(K16)))
    torch.cuda.synchronize()
    rec["gather_exact"] = bool(cp.array_equal(gout, want[rows]))
    gout.fill(0xFFFF)
    dqs_launch(kn, "exec_dqs_d4", 4, mat, rows, rows.size, gout, K16)
    torch.cuda.synchronize()
    rec["gather_dqs_exact"] = bool(cp.array_equal(gout, want[rows]))
    gout.fill(0xFFFF)
    dq3_launch(kn, "exec_dq3_d4_w16", 4, 16, mat, rows, rows.size, gout, K16)
    torch.cuda.synchronize()
    rec["gather_dq3_exact"] = bool(cp.array_equal(gout, want[rows]))
    del want, out, gout
    # batch 1 and exact batches: bit-exact against the reference kernel
    Nmax = max(BATCHES)
    xb_t = torch.zeros(Nmax, K16, dtype=torch.bfloat16, device="cuda")
    xb_t[:, :K] = torch.randn(Nmax, K, device="cuda", generator=gen).to(torch.bfloat16)
    xf_t = xb_t.float()
    xf = cp.asarray(xf_t)
    xb = cp.asarray(xb_t.view(torch.int16)).view(cp.uint16)
    bias_t = torch.randn(M, device="cuda", generator=gen).to(torch.bfloat16).float()
    bias = cp.asarray(bias_t)
    yref = ref_matvec(kn, w16, xf, 37, None)
    yref_b = ref_matvec(kn, w16, xf, 1, bias)
    y = cp.empty((Nmax, M), cp.float32)
    yb = cp.empty((Nmax, M), cp.uint16)
    for mn, rw, u in MV1:
        y.fill(np.nan)
        mv_launch(kn, mn, rw, u, mat, xf, 1, None, y, 0)
        yb.fill(0xFFFF)
        mv_launch(kn, mn, rw, u, mat, xf, 1, bias, yb, 1)
        torch.cuda.synchronize()
        rec[f"{mn}_exact"] = bool(cp.array_equal(y[0].view(cp.uint32), yref[0].view(cp.uint32))) and \
            bool(cp.array_equal(yb[0], bf16_rne(yref_b[0])))
    for mn, nb, rw in MVB:
        y.fill(np.nan)
        batched_exact(kn, mn, nb, rw, mat, xf, 11, None, y, 0)
        torch.cuda.synchronize()
        rec[f"{mn}_exact"] = bool(cp.array_equal(y[:11].view(cp.uint32), yref[:11].view(cp.uint32)))
    for mn, nb, r, d in MVS:
        for fg in (None, min(4, mat.CB)) if mn == "exec_mvs1_r1d4" else (None,):
            y.fill(np.nan)
            mvs_launch(kn, mn, nb, r, d, mat, xf, 1, None, y, 0, force_G=fg)
            yb.fill(0xFFFF)
            mvs_launch(kn, mn, nb, r, d, mat, xf, 1, bias, yb, 1, force_G=fg)
            torch.cuda.synchronize()
            rec[f"{mn}{'_G' + str(fg) if fg else ''}_exact"] = \
                bool(cp.array_equal(y[0].view(cp.uint32), yref[0].view(cp.uint32))) and \
                bool(cp.array_equal(yb[0], bf16_rne(yref_b[0])))
        rec[f"{mn}_plan"] = MVS_PLAN[(mn, M, K, None)][2:]
    for mn, nb, d, nw, xs in MV3:
        for fg in (None, min(4, mat.CB), min(2, mat.CB)) if mn == "exec_mv3_1_d4_w16" else (None,):
            if mv3_plan(kn, mn, nb, d, nw, xs, M, K, fg) is None:
                continue
            y.fill(np.nan)
            mv3_launch(kn, mn, nb, d, nw, xs, mat, xf, 1, None, y, 0, force_G=fg)
            yb.fill(0xFFFF)
            mv3_launch(kn, mn, nb, d, nw, xs, mat, xf, 1, bias, yb, 1, force_G=fg)
            torch.cuda.synchronize()
            rec[f"{mn}{'_G' + str(fg) if fg else ''}_exact"] = \
                bool(cp.array_equal(y[0].view(cp.uint32), yref[0].view(cp.uint32))) and \
                bool(cp.array_equal(yb[0], bf16_rne(yref_b[0])))
        p3 = mv3_plan(kn, mn, nb, d, nw, xs, M, K)
        rec[f"{mn}_plan"] = p3[2:] if p3 else None
    for mn, nb, d, nw, xs in MV3B:
        if mv3_plan(kn, mn, nb, d, nw, xs, M, K) is None:
            continue
        y.fill(np.nan)
        batched_mv3(kn, mn, nb, d, nw, xs, mat, xf, 11, None, y, 0)
        torch.cuda.synchronize()
        rec[f"{mn}_exact"] = bool(cp.array_equal(y[:11].view(cp.uint32), yref[:11].view(cp.uint32)))
    for mn, nb, r, d in MVSB:
        y.fill(np.nan)
        batched_mvs(kn, mn, nb, r, d, mat, xf, 11, None, y, 0)
        torch.cuda.synchronize()
        rec[f"{mn}_exact"] = bool(cp.array_equal(y[:11].view(cp.uint32), yref[:11].view(cp.uint32)))
    bound_rel = 0.0
    A0 = bound_A(w.view(torch.int16), xb_t[:37], K)
    ycb = ref_matvec(kn, w16, xf, 37, bias)
    for mn, rg, nt, d in MMAS:
        y.fill(np.nan)
        batched_mmas(kn, mn, rg, nt, d, mat, xb, 37, bias if nt == 2 else None, y, 0)
        torch.cuda.synchronize()
        yc = yref[:37] if nt != 2 else ycb
        ok, rel = bound_ok(A0, y[:37], yc, bias_t if nt == 2 else None, K)
        rec[f"{mn}_bounded"] = ok
        bound_rel = max(bound_rel, rel)
    for mn, nt, d in MM3:
        y.fill(np.nan)
        batched_mm3(kn, mn, nt, d, mat, xb, 37, bias if nt == 2 else None, y, 0)
        torch.cuda.synchronize()
        yc = yref[:37] if nt != 2 else ycb
        ok, rel = bound_ok(A0, y[:37], yc, bias_t if nt == 2 else None, K)
        rec[f"{mn}_bounded"] = ok
        bound_rel = max(bound_rel, rel)
    for mn, rg, nt in MMA:
        y.fill(np.nan)
        batched_mma(kn, mn, rg, nt, mat, xb, 37, bias if nt == 2 else None, y, 0)
        torch.cuda.synchronize()
        yc = yref[:37] if nt != 2 else ycb
        ok, rel = bound_ok(A0, y[:37], yc, bias_t if nt == 2 else None, K)
        rec[f"{mn}_bounded"] = ok
        bound_rel = max(bound_rel, rel)
    rec["mma_max_err_over_bound"] = bound_rel
    x1 = xb_t[:1, :K].contiguous()
    yt = F.linear(x1.double(), w.double()).float()
    rec["rel_err_vs_f64"] = float((torch.as_tensor(yref[:1]) - yt).norm() / yt.norm())
    if not timing:
        log(rec)
        return rec
    # timing: cuBLAS vs ours, rotated copies
    cw = copies_for(2 * M * K)
    ws = [w.clone() for _ in range(cw)]
    cm = copies_for(mat.nbytes())
    mats = [mat] + [mat.clone() for _ in range(cm - 1)]
    xs_b = [xb_t[:n, :K].contiguous() for n in [1] + BATCHES]
    cp.cuda.Device().synchronize()
    torch.cuda.synchronize()
    t_cb = graph_time(lambda i: F.linear(xs_b[0], ws[i % cw]))
    rec["cublas_us"] = t_cb
    best = None
    for mn, rw, u in MV1:
        t = graph_time(lambda i: mv_launch(kn, mn, rw, u, mats[i % cm], xf, 1, None, yb, 1))
        rec[f"{mn}_us"] = t
        if best is None or t < best[1]:
            best = (mn, t)
    for mn, nb, r, d in MVS:
        t = graph_time(lambda i: mvs_launch(kn, mn, nb, r, d, mats[i % cm], xf, 1, None, yb, 1))
        rec[f"{mn}_us"] = t
        if best is None or t < best[1]:
            best = (mn, t)
    for mn, nb, d, nw, xs in MV3:
        if mv3_plan(kn, mn, nb, d, nw, xs, M, K) is None:
            continue
        t = graph_time(lambda i: mv3_launch(kn, mn, nb, d, nw, xs, mats[i % cm], xf, 1, None, yb, 1))
        rec[f"{mn}_us"] = t
        if best is None or t < best[1]:
            best = (mn, t)
    rec["best1"], rec["best1_us"] = best
    rec["ratio1"] = t_cb / best[1]
    rec["TBps_exec"] = mat.nbytes() / best[1] / 1e6
    rec["TBps_cublas"] = 2 * M * K / t_cb / 1e6
    # dequant TB/s of BF16 output
    dq = cp.empty((M, K16), cp.uint16)
    for dn, du in DEQ:
        t = graph_time(lambda i: launch(kn[dn], -(-items // (du * 8)), 256,
                                        (*mats[i % cm].args(), u32(K), u64(0), u32(M), dq, u64(K16))))
        rec[f"{dn}_TBps_out"] = M * K16 * 2 / t / 1e6
    for dn, d in DQS:
        t = graph_time(lambda i: dqs_launch(kn, dn, d, mats[i % cm], u64(0), M, dq, K16))
        rec[f"{dn}_TBps_out"] = M * K16 * 2 / t / 1e6
    for dn, d, nw in DQ3:
        t = graph_time(lambda i: dq3_launch(kn, dn, d, nw, mats[i % cm], u64(0), M, dq, K16))
        rec[f"{dn}_TBps_out"] = M * K16 * 2 / t / 1e6
    del dq
    if batched:
        for j, N in enumerate(BATCHES):
            xN = xs_b[j + 1]
            t_cbN = graph_time(lambda i: F.linear(xN, ws[i % cw]))
            rec[f"N{N}_cublas_us"] = t_cbN
            cands = {}
            for mn, nb, d, nw, xs in MV3B:
                if N <= 8 and (nb >= N or N % nb == 0) and nb <= 2 * N and mv3_plan(kn, mn, nb, d, nw, xs, M, K):
                    cands[mn] = graph_time(lambda i: batched_mv3(kn, mn, nb, d, nw, xs, mats[i % cm], xf, N, None, yb, 1))
            for mn, nb, r, d in MVSB:
                if N <= 8 and (nb >= N or N % nb == 0) and nb <= 2 * N:
                    cands[mn] = graph_time(lambda i: batched_mvs(kn, mn, nb, r, d, mats[i % cm], xf, N, None, yb, 1))
            for mn, rg, nt, d in MMAS:
                if 8 * nt <= max(8, 2 * N) and 8 * nt >= min(N, 64) / 2:
                    cands[mn] = graph_time(lambda i: batched_mmas(kn, mn, rg, nt, d, mats[i % cm], xb, N, None, yb, 1))
            for mn, nt, d in MM3:
                if 8 * nt <= max(8, 2 * N) and 8 * nt >= min(N, 64) / 2:
                    cands[mn] = graph_time(lambda i: batched_mm3(kn, mn, nt, d, mats[i % cm], xb, N, None, yb, 1))
            if N == 16:
                for mn, rg, nt in MMA:
                    cands[mn] = graph_time(lambda i: batched_mma(kn, mn, rg, nt, mats[i % cm], xb, N, None, yb, 1))
            ex = {k: v for k, v in cands.items() if "matvec" in k or "mvs" in k or "mv3" in k}
            bd = {k: v for k, v in cands.items() if "mma" in k or "mm3" in k}
            for k, v in cands.items():
                rec[f"N{N}_{k}_us"] = v
            if ex:
                k = min(ex, key=ex.get)
                rec[f"N{N}_exact_best"], rec[f"N{N}_exact_ratio"] = k, t_cbN / ex[k]
            if bd:
                k = min(bd, key=bd.get)
                rec[f"N{N}_mma_best"], rec[f"N{N}_mma_ratio"] = k, t_cbN / bd[k]
    # encode from BF16 (GB/s of BF16 input)
    t = graph_time(lambda i: enc_run(i), reps=5, replays=7)
    rec["encode_us"] = t
    rec["encode_GBps_in"] = 2 * M * K / t / 1e3
    log(rec)
    del ws, mats
    torch.cuda.empty_cache()
    return rec


def geomean(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--real", default=os.path.join(HERE, "build/real.bf16"))
    ap.add_argument("--cubin", default=os.path.join(HERE, "build/exec.cubin"))
    ap.add_argument("--srcs", default="synthetic,real,real_pad")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds; later shapes are skipped")
    a = ap.parse_args()
    LOGFILE.append(open(os.path.join(a.out, "exec_probe.jsonl"), "w"))
    print("torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
    kn = Kernels(a.cubin)
    path = a.real if os.path.exists(a.real) else os.path.join(HERE, "../../data/minilm-l0-intermediate.bf16")
    real = torch.from_numpy(np.fromfile(path, dtype=np.int16)).cuda()
    print("real weights:", path, real.numel(), flush=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    # random extra shapes: correctness (all kernels) and batch-1 timing
    rng = np.random.default_rng(20261130)
    extra = [(int(rng.integers(1, 3000)), int(rng.integers(1, 1200))) for _ in range(4)]
    extra += [(int(rng.integers(2000, 30000)), int(rng.integers(1000, 14000))) for _ in range(3)]
    extra += [(1, 1), (3, 17), (33, 513), (7, 1024)]
    for M, K in extra:
        if time.time() - T0 > a.budget * 0.25:
            break
        try:
            run_shape(kn, f"rand_{M}x{K}", M, K, "synthetic", real, a, gen, timing=M * K > 4 << 20, batched=False)
            run_shape(kn, f"rand_{M}x{K}", M, K, "real_pad", real, a, gen, timing=False, batched=False)
        except Exception as e:
            log({"shape": f"rand_{M}x{K}", "error": repr(e)})
    # device copy bandwidth (read + write), same run, after the GPU has warmed up
    buf = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(buf)
    for _ in range(2):
        t = graph_time(lambda i: dst.copy_(buf), reps=5, replays=7)
        log({"copy_TBps_rw": 2 * buf.numel() / t / 1e6})
    del buf, dst
    shapes = SHAPES[:3] + SHAPES[6:7] if a.quick else SHAPES
    for src in a.srcs.split(","):
        for name, M, K in shapes:
            if time.time() - T0 > a.budget:
                log({"shape": name, "src": src, "skipped": "time budget"})
                continue
            try:
                run_shape(kn, name, M, K, src, real, a, gen, timing=True, batched=(src == "synthetic"))
            except Exception as e:
                log({"shape": name, "src": src, "error": repr(e)})
    summary(LOG)


def summary(recs):
    checks = [k for r in recs for k in r if k.endswith("_exact") or k.endswith("_bounded")]
    bad = [(r.get("shape"), r.get("src"), k) for r in recs for k in r if (k.endswith("_exact") or k.endswith("_bounded")) and not r[k]]
    errs = [r for r in recs if "error" in r]
    print(f"\nchecks: {len(checks)} run, {len(bad)} failed {bad[:20]}; errors {errs[:5]}")
    for src in ("synthetic", "real", "real_pad"):
        rs = [r for r in recs if r.get("src") == src and "ratio1" in r and not r["shape"].startswith("rand")]
        if not rs:
            continue
        print(f"\n[{src}] batch 1 (best variant), dequant, encode")
        print(f"{'shape':12s} {'M':>7s} {'K':>6s} {'cuBLAS':>7s} {'exec':>7s} {'ratio':>6s} {'TB/s':>5s} {'cbTB/s':>6s} "
              f"{'B/w':>6s} {'esc/w':>8s} {'deqTB/s':>7s} {'encGB/s':>7s} best")
        for r in rs:
            dq = max(v for k, v in r.items() if k.endswith("_TBps_out"))
            print(f"{r['shape']:12s} {r['M']:7d} {r['K']:6d} {r['cublas_us']:7.2f} {r['best1_us']:7.2f} {r['ratio1']:6.3f} "
                  f"{r['TBps_exec']:5.2f} {r['TBps_cublas']:6.2f} {r['bytes_per_weight']:6.4f} {r['esc_per_weight']:8.2e} "
                  f"{dq:7.2f} {r['encode_GBps_in']:7.0f} {r['best1']}")
        print(f"geomean batch-1 ratio {geomean([r['ratio1'] for r in rs]):.3f} over {len(rs)} shapes")
        for mn in [v[0] for v in MV1] + [v[0] for v in MVS] + [v[0] for v in MV3]:
            print(f"   {mn:22s} geomean {geomean([r['cublas_us'] / r[mn + '_us'] for r in rs if mn + '_us' in r]):.3f}")
        bs = [r for r in rs if "N2_cublas_us" in r]
        if bs:
            print("batched ratio vs cuBLAS (exact best / mma best), geomean over shapes:")
            for N in BATCHES:
                ex = geomean([r.get(f"N{N}_exact_ratio") for r in bs])
                bd = geomean([r.get(f"N{N}_mma_ratio") for r in bs])
                print(f"   N={N:2d}  exact {ex:.3f}  mma {bd:.3f}   per shape mma: " +
                      " ".join(f"{r.get(f'N{N}_mma_ratio', 0):.2f}" for r in bs))
    rr = [r for r in recs if r.get("shape", "").startswith("rand") and "ratio1" in r]
    for r in rr:
        print(f"random {r['shape']}: batch-1 ratio {r['ratio1']:.3f} ({r['best1']})")


if __name__ == "__main__":
    main()
