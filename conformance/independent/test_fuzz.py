"""Mutation fuzz of the decoder (own check, no oracle but the spec):
 - no exception other than ExecError;
 - an accepted layout re-encodes, under its own bases, to exactly its fields (20.11);
 - the reported rule is the first rule (20.10 order) among those a naive, independent reading of
   20.9 finds broken."""
import random, struct
import exec_core as ec

ORDER = ["exec-shape-range", "exec-field-size", "exec-base-range", "exec-sm-padding", "exec-code-padding",
         "exec-esc-start-first", "exec-esc-start-order", "exec-esc-length", "exec-esc-count",
         "exec-escape-in-window"]

def naive_broken(M, K, f):
    """All rules broken, each evaluated on its own where its inputs make sense."""
    br = set()
    if not ec.shape_ok(M, K):
        return {"exec-shape-range"}
    K16, CB, T = ec.derived(M, K)
    sizes = {"sm": M * K16, "codes": M * K16 // 2, "base": M, "esc_start": 4 * (T + 1)}
    if any(len(f.get(k) or b"") != n for k, n in sizes.items()):
        return {"exec-field-size"}
    sm, codes, base, esc = f["sm"], f["codes"], f["base"], f.get("esc") or b""
    es = struct.unpack(f"<{T+1}I", f["esc_start"])
    if any(b == 0 or b > 242 for b in base): br.add("exec-base-range")
    code = lambda m, k: (codes[m * K16 // 2 + k // 2] >> (4 * (k % 2))) & 15
    if any(sm[m * K16 + k] for m in range(M) for k in range(K, K16)): br.add("exec-sm-padding")
    if any(code(m, k) for m in range(M) for k in range(K, K16)): br.add("exec-code-padding")
    if es[0] != 0: br.add("exec-esc-start-first")
    if any(es[t + 1] < es[t] for t in range(T)): br.add("exec-esc-start-order")
    if es[T] != len(esc): br.add("exec-esc-length")
    cnt = [sum(1 for k in range(512 * (t % CB), min(512 * (t % CB) + 512, K)) if code(t // CB, k) == 15) for t in range(T)]
    if any(es[t + 1] - es[t] != cnt[t] for t in range(T)): br.add("exec-esc-count")
    else:
        # escapes of tile t: esc[es[t] + i]; only evaluable when they lie inside esc
        for t in range(T):
            m = t // CB
            for i in range(cnt[t]):
                j = es[t] + i
                if j < len(esc) and (esc[j] == 0 or base[m] <= esc[j] <= base[m] + 13):
                    br.add("exec-escape-in-window")
    return br

rnd = random.Random(3)
stats = {}
for it in range(6000):
    M = rnd.randint(1, 4); K = rnd.choice([1, 3, 16, 17, 40, 511, 512, 513, 600, 1030])
    words = [rnd.choice([0, 0x8000, rnd.getrandbits(16), 0x3F80 ^ rnd.getrandbits(9), 0x7F80, 0x0080, 0xFFFF]) for _ in range(M * K)]
    bases = None if rnd.random() < 0.5 else [rnd.randint(1, 242) for _ in range(M)]
    f = {k: bytearray(v) for k, v in ec.encode_exec(M, K, words, bases).items()}
    for _ in range(rnd.choice([0, 1, 1, 2, 3])):
        key = rnd.choice(ec.FIELDS); op = rnd.random()
        if f.get(key) is None: continue
        if op < 0.6 and f[key]:
            i = rnd.randrange(len(f[key])); f[key][i] = rnd.choice([0, 1, 15, 0xF0, 0xFF, rnd.getrandbits(8), f[key][i] ^ 1])
        elif op < 0.7: f[key] = f[key][:-1]
        elif op < 0.8: f[key].append(rnd.getrandbits(8))
        elif op < 0.85: f[key] = None
        elif op < 0.95 and key == "codes":
            # set a code to 15 and recount esc_start so that damage reaches 20.9.10
            K16, CB, T = ec.derived(M, K); m = rnd.randrange(M); k = rnd.randrange(K)
            o = m * K16 // 2 + k // 2; f["codes"][o] |= 0xF << (4 * (k & 1))
        else:
            pass
    ff = {k: (bytes(v) if v is not None else None) for k, v in f.items()}
    MM, KK = (M, K) if rnd.random() > 0.03 else (rnd.choice([0, M, 1 << 32]), K)
    try:
        out = ec.validate_and_decode(MM, KK, ff)
        got = None
    except ec.ExecError as e:
        got = e.rule
    br = naive_broken(MM, KK, ff)
    first = min(br, key=ORDER.index) if br else None
    assert got == first, (got, br, M, K)
    if got is None:
        again = ec.encode_exec(M, K, out, list(ff["base"]))
        assert all(again[k] == (ff.get(k) or b"") for k in ec.FIELDS), "20.11 re-encode differs"
    stats[got] = stats.get(got, 0) + 1
print("fuzz ok", stats)
