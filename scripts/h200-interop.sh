#!/usr/bin/env bash
# Interop with the 0.10.1 library both ways, on the H200 (python3 with torch + CUDA and
# transformers; no network, no Rust). Run from the repo root:
#
#   bash scripts/h200-interop.sh PEER_WHEEL ARTIFACTS OUT [--dry-run]
#
# PEER_WHEEL: neural_weight_compression-0.10.1-*.whl (pip download --no-deps neural-weight-compression==0.10.1)
# ARTIFACTS:  the folder scripts/make-interop-artifacts.sh made (original folders, our checkpoints)
# OUT:        results: interop-results.json, interop.log, and peer-checkpoints/<variant>/{ck,orig,peer-export}
#             (checkpoints the library wrote, kept as local test artifacts; see
#             container/tests/peer_checkpoints.rs)
# Our `nwc` binary is taken from $NWC_BIN, default target/release/nwc (carried in, x86-64 Linux).
# `--dry-run` needs neither torch nor a GPU: our side only (how the script is tested on CPU).
# Every step has a time limit; the whole run stays under 9 minutes.
set -uo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,15p' "$0"
    exit 2
fi
wheel=$1 artifacts=$2 out=$3
shift 3
mkdir -p "$out"
nwc=${NWC_BIN:-target/release/nwc}
chmod +x "$nwc" 2>/dev/null || true
{
    date -u
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__)' 2>&1 | tail -1
    "$nwc" --version
    PYTHONUNBUFFERED=1 timeout 540 python3 scripts/h200_interop.py --peer-wheel "$wheel" --artifacts "$artifacts" --out "$out" --nwc "$nwc" "$@"
    echo "exit $?"
} 2>&1 | tee "$out/interop.log"
grep -q '^exit 0$' "$out/interop.log"
