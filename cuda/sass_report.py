"""The static instruction counts of docs/gpu.md (cuda/sass.sh runs this): registers, spills and SASS
instructions of the kernels whose names match a pattern, with each loop (a conditional branch back)
and its main path: the loop body without the blocks a forward conditional branch skips that hold
the escape prefix (SHFL.UP or a shuffle's BRA.DIV fallback), a partial load (the pad code word
0x11111111), an inner loop (a patch loop) or only zero fills and predicated loads.
Usage: sass_report.py PATTERN PTXAS_LOG SASS"""
import re
import sys
from collections import Counter

ALU = {'LOP3', 'PRMT', 'SHF', 'IADD3', 'ISETP', 'FSEL', 'SEL', 'LEA', 'VIADD', 'POPC', 'PLOP3', 'R2P', 'FLO', 'BMSK'}


def functions(sass):
    cur, out = None, {}
    for line in sass.splitlines():
        t = line.strip()
        if t.startswith('.text.'):
            cur = t[6:].rstrip(':')
            out[cur] = []
            continue
        if cur is None:
            continue
        t = re.sub(r'/\*[0-9a-f]{4}\*/|\s+/\* 0x[0-9a-f]+ \*/', '', line).strip()
        if t and not t.startswith('.') or t.startswith('.L_x'):
            out[cur].append(t)
    return out


def opcode(line):
    return re.sub(r'^@!?U?P\w+\s+', '', line).split()[0].split('.')[0]


def cold(block):
    """True for a block off the main path (the module docstring says which)."""
    labels = {x[:-1] for x in block if x.startswith('.L') and x.endswith(':')}
    inner = any(m and m.group(1) in labels for m in (re.search(r'BRA\s+(?:!?U?P\d, )?`\((\.L_x_\d+)\)', x) for x in block))
    return inner or any('SHFL.UP' in x or 'BRA.DIV' in x or '0x11111111' in x for x in block) or (
        bool(block) and all(opcode(x) in ('CS2R', 'LDG', 'ISETP', 'BRA') for x in block))


def loops(lines):
    lab = {l[:-1]: i for i, l in enumerate(lines) if l.startswith('.L') and l.endswith(':')}
    for i, l in enumerate(lines):
        # a conditional branch back (an unconditional one comes from a shuffle's divergence fallback)
        m = re.search(r'^@!?U?P\w+\s+BRA\s+(?:!?U?P\d, )?`\((\.L_x_\d+)\)', l)
        if not (m and m.group(1) in lab and lab[m.group(1)] < i):
            continue
        a, b, skip, k = lab[m.group(1)], i, set(), lab[m.group(1)]
        while k < b:
            f = re.search(r'^@!?P\d\s+BRA\s+(?:!?U?P\d, )?`\((\.L_x_\d+)\)', lines[k])
            if f and f.group(1) in lab and k < lab[f.group(1)] <= b and cold(lines[k + 1:lab[f.group(1)]]):
                skip.update(range(k + 1, lab[f.group(1)]))
                k = lab[f.group(1)]
                continue
            k += 1
        body = [lines[j] for j in range(a + 1, b + 1) if not lines[j].startswith('.L') and not lines[j].startswith('BSYNC')]
        main = [lines[j] for j in range(a + 1, b + 1) if j not in skip and not lines[j].startswith('.L') and not lines[j].startswith('BSYNC')]
        yield m.group(1), len(body), main


def main():
    pat, log, sass = re.compile(sys.argv[1]), open(sys.argv[2]).read(), open(sys.argv[3]).read()
    regs, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = m.group(1)
        m = re.search(r'Used (\d+) registers', line)
        if m and cur:
            regs.setdefault(cur, {})['regs'] = int(m.group(1))
        m = re.search(r'(\d+) bytes spill stores, (\d+) bytes spill loads', line)
        if m and cur:
            regs.setdefault(cur, {})['spill'] = (int(m.group(1)), int(m.group(2)))
    for name, lines in functions(sass).items():
        if not pat.search(name):
            continue
        r = regs.get(name, {})
        print(f"{name}: {r.get('regs', '?')} registers, spills {r.get('spill', '?')}, {sum(1 for l in lines if not l.startswith('.L'))} instructions")
        for label, total, main_path in loops(lines):
            c = Counter(opcode(x) for x in main_path)
            alu = sum(v for k, v in c.items() if k in ALU)
            top = ' '.join(f'{k} {v}' for k, v in c.most_common(6))
            print(f"  loop {label}: {total} instructions, main path {len(main_path)} (ALU pipe {alu}, IMAD {c['IMAD']}, FFMA {c['FFMA']}, HMMA {c['HMMA']}; {top})")


main()
