#!/usr/bin/env bash
# Fuzzes every target in fuzz/ for SECONDS each (default 60) and fails on any crash.
# Which validity rules the corpora reach: (cd fuzz && cargo run --release --example rule_census -- corpus-run corpus)
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# CI smoke run: scripts/fuzz.sh 20   (needs cargo-fuzz: cargo install cargo-fuzz --locked)
# A long campaign you can leave running (one target, one core, low priority):
#   nohup nice -n 19 bash scripts/fuzz.sh 36000 decode_mutated > fuzz-decode_mutated.out 2>&1 &
#
# Progress: every NWC_FUZZ_PROGRESS seconds (default 5; 0 = off) the latest libFuzzer stats line
# of the running target is printed, prefixed with the target and the seconds elapsed:
#   [decode_mutated 35s] #180224 pulse cov: 1830 ft: 7100 corp: 840/41Kb exec/s: 5149 rss: 40Mb
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
# - -max_len per target (max_len below): the inputs describe small matrices, longer inputs only
#   cost time (the targets refuse them too: nwc_fuzz::MAX_INPUT).
set -euo pipefail

seconds="${1:-60}"
shift || true
progress="${NWC_FUZZ_PROGRESS:-5}"
cd "$(dirname "$0")/../fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is missing; install it with: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi

# Longest input per target, in bytes (keep in step with nwc_fuzz::MAX_INPUT, the largest).
max_len() {
    case "$1" in
        decode_arbitrary | cli_readers) echo 4096 ;;
        *) echo 1024 ;;
    esac
}

sanitizer="${NWC_FUZZ_SANITIZER:-none}"
build_flags=(-s "$sanitizer" --no-trace-compares)
cargo fuzz build "${build_flags[@]}"

failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "corpus-run/$t" "corpus/$t" "artifacts/$t"
    log="artifacts/$t.log"
    echo "=== $t: ${seconds}s (stats line every ${progress}s)"
    status=0
    # libFuzzer writes its stats to the log; the loop below shows the newest line while it runs.
    cargo fuzz run "${build_flags[@]}" "$t" "corpus-run/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 &
    pid=$!
    # Stopping this script stops the fuzzer too (cargo-fuzz runs it as its child).
    trap 'pkill -P "$pid" 2>/dev/null; kill "$pid" 2>/dev/null' EXIT
    trap 'exit 130' INT TERM
    start=$SECONDS
    if [ "$progress" -gt 0 ]; then
        while kill -0 "$pid" 2>/dev/null; do
            # Sleep in short steps so a finished target does not wait out the whole interval.
            for _ in $(seq $((progress * 4))); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.25
            done
            kill -0 "$pid" 2>/dev/null || break
            stats=$(grep -aE '^#[0-9]+' "$log" | tail -1 || true)
            if [ -n "$stats" ]; then
                echo "[$t $((SECONDS - start))s] $stats"
            fi
        done
    fi
    wait "$pid" || status=$?
    trap - EXIT INT TERM
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    done_line=$(grep -aE '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    edges=$(sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
    line="$t: executions ${execs:-?}, exec/s ${rate:-?}, coverage ${cov:-?} of ${edges:-?} edges, features ${ft:-?}"
    if [ "$status" -ne 0 ]; then
        failed+=("$t")
        line="$line  FAILED (exit $status)"
        grep -aE 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -8 || true
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
