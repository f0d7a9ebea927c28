"""Cross-check exec_matvec.fma against double arithmetic where the double result is exact
(so that converting it to f32 is the single RNE rounding). Independent of round_f32."""
import random, struct, math
import exec_matvec as mv
from fractions import Fraction

def bits(x):
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return (0x80000000 if x < 0 else 0) | mv.PINF
def val(b): return struct.unpack("<f", struct.pack("<I", b))[0]

def exact(a, b, c):
    fa, fb, fc = val(a), val(b), val(c)
    p = Fraction(fa) * Fraction(fb) + Fraction(fc)
    d = fa * fb + fc   # may be inexact
    return p, d

rnd = random.Random(7)
n = checked = 0
def rand_f32(lo, hi):
    e = rnd.randint(lo, hi)
    return (rnd.getrandbits(1) << 31) | (e << 23) | rnd.getrandbits(23)
for i in range(300000):
    mode = i % 4
    if mode == 0:   # bf16 weight x f32 act + f32 acc, close exponents
        w = rand_f32(100, 150) & 0xFFFF0000
        x = rand_f32(100, 150)
        a = rand_f32(100, 170)
    elif mode == 1:  # cancellation: a ~ -w*x
        w = rand_f32(110, 140) & 0xFFFF0000
        x = rand_f32(110, 140)
        p = val(w) * val(x)
        a = bits(-p) ^ rnd.choice([0, 1, 2, 3])
    elif mode == 2:  # subnormal region
        w = rand_f32(0, 40) & 0xFFFF0000
        x = rand_f32(60, 110)
        a = rand_f32(0, 3)
    else:            # near overflow
        w = rand_f32(200, 254) & 0xFFFF0000
        x = rand_f32(60, 140)
        a = rand_f32(240, 254)
    p, d = exact(w, x, a)
    if math.isinf(d) or Fraction(d) != p:
        if not math.isinf(d):
            continue
        # overflow in double: then exact value is huge -> must be inf in f32
        continue
    n += 1
    want = bits(d)
    got = mv.fma(w, x, a)
    if d == 0:
        want = 0  # exact-zero sum of nonzero operands: +0 in RNE (mv handles signed-zero cases)
        if val(w) * val(x) == 0 and val(a) == 0:
            continue
    assert got == want, (hex(w), hex(x), hex(a), hex(got), hex(want))
print("fma cross-checked on", n, "cases")
# overflow to infinity and rounding at max float
mx = 0x7F7FFFFF
assert mv.add(mx, 0x73000000) == mv.PINF  # max + half ulp (2^103) -> tie, mantissa odd -> inf
assert mv.add(mx, 0x72FFFFFF) == mx
assert mv.f32_to_bf16(0x7F7FFFFF) == 0x7F80
assert mv.f32_to_bf16(0x3F808000) == 0x3F80 and mv.f32_to_bf16(0x3F818000) == 0x3F82
assert mv.fma(mv.PINF, 0, 0) == mv.NAN and mv.add(mv.PINF, mv.NINF) == mv.NAN
assert mv.fma(0x80000000, 0x3F800000, 0) == 0  # -0*1 + +0 = +0
assert mv.fma(0x80000000, 0x3F800000, 0x80000000) == 0x80000000  # -0 + -0 = -0
print("edge cases ok")
