#!/usr/bin/env bash
# The 0.10.1 library's host encoder (PyPI neural-weight-compression==0.10.1) behind the
# nwc-conform encoder protocol:
#   peer-encoder.sh --elem bf16|fp8 --layout 0|1 --rows M --cols K [--scales FILE] INPUT OUTDIR
# It drives scripts/peer_encode.py (this repository, standard library only), which calls the
# wheel's compiled library through ctypes. The library is NWC_PEER_LIB if set, else the
# wheel is downloaded once (pip download --no-deps, checked against its pinned SHA-256) and
# unpacked under target/peer-cache (or NWC_PEER_CACHE): the same cache testkit/src/peer.rs uses.
# The wheel is never committed. Exit status: 0 ok, 2 usage, 3 the peer refused the input.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tool="$root/scripts/peer_encode.py"
package="neural-weight-compression==0.10.1"
wheel_sha256="f907f0abb620d2d62e1e4804aa5ac4e5c45e1fdc53840e709a24f79c937ecb88"

usage() { echo "usage: $0 --elem bf16|fp8 --layout 0|1 --rows M --cols K [--scales FILE] INPUT OUTDIR" >&2; exit 2; }

elem="" layout="" rows="" cols="" scales=() positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --elem) elem="${2:-}"; shift 2 || usage ;;
    --layout) layout="${2:-}"; shift 2 || usage ;;
    --rows) rows="${2:-}"; shift 2 || usage ;;
    --cols) cols="${2:-}"; shift 2 || usage ;;
    --scales) [ -n "${2:-}" ] || usage; scales=(--scales "$2"); shift 2 ;;
    -*) usage ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ "${#positional[@]}" -eq 2 ] || usage
case "$elem" in bf16|fp8) ;; *) usage ;; esac
case "$layout" in 0|1) ;; *) usage ;; esac
[[ "$rows" =~ ^[0-9]+$ && "$cols" =~ ^[0-9]+$ ]] || usage

lib="${NWC_PEER_LIB:-}"
if [ -z "$lib" ]; then
  cache="${NWC_PEER_CACHE:-$root/target/peer-cache}"
  lib="$cache/x/nwc/lib/nwc_ops.so"
  if [ ! -f "$lib" ]; then
    mkdir -p "$cache"
    python3 -m pip download --quiet --no-deps --only-binary=:all: "$package" -d "$cache" >&2
    wheel="$(ls "$cache"/*.whl | head -n 1)"
    got="$(sha256sum "$wheel" | cut -d' ' -f1)"
    [ "$got" = "$wheel_sha256" ] || { echo "$0: $wheel has sha256 $got, expected $wheel_sha256" >&2; exit 2; }
    python3 -m zipfile -e "$wheel" "$cache/x"
    [ -f "$lib" ] || { echo "$0: unpacking $wheel did not give $lib" >&2; exit 2; }
  fi
fi

python3 "$tool" --lib "$lib" --elem "$elem" --layout "$layout" --rows "$rows" --cols "$cols" \
  ${scales[@]+"${scales[@]}"} "${positional[0]}" "${positional[1]}"
