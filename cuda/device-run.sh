#!/usr/bin/env bash
# One device call: GPU conformance (corpus + random sweep), compute-sanitizer memcheck and
# racecheck, then the benchmark and the 0.10.1 library's bench side by side. Binaries and data
# come prebuilt in .device-bin/ (no Rust on the device). Logs go to $OUT.
# Usage (from the repo root, on the device): bash cuda/device-run.sh [SWEEP_COUNT]
set -uo pipefail
B=.device-bin
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sweep=${1:-1000}
# libcuda, libnvrtc and libcublas are all in the device image's ldconfig cache; do not put the
# toolkit's stubs/ folder on LD_LIBRARY_PATH (its libcuda.so is a stub: CUDA_ERROR_STUB_LIBRARY).
export LD_LIBRARY_PATH=$(echo "${LD_LIBRARY_PATH:-}" | tr ":" "\n" | grep -v stubs | paste -sd: -)
vec=""
[ -f vectors/manifest.json ] && vec="--vectors vectors"
{
date -u; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldconfig -p | grep -E "libcuda.so|libnvrtc|libcublas.so"; ls /dev/nvidia* | head -3; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
echo "== conformance"; timeout 240 $B/nwc-conform-gpu $vec --sweep "$sweep" --seed 1
echo "== gpu tests"; timeout 60 $B/gpu_exact --nocapture
echo "== memcheck"; timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/nwc-conform-gpu $vec --sweep 24 --max-dim 200 --seed 5 | tail -4
echo "memcheck exit $?"
echo "== racecheck"; timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $B/nwc-conform-gpu $vec --sweep 12 --max-dim 200 --seed 6 | tail -4
echo "racecheck exit $?"
} 2>&1 | tee "$OUT/conform.log"
{
echo "== bench"; timeout 400 $B/nwc-gpu-bench --real $B/minilm.bf16
} 2>&1 | tee "$OUT/bench.log"
{
echo "== peer bench"
python3 -m pip install -q --no-index --no-deps --target /tmp/peer $B/neural_weight_compression-*.whl && \
  PYTHONPATH=/tmp/peer PYTHONUNBUFFERED=1 timeout 300 python3 $B/peer_bench.py
} 2>&1 | tee "$OUT/peer.log"
