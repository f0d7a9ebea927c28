import os
"""Evaluate matvec outputs in other orders in exactly-rounded f32 (double rounding through f64 is
innocuous for + and * since 53 >= 2*24 + 2) and check them against B."""
import json, math, struct, sys, hashlib, collections, random
from fractions import Fraction as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounded import *

VEC = os.path.join(os.environ.get('NWC_VECTORS', 'vectors'), '')
man = json.load(open(VEC + 'manifest.json'))


def arr(data, fmt, size):
    n = len(data) // size
    return list(struct.unpack('<%d%s' % (n, fmt), data))


def rd(p):
    return open(VEC + p, 'rb').read()


fadd = lambda a, b: to_f32(a + b)
fmul = lambda a, b: to_f32(a * b)


def seq(ps):
    a = 0.0
    for p in ps:
        a = fadd(a, p)
    return a


def pairwise(ps):
    if not ps:
        return 0.0
    while len(ps) > 1:
        nxt = [fadd(ps[i], ps[i + 1]) for i in range(0, len(ps) - 1, 2)]
        if len(ps) % 2:
            nxt.append(ps[-1])
        ps = nxt
    return ps[0]


def trunc24(x, quantum_exp):
    """truncate exact value x (Fraction) toward zero to a multiple of 2^quantum_exp"""
    q = F(2) ** quantum_exp
    n = x / q
    n = math.floor(n) if n >= 0 else math.ceil(n)
    return n * q


def mma(ps, G=8):
    """matrix-unit style: per step add G products to the accumulator, all aligned to the largest
    exponent and truncated to 24 bits, then the result truncated to 24 bits (19.5 (b))."""
    acc = F(0)
    for i in range(0, len(ps), G):
        ops = [acc] + [F(p) for p in ps[i:i + G]]
        nz = [o for o in ops if o != 0]
        if not nz:
            continue
        emax = max(math.frexp(float(o))[1] for o in nz)  # value < 2^emax
        qe = max(emax - 24, -149)
        t = sum(trunc24(o, qe) for o in ops)
        if t != 0:
            e = math.frexp(float(t))[1]
            t = trunc24(t, max(e - 24, -149))
        acc = t
    return float(acc)


def outputs(ps, s, b, scaled, has_bias):
    res = {}
    for name, fn in (('forward', seq), ('reversed', lambda q: seq(q[::-1])), ('pairwise', pairwise),
                     ('shuffled', lambda q: seq(random.Random(1).sample(q, len(q)))), ('mma8', mma)):
        t = fn(list(ps))
        if scaled:
            t = fmul(t, s)
        if has_bias:
            t = fadd(t, b)
        res[name] = t
    return res


def main(ids_sub, max_cases=12):
    stats = collections.Counter()
    worst = 0.0
    done = 0
    for v in man['vectors']:
        if not any(s in v['id'] for s in ids_sub):
            continue
        if not v['matvecs'] or v['input'] is None:
            continue
        M, K = v['rows'], v['cols']
        raw = rd(v['input'])
        W = [bf16_to_float(w) for w in arr(raw, 'H', 2)] if v['elem'] == 'bf16' else [fp8_to_float(b) for b in raw]
        scales = arr(rd(v['fields']['scale']), 'f', 4) if 'scale' in v['fields'] else None
        for ci, mv in enumerate(v['matvecs']):
            if 'bound' not in mv:
                continue
            N = mv['batch']
            X = arr(rd(mv['activations']), 'f', 4)
            bias = arr(rd(mv['bias']), 'f', 4) if mv['bias'] else None
            Bf = arr(rd(mv['bound']), 'd', 8)
            Y32 = arr(rd(mv['output_f32']), 'f', 4)
            done += 1
            for n in range(N):
                xc = X[n * K:(n + 1) * K]
                for m in range(M):
                    i = n * M + m
                    s = scales[m] if scales else 1.0
                    b = bias[m] if bias else 0.0
                    ind, B, A, Sabs = bound_exact(W[m * K:(m + 1) * K], xc, s, b, True, True)
                    if not ind:
                        stats['out_of_domain'] += 1
                        continue
                    ps = [fmul(w, x) for w, x in zip(W[m * K:(m + 1) * K], xc)]
                    yc = Y32[i]
                    for name, y in outputs(ps, s, b, scales is not None, bias is not None).items():
                        okm = check_f32(y, yc, B)
                        okf = check_f32(y, yc, Bf[i])
                        okb = check_bf16(f32_round_bf16(y), yc, B)
                        stats[f'{name}_{"in" if okm and okf and okb else "OUT"}'] += 1
                        stats[f'{name}_equal_canonical'] += (y == yc or (y != y and yc != yc))
                        if B:
                            worst = max(worst, float(abs(F(y) - F(yc)) / B))
            if done >= max_cases:
                break
        if done >= max_cases:
            break
    print(done, 'cases')
    print(json.dumps(stats, indent=1, sort_keys=True))
    print('max |y - y_c| / B =', worst)


if __name__ == '__main__':
    main(sys.argv[1].split(','), int(sys.argv[2]) if len(sys.argv) > 2 else 12)
