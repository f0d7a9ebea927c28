#!/usr/bin/env bash
# Fuzzes every target in fuzz/ for SECONDS each (default 60) and fails on any crash.
# Which validity rules the corpora reach: (cd fuzz && cargo run --release --example rule_census -- corpus-run corpus)
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# CI smoke run: scripts/fuzz.sh 20   (needs cargo-fuzz: cargo install cargo-fuzz --locked)
#
# Inputs libFuzzer finds go to fuzz/corpus-run/<target>/ (not committed); the committed seeds in
# fuzz/corpus/<target>/ are read only. A crash leaves its input in fuzz/artifacts/<target>/ and
# makes this script exit 1 after the remaining targets ran; turn it into a test case in
# reference/tests/regressions.rs. Final libFuzzer stats of each target go to
# fuzz/artifacts/<target>.log and into the summary printed at the end.
#
# Build choices (see docs/results.md, "Fuzzing"):
# - no sanitizer by default: the code under test forbids `unsafe`, so out-of-bounds access is a
#   panic already; overflow checks and debug assertions are on (fuzz/Cargo.toml). Set
#   NWC_FUZZ_SANITIZER=address to build with ASan (needs a nightly toolchain).
# - --no-trace-compares: comparison tracing tripled the cost of each execution and found no
#   extra coverage in our measurement; the targets' inputs are structured so it is not needed.
set -euo pipefail

seconds="${1:-60}"
shift || true
cd "$(dirname "$0")/../fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is missing; install it with: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi

sanitizer="${NWC_FUZZ_SANITIZER:-none}"
build_flags=(-s "$sanitizer" --no-trace-compares)
cargo fuzz build "${build_flags[@]}"

failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "corpus-run/$t" "corpus/$t" "artifacts/$t"
    log="artifacts/$t.log"
    echo "=== $t: ${seconds}s"
    status=0
    cargo fuzz run "${build_flags[@]}" "$t" "corpus-run/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
    rate=$(sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p' <<<"$done_line")
    edges=$(sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
    line="$t: executions ${execs:-?}, exec/s ${rate:-?}, coverage ${cov:-?} of ${edges:-?} edges, features ${ft:-?}"
    if [ "$status" -ne 0 ]; then
        failed+=("$t")
        line="$line  FAILED (exit $status)"
        grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -8 || true
    fi
    echo "$line"
    summary+=("$line")
done

echo
echo "=== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz.sh: crashes in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
