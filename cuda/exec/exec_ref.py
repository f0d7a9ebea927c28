#!/usr/bin/env python3
"""Reference of the execution layout for the H200 harness (numpy API: numpy here, cupy there).

encode(xp, w16): the canonical encode of the exec-layout design from BF16 words [M][K].
decode(xp, fields, M, K): BF16 words [M][K16] back from the fields.
`python3 cuda/exec/exec_ref.py` runs CPU self-tests: encode/decode round trips on random and edge
matrices, and numpy emulations of the kernels' bit tricks (prmt pair decode, plain/escape tests,
transposed halving tree) against straightforward definitions.
"""
import numpy as np

SOURCES = ["exec_decode.cu", "exec_matvec.cu", "exec_mma.cu", "exec_dequant.cu", "exec_encode.cu", "exec_stream.cu", "exec_v3.cu"]


def encode(xp, w16):
    M, K = w16.shape
    K16, CB = (K + 15) // 16 * 16, (K + 511) // 512
    w = w16.astype(xp.int32)
    e = (w >> 7) & 0xFF
    idx = (xp.arange(M, dtype=xp.int64)[:, None] * 256 + e).ravel()
    hist = xp.bincount(idx, minlength=M * 256).reshape(M, 256)
    cs = xp.concatenate([xp.zeros((M, 1), hist.dtype), xp.cumsum(hist, axis=1)], axis=1)
    b = xp.arange(1, 243)
    win = cs[:, b + 14] - cs[:, b]  # exponents in [b, b + 13]
    base = (xp.argmax(win, axis=1) + 1).astype(xp.uint8)  # first maximum: the smallest b
    bb = base.astype(xp.int32)[:, None]
    code = xp.where(e == 0, 0, xp.where((e >= bb) & (e <= bb + 13), e - bb + 1, 15)).astype(xp.uint8)
    sm = xp.zeros((M, K16), xp.uint8)
    sm[:, :K] = (((w >> 8) & 0x80) | (w & 0x7F)).astype(xp.uint8)
    c16 = xp.zeros((M, K16), xp.uint8)
    c16[:, :K] = code
    codes = (c16[:, 0::2] | (c16[:, 1::2] << 4)).astype(xp.uint8)
    cpad = xp.zeros((M, CB * 512), xp.uint8)
    cpad[:, :K] = code
    cnt = (cpad.reshape(M, CB, 512) == 15).sum(axis=2).ravel()
    esc_start = xp.zeros(M * CB + 1, xp.uint32)
    esc_start[1:] = xp.cumsum(cnt).astype(xp.uint32)
    esc = e[code == 15].astype(xp.uint8)
    return dict(sm=sm.ravel(), codes=codes.ravel(), base=base, esc_start=esc_start, esc=esc)


def decode(xp, f, M, K):
    K16 = (K + 15) // 16 * 16
    sm = f["sm"].reshape(M, K16).astype(xp.int32)
    cb = f["codes"].reshape(M, K16 // 2).astype(xp.int32)
    code = xp.zeros((M, K16), xp.int32)
    code[:, 0::2] = cb & 15
    code[:, 1::2] = cb >> 4
    b = f["base"].astype(xp.int32)[:, None]
    e = xp.where(code == 0, 0, b + code - 1)
    e[code == 15] = f["esc"].astype(xp.int32)  # row-major position order = tile order within rows
    return (((sm & 0x80) << 8) | (e << 7) | (sm & 0x7F)).astype(xp.uint16)


# ---- emulations of the kernels' bit tricks (exec_decode.cu) ----

def prmt(a, b, sel):
    src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    out = 0
    for n in range(4):
        s = (sel >> (4 * n)) & 15
        v = src[s & 7]
        if s & 8:
            v = 0xFF if v & 0x80 else 0
        out |= v << (8 * n)
    return out


def pairs8(c, s0, s1, b2):
    ev, od = c & 0x0F0F0F0F, (c >> 4) & 0x0F0F0F0F
    m = 0xFFFFFFFF
    return [(prmt(ev, od, ps) * 128 + ((prmt(s, 0, ss) & 0x807F807F) | b2)) & m
            for ps, s, ss in ((0xC480, s0, 0x9180), (0xD591, s0, 0xB3A2), (0xE6A2, s1, 0x9180), (0xF7B3, s1, 0xB3A2))]


def plain_bits(c):
    return (((c ^ (c >> 1)) & 0x77777777) + 0x77777777) & 0xFFFFFFFF


def count15(c):
    m = c & (c >> 1)
    m &= m >> 2
    return bin(m & 0x11111111).count("1")


def selftest():
    rng = np.random.default_rng(5)
    # encode/decode round trips, including zeros, padding, subnormals, inf/nan patterns
    for M, K in [(1, 1), (3, 17), (5, 512), (4, 513), (9, 1000), (2, 4096), (7, 1536)]:
        w = (rng.standard_normal((M, K)) * 0.02).astype(np.float32).view(np.uint32)
        w = ((w + 0x7FFF + ((w >> 16) & 1)) >> 16).astype(np.uint16)
        w[rng.random((M, K)) < 0.05] = 0
        w[rng.random((M, K)) < 0.01] = rng.integers(0, 65536, size=int((rng.random((M, K)) < 0.01).sum()) or 1)[0]
        if M > 2:
            w[1] = 0
            w[2] = rng.integers(0, 65536, size=K).astype(np.uint16)
        f = encode(np, w)
        K16 = (K + 15) // 16 * 16
        d = decode(np, f, M, K)
        assert (d[:, :K] == w).all() and (d[:, K:] == 0).all(), (M, K)
        assert f["base"].min() >= 1 and f["base"].max() <= 242
        if M > 2:
            assert f["base"][1] == 1
    # pair decode against the definition, random plain codes and sm bytes
    for _ in range(20000):
        base = int(rng.integers(1, 243))
        codes = rng.integers(1, 15, size=8)
        sms = rng.integers(0, 256, size=8)
        c = sum(int(v) << (4 * i) for i, v in enumerate(codes))
        s0 = sum(int(v) << (8 * i) for i, v in enumerate(sms[:4]))
        s1 = sum(int(v) << (8 * i) for i, v in enumerate(sms[4:]))
        got = pairs8(c, s0, s1, ((base - 1) * 0x00800080) & 0xFFFFFFFF)
        for j in range(8):
            e = base + int(codes[j]) - 1
            h = ((int(sms[j]) & 0x80) << 8) | (e << 7) | (int(sms[j]) & 0x7F)
            assert ((got[j // 2] >> (16 * (j & 1))) & 0xFFFF) == h
        allc = rng.integers(0, 16, size=8)
        c2 = sum(int(v) << (4 * i) for i, v in enumerate(allc))
        pb = plain_bits(c2)
        for i in range(8):
            assert bool((pb >> (4 * i + 3)) & 1) == (1 <= allc[i] <= 14)
        assert count15(c2) == int((allc == 15).sum())
    # transposed halving tree == per-row canonical tree (float32, bit for bit)
    for R in (1, 2, 4, 8, 16, 32):
        v = (rng.standard_normal((32, R)) * 10.0 ** rng.integers(-3, 4, size=(32, R))).astype(np.float32)
        canon = []
        for r in range(R):
            a = v[:, r].copy()
            t = 16
            while t:
                a[:t] = (a[:t] + a[t:2 * t]).astype(np.float32)
                t //= 2
            canon.append(a[0])
        vals = [list(v[L]) for L in range(32)]
        n, o = R, 16
        for _ in range(5):
            new = [list(x) for x in vals]
            for L in range(32):
                P = L ^ o
                hi = (L & o) != 0
                if n > 1:
                    for i in range(n // 2):
                        keep = vals[L][2 * i + 1] if hi else vals[L][2 * i]
                        sendp = vals[P][2 * i] if (P & o) else vals[P][2 * i + 1]
                        new[L][i] = np.float32(keep + sendp)
                else:
                    new[L][0] = np.float32(vals[L][0] + vals[P][0])
            vals = new
            n = max(1, n // 2)
            o //= 2
        for L in range(32):
            idx = 0
            for s in range(5):
                if (1 << s) < R:
                    idx |= ((L >> (4 - s)) & 1) << s
            assert vals[L][0].view(np.uint32) == canon[idx].view(np.uint32), (R, L)
    print("exec_ref selftest: ok")


if __name__ == "__main__":
    selftest()
