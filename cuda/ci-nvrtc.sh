#!/usr/bin/env bash
# Fetches NVRTC from PyPI (no CUDA toolkit or GPU needed) into target/nvrtc-cache and prints the
# directory to put on LD_LIBRARY_PATH, so CI can compile every kernel before any device time:
#   export LD_LIBRARY_PATH="$(bash cuda/ci-nvrtc.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
#   NWC_REQUIRE_NVRTC=1 cargo test --release -p nwc-cuda --test nvrtc_compile
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/target/nvrtc-cache"
version="13.0.88"
lib="$cache/nvidia/cu13/lib"
if [ ! -e "$lib/libnvrtc.so.13" ]; then
    mkdir -p "$cache"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$cache" "nvidia-cuda-nvrtc==$version" >&2
    python3 -m zipfile -e "$cache"/nvidia_cuda_nvrtc-"$version"-*.whl "$cache" >&2
fi
[ -e "$lib/libnvrtc.so.13" ] || { echo "libnvrtc.so.13 not found under $lib" >&2; exit 1; }
echo "$lib"
