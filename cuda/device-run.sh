#!/usr/bin/env bash
# Device calls of nwc-cuda, each inside the device tool's 600 s per call. Binaries and data come
# prebuilt in .device-bin/ (`bash cuda/build-device-bin.sh` here; there is no Rust on the device);
# logs go to $OUT. Every step has a timeout (the device tests 240 s: on a fresh machine the first
# production binary pays the driver's first compile of the PTX, 45-64 s in session 32).
#
# Usage (from the repo root, on the device): bash cuda/device-run.sh [SWEEP_COUNT] [check|verify|bench|ncu|peer-ncu|ceiling|exec|exec-ncu|exec-quick|exec-record|exec-compare|exec-batch-compare|exec-variants|exec-pdl]
# B=DIR takes the binaries and data from DIR instead of .device-bin (a helper's carry folder).
#   check  GPU conformance (`nwc-conform gpu`: the corpus through the shared reader with the exact
#          and the bounded matvec, then a random sweep: exact dequant, gather and matvec, bounded
#          matvec on layout 1 checked against spec 19.4), the ignored device tests,
#          compute-sanitizer memcheck and racecheck, and `nwc-gpu-bench --batch`.
#   verify a short check after a refactor: conformance (corpus + sweep), device tests, memcheck on
#          a small sweep, and the batch-1 bench of the production kernels (`--quick --production`).
#   bench  conformance, then `nwc-gpu-bench --real .device-bin/minilm.bf16` (cuBLAS, the exact,
#          staged and codewise matvecs, the bounded matvec on layout 1, the fp8 baseline) and the
#          0.10.1 library's peer_bench.py in the same call.
#   ncu    Nsight Compute on one launch of each kernel (`nwc-gpu-bench --profile`, 6144x4096).
#   peer-ncu  Nsight Compute on the 0.10.1 library's fused BF16 kernel and on our format-10 exact
#          kernel, same shapes (NWC_PEER_SHAPES, default 4096x4096 19456x2560 6144x4096); B must
#          hold the library's wheel, as for exec-record.
#   ceiling  where the exact matvec's time goes (`nwc-gpu-bench --ceiling`: stage probes, memory
#          floor, time against the number of blocks).
#   exec   the execution layout (spec 20): conformance (format-10 and exec vectors, both sweeps),
#          memcheck on a small sweep, `nwc-gpu-bench --exec --real` (batch 1, dequant, transcode,
#          VRAM bytes per weight beside cuBLAS and format 10) and `--exec-batch --quick` (N = 2..64);
#          before them `nwc-gpu-bench --exec-sweep SWEEP_COUNT` (random shapes and weights: every exact
#          one-column kernel and both dequant kernels against the reference) and its memcheck.
#   exec-ncu  the sweep of `exec`, then Nsight Compute on one launch of each exact one-column and
#          dequant kernel (`nwc-gpu-bench --exec-profile`: 6144x4096, 24576x4096, 1000x3000), the
#          device-to-device copy roof (cuda/copy_roof.py) and `nwc-gpu-bench --exec --real`.
#   exec-quick  the sweep of `exec` and `nwc-gpu-bench --exec --real` (after a kernel change).
#   exec-record  the execution layout's numbers of record (docs/results.md) and the checks beside
#          them, one call (~500 s): conformance (corpus and both sweeps, 1000), `--exec-sweep 24`,
#          device tests, memcheck and racecheck (the sweeps, and `--exec-profile` on 1024x4096,
#          where the lean kernel runs: the racecheck sweep's three seeded shapes never reach it,
#          the memcheck sweep's six reach it once), the Python wheel's pytest
#          suite on the GPU when B holds an nwc-*.whl (`maturin build` here), `--exec --real`,
#          `--exec-variants --real` (the ceiling probes), `--exec-batch --quick` and the 0.10.1
#          library's peer_bench.py. NO_PROBES=1 leaves out `--exec-variants` (~75 s; for a record
#          call after an exec-compare call that timed the probes).
#   exec-compare  a first call after kernel changes (~500 s): the exec sweep with every variant
#          (SWEEP_COUNT shapes up to 2 M weights) and its racecheck, `--exec-variants --real` and
#          `--exec-batch --quick`; with PREV=DIR (a carry folder holding another tree's
#          nwc-gpu-bench) that binary's `--exec-variants --real` in the same call, for the
#          production kernels of both trees side by side.
#   exec-batch-compare  the batched kernels after a change (~400 s): the exec sweep with every
#          variant (SWEEP_COUNT shapes up to 2 M weights), `--exec-batch --quick`, `--exec-batch` on
#          the shapes of BATCH_GRID (default: 5 shapes that are not the bench's) and Nsight Compute
#          (SpeedOfLight, memory workload) on the first launch of each kernel of NCU_KERNELS
#          (default: the production strip kernel at 32 columns; empty: none) at 6144x4096. With
#          EXACT_GRID=MxK,..., first `--exec-variants --real` and `--exec-variants --exec-shapes
#          $EXACT_GRID` (the one-column kernels and their variants, batch 1). With
#          BATCH_KERNELS=NAME,... both `--exec-batch` runs time the production choice beside the
#          kernels named (`--exec-kernels`: tensor-core ones, or `var-strip-c2`); with RACECHECK=1
#          the sweep's racecheck (3 shapes) follows the sweep.
#   exec-variants  the one-column kernels' bench variants and probes (exec_matvec_variants.cu), one
#          process: `--exec-sweep SWEEP_COUNT:2000000` (every exact one-column kernel, the variants
#          included, and both dequants against the reference; 16 recommended) then
#          `--exec-variants --real`: cuBLAS, the production default, lean, rows and the variants at
#          batch 1 on the 8 bench shapes, synthetic and real (weights encoded on the GPU).
#   exec-pdl  the launch order (session 21, ~150 s): `--exec-sweep SWEEP_COUNT:2000000` (its
#          dependent chains included), then `--exec-variants --exec-pdl`: the production default
#          (programmatic launches, the release point by the launch's rounds), the same with serial
#          launches, with the release forced to every launch's start or end, without session 25's
#          even spread of short launches (`VarStripUncapped`, programmatic and serial) and
#          production again last, on the 8 bench shapes (synthetic and real) and on PDL_GRID (default: session
#          21's 30 fresh shapes).
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sweep=${1:-1000}
part=${2:-check}
# libcuda, libnvrtc and libcublas are all in the device image's ldconfig cache; do not put the
# toolkit's stubs/ folder on LD_LIBRARY_PATH (its libcuda.so is a stub: CUDA_ERROR_STUB_LIBRARY).
export LD_LIBRARY_PATH=$(echo "${LD_LIBRARY_PATH:-}" | tr ":" "\n" | grep -v stubs | paste -sd: -)
t0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - t0 )) s)"; }
# Per-vector PASS/SKIPPED lines are left out; the first 5 failures are shown with their details.
conform() {
  step "conformance: corpus (exact and bounded matvec) and a sweep of $sweep"
  timeout "${1:-150}" $B/nwc-conform --vectors vectors gpu --sweep "$sweep" --seed 1 |
    awk '/^FAIL/ {n++; show = n <= 5; if (show) print; next} /^ / {if (show) print; next} /^(PASS|SKIPPED) / {show = 0; next} {show = 0; print}'
}
exec_sweep() {
  step "exec sweep: every exact one-column kernel and the dequant kernels against the reference"
  timeout 150 $B/nwc-gpu-bench --exec-sweep "$sweep"
  step "memcheck (exec sweep, shapes up to 1M weights)"
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/nwc-gpu-bench --exec-sweep 6:1000000 | tail -3
}
sanitize() {
  for tool in "$@"; do
    step "$tool (exact and bounded kernels)"
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/nwc-conform gpu --skip-corpus --sweep 24 --max-dim 700 --seed 5 | tail -2
  done
}
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv,noheader
case "$part" in
check)
  conform
  step "gpu tests (--include-ignored)"; timeout 240 $B/gpu_tests --include-ignored 2>&1 | grep "test result"
  sanitize memcheck racecheck
  step "batched"; timeout 120 $B/nwc-gpu-bench --batch ;;
verify)
  conform 70
  step "gpu tests (--include-ignored)"; timeout 240 $B/gpu_tests --include-ignored 2>&1 | grep "test result"
  sanitize memcheck
  step "bench (production kernels, shapes up to 60M weights)"
  timeout 120 $B/nwc-gpu-bench --quick --production 2>&1 | grep -v "prepared" ;;
bench)
  conform
  step "bench"; timeout 380 $B/nwc-gpu-bench --real $B/minilm.bf16 2>&1 | grep -v "prepared\|fp8 baseline relative"
  step "peer bench"
  python3 -m pip install -q --no-index --no-deps --target /tmp/peer $B/neural_weight_compression-*.whl &&
    PYTHONPATH=/tmp/peer PYTHONUNBUFFERED=1 timeout 100 python3 $B/peer_bench.py ;;
ncu)
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 300 $ncu --clock-control none -k regex:"${NWC_NCU_REGEX:-nwc_(exact|bounded)_matvec_bf16}" --launch-skip 0 --launch-count ${NWC_NCU_COUNT:-3} \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_pipe_lsu.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
    $B/nwc-gpu-bench --profile > "$OUT/ncu.log" 2>&1
  echo "ncu exit $?"
  grep -E "^  nwc_|Duration|Issued Warp|Warp Cycles Per Issued|Achieved Occupancy|Eligible Warps|Registers Per|profile:|wavefronts|inst_executed" "$OUT/ncu.log" | head -80 ;;
peer-ncu)
  # The format-10 exact kernel beside the 0.10.1 library's (docs/gpu-history.md, session 9): Nsight
  # Compute on the library's fused kernel (cuda/peer_ncu_target.py) and on ours, same shapes.
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  m="gpu__time_duration.sum,smsp__inst_executed.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
  shapes="${NWC_PEER_SHAPES:-4096x4096 19456x2560 6144x4096}"
  python3 -m pip install -q --no-index --no-deps --target /tmp/peer $B/neural_weight_compression-*.whl
  step "the 0.10.1 library ($shapes)"
  PYTHONPATH=/tmp/peer timeout 200 $ncu --profile-from-start off --metrics "$m" python3 "$(dirname "$0")/peer_ncu_target.py" $shapes > "$OUT/peer-ncu.log" 2>&1
  echo "ncu exit $?"
  for s in $shapes; do
    step "ours, format 10, $s"
    NWC_PROFILE_SHAPE=$s timeout 120 $ncu --kill on -c 1 -k regex:nwc_exact_matvec_bf16_l0_xbf16 --metrics "$m" $B/nwc-gpu-bench --profile >> "$OUT/peer-ncu.log" 2>&1
  done
  grep -E "^== |^  [a-z_<>, 0-9]+\(|duration|inst_executed.sum|grid_size|block_size|registers_per|shared_mem_per|wavefronts|bank_conflicts|issue_active" "$OUT/peer-ncu.log" | head -120 ;;
ceiling)
  step "ceiling"; timeout 500 $B/nwc-gpu-bench --ceiling ;;
exec)
  conform 120
  sanitize memcheck
  exec_sweep
  step "exec bench (batch 1, dequant, transcode, VRAM bytes per weight)"
  timeout 200 $B/nwc-gpu-bench --exec --real $B/minilm.bf16 2>&1 | grep -v "prepared"
  step "exec batched (N = 2..64)"
  timeout 110 $B/nwc-gpu-bench --exec-batch --quick ;;
exec-ncu)
  exec_sweep
  step "copy roof"; timeout 60 python3 "$(dirname "$0")/copy_roof.py"
  step "ncu (exec kernels)"
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 200 $ncu --clock-control none -k regex:"^exec_(matvec_(lean|c1_d|rows$)|dequant)" \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
    --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,dram__bytes_read.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
    $B/nwc-gpu-bench --exec-profile > "$OUT/ncu.log" 2>&1
  echo "ncu exit $?"
  python3 "$(dirname "$0")/ncu_summary.py" "$OUT/ncu.log"
  step "exec bench (batch 1, dequant, transcode, VRAM bytes per weight)"
  timeout 240 $B/nwc-gpu-bench --exec --real $B/minilm.bf16 2>&1 | grep -v "prepared" ;;
exec-quick)
  exec_sweep
  step "exec bench (batch 1, dequant, transcode, VRAM bytes per weight)"
  timeout 240 $B/nwc-gpu-bench --exec --real $B/minilm.bf16 2>&1 | grep -v "prepared" ;;
exec-record)
  conform 150
  step "exec sweep"; timeout 200 $B/nwc-gpu-bench --exec-sweep 24 2>&1 | tail -3
  step "gpu tests (--include-ignored)"; timeout 240 $B/gpu_tests --include-ignored 2>&1 | grep "test result"
  sanitize memcheck
  step "memcheck (exec sweep)"; timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/nwc-gpu-bench --exec-sweep 6:1000000 | tail -2
  step "memcheck (every exact one-column kernel, lean included, and the dequants on 1024x4096)"  # lean on purpose
  NWC_PROFILE_SHAPE=1024x4096 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/nwc-gpu-bench --exec-profile | tail -2
  step "racecheck (exec sweep)"; timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $B/nwc-gpu-bench --exec-sweep 3:300000 | tail -2
  step "racecheck (every exact one-column kernel, lean included, and the dequants on 1024x4096)"
  NWC_PROFILE_SHAPE=1024x4096 timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $B/nwc-gpu-bench --exec-profile | tail -2
  if ls $B/nwc-*.whl >/dev/null 2>&1; then
    step "python: the wheel's pytest suite (torch on the GPU)"
    python3 -m pip install -q --no-index --no-deps --target /tmp/nwcpkg $B/nwc-*.whl &&
      PYTHONPATH=/tmp/nwcpkg timeout 240 python3 -m pytest -q -p no:cacheprovider python/tests 2>&1 | tail -4
  fi
  step "exec bench (batch 1, dequant, transcode, VRAM bytes per weight)"
  timeout 200 $B/nwc-gpu-bench --exec --real $B/minilm.bf16 2>&1 | grep -v "prepared"
  if [ -z "${NO_PROBES:-}" ]; then
    step "ceiling probes"; timeout 160 $B/nwc-gpu-bench --exec-variants --real $B/minilm.bf16 2>&1 | grep -v "prepared"
  fi
  step "exec batched (N = 1..64)"; timeout 150 $B/nwc-gpu-bench --exec-batch --quick
  step "peer bench"
  python3 -m pip install -q --no-index --no-deps --target /tmp/peer $B/neural_weight_compression-*.whl &&
    PYTHONPATH=/tmp/peer PYTHONUNBUFFERED=1 timeout 100 python3 $B/peer_bench.py ;;
exec-compare)
  step "exec sweep (variants included)"; timeout 150 $B/nwc-gpu-bench --exec-sweep "$sweep:2000000" 2>&1 | tail -4
  step "racecheck (exec sweep: the variants' shared-memory stages)"
  timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $B/nwc-gpu-bench --exec-sweep 3:300000 | tail -2
  step "one-column kernels and variants beside cuBLAS, batch 1"
  timeout 160 $B/nwc-gpu-bench --exec-variants --real $B/minilm.bf16 2>&1 | grep -v "prepared"
  step "exec batched (N = 1..64)"; timeout 120 $B/nwc-gpu-bench --exec-batch --quick
  if [ -n "${PREV:-}" ] && [ -x "$PREV/nwc-gpu-bench" ]; then
    step "PREV=$PREV: its one-column kernels beside cuBLAS, batch 1"
    timeout 120 "$PREV/nwc-gpu-bench" --exec-variants --real $B/minilm.bf16 2>&1 | grep -v "prepared"
  fi ;;
exec-batch-compare)
  step "exec sweep (variants included)"; timeout 150 $B/nwc-gpu-bench --exec-sweep "$sweep:2000000" 2>&1 | tail -4
  if [ -n "${RACECHECK:-}" ]; then
    step "racecheck (exec sweep: the variants' shared memory)"
    timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $B/nwc-gpu-bench --exec-sweep 3:300000 | tail -2
  fi
  named=()
  [ -n "${BATCH_KERNELS:-}" ] && named=(--exec-kernels "$BATCH_KERNELS")
  if [ -n "${EXACT_GRID:-}" ]; then
    step "one-column kernels and variants beside cuBLAS, batch 1, bench shapes"
    timeout 160 $B/nwc-gpu-bench --exec-variants --real $B/minilm.bf16 2>&1 | grep -v "prepared"
    step "one-column kernels and variants beside cuBLAS, batch 1, $EXACT_GRID"
    timeout 160 $B/nwc-gpu-bench --exec-variants --exec-shapes "$EXACT_GRID" 2>&1 | grep -v "prepared"
  fi
  step "exec batched (N = 1..64), bench shapes"; timeout 180 $B/nwc-gpu-bench --exec-batch --quick "${named[@]}"
  grid=${BATCH_GRID:-5120x5120,11008x4096,4096x14336,8192x3072,2048x8192}
  step "exec batched (N = 1..64), $grid"; timeout 180 $B/nwc-gpu-bench --exec-batch --exec-shapes "$grid" "${named[@]}"
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for kern in ${NCU_KERNELS-exec_tensor_strip_n4}; do
    step "ncu $kern (6144x4096)"
    timeout 100 $ncu --clock-control none -k regex:"^$kern\$" -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section SchedulerStats --section Occupancy --section LaunchStats \
      --metrics smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
      $B/nwc-gpu-bench --exec-batch --exec-shapes 6144x4096 > "$OUT/ncu-$kern.log" 2>&1
    grep -E "^  [a-z_0-9]+\(|Duration|Throughput|Hit Rate|Busy|inst_executed|sectors|requests|bytes_read|Registers|Achieved Occupancy|Eligible|Issued Warp" "$OUT/ncu-$kern.log" | head -60
  done ;;
exec-variants)
  step "exec sweep (variants included), then the one-column kernels beside cuBLAS, batch 1"
  timeout 240 $B/nwc-gpu-bench --exec-sweep "$sweep:2000000" --exec-variants --real $B/minilm.bf16 ;;
exec-pdl)
  step "exec sweep (variants and dependent chains)"; timeout 150 $B/nwc-gpu-bench --exec-sweep "$sweep:2000000" 2>&1 | tail -8
  step "launch orders, bench shapes"; timeout 150 $B/nwc-gpu-bench --exec-variants --exec-pdl --real $B/minilm.bf16 2>&1 | grep -v "prepared"
  step "launch orders, PDL_GRID"
  timeout 150 $B/nwc-gpu-bench --exec-variants --exec-pdl --exec-shapes "${PDL_GRID:-2513x6855,2207x2271,1504x1082,21474x8469,5289x2879,4682x1924,1111x13561,2032x14547,12297x2524,17292x2269,2818x14812,1142x3579,10390x9967,3855x5272,742x3229,1453x2855,1600x1782,1403x4790,856x1890,2422x4461,12074x10627,1470x3111,13808x3547,4858x1773,2165x4148,11150x2752,3563x3416,1291x1774,4898x2130,11298x3158}" 2>&1 | grep -v "prepared" ;;
*) echo "unknown part $part (check, verify, bench, ncu, peer-ncu, ceiling, exec, exec-ncu, exec-quick, exec-record, exec-compare, exec-batch-compare, exec-variants or exec-pdl)"; exit 2 ;;
esac
step done
} 2>&1 | tee "$OUT/$part.log"
