#!/usr/bin/env bash
# One device call: GPU conformance (corpus + random sweep, default = version 2 kernels), the
# ignored device tests, then the benchmark (cuBLAS, versions 1 and 2, the uncompressed fp8
# baseline) and the 0.10.1 library's bench side by side, then compute-sanitizer memcheck and
# racecheck on small runs. Binaries and data come prebuilt in .device-bin/ (no Rust on the
# device). Logs go to $OUT. Every step has a timeout so the whole call ends inside 600 s.
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
t0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - t0 )) s)"; }
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
for v in ${NWC_CONFORM_VERSIONS:-7 6}; do
  step "conformance (kernel version $v)"
  NWC_KERNEL=$v timeout 60 $B/nwc-conform-gpu $vec --sweep "$sweep" --seed 1 | awk '/^FAIL/ {n++; if (n <= 5) print; next} {print}'; echo "exit ${PIPESTATUS[0]}"
done
step "gpu tests (--include-ignored)"; timeout 30 $B/gpu_exact --include-ignored --nocapture 2>&1 | tail -5
} 2>&1 | tee "$OUT/conform.log"
{
step "bench"; timeout ${NWC_BENCH_TIMEOUT:-260} $B/nwc-gpu-bench --real $B/minilm.bf16 ${NWC_BENCH_ARGS:-}
} 2>&1 | tee "$OUT/bench.log"
[ -n "${NWC_NCU:-}" ] && {
step "ncu (one launch of each version, 6144x4096 synthetic BF16)"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 120 $ncu --clock-control none -k regex:"${NWC_NCU_REGEX:-nwc_(matvec|dequant|expand)}" --launch-skip 0 \
  --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats \
  --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis $B/nwc-gpu-bench --profile > "$OUT/ncu.log" 2>&1
echo "ncu exit $?"; grep -E "^  nwc_|Duration|Executed Ipc Active|Issue Slots Busy|Warp Cycles Per Issued|Achieved Occupancy|Memory Throughput|No Eligible|Registers Per|profile:" "$OUT/ncu.log" | head -120
} 2>&1 | tee "$OUT/ncu-summary.log"
{
step "peer bench"
python3 -m pip install -q --no-index --no-deps --target /tmp/peer $B/neural_weight_compression-*.whl && \
  PYTHONPATH=/tmp/peer PYTHONUNBUFFERED=1 timeout 80 python3 $B/peer_bench.py
} 2>&1 | tee "$OUT/peer.log"
[ "${NWC_SANITIZE:-1}" = 1 ] && {
for v in ${NWC_CONFORM_VERSIONS:-7 6}; do
  step "memcheck (kernel version $v)"; NWC_KERNEL=$v timeout 25 compute-sanitizer --tool memcheck --error-exitcode 9 $B/nwc-conform-gpu --sweep 16 --max-dim 600 --seed 5 | tail -3
  step "racecheck (kernel version $v)"; NWC_KERNEL=$v timeout 25 compute-sanitizer --tool racecheck --error-exitcode 9 $B/nwc-conform-gpu --sweep 8 --max-dim 600 --seed 6 | tail -3
done
step "done"
} 2>&1 | tee "$OUT/sanitize.log"
