"""Exact-class matvec of the execution layout (spec 20.15.2 = 15.4.3-15.4.7, layout 0 order).

IEEE binary32 arithmetic emulated exactly with Python integers: every finite f32 is an integer
multiple of 2^-149, every product of two f32 an integer multiple of 2^-298; fma and add are computed
exactly and rounded once, RNE, with subnormals and overflow to infinity.
"""
import struct

NAN = 0x7FC00000
PINF = 0x7F800000
NINF = 0xFF800000
S = 298  # fixed-point scale of exact intermediate values: value = N * 2^-298


def is_nan(b):
    return (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF) != 0


def is_inf(b):
    return (b & 0x7FFFFFFF) == 0x7F800000


def mag149(b):
    """|value| of finite f32 bits as integer multiple of 2^-149."""
    e = (b >> 23) & 0xFF
    m = b & 0x7FFFFF
    if e == 0:
        return m
    return (m | 0x800000) << (e - 1)


def round_f32(N):
    """Round N * 2^-298 (N != 0) to f32 bits, RNE, subnormals kept, overflow -> inf."""
    sign = 0x80000000 if N < 0 else 0
    A = -N if N < 0 else N
    L = A.bit_length()
    e = L - 1 - S  # value in [2^e, 2^(e+1))
    q = e - 23
    if q < -149:
        q = -149
    shift = q + S  # >= 149
    r = A >> shift
    rem = A - (r << shift)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and (r & 1)):
        r += 1
    if r == 0:
        return sign  # cannot happen for q >= -149 with A >= 1? (rounds to zero only below 2^-150)
    if r >= (1 << 24):
        r >>= 1
        q += 1
    if r < (1 << 23):  # subnormal (q == -149)
        return sign | r
    ef = q + 150
    if ef >= 255:
        return sign | PINF
    return sign | (ef << 23) | (r - (1 << 23))


def fma(a, b, c):
    """fma(a, b, c) on f32 bit patterns, one rounding."""
    if is_nan(a) or is_nan(b) or is_nan(c):
        return NAN
    ps = (a ^ b) & 0x80000000  # sign of the product
    a_inf, b_inf = is_inf(a), is_inf(b)
    a_zero, b_zero = (a & 0x7FFFFFFF) == 0, (b & 0x7FFFFFFF) == 0
    if a_inf or b_inf:
        if a_zero or b_zero:
            return NAN
        # product is an infinity
        if is_inf(c) and (c & 0x80000000) != ps:
            return NAN
        return ps | PINF
    if is_inf(c):
        return c
    P = mag149(a) * mag149(b)  # units 2^-298
    if ps:
        P = -P
    C = mag149(c) << 149
    if c & 0x80000000:
        C = -C
    N = P + C
    if N == 0:
        # exact zero: sign rule of IEEE 754 (RNE): both zeros of the same sign keep it, else +0
        if P == 0 and C == 0:
            cs = c & 0x80000000
            return ps if ps == cs else 0
        return 0
    return round_f32(N)


ONE = 0x3F800000


def add(a, b):
    return fma(a, ONE, b)


def f32_to_bf16(b):
    """RNE rounding of f32 bits to BF16 (15.4.6)."""
    if is_nan(b):
        return 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def matvec(M, K, words, xs, bias=None):
    """words: decoded BF16 words (M*K, row-major). xs: list of N activation vectors, each K f32 bit
    patterns. bias: None or M f32 bit patterns. Returns list over n of lists over m of f32 bits."""
    CB = (K + 511) // 512
    out = []
    for x in xs:
        col = []
        for m in range(M):
            row = m * K
            S_ = 0  # +0.0
            for cb in range(CB):
                v = [0] * 32
                for L in range(32):
                    a = 0
                    k0 = 512 * cb + 16 * L
                    for j in range(16):
                        k = k0 + j
                        if k >= K:
                            break
                        a = fma(words[row + k] << 16, x[k], a)
                    v[L] = a
                t = 16
                while t >= 1:
                    for i in range(t):
                        v[i] = add(v[i], v[i + t])
                    t >>= 1
                S_ = add(S_, v[0])
            tt = S_
            if bias is not None:
                tt = add(tt, bias[m])
            col.append(tt)
        out.append(col)
    return out


def selftest():
    f = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]
    # 20.17 example
    W = [0x3F80, 0x4000, 0xBF00, 0x0000, 0x0D80, 0, 0, 0, 0, 0]
    x = [f(2.0 ** 24), f(0.5), f(2.0 ** 25), f(3.0), f(2.0 ** 100)]
    y = matvec(2, 5, W, [x])[0]
    assert y == [f(1.0), 0], [hex(v) for v in y]
    assert f32_to_bf16(y[0]) == 0x3F80
    # 15.4.8
    y = matvec(1, 3, [0x3F80, 0x4000, 0xBF00], [x[:3]], [f(0.25)])[0]
    assert y == [f(0.25)], y
    # random check of add/mul vs doubles where double is exact-then-single-round safe
    import random
    rnd = random.Random(1)
    for _ in range(20000):
        a = rnd.getrandbits(32)
        b = rnd.getrandbits(32)
        if is_nan(a) or is_nan(b):
            continue
        fa = struct.unpack("<f", struct.pack("<I", a))[0]
        fb = struct.unpack("<f", struct.pack("<I", b))[0]
        # product of two f32 is exact in double; then rounding double->f32 is single rounding
        try:
            want = struct.unpack("<I", struct.pack("<f", fa * fb))[0]
        except OverflowError:
            want = ((a ^ b) & 0x80000000) | PINF
        got = fma(a, b, 0)
        if fa * fb == 0:
            continue  # sign of zero with +0 addend differs from pure product; skip
        if (is_nan(want) and is_nan(got)):
            continue
        assert got == want, (hex(a), hex(b), hex(got), hex(want))
    # subnormal edge
    assert round_f32(1 << (S - 149)) == 1
    assert round_f32(1 << (S - 150)) == 0  # tie to even at half the smallest subnormal
    assert round_f32(3 << (S - 151)) == 1
    print("exec_matvec selftest ok")


if __name__ == "__main__":
    selftest()
