#!/usr/bin/env python3
"""Whole-CLI speed and memory on a >= 1 GB BF16 model beside `cp`, for a machine without Rust
(the H200 host's CPU: a release `nwc` built elsewhere is carried in). python3 and numpy only.

    python3 scripts/cli_bench.py --nwc NWC --out OUT [--work DIR] [--tensors 16] [--rounds 3]
                                 [--threads 2,8] [--cpu-bench BIN ...] [--budget 140]

Writes WORK/model.safetensors (TENSORS x 4096 x 8192, N(0, 0.02) rounded to nearest-even BF16:
four independent matrices and row rotations of them; 16 = 1 GiB), reads it once (page cache warm, as for cp), then for each thread count runs ROUNDS
rounds of `cp`, `nwc compress --threads T`, `nwc decompress --threads T` (each after a `sync`,
timed with wait4: wall, user, sys, peak RSS), and checks the decompressed file's SHA-256 against
the original's. Prints a markdown table of medians (speed vs cp = cp's median wall / the step's)
and writes it to OUT/cli_bench.md; with --cpu-bench, also the codec alone (nwc-cpu-bench, one
thread, 4096 x 8192 BF16 layout 0, huge pages as the `nwc` binary uses them). Peak RSS
includes the launching Python's (about 10 MB: see make_model). Stops adding rounds
when the time budget (seconds) would be exceeded; the table says how many rounds ran.
Same method as scripts/bench-model.sh (the development VM's version, which builds with cargo).
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time

ROWS, COLS = 4096, 8192


def make_model(path, n):
    """Runs in a child process (--generate): the launching process stays small, because a
    command's peak RSS as wait4 reports it starts from the RSS of the process that spawned it."""
    import numpy as np
    rng = np.random.default_rng(15)
    size = ROWS * COLS * 2
    header = {"__metadata__": {"format": "pt"}}
    for i in range(n):
        header[f"model.layers.{i}.mlp.up_proj.weight"] = {"dtype": "BF16", "shape": [ROWS, COLS], "data_offsets": [i * size, (i + 1) * size]}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        bases = []
        for i in range(n):
            # Four independent N(0, 0.02) matrices; the others are row rotations of them (the
            # codec sees the same statistics; generating 1 GiB of normals would take most of the
            # time budget).
            if i < 4:
                x = (rng.standard_normal((ROWS, COLS), dtype=np.float32) * np.float32(0.02)).view(np.uint32)
                bases.append(((x + 0x7FFF + ((x >> 16) & 1)) >> 16).astype(np.uint16))  # round to nearest even BF16
            f.write(np.roll(bases[i % 4], 1 + 97 * (i // 4), axis=0).tobytes())
    os.replace(path + ".tmp", path)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def timed(cmd):
    """(wall s, user s, sys s, peak RSS MB) of one command, after a sync (not timed)."""
    os.sync()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss / 1024


def cpu_info():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nwc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/nwc-cli-bench")
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="2,8")
    ap.add_argument("--cpu-bench", action="append", default=[], help="nwc-cpu-bench binaries (NAME=PATH or PATH)")
    ap.add_argument("--budget", type=float, default=140.0)
    if len(sys.argv) == 4 and sys.argv[1] == "--generate":
        return make_model(sys.argv[2], int(sys.argv[3]))
    a = ap.parse_args()
    start = time.time()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    os.chmod(a.nwc, 0o755)
    model = os.path.join(a.work, "model.safetensors")
    t = time.time()
    subprocess.run([sys.executable, os.path.abspath(__file__), "--generate", model, str(a.tensors)], check=True)
    gen_s = time.time() - t
    size = os.path.getsize(model)
    gb = size / 1e9
    want = sha256(model)  # also warms the page cache
    version = subprocess.run([a.nwc, "--version"], capture_output=True, text=True).stdout.strip()
    lines = [f"# Whole-CLI speed beside cp ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Machine: {cpu_info()}, load average {open('/proc/loadavg').read().split()[:3]} at the start. {version}.",
             f"Model: {size:,} bytes ({a.tensors} x {ROWS} x {COLS} BF16, N(0, 0.02); generated in {gen_s:.1f} s).", ""]
    results = {}  # (threads, step) -> list of (wall, user, sys, rss)
    ck_bytes = None
    rounds_done = {}
    for threads in [int(x) for x in a.threads.split(",")]:
        copy, ck, out = (os.path.join(a.work, x) for x in ("copy.safetensors", "ck", "out"))
        for r in range(a.rounds):
            # A round takes a few seconds; leave room for the codec rows and the table.
            if r > 0 and time.time() - start > a.budget * 0.7:
                break
            for p in (copy, ck, out):
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
            results.setdefault((threads, "cp"), []).append(timed(["cp", model, copy]))
            results.setdefault((threads, "compress"), []).append(timed([a.nwc, "compress", "--threads", str(threads), model, ck]))
            results.setdefault((threads, "decompress"), []).append(timed([a.nwc, "decompress", "--threads", str(threads), ck, out]))
            rounds_done[threads] = r + 1
        got = sha256(os.path.join(out, "model.safetensors"))
        if got != want:
            raise SystemExit(f"threads {threads}: the decompressed file's SHA-256 differs from the original's")
        ck_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(ck) for f in fs)
        for p in (copy, out):
            shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
    lines += [f"Checkpoint {ck_bytes:,} bytes ({ck_bytes / size:.4f}); every decompressed file has the original's SHA-256. "
              f"Rounds per thread count: {rounds_done}; medians.", "",
              "| threads | step | wall s | user s | sys s | sys/user | CPU s per GB | peak RSS MB | speed vs cp | GB/s end to end |",
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for threads in rounds_done:
        cp_wall = statistics.median(x[0] for x in results[(threads, "cp")])
        for step in ("cp", "compress", "decompress"):
            v = results[(threads, step)]
            w, u, s, rss = (statistics.median(c) for c in zip(*v))
            cpu = statistics.median((x[1] + x[2]) / gb for x in v)
            ratio = f"{s / u:.2f}" if u >= 0.01 else "-"
            lines.append(f"| {threads if step != 'cp' else '-'} | {step} | {w:.2f} | {u:.2f} | {s:.2f} | {ratio} | {cpu:.2f} | {rss:.0f} | {cp_wall / w:.2f}x | {gb / w:.2f} |")
    for spec in a.cpu_bench:
        name, _, path = spec.rpartition("=")
        if time.time() - start > a.budget - 25:
            lines += ["", f"codec only ({name or path}): skipped, out of time"]
            continue
        os.chmod(path, 0o755)
        env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1")
        p = subprocess.run([path, str(ROWS), str(COLS), "3", "--fast-only", "--one-thread", "--case", "BF16 L0"],
                           capture_output=True, text=True, env=env, timeout=max(10, a.budget - (time.time() - start) - 5))
        rows = [l for l in p.stdout.splitlines() if l.startswith("| encode") or l.startswith("| decode")]
        lines += ["", f"Codec only, one thread, {ROWS} x {COLS} BF16 layout 0, nwc-cpu-bench {name or path} "
                  "(MB/s of BF16 input per thread CPU second, best of 3; GLIBC_TUNABLES=glibc.malloc.hugetlb=1):", "",
                  "| codec | MB/s |", "|---|---:|"] + rows
    lines += ["", f"Total {time.time() - start:.0f} s."]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "cli_bench.md"), "w") as f:
        f.write(text)
    print(text)
    shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
