import os
import json, math, struct, sys, hashlib, collections, time
from fractions import Fraction as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounded import *

VEC = os.path.join(os.environ.get('NWC_VECTORS', 'vectors'), '')
man = json.load(open(VEC + 'manifest.json'))
assert man['corpus_version'] == 2


def rd(path, v):
    data = open(VEC + path, 'rb').read()
    assert hashlib.sha256(data).hexdigest() == v['sha256'][path], path
    return data


def arr(data, fmt, size):
    n = len(data) // size
    return list(struct.unpack('<%d%s' % (n, fmt), data))


stats = collections.Counter()
notes = []
reldiffs = []
f64_match = collections.Counter()
t0 = time.time()
only = sys.argv[1] if len(sys.argv) > 1 else None
for v in man['vectors']:
    if not v['matvecs'] or v['input'] is None:
        continue
    if only and only not in v['id']:
        continue
    M, K = v['rows'], v['cols']
    raw = rd(v['input'], v)
    if v['elem'] == 'bf16':
        W = [bf16_to_float(w) for w in arr(raw, 'H', 2)]
    else:
        W = [fp8_to_float(b) for b in raw]
    assert len(W) == M * K
    scales = arr(rd(v['fields']['scale'], v), 'f', 4) if 'scale' in v['fields'] else None
    for ci, mv in enumerate(v['matvecs']):
        N = mv['batch']
        X = arr(rd(mv['activations'], v), 'f', 4)
        bias = arr(rd(mv['bias'], v), 'f', 4) if mv['bias'] else None
        xbf = all(is_bf16_value(x) for x in X)
        bbf = bias is None or all(is_bf16_value(x) for x in bias)
        stats['cases'] += 1
        if 'bound' not in mv:
            if xbf and bbf:
                notes.append(('bf16 case without bound', v['id'], ci))
            continue
        if not (xbf and bbf):
            notes.append(('bound file but not bf16', v['id'], ci))
        stats['cases_with_bound'] += 1
        Bf = arr(rd(mv['bound'], v), 'd', 8)
        Y32 = arr(rd(mv['output_f32'], v), 'f', 4)
        Y16 = arr(rd(mv['output_bf16'], v), 'H', 2)
        assert len(Bf) == N * M == len(Y32) == len(Y16)
        case_exact = True
        for n in range(N):
            xcol = X[n * K:(n + 1) * K]
            for m in range(M):
                i = n * M + m
                s = scales[m] if scales else 1.0
                b = bias[m] if bias else 0.0
                ind, B, A, Sabs = bound_exact(W[m * K:(m + 1) * K], xcol, s, b, xbf, bbf)
                bf = Bf[i]
                stats['outputs'] += 1
                if not ind:
                    stats['mine_nan'] += 1
                    stats['nan_reason: ' + str(Sabs)] += 1
                    if math.isnan(bf):
                        stats['nan_agree'] += 1
                    else:
                        stats['dom_disagree'] += 1
                        case_exact = False
                        notes.append(('mine NaN, file not', v['id'], ci, n, m, Sabs, bf))
                    continue
                if math.isnan(bf):
                    stats['dom_disagree'] += 1
                    case_exact = False
                    notes.append(('file NaN, mine not', v['id'], ci, n, m, float(B)))
                    continue
                stats['in_domain'] += 1
                # (a) compare with file
                Fb = F(bf)
                if Fb == B:
                    stats['exact_equal'] += 1
                else:
                    rel = (Fb - B) / B
                    reldiffs.append(float(rel))
                    stats['file_ge_mine' if Fb >= B else 'file_lt_mine'] += 1
                b64 = bound_f64(K, W[m * K:(m + 1) * K], xcol, s, b)
                lim = (K + 16) * 2.0**-52 + (K + 8) * 2.0**-53
                stats['reldiff_within_enlargement' if (Fb - B) / B <= lim else 'reldiff_BEYOND_enlargement'] += 1
                f64_match['f64_guess_equal' if b64 == bf else 'f64_guess_diff'] += 1
                if b64 != bf and f64_match['f64_guess_diff'] <= 5:
                    notes.append(('f64 guess differs', v['id'], ci, n, m, b64, bf, K))
                # (b) expected outputs pass (with my B and with the file B)
                yc = Y32[i]
                w16 = Y16[i]
                if math.isnan(yc):
                    notes.append(('NaN y_c in domain', v['id'], ci, n, m))
                    continue
                for tag, BB in (('mine', B), ('file', Fb)):
                    stats[f'f32_pass_{tag}' if check_f32(yc, yc, BB) else f'f32_FAIL_{tag}'] += 1
                    stats[f'bf16_pass_{tag}' if check_bf16(w16, yc, BB) else f'bf16_FAIL_{tag}'] += 1
                if f32_round_bf16(yc) != w16:
                    notes.append(('bf16 file != RNE(f32 file)', v['id'], ci, n, m))
                # (c) perturbations, judged with my B
                for sign in (1, -1):
                    edge = F(yc) + sign * B
                    out = f32_above(edge) if sign > 0 else f32_below(edge)
                    inn = f32_below(edge) if sign > 0 else f32_above(edge)
                    # 'inn' is the last f32 at or inside (f32_below gives strictly below; adjust)
                    if sign > 0:
                        inn = out if F(out) <= edge else next_down(out)
                    else:
                        inn = out if F(out) >= edge else next_up(out)
                    stats['pert_f32_caught' if not check_f32(out, yc, B) else 'pert_f32_MISSED'] += 1
                    far = out
                    for _ in range(3):
                        far = next_up(far) if sign > 0 else next_down(far)
                    stats['pert_f32_caught' if not check_f32(far, yc, B) else 'pert_f32_MISSED'] += 1
                    if math.isfinite(inn):
                        stats['edge_f32_inside_pass' if check_f32(inn, yc, B) else 'edge_f32_inside_FAIL'] += 1
                    # bf16: walk words from RNE(yc) outward until the word fails; the previous must pass
                    w = f32_round_bf16(yc)
                    prev = None
                    steps = 0
                    while w is not None and check_bf16(w, yc, B):
                        prev = w
                        if sign > 0:
                            w = bf16_words_ascending(w)
                        else:
                            nw = bf16_words_ascending(w ^ 0x8000)
                            w = None if nw is None else nw ^ 0x8000
                        steps += 1
                        if steps > 100000:
                            w = None
                            break
                    if w is None:
                        stats['pert_bf16_none_beyond(inf reached)'] += 1
                    else:
                        stats['pert_bf16_caught'] += 1
                        # sanity: the failing word's interval lies strictly beyond yc+-B
                        iv = bf16_interval(w)
                        lo, lo_c, hi, hi_c = iv
                        if sign > 0:
                            ok = lo is not None and (lo > edge or (lo == edge and not lo_c))
                        else:
                            ok = hi is not None and (hi < edge or (hi == edge and not hi_c))
                        stats['pert_bf16_beyond_ok' if ok else 'pert_bf16_beyond_BAD'] += 1
                        # the word the real y_c +- (B + 2 ulp(B)) rounds to, if different from prev, must fail
                    stats['bf16_steps_%s' % min(steps, 3)] += 1
        if case_exact:
            stats['cases_all_outputs_agree(NaN pattern; finite: file>=mine within enlargement)'] += 1

print(json.dumps(stats, indent=1, sort_keys=True))
print(dict(f64_match))
if reldiffs:
    print('reldiff min/max', min(reldiffs), max(reldiffs), len(reldiffs))
for n_ in notes[:40]:
    print(n_)
print('notes', len(notes), 'time', time.time() - t0)

# A check CI can run: any disagreement with the corpus or any missed perturbation fails.
bad = {k: n for k, n in stats.items() if any(t in k for t in ("FAIL", "MISSED", "BAD", "BEYOND", "disagree", "lt_mine"))}
if bad or f64_match['f64_guess_diff'] or notes or stats['in_domain'] == 0:
    print('FAILED', bad, dict(f64_match), len(notes), 'notes')
    sys.exit(1)
print('ok: every bound file reproduced bit for bit, every expected output within B, every perturbation caught')
