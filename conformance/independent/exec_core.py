"""Execution layout (spec chapter 20), written from the spec text only.

Pure Python 3.11 standard library.
"""
from array import array
import struct

TILE = 512
MAX_M = 1 << 31
MAX_K = (1 << 31) - 512
MAX_MK = 1 << 40
MAX_E = (1 << 32) - 1
# Resource limits (20.16, 16.4): our own, like the reference defaults.
LIMIT_MAX_WEIGHTS = 1 << 34

FIELDS = ("sm", "codes", "base", "esc_start", "esc")


class ExecError(Exception):
    """A validity-rule violation of 20.9."""

    def __init__(self, rule, clause, field=None, offset=None, detail=""):
        self.rule, self.clause, self.field, self.offset, self.detail = rule, clause, field, offset, detail
        parts = [f"{rule} (spec {clause})"]
        if field is not None:
            parts.append(f"field {field}")
        if offset is not None:
            parts.append(f"byte offset {offset}")
        if detail:
            parts.append(detail)
        super().__init__(": ".join(parts[:1]) + (" " + ", ".join(parts[1:]) if len(parts) > 1 else ""))


class LimitError(Exception):
    """A resource-limit refusal (20.16): not a validity rule."""


class RefusalError(Exception):
    """A transcoder refusal (20.12.3)."""


def roundup(x, n):
    return n * ((x + n - 1) // n)


def derived(M, K):
    K16 = roundup(K, 16)
    CB = (K + TILE - 1) // TILE
    return K16, CB, M * CB


def shape_ok(M, K):
    return (isinstance(M, int) and isinstance(K, int) and not isinstance(M, bool)
            and not isinstance(K, bool) and 1 <= M <= MAX_M and 1 <= K <= MAX_K and M * K <= MAX_MK)


# --------------------------------------------------------------------------- encode (20.4-20.8)

def canonical_base(exps_hist):
    """20.8: smallest b in [1, 242] maximizing n(b) = #{b <= e <= b+13}."""
    h = exps_hist
    cur = sum(h[1:15])  # b = 1: exponents 1..14
    best, best_b = cur, 1
    for b in range(2, 243):
        cur += h[b + 13] - h[b - 1]
        if cur > best:
            best, best_b = cur, b
    return best_b


def encode_exec(M, K, words, bases=None):
    """Canonical transcode (20.12.1) of M x K BF16 words (sequence of ints, row-major).
    With `bases` given, encode under those bases (20.11) instead of the canonical ones.
    Returns dict of field -> bytes."""
    if not shape_ok(M, K):
        raise RefusalError("shape outside spec 3.2")
    K16, CB, T = derived(M, K)
    sm = bytearray(M * K16)
    codes = bytearray(M * K16 // 2)
    base = bytearray(M)
    esc_start = array("I", [0]) * (T + 1)
    esc = bytearray()
    for m in range(M):
        row = words[m * K:(m + 1) * K]
        if bases is None:
            hist = [0] * 256
            for w in row:
                hist[(w >> 7) & 0xFF] += 1
            b = canonical_base(hist)
        else:
            b = bases[m]
        base[m] = b
        so = m * K16
        co = m * (K16 // 2)
        for cb in range(CB):
            t = m * CB + cb
            for k in range(TILE * cb, min(TILE * cb + TILE, K)):
                w = row[k]
                sm[so + k] = ((w >> 8) & 0x80) | (w & 0x7F)
                e = (w >> 7) & 0xFF
                if e == 0:
                    c = 0
                elif b <= e <= b + 13:
                    c = e - b + 1
                else:
                    c = 15
                    esc.append(e)
                if c:
                    codes[co + (k >> 1)] |= c << (4 * (k & 1))
            if len(esc) > MAX_E:
                raise RefusalError("canonical layout would need E > 2^32 - 1 escapes (spec 20.12.3)")
            esc_start[t + 1] = len(esc)
    if esc_start.itemsize != 4:
        raise RuntimeError("array('I') is not 32-bit here")
    es = array("I", esc_start)
    import sys
    if sys.byteorder != "little":
        es.byteswap()
    return {"sm": bytes(sm), "codes": bytes(codes), "base": bytes(base),
            "esc_start": es.tobytes(), "esc": bytes(esc)}


# --------------------------------------------------------------------------- validate + decode (20.9, 20.10, 20.13)

def _code(codes, m, k, K16):
    byte = codes[m * (K16 // 2) + (k >> 1)]
    return (byte >> 4) if (k & 1) else (byte & 0x0F)


def check_shape(M, K):
    """Step 1 of 20.10: 20.9.1 from the metadata alone, then resource limits."""
    if not shape_ok(M, K):
        raise ExecError("exec-shape-range", "20.9.1", None, None,
                        f"M = {M!r}, K = {K!r} outside spec 3.2 (1 <= M <= 2^31, 1 <= K <= 2^31 - 512, M*K <= 2^40)")
    if M * K > LIMIT_MAX_WEIGHTS:
        raise LimitError(f"resource limit: M*K = {M * K} weights exceeds this decoder's limit of {LIMIT_MAX_WEIGHTS}")


def validate_and_decode(M, K, f, want_words=True):
    """f: dict field -> bytes or None (missing). Checks 20.9 in the order of 20.10; raises ExecError
    on the first violation.  Returns the M*K decoded words (array('H')) or None."""
    check_shape(M, K)
    K16, CB, T = derived(M, K)
    # step 2: field sizes, order sm, codes, base, esc_start
    expect = (("sm", M * K16), ("codes", M * K16 // 2), ("base", M), ("esc_start", 4 * (T + 1)))
    for name, n in expect:
        got = f.get(name)
        ln = 0 if got is None else len(got)
        if ln != n:
            raise ExecError("exec-field-size", "20.9.2", name, None,
                            f"length {ln} bytes{' (missing)' if got is None else ''}, expected {n}")
    sm, codes, base = f["sm"], f["codes"], f["base"]
    esc = f.get("esc") or b""
    # step 3: base range, rows ascending
    for m in range(M):
        if base[m] == 0 or base[m] > 242:
            raise ExecError("exec-base-range", "20.9.3", "base", m, f"base[{m}] = {base[m]}")
    # step 4: sm padding, row-major
    if K16 != K:
        for m in range(M):
            o = m * K16
            for k in range(K, K16):
                if sm[o + k]:
                    raise ExecError("exec-sm-padding", "20.9.4", "sm", o + k,
                                    f"position (m={m}, k={k}) holds 0x{sm[o + k]:02X}")
        # step 5: code padding, row-major
        for m in range(M):
            for k in range(K, K16):
                if _code(codes, m, k, K16):
                    off = m * (K16 // 2) + (k >> 1)
                    raise ExecError("exec-code-padding", "20.9.5", "codes", off,
                                    f"nibble {'4..7' if k & 1 else '0..3'}, position (m={m}, k={k}), code {_code(codes, m, k, K16)}")
    es = struct.unpack(f"<{T + 1}I", f["esc_start"])
    # step 6
    if es[0] != 0:
        raise ExecError("exec-esc-start-first", "20.9.6", "esc_start", 0, f"esc_start[0] = {es[0]}")
    # step 7
    for t in range(T):
        if es[t + 1] < es[t]:
            raise ExecError("exec-esc-start-order", "20.9.7", "esc_start", 4 * (t + 1),
                            f"esc_start[{t + 1}] = {es[t + 1]} < esc_start[{t}] = {es[t]}")
    # step 8
    if es[T] != len(esc):
        raise ExecError("exec-esc-length", "20.9.8", "esc_start", 4 * T,
                        f"esc_start[{T}] = {es[T]}, length of esc = {len(esc)}")
    # step 9: per tile escape counts
    half = K16 // 2
    for m in range(M):
        co = m * half
        for cb in range(CB):
            t = m * CB + cb
            n = 0
            for k in range(TILE * cb, min(TILE * cb + TILE, K)):
                byte = codes[co + (k >> 1)]
                if ((byte >> 4) if (k & 1) else (byte & 0xF)) == 15:
                    n += 1
            if es[t + 1] - es[t] != n:
                raise ExecError("exec-esc-count", "20.9.9", "esc_start", 4 * (t + 1),
                                f"tile {t}: esc_start[{t + 1}] - esc_start[{t}] = {es[t + 1] - es[t]}, code-15 positions {n}")
    # step 10: escapes in window, j ascending.  esc is row-major so j ascending = position order.
    # Decode at the same time; output discarded if a violation is found.
    out = array("H", bytes(2 * M * K)) if want_words else None
    j = 0
    for m in range(M):
        b = base[m]
        so = m * K16
        co = m * half
        for k in range(K):
            byte = codes[co + (k >> 1)]
            c = (byte >> 4) if (k & 1) else (byte & 0xF)
            if c == 15:
                e = esc[j]
                if e == 0 or b <= e <= b + 13:
                    raise ExecError("exec-escape-in-window", "20.9.10", "esc", j,
                                    f"esc[{j}] = {e} is the exponent of (m={m}, k={k}); base[{m}] = {b}")
                j += 1
            elif c == 0:
                e = 0
            else:
                e = b + c - 1
            if want_words:
                s = sm[so + k]
                out[m * K + k] = ((s & 0x80) << 8) | (e << 7) | (s & 0x7F)
    return out


def words_to_bytes(words):
    a = array("H", words)
    import sys
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def bytes_to_words(b):
    a = array("H")
    a.frombytes(b)
    import sys
    if sys.byteorder != "little":
        a.byteswap()
    return a


# --------------------------------------------------------------------------- dequant, gather (20.14)

def dequant(M, K, words):
    K16 = roundup(K, 16)
    out = array("H", bytes(2 * M * K16))
    for m in range(M):
        out[m * K16:m * K16 + K] = array("H", words[m * K:(m + 1) * K])
    return out


def gather(M, K, words, rows):
    K16 = roundup(K, 16)
    for r in rows:
        if not (0 <= r < M):
            raise IndexError(f"gather index {r} >= M = {M} (argument error, spec 15.3)")
    d = dequant(M, K, words)
    out = array("H")
    for r in rows:
        out.extend(d[r * K16:(r + 1) * K16])
    return out
