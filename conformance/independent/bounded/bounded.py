"""Clean-room implementation of spec chapter 19 (bounded matvec class), stdlib only."""
import math
import struct
from fractions import Fraction as F

U_I = F(1, 2**22)
U_C = F(1, 2**24)
TWO128 = F(2**128)
ONE = F(1)


# ---------- element values ----------
def bf16_to_float(w):
    return struct.unpack('<f', struct.pack('<I', (w & 0xFFFF) << 16))[0]


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def bits_f32(b):
    return struct.unpack('<f', struct.pack('<I', b & 0xFFFFFFFF))[0]


def fp8_to_float(v):
    """e4m3fn byte -> exact value (spec 4.4)."""
    s = -1.0 if v & 0x80 else 1.0
    e = (v >> 3) & 0xF
    m = v & 7
    if e == 15 and m == 7:
        return math.nan
    if e == 0:
        return s * math.ldexp(m, -9)          # 2^-6 * m/8
    return s * math.ldexp(8 + m, e - 7 - 3)   # 2^(e-7) * (1+m/8)


def is_bf16_value(x):
    """An f32 value that BF16 represents exactly (low 16 bits of the f32 pattern zero)."""
    return (f32_bits(x) & 0xFFFF) == 0


def to_f32(x):
    """Round a double to f32 (RNE); overflow -> inf."""
    try:
        return struct.unpack('<f', struct.pack('<f', x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


# ---------- chapter 19 ----------
def g(j, u):
    ju = j * u
    return ju / (1 - ju)


def sum_abs_products(wrow, xcol):
    """Exact sum over k of |w_k * x_k| as a Fraction (products of BF16/FP8 by BF16 are exact in
    double: at most 16 significant bits, lowest bit >= 2^-266)."""
    acc = 0
    for w, x in zip(wrow, xcol):
        p = abs(w * x)
        if p:
            acc += int(math.ldexp(p, 266))
    return F(acc, 2**266)


def bound_exact(wrow, xcol, s, b, xbf16, bbf16):
    """Returns (in_domain, B as Fraction or None, A, details).
    wrow: K weights (floats, exact unscaled values), xcol: K activations (floats),
    s: scale (float) or 1.0, b: bias (float) or 0.0; xbf16/bbf16: whether the activations X / the bias
    of the case are BF16 values."""
    K = len(wrow)
    # 19.2 domain
    if not (xbf16 and bbf16):
        return False, None, None, 'not bf16'
    if not all(math.isfinite(v) for v in wrow):
        return False, None, None, 'weight non-finite'
    if not all(math.isfinite(v) for v in xcol):
        return False, None, None, 'activation non-finite'
    if not (math.isfinite(s) and math.isfinite(b)):
        return False, None, None, 'scale/bias non-finite'
    if (K + 1) * U_I > F(1, 2):
        return False, None, None, 'K too large'
    S_abs = sum_abs_products(wrow, xcol)
    fs = abs(F(s))
    fb = abs(F(b))
    A_prime = max(ONE, fs) * S_abs + fb
    if not ((1 + g(K + 1, U_I)) * A_prime < TWO128 * (1 - F(1, 2**25))):
        return False, None, None, 'overflow'
    # 19.3
    A = fs * S_abs + fb
    eps = g(K + 1, U_I) + g(K + 1, U_C)
    eta = (K + 1) * F(1, 2**123) * max(ONE, fs)
    B = eps * A + eta
    return True, B, A, S_abs


def bound_f64(K, wrow, xcol, s, b):
    """An f64 evaluation of B, enlarged by 1 + (K+16)*2^-52 as the note in 19.4 says. The sum of
    |p_k| is accumulated in f64 in ascending k (found by trial to reproduce the corpus bit for bit;
    the spec does not fix the f64 evaluation)."""
    sa = 0.0
    for w, x in zip(wrow, xcol):
        sa += abs(w * x)
    A = abs(s) * sa + abs(b)
    def g64(j, u):
        return j * u / (1.0 - j * u)
    eps = g64(K + 1, 2.0**-22) + g64(K + 1, 2.0**-24)
    eta = (K + 1) * 2.0**-123 * max(1.0, abs(s))
    B = eps * A + eta
    return B * (1.0 + (K + 16) * 2.0**-52)


# ---------- checks (19.4 / 19.6) ----------
def check_f32(y, yc, B):
    """y, yc: floats (f32 values); B: Fraction or float. True when |y - yc| <= B."""
    if math.isnan(y) or math.isinf(y):
        return False
    if math.isnan(yc) or math.isinf(yc):
        return False
    return abs(F(y) - F(yc)) <= F(B)


def bf16_interval(word):
    """Real interval of values that round (RNE) to the BF16 word:
    (lo, lo_closed, hi, hi_closed); lo/hi are Fractions or None for -inf/+inf. None for NaN."""
    word &= 0xFFFF
    mag = word & 0x7FFF
    neg = bool(word & 0x8000)
    if mag > 0x7F80:
        return None  # NaN
    def val(m):  # magnitude of word m (0..0x7F80); 0x7F80 treated as 2^128 (next binade)
        if m == 0x7F80:
            return TWO128
        return F(bf16_to_float(m))
    closed = (mag & 1) == 0
    if mag == 0x7F80:
        lo = TWO128 - F(2**119)
        lo_c, hi, hi_c = True, None, False
    else:
        v = val(mag)
        up = (v + val(mag + 1)) / 2
        if mag == 0:
            down = -val(1) / 2  # +-0: reals of magnitude <= half the least subnormal (see FINDINGS)
        else:
            down = (v + val(mag - 1)) / 2
        lo, lo_c, hi, hi_c = down, closed, up, closed
    if neg:
        nlo = None if hi is None else -hi
        nhi = -lo
        return (nlo, hi_c, nhi, lo_c)
    return (lo, lo_c, hi, hi_c)


def check_bf16(word, yc, B):
    """Accept the BF16 word when the reals rounding to it meet [yc - B, yc + B]."""
    iv = bf16_interval(word)
    if iv is None:
        return False
    if math.isnan(yc) or math.isinf(yc):
        return False
    lo, lo_c, hi, hi_c = iv
    a = F(yc) - F(B)
    b = F(yc) + F(B)
    # intersection of [a,b] (closed) and interval
    if lo is not None:
        if lo > b or (lo == b and not lo_c):
            return False
    if hi is not None:
        if hi < a or (hi == a and not hi_c):
            return False
    return True


# ---------- f32 helpers for perturbation ----------
def next_up(x):
    if math.isnan(x) or x == math.inf:
        return x
    if x == 0:
        return bits_f32(1)
    b = f32_bits(x)
    return bits_f32(b + 1) if x > 0 else bits_f32(b - 1)


def next_down(x):
    return -next_up(-x)


def f32_above(t):
    """Smallest f32 strictly greater than Fraction t."""
    c = to_f32(float(t))
    while c != -math.inf and (c == math.inf or F(c) > t):
        c = next_down(c)
    # now c <= t
    return next_up(c)


def f32_below(t):
    return -f32_above(-t)


def bf16_words_ascending(word):
    """next BF16 word upward in value (positive direction); None past +inf."""
    w = word & 0xFFFF
    if w == 0x7F80:
        return None
    if w & 0x8000:
        if w == 0x8000:
            return 0x0001
        return w - 1
    return w + 1


def f32_round_bf16(x):
    """RNE f32 -> bf16 word (NaN -> 0x7FC0)."""
    if math.isnan(x):
        return 0x7FC0
    b = f32_bits(x)
    r = b + 0x7FFF + ((b >> 16) & 1)
    return (r >> 16) & 0xFFFF
