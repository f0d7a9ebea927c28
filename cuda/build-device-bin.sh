#!/usr/bin/env bash
# Builds the x86-64 binaries a device call runs (there is no Rust on the device) and copies them,
# with the bench's data, into .device-bin/ (ignored by git; name it in the device tool's `carry`):
#   nwc-conform   the conformance suite; `nwc-conform gpu` runs the GPU in process (nwc-cuda)
#   nwc-gpu-bench the benchmark (nwc-cuda with the `bench` feature: superseded kernels, probes)
#   gpu_tests     conformance/tests/gpu.rs, whose device tests run with --include-ignored
# Then, on the device: bash cuda/device-run.sh [SWEEP_COUNT] [check|verify|bench|ncu|ceiling]
set -euo pipefail
cd "$(dirname "$0")/.."
B=.device-bin
mkdir -p "$B"
cargo build --release -p nwc-conformance --bin nwc-conform
cargo build --release -p nwc-cuda --features bench --bin nwc-gpu-bench
exe=$(cargo test --release -p nwc-conformance --test gpu --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu": print(m["executable"])')
cp target/release/nwc-conform target/release/nwc-gpu-bench "$B"/
cp "$exe" "$B/gpu_tests"
ls -la "$B"
