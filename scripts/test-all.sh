#!/usr/bin/env bash
# Runs every test of the project on a CPU-only machine; `.ci/run` calls exactly this.
#
#   bash scripts/test-all.sh            # everything, ~20-30 min on 2 cores from a clean clone
#   NWC_SKIP_FUZZ=1 bash scripts/test-all.sh   # without the fuzz smoke run (local iterations)
#
# Needs: the Rust toolchain, python3 with pip, and access to crates.io and PyPI. From PyPI it
# fetches, at test time and into target/ (never committed): the 0.10.1 library's wheel (the peer
# encoder for the interop and conformance runs), NVRTC 13.0.88 (compiles every CUDA kernel for
# sm_90 without a GPU) and cargo-fuzz from crates.io. GPU tests need a device and show as
# `ignored` here; they run on the H200 (cuda/device-run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Disk: a CI machine once ran out of space linking the test binaries (2026-12-02). A one-shot run
# gains nothing from incremental artifacts, and line tables (file:line in backtraces) are all the
# debug info a failing test needs; the dependencies get none. This keeps target/ to a few GiB.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only CARGO_PROFILE_TEST_DEBUG=line-tables-only
step() { printf '\n== %s ==\n' "$*"; df -h . | awk 'NR == 2 { print "(disk: " $4 " free)" }'; }

step "NVRTC from PyPI (kernel compile check)"
nvrtc_lib="$(bash cuda/ci-nvrtc.sh)"
export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NWC_REQUIRE_NVRTC=1
# cuda/tests/decode_host.rs compiles the kernels' lane decode with the host's C++ compiler (g++ on
# the CI image): fail rather than skip when there is none.
export NWC_REQUIRE_CXX=1

step "format and lints (rustfmt.toml, [workspace.lints])"
cargo fmt --all --check
(cd fuzz && cargo fmt --check) # its own workspace and rustfmt.toml
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p nwc-fast --all-targets --features bench,simd -- -D warnings # the bench binary and the simd build
cargo clippy -p nwc-cuda --all-targets --features bench -- -D warnings # bench-only kernels and the GPU bench
# API docs without broken or private intra-doc links (what docs.rs would render)
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
RUSTDOCFLAGS="-D warnings" cargo doc -p nwc-fast -p nwc-cuda --features nwc-fast/bench,nwc-fast/simd,nwc-cuda/bench --no-deps --quiet

step "build (debug binaries used by the conformance runs)"
cargo build --workspace --bins

step "unit, property, interop, snapshot, validity, coverage and kernel-compile tests"
cargo test --workspace
cargo test -p nwc-fast --release --features simd # nwc-fast tests again on its `simd` build (its only unsafe code)
cargo test -p nwc-cuda --features bench --test nvrtc_compile # the bench-only kernels compile too
cargo test -p nwc-cuda --features bench --lib # the launch plans of the bench-only kernels
cargo test -p nwc-cuda --features bench --test bench_args # the GPU bench refuses options it cannot honour, before any device

step "conformance: the reference, our CLI, the independent execution layout and the 0.10.1 library's encoder against the corpus"
conform=target/debug/nwc-conform
"$conform" --vectors vectors reference
# No GPU in CI: says `skipped: no CUDA device` (without --allow-no-device it would fail).
"$conform" --vectors vectors gpu --allow-no-device
"$conform" --vectors vectors encoder -- target/debug/nwc encode
"$conform" --vectors vectors decoder -- target/debug/nwc decode
"$conform" --vectors vectors transcoder -- target/debug/nwc transcode
"$conform" --vectors vectors exec-decoder -- target/debug/nwc decode
# The execution layout's second implementation, written from spec/ alone (conformance/independent).
NWC_BIN=target/debug/nwc python3 conformance/independent/harness.py --vectors vectors --judge "$conform"
python3 conformance/independent/test_arith.py && python3 conformance/independent/test_fuzz.py
# The bounded class's bound (spec 19), written from spec/ alone, against every `bound` file.
NWC_VECTORS=vectors python3 conformance/independent/bounded/run_corpus.py | tail -n 1
python3 conformance/independent/bounded/selftest.py | tail -n 1
"$conform" --vectors vectors encoder -- scripts/peer-encoder.sh

step "Python package: the abi3 wheel built by maturin (from PyPI), its pytest suite on the CPU"
# A venv under target/ (never committed): maturin, numpy, pytest and ml_dtypes from PyPI. The wheel
# is a debug build sharing the workspace's target/debug; pytest runs from the repository root so
# that `import nwc` finds the installed wheel, not python/nwc/ without its extension.
py_venv=target/py-venv
[ -x "$py_venv/bin/python" ] || python3 -m venv "$py_venv"
"$py_venv/bin/python" -m pip install -q "maturin>=1.9,<2" "numpy>=1.21" pytest ml_dtypes
rm -rf target/py-wheels
"$py_venv/bin/maturin" build -m python/Cargo.toml --out target/py-wheels
"$py_venv/bin/python" -m pip install -q --force-reinstall --no-deps target/py-wheels/nwc-*.whl
"$py_venv/bin/python" -m pytest -q python/tests   # test_torch.py says it was skipped: no torch, no GPU here

step "README main command: the demo on the bundled sample"
cargo run --release -p nwc-cli -- demo

if [ "${NWC_SKIP_FUZZ:-0}" != 1 ]; then
    step "fuzz smoke run (every target, fails on any crash)"
    command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
    bash scripts/fuzz.sh 20
    # The fuzz crate's own tests (the oracles the targets trust, e.g. the exec rules' reading).
    (cd fuzz && cargo test --lib -q)
fi

step "all tests passed"
