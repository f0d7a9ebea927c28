#!/usr/bin/env bash
# Splits the SmolLM2 GGUF for the device calls of h200_e2e.py (docs/results.md, issue 14): a call
# carries the checkout plus its carried folders, under 64 MiB counted on disk, so the 98 MB file
# travels as xz in 29 MB pieces, one per call (.dev-py-1 .. .dev-py-4 of the main checkout, which
# .git/info/exclude ignores), while the machine stays warm between the calls.
# Usage: bash python/bench/h200_carry.sh GGUF MAIN_CHECKOUT WHEEL PEER_WHEEL MODEL_FOLDER_BIN
set -euo pipefail
gguf=$1 main=$2 wheel=$3 peer=$4 folder_bin=$5
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
xz -T2 -6 -c "$gguf" > "$tmp/g.xz"
split -b 29000000 -d -a 1 "$tmp/g.xz" "$tmp/x."
for i in 1 2 3 4; do rm -rf "$main/.dev-py-$i"; mkdir -p "$main/.dev-py-$i"; mv "$tmp/x.$((i - 1))" "$main/.dev-py-$i/"; done
cp "$wheel" "$here"/*.py "$here/../tests/test_torch.py" "$main/.dev-py-1/"
cp "$here"/*.py "$peer" "$folder_bin" "$main/.dev-py-4/"
sha256sum "$tmp/g.xz" "$gguf"
rm -rf "$tmp"
