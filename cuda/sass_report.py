"""The static instruction counts of docs/gpu.md (cuda/sass.sh runs this): registers, spills and SASS
instructions of the kernels whose names match a pattern, with each loop (a conditional branch back)
and its main path: the loop body without the blocks a forward conditional branch skips that hold
the escape prefix (SHFL.UP or a shuffle's BRA.DIV fallback), a partial load (the pad code word
0x11111111) or partial copy (four or more cp.async with their zero fill), an inner loop (a branch back inside the
block: a patch loop) or only zero fills and predicated loads.
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


def top_level(block):
    """The instructions of a block outside the forward branches' regions nested in it."""
    labels = {x[:-1]: i for i, x in enumerate(block) if x.startswith('.L') and x.endswith(':')}
    def forward(i):
        m = re.search(r'BRA\s+(?:!?U?P\d, )?`\((\.L_x_\d+)\)', block[i])
        return labels[m.group(1)] if m and m.group(1) in labels and labels[m.group(1)] > i else None

    out, k = [], 0
    while k < len(block):
        out.append(block[k])
        t = forward(k)
        if t is None:
            k += 1
            continue
        # an if's body ends in an unconditional branch over its else: skip both
        e = forward(t - 1) if t - 1 > k and block[t - 1].startswith('BRA') else None
        k = e if e is not None else t
    return out


def cold(block):
    """True for a block off the main path (the module docstring says which)."""
    # an inner loop: a branch back to a label of the block (a branch forward inside it is an if)
    labels = {x[:-1]: i for i, x in enumerate(block) if x.startswith('.L') and x.endswith(':')}
    targets = ((i, re.search(r'BRA\s+(?:!?U?P\d, )?`\((\.L_x_\d+)\)', x)) for i, x in enumerate(block))
    inner = any(m and m.group(1) in labels and labels[m.group(1)] < i for i, m in targets)
    # the markers count outside the ifs nested in the block: a block that holds a full and a
    # partial path is not cold for the partial one
    top = top_level(block)
    # a partial copy: several cp.async with their zero fill (LDGSTS's trailing predicate operand;
    # one alone is a row's escape offset past M, copied on every path)
    fill = sum(1 for x in top if re.search(r'LDGSTS.*\], !?P\d', x)) >= 4
    return inner or fill or any('SHFL.UP' in x or 'BRA.DIV' in x or '0x11111111' in x for x in top) or (
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
            # a conditional branch forward skips an if's body; an unconditional one, an else
            f = re.search(r'^(?:@!?P\d\s+)?BRA\s+(?:!?U?P\d, )?`\((\.L_x_\d+)\)', lines[k])
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
