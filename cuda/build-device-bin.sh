#!/usr/bin/env bash
# Builds the x86-64 binaries a device call runs (there is no Rust on the device) and copies them,
# with the bench's data, into .device-bin/ (ignored by git; name it in the device tool's `carry`).
# Then, on the device: bash cuda/device-run.sh [SWEEP_COUNT] [check|bench|ncu]
set -euo pipefail
cd "$(dirname "$0")/.."
B=.device-bin
mkdir -p "$B"
cargo build --release -p nwc-cuda --bins
exe=$(cargo test --release -p nwc-cuda --test gpu_exact --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu_exact": print(m["executable"])')
cp target/release/nwc-conform-gpu target/release/nwc-gpu-bench "$exe" "$B"/
mv "$B/$(basename "$exe")" "$B/gpu_exact"
ls -la "$B"
