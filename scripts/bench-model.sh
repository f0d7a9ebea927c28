#!/usr/bin/env bash
# Whole-CLI speed on a >= 1 GB BF16 model, side by side with `cp` of the same file in the same run.
#
#   [NWC_BIN=path/to/nwc] scripts/bench-model.sh [WORKDIR] [TENSORS] [ROUNDS]
#
# Builds `nwc` (release), writes WORKDIR/model.safetensors (TENSORS tensors of 4096 x 8192, random
# N(0, 0.02) rounded to BF16; 16 tensors = 1 GiB; reused when present), warms the page cache, then
# runs ROUNDS rounds of: cp, nwc compress, nwc decompress (each under /usr/bin/time -v), checks that
# the decompressed file is byte-identical, and prints the load average and the medians: wall,
# user, sys, CPU seconds (user + sys) per GB of model (independent of how loaded the machine is),
# peak RSS, the speed relative to cp (cp wall / wall) and end-to-end GB/s of model bytes. Last, the
# per-thread codec throughput of the default build from nwc-cpu-bench (codec only, 4096 x 8192 BF16
# layout 0, one thread), with and without huge pages for its buffers (see the end).
#
# Goals (issue 15): >= 0.3x of cp both ways, sys < user / 4, peak RSS <= 64 MB + threads x 3 x
# largest tensor; codec encode >= 1.1 GB/s, decode >= 1.7 GB/s per thread.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/nwc-bench}
TENSORS=${2:-16}
ROUNDS=${3:-3}
mkdir -p "$WORK"
# NWC_BIN=PATH benchmarks another build of `nwc` (e.g. the one before a change) instead.
if [ -n "${NWC_BIN:-}" ]; then
  NWC=$NWC_BIN
else
  cargo build --release -q -p nwc-cli --bin nwc
  NWC=$PWD/target/release/nwc
fi
MODEL=$WORK/model.safetensors

if [ ! -f "$MODEL" ] || [ "$(stat -c %s "$MODEL")" -lt $((TENSORS * 4096 * 8192 * 2)) ]; then
  echo "generating $MODEL ($TENSORS x 4096 x 8192 BF16)" >&2
  python3 - "$MODEL" "$TENSORS" <<'PY'
import json, struct, sys
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
rows, cols = 4096, 8192
rng = np.random.default_rng(15)
names = [f"model.layers.{i}.mlp.up_proj.weight" for i in range(n)]
size = rows * cols * 2
header = {"__metadata__": {"format": "pt"}}
for i, name in enumerate(names):
    header[name] = {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [i * size, (i + 1) * size]}
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(path + ".tmp", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for _ in names:
        x = (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02)).view(np.uint32)
        # round to nearest even BF16
        x = ((x + 0x7FFF + ((x >> 16) & 1)) >> 16).astype(np.uint16)
        f.write(x.tobytes())
import os
os.replace(path + ".tmp", path)
PY
fi
BYTES=$(stat -c %s "$MODEL")
THREADS=$(nproc)
LARGEST=$((4096 * 8192 * 2))
cat "$MODEL" > /dev/null # page cache warm, as for cp

# run NAME CMD...: appends "NAME wall user sys rss_kb" to $WORK/times.txt
# Every step starts with no write-back pending (`sync`, not timed): otherwise a step pays for the
# dirty pages of the one before it (the page-cache write of decompress varied 3x with it).
run() {
  local name=$1; shift
  sync
  /usr/bin/time -v -o "$WORK/time.txt" "$@" > /dev/null
  awk -v n="$name" -F': ' '
    /Elapsed \(wall clock\)/ { split($2, t, ":"); w = (length(t) == 3) ? t[1]*3600 + t[2]*60 + t[3] : t[1]*60 + t[2] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { r = $2 }
    END { print n, w, u, s, r }' "$WORK/time.txt" >> "$WORK/times.txt"
}

: > "$WORK/times.txt"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
  rm -rf "$WORK/copy.safetensors" "$WORK/ck" "$WORK/out"
  run cp cp "$MODEL" "$WORK/copy.safetensors"
  run compress "$NWC" compress "$MODEL" "$WORK/ck"
  run decompress "$NWC" decompress "$WORK/ck" "$WORK/out"
  cmp "$MODEL" "$WORK/out/model.safetensors" || { echo "round $r: decompressed file differs" >&2; exit 1; }
done
CK=$(du -sb "$WORK/ck" | cut -f1)
rm -rf "$WORK/copy.safetensors" "$WORK/out"

echo "model: $BYTES bytes ($TENSORS x 4096 x 8192 BF16), checkpoint $CK bytes ($(awk -v a="$CK" -v b="$BYTES" 'BEGIN{printf "%.4f", a/b}')); $THREADS threads; $ROUNDS rounds, medians"
echo "RSS bound: 64 MB + $THREADS x 3 x $((LARGEST >> 20)) MB = $((64 + THREADS * 3 * (LARGEST >> 20))) MB"
echo
echo "load average before / after the rounds: $LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| step | wall s | user s | sys s | sys/user | CPU s per GB | peak RSS MB | speed vs cp | GB/s end to end |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
python3 - "$WORK/times.txt" "$BYTES" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    n, *v = line.split()
    rows.setdefault(n, []).append([float(x) for x in v])
med = {n: [statistics.median(c) for c in zip(*v)] for n, v in rows.items()}
# CPU seconds (user + sys) per GB of model, median over the rounds: unlike wall time it does not
# depend on how many of the cores other work leaves free.
gb = int(sys.argv[2]) / 1e9
cpu = {n: statistics.median((u + s) / gb for _, u, s, _ in v) for n, v in rows.items()}
cp = med["cp"][0]
for n in ("cp", "compress", "decompress"):
    w, u, s, r = med[n]
    ratio = f"{s / u:.2f}" if u >= 0.01 else "-"
    print(f"| {n} | {w:.2f} | {u:.2f} | {s:.2f} | {ratio} | {cpu[n]:.2f} | {r / 1024:.0f} | {cp / w:.2f}x | {gb / w:.2f} |")
PY
echo
# The codec alone, default build. Its output buffers are fresh memory on every call; with the
# system allocator's defaults every 4 KiB of them is a page fault (on this VM about a quarter of
# the decoder's time), while the `nwc` binary's allocator (cli/src/alloc.rs) reuses them and marks
# them for transparent huge pages. So it runs twice: as is, and with glibc's own huge-page option
# (`glibc.malloc.hugetlb=1`, madvise for large blocks), the setting closest to the binary's.
cargo build --release -q -p nwc-fast --features bench --bin nwc-cpu-bench
for tunables in "" "glibc.malloc.hugetlb=1"; do
  echo "codec only, one thread, 4096 x 8192 BF16 layout 0 (nwc-cpu-bench, MB/s of BF16 input; GLIBC_TUNABLES=${tunables:-unset}):"
  GLIBC_TUNABLES=$tunables "$PWD/target/release/nwc-cpu-bench" 4096 8192 3 --fast-only --one-thread --case "BF16 L0" 2>&1 | grep -E "^\| (en|de)code" || true
done
