import os
"""Property tests of the BF16 check of 19.6 against a brute-force reading of 19.4."""
import math, random, sys
from fractions import Fraction as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounded import *

def rne_bf16_real(q):
    """RNE of an exact real to a BF16 word (sign of a zero result: that of q; 0 -> +0)."""
    neg = q < 0
    a = -q if neg else q
    if a >= TWO128 - F(2**119):
        w = 0x7F80
    elif a == 0:
        w = 0
    else:
        e = math.floor(math.log2(a)) if a > 0 else 0
        # fix e exactly
        while F(2)**e > a: e -= 1
        while F(2)**(e+1) <= a: e += 1
        qe = max(e - 7, -133)       # quantum: 8 significant bits, subnormal quantum 2^-133
        n = a / F(2)**qe
        fl = math.floor(n); r = n - fl
        if r > F(1,2) or (r == F(1,2) and fl % 2 == 1): fl += 1
        val = fl * F(2)**qe
        w = 0x7F80 if val >= TWO128 else f32_bits(float(val)) >> 16
    return w | (0x8000 if neg else 0)

def key(w):  # value order of words, merging +-0
    if w & 0x8000:
        return -(w & 0x7FFF)
    return w

rng = random.Random(7)
bad = 0; total = 0; zero_diff = 0
def trial(yc, B):
    global bad, total, zero_diff
    lo = rne_bf16_real(F(yc) - B); hi = rne_bf16_real(F(yc) + B)
    base = f32_round_bf16(yc)
    cands = set()
    for w0 in (lo, hi, base):
        for d in range(-4, 5):
            w = w0 + d
            if 0 <= w <= 0xFFFF: cands.add(w)
    cands |= {0, 0x8000, 0x7F80, 0xFF80, 0x7FC0}
    for w in cands:
        if (w & 0x7FFF) > 0x7F80:
            expect = False
        else:
            expect = key(lo) <= key(w) <= key(hi)
        got = check_bf16(w, yc, B)
        total += 1
        if got != expect:
            if (w & 0x7FFF) == 0: zero_diff += 1
            else:
                bad += 1
                if bad < 10: print('MISMATCH', hex(w), yc, float(B), got, expect)

for _ in range(20000):
    kind = rng.random()
    e = rng.randint(-140, 127)
    yc = to_f32(rng.choice([-1, 1]) * rng.random() * 2.0**e)
    if not math.isfinite(yc): continue
    if kind < 0.3:
        B = F(abs(yc)) * F(rng.randint(1, 2**20), 2**30) + F(1, 2**140)
    elif kind < 0.6:
        # make yc+B or yc-B land exactly on a BF16 midpoint
        w = f32_round_bf16(yc) & 0x7FFF
        if w >= 0x7F7F: continue
        v = F(bf16_to_float(w)); mid = (v + F(bf16_to_float(w + 1))) / 2
        if yc < 0: mid = -mid
        B = abs(mid - F(yc)) + rng.choice([0, 0, F(1, 2**160)])
        if B == 0: B = F(1, 2**149)
    else:
        B = F(rng.random()) * F(2)**rng.randint(-150, 10) * F(abs(yc) or 1)
        if B == 0: B = F(1, 2**149)
    trial(yc, B)
# overflow region
for yc in (3.4028234663852886e38, -3.4028234663852886e38, 3.3895313892515355e38, 3.389e38, 2.8466767526917192e+38):
    for B in (F(1, 2**100), F(2**104), F(2**110), F(10**33)):
        trial(to_f32(yc), B)
print('checked', total, 'word/window pairs; mismatches (nonzero words):', bad, '; zero-word sign differences:', zero_diff)
# explicit examples
print('inf word, yc=f32max, tiny B:', check_bf16(0x7F80, 3.4028234663852886e38, F(1, 2**100)))
print('inf word, yc=2.8467e38, B=1.36e33:', check_bf16(0x7F80, 2.8466767526917192e38, F(1357405654456099, 1) * 10**18))
print('NaN word, any:', check_bf16(0x7FC0, 1.0, F(10)), check_bf16(0xFFC1, 1.0, F(10)))
# tie closedness: y_c = 1.0, B = half ulp of bf16 at 1 (2^-8): 1+2^-8 is a tie between 0x3F80(even) and 0x3F81(odd)
print('odd word 0x3F81 with y_c+B exactly its lower midpoint (expect False):', check_bf16(0x3F81, 1.0, F(1, 2**8)))
print('even word 0x3F82 with y_c-B exactly its upper? (yc=1+3*2^-8, B=2^-8 -> 1+2^-7+2^-8? ) ',
      check_bf16(0x3F82, 1.0 + 5 * 2.0**-8, F(1, 2**8)))
# A check CI can run: any disagreement with the brute-force reading fails.
if bad:
    sys.exit(1)
print('ok: the BF16 check agrees with a brute-force reading of 19.4 on', total, 'word/window pairs')
