#!/usr/bin/env bash
# The SASS of the kernels as the H200 runs them, without a GPU: the PTX that `kernels::compile`
# gives for sm_90 (NVRTC from PyPI, the crate's own source and options, through the nvrtc_compile
# test), assembled by ptxas (PyPI nvidia-cuda-nvcc 13.0.88) and listed by nvdisasm (PyPI
# nvidia-cuda-nvdisasm 13.2.51, the oldest on PyPI), both fetched into target/sass-tools; then
# cuda/sass_report.py: registers, spills, instructions, and the main path of each loop (the
# instruction counts per group and per item in docs/gpu.md).
#   bash cuda/sass.sh 'exec_matvec_strip|exec_tensor_strip_n1$' [--bench]
# Writes target/sass/nwc.{ptx,cubin,sass} and ptxas.log.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
pattern="${1:-.}"
features=()
[ "${2:-}" = "--bench" ] && features=(--features bench)
tools="$root/target/sass-tools"
bin="$tools/nvidia/cu13/bin"
if [ ! -x "$bin/ptxas" ] || [ ! -x "$bin/nvdisasm" ]; then
    mkdir -p "$tools"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tools" \
        "nvidia-cuda-nvcc==13.0.88" "nvidia-cuda-nvdisasm==13.2.51" >&2
    for whl in "$tools"/nvidia_cuda_nvcc-13.0.88-*.whl "$tools"/nvidia_cuda_nvdisasm-13.2.51-*.whl; do
        python3 -m zipfile -e "$whl" "$tools" >&2
    done
    chmod +x "$bin/ptxas" "$bin/nvdisasm"
fi
out="$root/target/sass"
mkdir -p "$out"
export LD_LIBRARY_PATH="$(bash cuda/ci-nvrtc.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NWC_REQUIRE_NVRTC=1 NWC_WRITE_PTX="$out/nwc.ptx" cargo test -q -p nwc-cuda "${features[@]}" --test nvrtc_compile >&2
"$bin/ptxas" -arch=sm_90 -v "$out/nwc.ptx" -o "$out/nwc.cubin" 2> "$out/ptxas.log"
"$bin/nvdisasm" -c "$out/nwc.cubin" > "$out/nwc.sass"
python3 cuda/sass_report.py "$pattern" "$out/ptxas.log" "$out/nwc.sass"
